// The CPU implementation of the forward-pass operations: matmul on the
// stored weight blocks (cpu/matmul.h), vectorized row operations
// (backend/cpu/vec.h), and paged attention over an F16 or Q8_0 KV cache, all spread
// over one thread pool.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "cpu/scratch_buffer.h"
#include "cpu/thread_pool.h"
#include "folio/kv_type.h"
#include "folio/sampling.h"
#include "model/moe.h"
#include "model/ops.h"

namespace folio::cpu {

// K and V of every layer in blocks: [n_blocks][block_size][n_head_kv] head
// rows per layer, a row head_dim IEEE half values (F16) or head_dim / 32
// blocks of GGML Q8_0 or MXFP8 (folio/kv_type.h). Memory is reserved, not touched, up
// front, so only the blocks a sequence writes become resident.
struct KvCache {
    int n_layer = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    uint32_t block_size = 0;
    uint32_t n_blocks = 0;
    KvType type = KvType::F16;
    std::vector<std::unique_ptr<uint8_t[]>> k, v;  // per layer

    void allocate(int layers, int heads_kv, int dim, uint32_t block, uint32_t blocks, KvType kv_type = KvType::F16);
    int64_t slot_values() const { return int64_t{n_head_kv} * head_dim; }  // values per token slot
    int64_t row_bytes() const { return static_cast<int64_t>(kv_type_bytes(type, static_cast<uint64_t>(head_dim))); }
    int64_t slot_bytes() const { return int64_t{n_head_kv} * row_bytes(); }
    uint64_t bytes() const;
};

class CpuOps final : public model::Ops {
public:
    // f32_activations: products of quantized weights in F32 (cpu::matmul_many_f32)
    // instead of with quantized activations.
    CpuOps(int n_threads, KvCache& cache, uint32_t max_context, bool f32_activations = false);

    // The sequence each batch row belongs to; set by the backend before a step.
    void set_row_sequences(const std::vector<int32_t>* row_sequence) { row_sequence_ = row_sequence; }
    ThreadPool& pool() { return pool_; }
    bool f32_activations() const { return f32_activations_; }

    float* buffer(model::Buffer which, int64_t n) override;
    Status embed(const model::Weight& table, const Batch& batch, float* out) override;
    void select_logit_rows(const Batch& batch, const float* x, int64_t dim, float* out) override;
    void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim, float* out) override;
    Status matmul(const model::Weight& w, const float* x, int64_t n_rows, float* y) override;
    Status matmuls(std::span<const model::Weight> w, const float* x, int64_t n_rows,
                   std::span<float* const> y) override;
    Status attention(const model::AttentionParams& params, const Batch& batch, float* q, float* k, const float* v,
                     float* out) override;
    // Rows grouped by expert, each chosen expert's products run once over its
    // rows (backend/cpu/moe_ffn.cpp).
    Status moe_ffn(const model::MoeFfn& ffn, const float* x, int64_t n_rows, float* out) override;
    void silu_mul(float* gate, const float* up, int64_t n) override;
    void gelu_mul(float* gate, const float* up, int64_t n) override;
    void add(float* x, const float* y, int64_t n) override;
    void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) override;
    void scale(float* x, float s, int64_t n) override;
    void softcap(float* x, float cap, int64_t n) override;
    float* logits_target(std::span<float> logits, int64_t n) override {
        return static_cast<int64_t>(logits.size()) >= n ? logits.data() : buffer(model::Buffer::Logits, n);
    }
    // The activations are host memory already: summed where they are, no copy.
    Status add_column_stats(const float* x, int64_t n_rows, int64_t dim, std::span<float> squares,
                            std::span<double> abs) override {
        add_column_stats_on_host(x, n_rows, dim, squares, abs);
        return {};
    }
    Status to_host(const float* src, std::span<float> dst, int64_t n) override {
        if (src != dst.data()) std::copy_n(src, n, dst.data());
        return {};
    }
    Status choose_tokens(const float* logits, int64_t n_rows, int64_t vocab, std::span<int32_t> ids) override;
    Status top_k(const float* logits, int64_t n_rows, int64_t vocab, int32_t k, std::span<float> values,
                 std::span<int32_t> ids, const RowSums& sums) override;

    // Rotates each head of each row by its row's position (RoPE).
    void rope(float* x, int64_t n_rows, int n_heads, int head_dim, std::span<const int32_t> positions,
              const model::RopeParams& rope);

    // Turns layer `layer`'s cached keys in `blocks` (every slot) back by
    // `delta` positions with `rope` (Backend::shift_keys), in the cache's type.
    void shift_keys(int layer, std::span<const int32_t> blocks, int32_t delta, const model::RopeParams& rope);

private:
    // Splits n elements into chunks of at least min_chunk, each a multiple
    // of `align` but the last, for the pool (inline when small).
    template <typename Fn>
    void for_chunks(int64_t n, int64_t min_chunk, int64_t align, Fn&& fn);

    ThreadPool pool_;
    ScratchBuffer scratch_;
    KvCache& cache_;
    bool f32_activations_;
    const std::vector<int32_t>* row_sequence_ = nullptr;
    std::vector<std::vector<float>> scores_;  // per thread: a query block's attention scores
    std::vector<std::vector<float>> q_scratch_;  // per thread: a query block rounded to half
    std::vector<std::vector<uint8_t>> q8_scratch_;  // per thread: a query block as Q8_0 (a Q8_0 cache's)
    std::vector<std::vector<uint16_t>> half_rows_;  // per thread: a KV block's rows of one head as half (an fp8 cache's)
    std::vector<float> rope_table_;
    std::vector<float> shift_rows_;  // shift_keys' keys as floats
    std::vector<int32_t> shift_positions_;
    std::vector<sampling_detail::Candidate> top_;  // one row's top-k
    std::vector<float> buffers_[static_cast<size_t>(model::Buffer::Count)];
    struct QueryBlock {
        int32_t sequence, first_row, n_rows;
    };
    std::vector<QueryBlock> query_blocks_;
    struct MoeScratch {  // moe_ffn's, kept across steps
        std::vector<float> logits, weights, rows, gate, up, down, expert_out;
        std::vector<int32_t> ids;
        model::ExpertGroups groups;
    } moe_;
};

}  // namespace folio::cpu
