// One engine step's input, flat: the rows (tokens) of every sequence in the
// step side by side, as vLLM's model runner lays them out. Each row carries
// its token, its position and the KV-cache slot its key/value go to; each
// sequence says which rows are its own, how long it is after this step and
// which KV blocks hold it. The backend computes logits only for logits_rows.
#pragma once

#include <cstdint>
#include <vector>

namespace folio {

inline constexpr uint32_t kDefaultBlockSize = 16;  // tokens per KV block

// A KV block to duplicate before a step (copy-on-write of a block that
// forked sequences share): every layer's K and V of block `src` into `dst`.
struct BlockCopy {
    int32_t src = -1;
    int32_t dst = -1;
};

// One sequence's part of a batch.
struct BatchSequence {
    int32_t query_start = 0;           // its first row in Batch::token_ids
    int32_t n_query = 0;               // its rows in this step (prefill chunk or 1 for decode)
    int32_t seq_len = 0;               // tokens in the cache after this step (prefix + rows)
    std::vector<int32_t> block_table;  // physical KV blocks, in token order; covers seq_len
};

struct Batch {
    std::vector<int32_t> token_ids;     // [n_tokens]
    std::vector<int32_t> positions;     // [n_tokens]; a sequence's row i is at seq_len - n_query + i
    std::vector<int64_t> slot_mapping;  // [n_tokens]: block_id * block_size + offset of each row's K/V
    std::vector<BatchSequence> sequences;
    std::vector<int32_t> logits_rows;   // rows whose logits forward() returns, in this order

    int32_t n_tokens() const { return static_cast<int32_t>(token_ids.size()); }
    void clear() {
        token_ids.clear();
        positions.clear();
        slot_mapping.clear();
        sequences.clear();
        logits_rows.clear();
    }
};

// Sums over whole logits rows, made where the logits are (a GPU), so the
// Sampler can draw top-p and report logprobs from a row's k best entries:
// what it would compute from the whole row (sampling_math::sum_weights and
// the log-normalizer), the weights bit for bit, the double sum in another
// order. Each span has one entry per logits row, or none at all.
struct RowSums {
    std::span<const float> temperatures;  // in: each row's temperature (> 0; 1 for greedy rows)
    std::span<double> softmax_sums;       // out: sum over the row of e^((v - max) / t), max = its best
    std::span<float> log_normalizers;     // out: log of the sum of e^v (temperature 1); -inf when max is
    bool empty() const { return temperatures.empty(); }
};

// Draws by temperature alone (after the penalties) made where the logits are
// (a GPU), so a step's rows need not leave it: per logits row the
// temperature (0: greedy, the argmax) and the uniform value in [0, 1) the
// row's Sampler drew for it (Sampler::take_uniform); the token is the one
// Sampler::sample would draw from the whole row with that value, bit for bit.
struct RowDraws {
    std::span<const float> temperatures;
    std::span<const double> uniforms;
    // The penalties Sampler::sample applies to a row before drawing from it
    // (penalty_counts): row r's distinct window tokens and their counts are
    // penalty_ids / penalty_counts [penalty_offsets[r], penalty_offsets[r + 1]),
    // its repetition, frequency and presence penalties penalty_params[3r ..].
    // All four empty: no row has penalties.
    std::span<const int32_t> penalty_offsets;  // rows + 1
    std::span<const int32_t> penalty_ids;
    std::span<const float> penalty_counts;
    std::span<const float> penalty_params;     // [rows][3]
    // Rows drawn by top-p and/or min-p instead (Sampler::draws_by_top_p): a
    // row whose top_p is under 1 or whose min_p is above 0 draws from its
    // penalized row as Sampler::sample does with those cuts. Both empty: no
    // row does.
    std::span<const float> top_p, min_p;
};

// A draw from a whole row made where a step's logits are
// (Backend::draw_last_rows): the row's temperature (> 0), top-p (1: off) and
// min-p (0: off; both off: temperature alone), and the uniform value in
// [0, 1) its Sampler took for the draw (Sampler::take_uniform).
struct WholeRowDraw {
    float temperature = 1.0f, top_p = 1.0f, min_p = 0.0f;
    double uniform = 0.0;
};

// What such a draw gives back: the token, with what Sampler::sample's
// SampleInfo says of it (Sampler::report_drawn): the size of the set it was
// drawn from and its logit (NaN as -inf, +inf as the largest float).
struct DrawnToken {
    int32_t id = 0;
    int32_t n_candidates = 0;
    float logit = 0.0f;
};

}  // namespace folio
