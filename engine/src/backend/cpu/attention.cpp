// Paged attention on the CPU. A row's keys are the tokens 0..position of its
// sequence (causal, prefix included), or the last `window` of them on
// sliding-window layers; token j lives in slot
// block_table[j / block_size] * block_size + j % block_size. An F16 cache
// meets half-rounded queries; a Q8_0 cache Q8_0 queries (integer dots with
// the blocks' scales) and F32 probabilities over values dequantized on the fly;
// an fp8 cache is read back into half rows, a run of keys at a time, and
// attended as an F16 cache is.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/vec.h"
#include "cpu/fp16.h"

namespace folio::cpu {
namespace {

// A row of n values (whole blocks of the type) into the cache, and back as float.
void store_row(KvType type, const float* x, uint8_t* out, int64_t n) {
    switch (type) {
        case KvType::Q8_0: return vec::quantize_q8_0(x, out, n);
        case KvType::Fp8: return vec::quantize_fp8(x, out, n);
        default: return vec::to_f16(x, reinterpret_cast<uint16_t*>(out), n);
    }
}
void load_row(KvType type, const uint8_t* x, float* out, int64_t n) {
    switch (type) {
        case KvType::Q8_0: return vec::dequantize_q8_0(x, out, n);
        case KvType::Fp8: return vec::dequantize_fp8(x, out, n);
        default: {
            const auto* h = reinterpret_cast<const uint16_t*>(x);
            for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(h[i]);
        }
    }
}

}  // namespace

Status CpuOps::attention(const model::AttentionParams& p, const Batch& batch, float* q, float* k, const float* v,
                         float* out) {
    if (p.layer < 0 || p.layer >= cache_.n_layer || p.n_head_kv != cache_.n_head_kv || p.head_dim != cache_.head_dim)
        return make_error("attention: layer shape does not match the KV cache");
    if (!row_sequence_) return make_error("attention: no row-to-sequence map for this batch");
    if (!kv_type_fits(cache_.type, static_cast<uint64_t>(p.head_dim)))
        return make_error("attention: a " + std::string(kv_type_name(cache_.type)) +
                          " KV cache needs heads of a multiple of 32 values");
    const int64_t n_tokens = batch.n_tokens();
    rope(q, n_tokens, p.n_head, p.head_dim, batch.positions, p.rope);
    rope(k, n_tokens, p.n_head_kv, p.head_dim, batch.positions, p.rope);
    const int64_t kv_dim = cache_.slot_values();
    const int64_t q_dim = int64_t{p.n_head} * p.head_dim;
    const bool q8 = cache_.type == KvType::Q8_0, fp8 = cache_.type == KvType::Fp8;
    uint8_t* k_bytes = cache_.k[static_cast<size_t>(p.layer)].get();
    uint8_t* v_bytes = cache_.v[static_cast<size_t>(p.layer)].get();
    const int64_t slot_bytes = cache_.slot_bytes(), row_bytes = cache_.row_bytes();

    // This step's keys and values go into their slots first: rows of a
    // prefill chunk attend to each other through the cache. Heads are whole
    // blocks of the type, so the slot's row of all heads stores as one.
    for (int64_t r = 0; r < n_tokens; ++r) {
        const int64_t slot = batch.slot_mapping[static_cast<size_t>(r)];
        store_row(cache_.type, k + r * kv_dim, k_bytes + slot * slot_bytes, kv_dim);
        store_row(cache_.type, v + r * kv_dim, v_bytes + slot * slot_bytes, kv_dim);
    }

    // Tasks are (block of up to 8 consecutive rows of one sequence, head):
    // each key and value row is read and converted once for the block.
    query_blocks_.clear();
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
        const BatchSequence& seq = batch.sequences[s];
        for (int32_t r = seq.query_start; r < seq.query_start + seq.n_query; r += vec::kMaxQueries)
            query_blocks_.push_back({static_cast<int32_t>(s), r,
                                     std::min<int32_t>(vec::kMaxQueries, seq.query_start + seq.n_query - r)});
    }
    const int group = p.n_head / p.n_head_kv;
    for (auto& buf : q_scratch_)
        if (buf.size() < static_cast<size_t>(vec::kMaxQueries * p.head_dim))
            buf.resize(static_cast<size_t>(vec::kMaxQueries * p.head_dim));
    if (q8)
        for (auto& buf : q8_scratch_)
            if (buf.size() < static_cast<size_t>(vec::kMaxQueries * row_bytes))
                buf.resize(static_cast<size_t>(vec::kMaxQueries * row_bytes));
    const int64_t block = cache_.block_size;
    if (fp8)
        for (auto& buf : half_rows_)
            if (buf.size() < static_cast<size_t>(block * p.head_dim)) buf.resize(static_cast<size_t>(block * p.head_dim));
    const int64_t stride = static_cast<int64_t>(scores_[0].size()) / vec::kMaxQueries;
    auto attend = [&](int64_t task, int thread) {
        const QueryBlock& qb = query_blocks_[static_cast<size_t>(task / p.n_head)];
        const int head = static_cast<int>(task % p.n_head);
        const int64_t kv_offset = int64_t{head / group} * p.head_dim;
        const BatchSequence& seq = batch.sequences[static_cast<size_t>(qb.sequence)];
        const float* q_rows[vec::kMaxQueries] = {};
        const uint8_t* q8_rows[vec::kMaxQueries] = {};
        float* o_rows[vec::kMaxQueries];
        float* scores[vec::kMaxQueries];
        int64_t first[vec::kMaxQueries], last[vec::kMaxQueries];
        for (int i = 0; i < qb.n_rows; ++i) {
            const int64_t row = qb.first_row + i;
            last[i] = batch.positions[static_cast<size_t>(row)];
            first[i] = p.sliding_window > 0 ? std::max<int64_t>(0, last[i] + 1 - p.sliding_window) : 0;
            // Queries and probabilities are rounded to half precision, as
            // llama.cpp's F16-cache attention does (its matmuls with an F16
            // operand convert the other one): the same rounding keeps the two
            // engines' logits within their own batch-to-batch noise.
            const float* q_row = q + row * q_dim + int64_t{head} * p.head_dim;
            if (q8) {  // llama.cpp's CPU path: the query in the keys' dot type
                uint8_t* q_blocks = q8_scratch_[static_cast<size_t>(thread)].data() + int64_t{i} * row_bytes;
                vec::quantize_q8_0(q_row, q_blocks, p.head_dim);
                q8_rows[i] = q_blocks;
            } else {
                float* q_half = q_scratch_[static_cast<size_t>(thread)].data() + int64_t{i} * p.head_dim;
                vec::round_to_f16(q_row, q_half, p.head_dim);
                q_rows[i] = q_half;
            }
            o_rows[i] = out + row * q_dim + int64_t{head} * p.head_dim;
            scores[i] = scores_[static_cast<size_t>(thread)].data() + i * stride;
        }
        const int64_t k_first = *std::min_element(first, first + qb.n_rows);
        const int64_t k_last = *std::max_element(last, last + qb.n_rows);
        auto slot_of = [&](int64_t j) {
            return int64_t{seq.block_table[static_cast<size_t>(j / block)]} * block + j % block;
        };

        // Keys go in runs that stay inside one KV block (consecutive slots);
        // fn gets the run's first slot.
        auto for_each_run = [&](auto&& fn) {
            for (int64_t j = k_first; j <= k_last;) {
                const int64_t run = std::min(k_last + 1, (j / block + 1) * block) - j;
                fn(j, run, slot_of(j));
                j += run;
            }
        };
        const int64_t kv_head = head / group;
        // A run of this head's K or V rows as half, and their stride: an F16
        // cache's in place, an fp8 cache's read back into this thread's rows.
        auto half_run = [&](const uint8_t* bytes, int64_t slot, int64_t run) -> std::pair<const uint16_t*, int64_t> {
            if (!fp8) return {reinterpret_cast<const uint16_t*>(bytes) + slot * kv_dim + kv_offset, kv_dim};
            uint16_t* rows = half_rows_[static_cast<size_t>(thread)].data();
            for (int64_t r = 0; r < run; ++r)
                vec::dequantize_fp8_f16(bytes + (slot + r) * slot_bytes + kv_head * row_bytes, rows + r * p.head_dim,
                                        p.head_dim);
            return {rows, p.head_dim};
        };
        for_each_run([&](int64_t j, int64_t run, int64_t slot) {
            float* out_rows[vec::kMaxQueries];
            for (int i = 0; i < qb.n_rows; ++i) out_rows[i] = scores[i] + (j - k_first);
            if (q8) {
                vec::scores_q8_0_multi(q8_rows, qb.n_rows, k_bytes + slot * slot_bytes + kv_head * row_bytes,
                                       slot_bytes, run, p.head_dim, p.scale, out_rows);
            } else {
                const auto [rows, row_stride] = half_run(k_bytes, slot, run);
                vec::scores_f16_multi(q_rows, qb.n_rows, rows, row_stride, run, p.head_dim, p.scale, out_rows);
            }
        });
        for (int i = 0; i < qb.n_rows; ++i) {
            // Softmax over this row's own keys; the block's other keys get weight 0.
            float* s = scores[i];
            const int64_t a = first[i] - k_first, b = last[i] - k_first + 1;
            if (p.logit_softcap > 0)
                for (int64_t j = a; j < b; ++j) s[j] = p.logit_softcap * std::tanh(s[j] / p.logit_softcap);
            const float max_score = *std::max_element(s + a, s + b);
            const float inv_sum = 1.0f / vec::exp_sum(s + a, b - a, max_score);
            for (int64_t j = a; j < b; ++j) s[j] *= inv_sum;
            if (!q8) vec::round_to_f16(s + a, s + a, b - a);
            std::fill(s, s + a, 0.0f);
            std::fill(s + b, s + (k_last - k_first + 1), 0.0f);
            std::memset(o_rows[i], 0, sizeof(float) * static_cast<size_t>(p.head_dim));
        }
        for_each_run([&](int64_t j, int64_t run, int64_t slot) {
            const float* weights[vec::kMaxQueries];
            for (int i = 0; i < qb.n_rows; ++i) weights[i] = scores[i] + (j - k_first);
            if (q8) {
                vec::weighted_sum_q8_0_multi(o_rows, weights, qb.n_rows, v_bytes + slot * slot_bytes + kv_head * row_bytes,
                                             slot_bytes, run, p.head_dim);
            } else {
                const auto [rows, row_stride] = half_run(v_bytes, slot, run);
                vec::weighted_sum_f16_multi(o_rows, weights, qb.n_rows, rows, row_stride, run, p.head_dim);
            }
        });
    };
    pool_.parallel_for(static_cast<int64_t>(query_blocks_.size()) * p.n_head, attend);
    return {};
}

void CpuOps::shift_keys(int layer, std::span<const int32_t> blocks, int32_t delta, const model::RopeParams& rope) {
    const int64_t kv_dim = cache_.slot_values(), slot_bytes = cache_.slot_bytes();
    const int64_t block_slots = cache_.block_size, n_rows = static_cast<int64_t>(blocks.size()) * block_slots;
    uint8_t* k_bytes = cache_.k[static_cast<size_t>(layer)].get();
    shift_rows_.resize(static_cast<size_t>(n_rows * kv_dim));
    shift_positions_.assign(static_cast<size_t>(n_rows), -delta);
    auto slot_of = [&](int64_t r) { return int64_t{blocks[static_cast<size_t>(r / block_slots)]} * block_slots + r % block_slots; };
    for (int64_t r = 0; r < n_rows; ++r)
        load_row(cache_.type, k_bytes + slot_of(r) * slot_bytes, shift_rows_.data() + r * kv_dim, kv_dim);
    // A rotation by -delta: the key's magnitude (YaRN's mscale) is in it already.
    model::RopeParams turn = rope;
    turn.mscale = 1.0f;
    this->rope(shift_rows_.data(), n_rows, cache_.n_head_kv, cache_.head_dim, shift_positions_, turn);
    for (int64_t r = 0; r < n_rows; ++r)
        store_row(cache_.type, shift_rows_.data() + r * kv_dim, k_bytes + slot_of(r) * slot_bytes, kv_dim);
}

}  // namespace folio::cpu
