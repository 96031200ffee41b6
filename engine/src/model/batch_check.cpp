// Batch validation shared by the backends.
#include "model/batch_check.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace folio::model {

Status check_batch(const Batch& batch, const StepOutput& out, int32_t n_vocab, uint32_t n_blocks, uint32_t block_size,
                   uint32_t max_context, std::vector<int32_t>& row_sequence) {
    const int32_t n = batch.n_tokens();
    if (n == 0) return make_error("forward: empty batch");
    if (batch.positions.size() != batch.token_ids.size() || batch.slot_mapping.size() != batch.token_ids.size())
        return make_error("forward: token_ids, positions and slot_mapping differ in length");
    const int64_t n_slots = int64_t{n_blocks} * block_size;
    for (int32_t r = 0; r < n; ++r) {
        const auto i = static_cast<size_t>(r);
        if (batch.token_ids[i] < 0 || batch.token_ids[i] >= n_vocab)
            return make_error("forward: token id " + std::to_string(batch.token_ids[i]) + " is outside the vocabulary");
        if (batch.slot_mapping[i] < 0 || batch.slot_mapping[i] >= n_slots)
            return make_error("forward: KV slot " + std::to_string(batch.slot_mapping[i]) + " is outside the cache");
    }
    row_sequence.assign(static_cast<size_t>(n), -1);
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
        const BatchSequence& seq = batch.sequences[s];
        if (seq.n_query <= 0 || seq.query_start < 0 || seq.query_start + seq.n_query > n)
            return make_error("forward: sequence " + std::to_string(s) + " has rows outside the batch");
        if (seq.seq_len < seq.n_query || static_cast<uint32_t>(seq.seq_len) > max_context)
            return make_error("forward: sequence " + std::to_string(s) + " is " + std::to_string(seq.seq_len) +
                              " tokens long; the context is " + std::to_string(max_context));
        if (int64_t{static_cast<int64_t>(seq.block_table.size())} * block_size < seq.seq_len)
            return make_error("forward: sequence " + std::to_string(s) + "'s block table does not cover it");
        for (int32_t b : seq.block_table)
            if (b < 0 || static_cast<uint32_t>(b) >= n_blocks)
                return make_error("forward: block " + std::to_string(b) + " is outside the cache");
        for (int32_t r = seq.query_start; r < seq.query_start + seq.n_query; ++r) {
            const auto i = static_cast<size_t>(r);
            if (row_sequence[i] != -1) return make_error("forward: row " + std::to_string(r) + " is in two sequences");
            row_sequence[i] = static_cast<int32_t>(s);
            if (batch.positions[i] < 0 || batch.positions[i] >= seq.seq_len)
                return make_error("forward: row " + std::to_string(r) + " has position " +
                                  std::to_string(batch.positions[i]) + " outside its sequence");
        }
    }
    if (std::find(row_sequence.begin(), row_sequence.end(), -1) != row_sequence.end())
        return make_error("forward: a row belongs to no sequence");
    for (int32_t r : batch.logits_rows)
        if (r < 0 || r >= n) return make_error("forward: logits row " + std::to_string(r) + " is outside the batch");
    if (out.rows(n_vocab) < static_cast<int64_t>(batch.logits_rows.size()))
        return make_error(out.chooses_tokens() ? "forward: the token id buffer is too small"
                                               : "forward: the logits buffer is too small");
    if (out.draws_tokens()) {
        const size_t rows = batch.logits_rows.size();
        const RowDraws& d = out.draws;
        if (d.temperatures.size() < rows || d.uniforms.size() < rows)
            return make_error("forward: " + std::to_string(rows) + " rows to draw but " +
                              std::to_string(std::min(d.temperatures.size(), d.uniforms.size())) + " draws");
        if (!d.penalty_ids.empty()) {
            bool ok = d.penalty_offsets.size() == rows + 1 && d.penalty_params.size() >= 3 * rows &&
                      d.penalty_counts.size() == d.penalty_ids.size() && d.penalty_offsets[0] == 0 &&
                      static_cast<size_t>(d.penalty_offsets[rows]) == d.penalty_ids.size();
            for (size_t r = 0; ok && r < rows; ++r) ok = d.penalty_offsets[r] <= d.penalty_offsets[r + 1];
            if (!ok) return make_error("forward: the draws' penalty lists do not match their rows");
        }
        if ((!d.top_p.empty() || !d.min_p.empty()) && (d.top_p.size() < rows || d.min_p.size() < rows))
            return make_error("forward: the draws' top-p / min-p lists do not match their rows");
        for (size_t r = 0; r < d.top_p.size() && r < rows; ++r)
            if (!(d.top_p[r] > 0.0f && d.top_p[r] <= 1.0f) || !(d.min_p[r] >= 0.0f && d.min_p[r] <= 1.0f))
                return make_error("forward: draw " + std::to_string(r) + " has top-p " + std::to_string(d.top_p[r]) +
                                  " and min-p " + std::to_string(d.min_p[r]));
        for (size_t r = 0; r < rows; ++r)
            if (!(d.temperatures[r] >= 0.0f && std::isfinite(d.temperatures[r])) ||
                !(d.uniforms[r] >= 0.0 && d.uniforms[r] < 1.0))
                return make_error("forward: draw " + std::to_string(r) + " has temperature " +
                                  std::to_string(d.temperatures[r]) + " and uniform value " +
                                  std::to_string(d.uniforms[r]));
    }
    if (out.keeps_top_k() && out.top_k > n_vocab)
        return make_error("forward: top-k of " + std::to_string(out.top_k) + " in a vocabulary of " +
                          std::to_string(n_vocab));
    return {};
}

Status check_block_copies(std::span<const BlockCopy> copies, uint32_t n_blocks) {
    return check_block_copies(copies, n_blocks, n_blocks, "copy_blocks");
}

Status check_block_copies(std::span<const BlockCopy> copies, uint32_t n_src, uint32_t n_dst, const char* what) {
    for (const BlockCopy& c : copies)
        if (c.src < 0 || c.dst < 0 || static_cast<uint32_t>(c.src) >= n_src || static_cast<uint32_t>(c.dst) >= n_dst)
            return make_error(std::string(what) + ": block " + std::to_string(c.src) + " -> " + std::to_string(c.dst) +
                              " is outside the cache");
    return {};
}

Status check_blocks(std::span<const int32_t> blocks, uint32_t n_blocks, const char* what) {
    for (int32_t b : blocks)
        if (b < 0 || static_cast<uint32_t>(b) >= n_blocks)
            return make_error(std::string(what) + ": block " + std::to_string(b) + " is outside the pool of " +
                              std::to_string(n_blocks));
    return {};
}

Status check_row_sums(const RowSums& sums, int64_t n_rows) {
    if (sums.empty()) return {};
    const auto n = static_cast<size_t>(std::max<int64_t>(n_rows, 0));
    if (sums.temperatures.size() < n || sums.softmax_sums.size() < n || sums.log_normalizers.size() < n)
        return make_error("row sums: " + std::to_string(n) + " rows into too small a buffer");
    for (size_t i = 0; i < n; ++i)
        if (!(sums.temperatures[i] > 0.0f))
            return make_error("row sums: temperature " + std::to_string(sums.temperatures[i]) + " is not above 0");
    return {};
}

}  // namespace folio::model
