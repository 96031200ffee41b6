// The CUDA implementation of the forward-pass operations: every activation,
// weight, norm vector and KV block lives in device memory, every op is a
// launch on one stream (kernels/: pointers, shapes, a stream), and the host
// waits only when the logits come back. A failed launch or allocation is
// kept (the first one) and returned by the step: ops that return nothing
// cannot lose an error. After the first failure a step launches nothing
// more (a kernel given a buffer that could not be allocated would poison
// the CUDA context for good).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <span>
#include <unordered_map>
#include <vector>

#include "folio/kv_type.h"
#include "folio_kernels/attention.h"
#include "folio_kernels/matmul.h"
#include "folio_kernels/moe.h"
#include "model/ops.h"

namespace folio::cuda {

// Device memory that frees itself.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { reset(); }
    // At least `bytes`; contents are lost when it grows.
    cudaError_t reserve(size_t bytes);
    void reset();
    void* data() const { return data_; }
    size_t size() const { return size_; }

private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

// Page-locked host memory for asynchronous copies.
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    ~PinnedBuffer() { reset(); }
    // At least `bytes` (a quarter more, for buffers that grow; exactly, for ones that do not).
    cudaError_t reserve(size_t bytes, bool exact = false);
    void reset();
    std::byte* data() const { return data_; }

private:
    std::byte* data_ = nullptr;
    size_t size_ = 0;
};

// The KV pool: per layer, K and V of n_blocks blocks, each [n_head_kv][block_size][head_dim] half
// (f16) or that many fp8 / Q8_0 values and their scales (kernels::PagedKvLayer says how).
struct DeviceKvCache {
    int n_layer = 0, n_head_kv = 0, head_dim = 0;
    uint32_t block_size = 0, n_blocks = 0;
    KvType type = KvType::F16;
    DeviceBuffer memory;
    std::vector<kernels::PagedKvLayer> layers;

    uint64_t block_bytes() const {  // one block of one layer's K (or V)
        return kv_type_bytes(type, uint64_t{block_size} * static_cast<uint64_t>(n_head_kv) *
                                       static_cast<uint64_t>(head_dim));
    }
    uint64_t bytes() const { return 2 * static_cast<uint64_t>(n_layer) * n_blocks * block_bytes(); }
};

// Shapes a step is laid out for. A captured CUDA graph replays with
// fixed pointers and launch sizes: its steps use the graph buffer and
// fixed bounds (whole-context block tables, max_context) instead of the
// batch's own.
struct StepLayout {
    bool for_graph = false;
    int32_t max_blocks = 0;   // block table width (for_graph)
    int32_t max_seq_len = 0;  // host bound of sequence lengths (for_graph)
};
class CudaOps final : public model::Ops {
public:
    CudaOps(cudaStream_t stream, cublasHandle_t cublas, DeviceKvCache& cache);

    // Device copies of the weights, by host address (Weight::data, the norm vectors' data()).
    void add_matrix(const void* host, const kernels::DeviceMatrix& m) {
        matrices_[host] = m;
        count_format(m.type);
    }
    void add_vector(const float* host, const float* device) { vectors_[host] = device; }
    // The device copy of stacked expert matrices (one, or a group whose
    // experts' rows are stacked in order: gate, up), by their host addresses
    // (ExpertMatrix::data).
    void add_experts(const kernels::DeviceExperts& e, std::vector<const void*> members, std::vector<int64_t> rows) {
        const void* first = members[0];
        experts_[first] = StackedExperts{e, std::move(members), std::move(rows)};
    }
    // Matrices stored as one (their rows stacked, in order), for matmuls().
    void add_stacked(const kernels::DeviceMatrix& m, std::vector<const void*> members, std::vector<int64_t> rows) {
        const void* first = members[0];
        stacked_[first] = Stacked{m, std::move(members), std::move(rows)};
        count_format(m.type);
    }

    // Before a step: the batch's ids, positions, slots and block tables to the
    // device (one copy), and the sticky error cleared.
    Status begin_step(const Batch& batch, std::span<const int32_t> row_sequence, const StepLayout& layout = StepLayout());
    // While a graph is being captured: ops launch but never wait, and
    // to_host / choose_tokens deliver nothing (the backend does after the replay).
    void set_capturing(bool capturing) { capturing_ = capturing; }
    // Counts reallocations of any buffer a captured graph points into: a
    // graph captured at another epoch is stale.
    uint64_t memory_epoch() const { return memory_epoch_; }
    // The first error of the step, if any.
    Status status() const { return error_; }

    float* buffer(model::Buffer which, int64_t n) override;
    Status embed(const model::Weight& table, const Batch& batch, float* out) override;
    void select_logit_rows(const Batch& batch, const float* x, int64_t dim, float* out) override;
    void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim, float* out) override;
    void qk_norm(float* q, const float* q_weight, int64_t q_rows, float* k, const float* k_weight, int64_t k_rows,
                 float eps, int64_t dim) override;
    void add_rms_norm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t dim,
                      float* out) override;
    Status matmul(const model::Weight& w, const float* x, int64_t n_rows, float* y) override;
    Status matmuls(std::span<const model::Weight> w, const float* x, int64_t n_rows,
                   std::span<float* const> y) override;
    Status gated_matmuls(std::span<const model::Weight> w, Glu act, const float* x, int64_t n_rows, float* gate,
                         float* up) override;
    // Routing, grouping and the grouped products on the device (folio_kernels/moe.h).
    Status moe_ffn(const model::MoeFfn& ffn, const float* x, int64_t n_rows, float* out) override;
    Status attention(const model::AttentionParams& params, const Batch& batch, float* q, float* k, const float* v,
                     float* out) override;
    void silu_mul(float* gate, const float* up, int64_t n) override;
    void gelu_mul(float* gate, const float* up, int64_t n) override;
    void add(float* x, const float* y, int64_t n) override;
    void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) override;
    void scale(float* x, float s, int64_t n) override;
    void softcap(float* x, float cap, int64_t n) override;
    float* logits_target(std::span<float> logits, int64_t n) override;
    Status to_host(const float* src, std::span<float> dst, int64_t n) override;
    Status choose_tokens(const float* logits, int64_t n_rows, int64_t vocab, std::span<int32_t> ids) override;
    Status top_k(const float* logits, int64_t n_rows, int64_t vocab, int32_t k, std::span<float> values,
                 std::span<int32_t> ids, const RowSums& sums) override;
    Status draw_tokens(float* logits, int64_t n_rows, int64_t vocab, const RowDraws& draws,
                       std::span<int32_t> ids) override;
    // kernels::column_stats on the device; 2 x dim floats come back.
    Status add_column_stats(const float* x, int64_t n_rows, int64_t dim, std::span<float> squares,
                            std::span<double> abs) override;
    // Rows of the logits the last top_k() selected from, one after the other.
    Status last_logits_rows(std::span<const size_t> rows, std::span<float> out);
    // Draws from those rows (Backend::draw_last_rows): by temperature alone
    // (temperature_draws), by top-p or min-p (top_p_draws).
    Status draw_last_rows(std::span<const size_t> rows, std::span<const WholeRowDraw> draws,
                          std::span<DrawnToken> out);
    // Draws by temperature alone from rows `rows` of `logits` (device memory,
    // [..][vocab], not changed): kernels::draw_rows over those rows.
    Status temperature_draws(const float* logits, int64_t vocab, std::span<const size_t> rows,
                             std::span<const WholeRowDraw> draws, std::span<DrawnToken> out);
    // Top-p and min-p draws from rows `rows` of `logits` (device memory,
    // [..][vocab]): kernels::top_p_draw_rows, or on the host (the same
    // tokens) where its workspace cannot be had.
    Status top_p_draws(const float* logits, int64_t vocab, std::span<const size_t> rows,
                       std::span<const WholeRowDraw> draws, std::span<DrawnToken> out);

    // Turns layer `layer`'s cached keys in `blocks` back by `delta` positions
    // with `rope` (Backend::shift_keys), queued on the step stream.
    Status shift_keys(int layer, std::span<const int32_t> blocks, int32_t delta, const model::RopeParams& rope);

private:
    // Records the first failure; true when `err` is a success.
    bool ok(cudaError_t err, const char* what);
    // The kernels' form of a layer's RoPE (its frequency factors copied to the device once).
    bool kernel_rope(const model::RopeParams& from, kernels::RopeParams& rope);
    // buf.reserve(bytes), waiting for the stream first when it must move. A
    // buffer that graphs may point into (all but the token-choice outputs,
    // used after a replay) makes them stale when it moves.
    enum class InGraphs { Yes, No };
    bool grow(DeviceBuffer& buf, size_t bytes, const char* what, InGraphs in_graphs = InGraphs::Yes);
    const float* vector(const float* host, const char* what);
    const kernels::DeviceMatrix* matrix(const model::Weight& w);
    // m's device copy when it is stored alone.
    const kernels::DeviceExperts* experts(const model::ExpertMatrix& m);
    // gate's and up's when they are stored as one (gate rows, then up rows).
    const kernels::DeviceExperts* stacked_experts(const model::ExpertMatrix& gate, const model::ExpertMatrix& up) const;

    // Activation quantization (or F16 conversion) fused into the kernel that
    // produces a matmul's input (a norm, a gated activation): it writes its
    // output in the form most of the model's matrices read too, into the
    // matmul workspace, and the matmul launched right after it (the next op)
    // on that output, if its weights read that form, skips its own quantize /
    // convert launch. One launch fewer per matmul input (~2.6 us each).
    void count_format(kernels::WeightType t) { ++format_count_[static_cast<size_t>(kernels::fused_activation_format(t))]; }
    kernels::ActivationFormat fused_format() const;
    kernels::ActivationQuant quantize_for_next(const float* out, int64_t count);
    bool takes_quantized(const kernels::DeviceMatrix& m, const float* x, int64_t n_rows) const;
    // Sizes matmul_ws_ for a product with m, telling it whether x is quantized already.
    bool use_workspace(const kernels::DeviceMatrix& m, const float* x, int64_t n_rows, size_t bytes);
    std::array<int, 5> format_count_ = {};  // matrices by ActivationFormat
    struct Quantized {
        const float* x = nullptr;
        int64_t count = 0;
        kernels::ActivationFormat format = kernels::ActivationFormat::None;
        uint64_t op = 0;
    };
    Quantized quantized_;  // what the last producer wrote
    uint64_t op_ = 0;      // ops launched so far

    cudaStream_t stream_;
    kernels::MatmulWorkspace matmul_ws_;
    DeviceBuffer matmul_scratch_, attention_scratch_;
    DeviceBuffer shift_blocks_;  // shift_keys: the block ids
    DeviceBuffer stats_scratch_;  // add_column_stats: the slices' sums, then the totals
    PinnedBuffer stats_host_;
    DeviceBuffer stacked_scratch_;  // gated_matmuls' whole gate/up product
    DeviceKvCache& cache_;
    std::unordered_map<const void*, kernels::DeviceMatrix> matrices_;
    std::unordered_map<const float*, const float*> vectors_;
    struct StackedExperts {
        kernels::DeviceExperts experts;
        std::vector<const void*> members;
        std::vector<int64_t> rows;
    };
    std::unordered_map<const void*, StackedExperts> experts_;  // by the first member
    DeviceBuffer moe_scratch_;  // moe_ffn: router logits, routing, expert products
    struct Stacked {
        kernels::DeviceMatrix matrix;
        std::vector<const void*> members;
        std::vector<int64_t> rows;
    };
    std::unordered_map<const void*, Stacked> stacked_;  // by the first member's host address
    std::array<DeviceBuffer, static_cast<size_t>(model::Buffer::Count)> buffers_;

    // The step's batch on the device (one buffer, filled by one copy).
    PinnedBuffer batch_host_;
    DeviceBuffer batch_device_, graph_batch_device_;
    bool capturing_ = false;
    DeviceBuffer argmax_device_, top_k_device_;  // chosen ids / top-k entries before they go to the host
    DeviceBuffer draw_device_;  // draw_tokens: uniforms, temperatures, drawn ids, draw_rows' workspace
    DeviceBuffer top_p_device_;  // top_p_draws: rows, parameters, uniforms, drawn tokens, workspace
    DeviceBuffer temperature_device_;  // temperature_draws: rows, temperatures, uniforms, ids, logits, workspace
    bool top_p_on_host_ = false;  // its workspace could not be had once (said on stderr)
    // An error unless every row is one of the last top_k()'s.
    Status check_last_rows(std::span<const size_t> rows, const char* what) const;
    // The logits the last top_k() selected from (the Logits buffer, valid until the next step).
    const float* last_logits_ = nullptr;
    int64_t last_rows_ = 0, last_vocab_ = 0;
    uint64_t memory_epoch_ = 0;
    kernels::AttentionBatch meta_;
    const int32_t* token_ids_ = nullptr;
    const int32_t* logits_rows_ = nullptr;
    Status error_;
};

}  // namespace folio::cuda
