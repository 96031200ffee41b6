// Paged attention on the CPU. A row's keys are the tokens 0..position of its
// sequence (causal, prefix included), or the last `window` of them on
// sliding-window layers; token j lives in slot
// block_table[j / block_size] * block_size + j % block_size.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/vec.h"

namespace folio::cpu {

Status CpuOps::attention(const model::AttentionParams& p, const Batch& batch, const float* q, const float* k,
                         const float* v, float* out) {
    if (p.layer < 0 || p.layer >= cache_.n_layer || p.n_head_kv != cache_.n_head_kv || p.head_dim != cache_.head_dim)
        return make_error("attention: layer shape does not match the KV cache");
    if (!row_sequence_) return make_error("attention: no row-to-sequence map for this batch");
    const int64_t n_tokens = batch.n_tokens();
    const int64_t kv_dim = cache_.slot_values();
    const int64_t q_dim = int64_t{p.n_head} * p.head_dim;
    uint16_t* k_cache = cache_.k[static_cast<size_t>(p.layer)].get();
    uint16_t* v_cache = cache_.v[static_cast<size_t>(p.layer)].get();

    // This step's keys and values go into their slots first: rows of a
    // prefill chunk attend to each other through the cache.
    for (int64_t r = 0; r < n_tokens; ++r) {
        const int64_t slot = batch.slot_mapping[static_cast<size_t>(r)];
        vec::to_f16(k + r * kv_dim, k_cache + slot * kv_dim, kv_dim);
        vec::to_f16(v + r * kv_dim, v_cache + slot * kv_dim, kv_dim);
    }

    const int group = p.n_head / p.n_head_kv;
    const int64_t block = cache_.block_size;
    auto attend = [&](int64_t task, int thread) {
        const int64_t row = task / p.n_head;
        const int head = static_cast<int>(task % p.n_head);
        const int kv_head = head / group;
        const BatchSequence& seq = batch.sequences[static_cast<size_t>((*row_sequence_)[static_cast<size_t>(row)])];
        const int64_t pos = batch.positions[static_cast<size_t>(row)];
        const int64_t first = p.sliding_window > 0 ? std::max<int64_t>(0, pos + 1 - p.sliding_window) : 0;
        const int64_t n_keys = pos + 1 - first;
        const float* q_head = q + row * q_dim + int64_t{head} * p.head_dim;
        float* scores = scores_[static_cast<size_t>(thread)].data();
        auto slot_of = [&](int64_t j) {
            return int64_t{seq.block_table[static_cast<size_t>(j / block)]} * block + j % block;
        };

        float max_score = -INFINITY;
        for (int64_t j = 0; j < n_keys; ++j) {
            const uint16_t* key = k_cache + slot_of(first + j) * kv_dim + int64_t{kv_head} * p.head_dim;
            float s = vec::dot_f16(q_head, key, p.head_dim) * p.scale;
            if (p.logit_softcap > 0) s = p.logit_softcap * std::tanh(s / p.logit_softcap);
            scores[j] = s;
            max_score = std::max(max_score, s);
        }
        const float inv_sum = 1.0f / vec::exp_sum(scores, n_keys, max_score);

        float* o = out + row * q_dim + int64_t{head} * p.head_dim;
        std::memset(o, 0, sizeof(float) * static_cast<size_t>(p.head_dim));
        for (int64_t j = 0; j < n_keys; ++j) {
            const uint16_t* value = v_cache + slot_of(first + j) * kv_dim + int64_t{kv_head} * p.head_dim;
            vec::axpy_f16(o, scores[j] * inv_sum, value, p.head_dim);
        }
    };
    pool_.parallel_for(n_tokens * p.n_head, attend);
    return {};
}

}  // namespace folio::cpu
