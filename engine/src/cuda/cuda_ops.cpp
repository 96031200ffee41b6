#include "cuda/cuda_ops.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "folio/sampling.h"
#include "folio_kernels/elementwise.h"
#include "folio_kernels/sampling.h"
#include "model/architecture.h"  // FOLIO_RETURN_IF_ERROR
#include "model/batch_check.h"
#include "model/moe.h"
#include "sampling/softmax_math.h"

namespace folio::cuda {

cudaError_t DeviceBuffer::reserve(size_t bytes) {
    if (bytes <= size_) return cudaSuccess;
    reset();
    // A quarter more than asked, so a batch that grows step by step does not
    // reallocate every step.
    const size_t want = std::max<size_t>(bytes + bytes / 4, 256);
    if (cudaError_t err = cudaMalloc(&data_, want); err != cudaSuccess) {
        data_ = nullptr;
        return err;
    }
    size_ = want;
    return cudaSuccess;
}

void DeviceBuffer::reset() {
    if (data_) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
}

cudaError_t PinnedBuffer::reserve(size_t bytes, bool exact) {
    if (bytes <= size_) return cudaSuccess;
    reset();
    const size_t want = exact ? bytes : std::max<size_t>(bytes + bytes / 4, 4096);
    void* p = nullptr;
    if (cudaError_t err = cudaMallocHost(&p, want); err != cudaSuccess) return err;
    data_ = static_cast<std::byte*>(p);
    size_ = want;
    return cudaSuccess;
}

void PinnedBuffer::reset() {
    if (data_) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
}

CudaOps::CudaOps(cudaStream_t stream, cublasHandle_t cublas, DeviceKvCache& cache) : stream_(stream), cache_(cache) {
    matmul_ws_.cublas = cublas;
}

bool CudaOps::ok(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return true;
    if (error_) error_ = make_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(err));
    return false;
}

bool CudaOps::grow(DeviceBuffer& buf, size_t bytes, const char* what, InGraphs in_graphs) {
    if (bytes <= buf.size()) return true;
    // The stream may still read the old buffer; a graph may point into it.
    if (!capturing_) cudaStreamSynchronize(stream_);
    if (in_graphs == InGraphs::Yes) ++memory_epoch_;
    return ok(capturing_ ? cudaErrorStreamCaptureUnsupported : buf.reserve(bytes), what);
}

const float* CudaOps::vector(const float* host, const char* what) {
    auto it = vectors_.find(host);
    if (it != vectors_.end()) return it->second;
    if (error_) error_ = make_error(std::string("cuda: ") + what + ": a vector the model did not declare");
    return nullptr;
}

const kernels::DeviceMatrix* CudaOps::matrix(const model::Weight& w) {
    auto it = matrices_.find(w.data);
    if (it != matrices_.end()) return &it->second;
    if (error_) error_ = make_error("cuda: a matrix the model did not declare");
    return nullptr;
}

const kernels::DeviceExperts* CudaOps::experts(const model::ExpertMatrix& m) {
    auto it = experts_.find(m.data);
    if (it != experts_.end() && it->second.members.size() == 1) return &it->second.experts;
    if (error_) error_ = make_error("cuda: expert matrices the model did not declare");
    return nullptr;
}

const kernels::DeviceExperts* CudaOps::stacked_experts(const model::ExpertMatrix& gate, const model::ExpertMatrix& up) const {
    auto it = experts_.find(gate.data);
    if (it == experts_.end() || it->second.members.size() != 2 || it->second.members[1] != up.data ||
        it->second.rows[0] != it->second.rows[1] || it->second.rows[0] % 4 != 0)
        return nullptr;
    return &it->second.experts;
}

Status CudaOps::begin_step(const Batch& batch, std::span<const int32_t> row_sequence, const StepLayout& layout) {
    error_ = {};
    const auto n = static_cast<size_t>(batch.n_tokens());
    const auto n_seqs = batch.sequences.size();
    size_t max_blocks = 1;
    int32_t max_len = 0, max_query = 0, min_query = batch.sequences.empty() ? 0 : INT32_MAX;
    for (const BatchSequence& s : batch.sequences) {
        max_blocks = std::max(max_blocks, s.block_table.size());
        max_len = std::max(max_len, s.seq_len);
        max_query = std::max(max_query, s.n_query);
        min_query = std::min(min_query, s.n_query);
    }
    if (layout.for_graph) {
        max_blocks = static_cast<size_t>(layout.max_blocks);
        max_len = layout.max_seq_len;
    }
    // One host image of every array, each 256-byte aligned, copied in one go.
    size_t size = 0;
    auto place = [&size](size_t bytes) {
        const size_t at = size;
        size = (size + bytes + 255) / 256 * 256;
        return at;
    };
    const size_t o_ids = place(n * 4), o_pos = place(n * 4), o_slot = place(n * 8), o_row = place(n * 4);
    const size_t o_qs = place(n_seqs * 4), o_nq = place(n_seqs * 4), o_len = place(n_seqs * 4);
    const size_t o_tables = place(n_seqs * max_blocks * 4), o_logits = place(std::max<size_t>(1, batch.logits_rows.size()) * 4);
    DeviceBuffer& device = layout.for_graph ? graph_batch_device_ : batch_device_;
    if (!ok(batch_host_.reserve(size), "pinned batch buffer") || !grow(device, size, "batch buffer")) return error_;
    std::byte* h = batch_host_.data();
    auto put = [h](size_t at, const void* src, size_t bytes) {
        if (bytes) std::memcpy(h + at, src, bytes);
    };
    put(o_ids, batch.token_ids.data(), n * 4);
    put(o_pos, batch.positions.data(), n * 4);
    put(o_slot, batch.slot_mapping.data(), n * 8);
    put(o_row, row_sequence.data(), n * 4);
    auto* qs = reinterpret_cast<int32_t*>(h + o_qs);
    auto* nq = reinterpret_cast<int32_t*>(h + o_nq);
    auto* len = reinterpret_cast<int32_t*>(h + o_len);
    auto* tables = reinterpret_cast<int32_t*>(h + o_tables);
    for (size_t s = 0; s < n_seqs; ++s) {
        const BatchSequence& seq = batch.sequences[s];
        qs[s] = seq.query_start;
        nq[s] = seq.n_query;
        len[s] = seq.seq_len;
        std::fill_n(std::copy(seq.block_table.begin(), seq.block_table.end(), tables + s * max_blocks),
                    max_blocks - seq.block_table.size(), 0);
    }
    put(o_logits, batch.logits_rows.data(), batch.logits_rows.size() * 4);
    if (!ok(cudaMemcpyAsync(device.data(), h, size, cudaMemcpyHostToDevice, stream_), "batch upload")) return error_;

    auto* d = static_cast<std::byte*>(device.data());
    token_ids_ = reinterpret_cast<const int32_t*>(d + o_ids);
    logits_rows_ = reinterpret_cast<const int32_t*>(d + o_logits);
    meta_.positions = reinterpret_cast<const int32_t*>(d + o_pos);
    meta_.slot_mapping = reinterpret_cast<const int64_t*>(d + o_slot);
    meta_.row_seq = reinterpret_cast<const int32_t*>(d + o_row);
    meta_.query_start = reinterpret_cast<const int32_t*>(d + o_qs);
    meta_.n_query = reinterpret_cast<const int32_t*>(d + o_nq);
    meta_.seq_len = reinterpret_cast<const int32_t*>(d + o_len);
    meta_.block_tables = reinterpret_cast<const int32_t*>(d + o_tables);
    meta_.n_tokens = static_cast<int32_t>(n);
    meta_.n_seqs = static_cast<int32_t>(n_seqs);
    meta_.max_blocks = static_cast<int32_t>(max_blocks);
    meta_.max_seq_len = max_len;
    meta_.max_n_query = max_query;
    meta_.min_n_query = min_query;
    return {};
}

float* CudaOps::buffer(model::Buffer which, int64_t n) {
    DeviceBuffer& buf = buffers_[static_cast<size_t>(which)];
    grow(buf, static_cast<size_t>(n) * sizeof(float), "activation buffer");
    return static_cast<float*>(buf.data());
}

Status CudaOps::embed(const model::Weight& table, const Batch& batch, float* out) {
    ++op_;
    if (!error_) return error_;  // a failed launch or allocation earlier in this step: launch nothing more
    const kernels::DeviceMatrix* m = matrix(table);
    if (m) ok(kernels::gather_rows(*m, token_ids_, batch.n_tokens(), out, stream_), "embedding");
    return error_;
}

void CudaOps::select_logit_rows(const Batch& batch, const float* x, int64_t dim, float* out) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    const auto n = static_cast<int64_t>(batch.logits_rows.size());
    if (n > 0) ok(kernels::gather_rows_f32(x, logits_rows_, n, dim, out, stream_), "logit rows");
}

void CudaOps::rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim, float* out) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (n_rows == 0) return;
    if (const float* w = vector(weight, "rms_norm"))
        ok(kernels::rms_norm(x, w, eps, n_rows, dim, out, stream_, quantize_for_next(out, n_rows * dim)), "rms_norm");
}

void CudaOps::qk_norm(float* q, const float* q_weight, int64_t q_rows, float* k, const float* k_weight, int64_t k_rows,
                      float eps, int64_t dim) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    const float* wq = vector(q_weight, "q norm");
    const float* wk = wq ? vector(k_weight, "k norm") : nullptr;
    if (wk) ok(kernels::rms_norm_pair(q, wq, q_rows, k, wk, k_rows, eps, dim, stream_), "qk_norm");
}

void CudaOps::add_rms_norm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t dim,
                           float* out) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (const float* w = vector(weight, "add_rms_norm"))
        ok(kernels::add_rms_norm(x, y, w, eps, n_rows, dim, out, stream_, quantize_for_next(out, n_rows * dim)),
           "add_rms_norm");
}

kernels::ActivationFormat CudaOps::fused_format() const {
    // The form most matrices read their input in (ties: the first).
    size_t best = 0;  // None
    for (size_t f = 1; f < format_count_.size(); ++f)
        if (format_count_[f] > (best ? format_count_[best] : 0)) best = f;
    return static_cast<kernels::ActivationFormat>(best);
}

kernels::ActivationQuant CudaOps::quantize_for_next(const float* out, int64_t count) {
    quantized_ = {};
    const kernels::ActivationFormat format = fused_format();
    if (format == kernels::ActivationFormat::None || count <= 0 || count % 32 != 0) return {};
    if (!grow(matmul_scratch_, kernels::activation_workspace_bytes(format, count), "matmul workspace")) return {};
    quantized_ = {out, count, format, op_};
    return {format, matmul_scratch_.data()};
}

bool CudaOps::takes_quantized(const kernels::DeviceMatrix& m, const float* x, int64_t n_rows) const {
    return quantized_.x == x && quantized_.op + 1 == op_ && quantized_.count == n_rows * m.cols &&
           quantized_.format == kernels::fused_activation_format(m.type);
}

bool CudaOps::use_workspace(const kernels::DeviceMatrix& m, const float* x, int64_t n_rows, size_t bytes) {
    // A workspace that has to grow loses what the producer wrote into it.
    const bool quantized = takes_quantized(m, x, n_rows) && bytes <= matmul_scratch_.size();
    if (!grow(matmul_scratch_, bytes, "matmul workspace")) return false;
    matmul_ws_.data = matmul_scratch_.data();
    matmul_ws_.bytes = matmul_scratch_.size();
    matmul_ws_.x_in_workspace = quantized;
    return true;
}

Status CudaOps::matmul(const model::Weight& w, const float* x, int64_t n_rows, float* y) {
    ++op_;
    if (!error_) return error_;  // a failed launch or allocation earlier in this step: launch nothing more
    if (n_rows == 0) return error_;
    const kernels::DeviceMatrix* m = matrix(w);
    if (!m) return error_;
    if (!use_workspace(*m, x, n_rows, kernels::matmul_workspace_bytes(m->type, n_rows, m->rows, m->cols))) return error_;
    ok(kernels::matmul(*m, x, n_rows, y, matmul_ws_, stream_), "matmul");
    return error_;
}

Status CudaOps::matmuls(std::span<const model::Weight> w, const float* x, int64_t n_rows, std::span<float* const> y) {
    ++op_;
    if (!error_) return error_;  // a failed launch or allocation earlier in this step: launch nothing more
    auto it = w.empty() ? stacked_.end() : stacked_.find(w[0].data);
    if (it == stacked_.end()) return Ops::matmuls(w, x, n_rows, y);
    const Stacked& st = it->second;
    if (w.size() != st.members.size() || y.size() != w.size()) return make_error("cuda: matmuls over a partial group");
    for (size_t i = 0; i < w.size(); ++i)
        if (w[i].data != st.members[i]) return make_error("cuda: matmuls over another group than the one stored");
    if (n_rows == 0) return error_;
    if (y.size() > static_cast<size_t>(kernels::kMaxSplitParts)) return make_error("cuda: more stacked matrices than split parts");
    // One product over the stacked rows, each member's rows straight into its y.
    kernels::SplitParts parts;
    for (size_t i = 0; i < y.size(); ++i) {
        parts.dst[i] = y[i];
        parts.width[i] = st.rows[i];
    }
    parts.count = static_cast<int>(y.size());
    if (!use_workspace(st.matrix, x, n_rows,
                       kernels::matmul_parts_workspace_bytes(st.matrix.type, n_rows, st.matrix.rows, st.matrix.cols)))
        return error_;
    ok(kernels::matmul_parts(st.matrix, x, n_rows, parts, matmul_ws_, stream_), "matmul");
    return error_;
}

// Where the stacked gate/up product is a cuBLAS GEMM, matmuls() would split
// its [n_rows][2 * width] result into gate and up (8 bytes an element; for
// pp512 on the 8B shape 117 MB a layer): here the activation reads both
// halves from the product as it is instead, and writes gate (and the down
// projection's input) once. The same bits either way.
Status CudaOps::gated_matmuls(std::span<const model::Weight> w, Glu act, const float* x, int64_t n_rows, float* gate,
                              float* up) {
    auto it = w.size() == 2 ? stacked_.find(w[0].data) : stacked_.end();
    if (it == stacked_.end() || it->second.members.size() != 2 || it->second.members[1] != w[1].data ||
        it->second.rows[0] != it->second.rows[1] || it->second.rows[0] % 4 != 0 ||
        !kernels::matmul_parts_split(it->second.matrix.type, n_rows))
        return Ops::gated_matmuls(w, act, x, n_rows, gate, up);
    ++op_;
    if (!error_) return error_;  // a failed launch or allocation earlier in this step: launch nothing more
    const Stacked& st = it->second;
    const int64_t width = st.rows[0];
    if (!grow(stacked_scratch_, static_cast<size_t>(n_rows * st.matrix.rows) * sizeof(float), "stacked product"))
        return error_;
    auto* y = static_cast<float*>(stacked_scratch_.data());
    if (!use_workspace(st.matrix, x, n_rows, kernels::matmul_workspace_bytes(st.matrix.type, n_rows, st.matrix.rows,
                                                                             st.matrix.cols)))
        return error_;
    if (!ok(kernels::matmul(st.matrix, x, n_rows, y, matmul_ws_, stream_), "matmul")) return error_;
    ++op_;  // the activation: the down projection, the next op, may take what it quantized
    const kernels::ActivationQuant q = quantize_for_next(gate, n_rows * width);
    ok(act == Glu::Silu ? kernels::silu_mul_rows(y, n_rows, width, gate, stream_, q)
                        : kernels::gelu_mul_rows(y, n_rows, width, gate, stream_, q),
       act == Glu::Silu ? "silu_mul" : "gelu_mul");
    return error_;
}

// The block of folio_kernels/moe.h: nothing comes back to the host, so the
// step stays one graph. Scratch, each part 256-byte aligned: the router's
// logits, the routing, the gate and up products ([n_rows * k][2 n_ff] when
// they are stored as one), their SwiGLU and the down products, all in
// sorted order.
Status CudaOps::moe_ffn(const model::MoeFfn& ffn, const float* x, int64_t n_rows, float* out) {
    if (!error_) return error_;  // a failed launch or allocation earlier in this step: launch nothing more
    FOLIO_RETURN_IF_ERROR(model::check_moe_ffn(ffn));
    if (n_rows == 0) return error_;
    const kernels::DeviceExperts* gate_up = stacked_experts(ffn.gate, ffn.up);
    const kernels::DeviceExperts *gate = gate_up ? gate_up : experts(ffn.gate), *up = gate_up ? nullptr : experts(ffn.up),
                                 *down = experts(ffn.down);
    if (!gate || (!gate_up && !up) || !down) return error_;
    const int64_t n_embd = ffn.router.in_features, n_ff = down->cols;
    const auto n_expert = static_cast<int32_t>(ffn.router.out_features);
    const int32_t k = ffn.n_used;
    const int64_t entries = n_rows * k;
    auto floats = [](int64_t count) { return (static_cast<size_t>(count) * sizeof(float) + 255) / 256 * 256; };
    const size_t o_routing = floats(n_rows * n_expert);
    const size_t o_gate = o_routing + kernels::expert_routing_bytes(n_rows, k, n_expert);
    const size_t o_up = o_gate + floats(entries * 2 * n_ff), o_down = o_up + floats(entries * n_ff);
    const size_t total = o_down + floats(entries * n_embd);
    if (!grow(moe_scratch_, total, "expert scratch")) return error_;
    auto* base = static_cast<std::byte*>(moe_scratch_.data());
    auto* logits = reinterpret_cast<float*>(base);
    auto* g = reinterpret_cast<float*>(base + o_gate);
    auto* u = reinterpret_cast<float*>(base + o_up);  // stored as one: the SwiGLU
    auto* d = reinterpret_cast<float*>(base + o_down);
    const kernels::ExpertRouting r = kernels::expert_routing(base + o_routing, n_rows, k, n_expert);

    const kernels::DeviceMatrix* router = matrix(ffn.router);
    if (!router) return error_;
    if (kernels::router_logits_supported(*router)) {
        if (!ok(kernels::router_logits(*router, x, n_rows, logits, stream_), "expert router")) return error_;
    } else {
        FOLIO_RETURN_IF_ERROR(matmul(ffn.router, x, n_rows, logits));
    }
    ++op_;  // the rest: nothing after it takes what an earlier kernel quantized
    const size_t ws = std::max(kernels::grouped_matmul_workspace_bytes(gate->type, entries, gate->cols),
                               kernels::grouped_matmul_workspace_bytes(down->type, entries, down->cols));
    if (!grow(matmul_scratch_, std::max<size_t>(ws, 256), "matmul workspace")) return error_;
    void* w = matmul_scratch_.data();
    if (!ok(kernels::route_and_group_experts(logits, n_rows, n_expert, k, ffn.norm_weights, r, stream_), "expert routing") ||
        !ok(kernels::grouped_matmul(*gate, x, r.x_row, entries, n_rows, r, g, w, false, stream_), "expert gate"))
        return error_;
    float* h = gate_up ? u : g;  // the down projection's input
    if (gate_up) {
        if (!ok(kernels::silu_mul_rows(g, entries, n_ff, h, stream_), "expert silu_mul")) return error_;
    } else {
        // up reads the rows gate quantized when their types are the same.
        if (!ok(kernels::grouped_matmul(*up, x, r.x_row, entries, n_rows, r, u, w, up->type == gate->type, stream_),
                "expert up") ||
            !ok(kernels::silu_mul(g, u, entries * n_ff, stream_), "expert silu_mul"))
            return error_;
    }
    if (ok(kernels::grouped_matmul(*down, h, nullptr, entries, n_rows, r, d, w, false, stream_), "expert down"))
        ok(kernels::combine_experts(d, r, n_rows, k, n_embd, out, stream_), "expert combine");
    return error_;
}

bool CudaOps::kernel_rope(const model::RopeParams& from, kernels::RopeParams& rope) {
    rope = {from.base, from.scale, from.style == RopeStyle::SplitHalf};
    rope.ext_factor = from.ext_factor;
    rope.yarn_low = from.yarn_low;
    rope.yarn_high = from.yarn_high;
    rope.mscale = from.mscale;
    return !from.freq_factors || (rope.freq_factors = vector(from.freq_factors, "rope frequency factors"));
}

Status CudaOps::shift_keys(int layer, std::span<const int32_t> blocks, int32_t delta, const model::RopeParams& rope) {
    if (!error_) return error_;
    if (layer < 0 || layer >= cache_.n_layer) return make_error("shift_keys: no layer " + std::to_string(layer));
    kernels::RopeParams turn;
    if (!kernel_rope(rope, turn)) return error_;
    turn.mscale = 1.0f;  // a rotation: the keys carry their magnitude already
    if (!grow(shift_blocks_, blocks.size_bytes(), "shifted block ids", InGraphs::No)) return error_;
    if (!ok(cudaMemcpyAsync(shift_blocks_.data(), blocks.data(), blocks.size_bytes(), cudaMemcpyHostToDevice, stream_),
            "shifted block ids"))
        return error_;
    ok(kernels::shift_keys(cache_.layers[static_cast<size_t>(layer)], reinterpret_cast<const int32_t*>(shift_blocks_.data()),
                           static_cast<int32_t>(blocks.size()), delta, turn, stream_),
       "shift keys");
    return error_;
}

Status CudaOps::attention(const model::AttentionParams& p, const Batch&, float* q, float* k, const float* v,
                          float* out) {
    ++op_;
    if (!error_) return error_;  // a failed launch or allocation earlier in this step: launch nothing more
    if (p.layer < 0 || p.layer >= cache_.n_layer || p.n_head_kv != cache_.n_head_kv || p.head_dim != cache_.head_dim)
        return make_error("attention: layer shape does not match the KV cache");
    const kernels::PagedKvLayer& kv = cache_.layers[static_cast<size_t>(p.layer)];
    kernels::RopeParams rope;
    if (!kernel_rope(p.rope, rope)) return error_;
    if (!ok(kernels::rope_store_kv(q, k, v, p.n_head, kv, rope, meta_, stream_), "rope + KV write")) return error_;
    if (!grow(attention_scratch_, kernels::attention_workspace_bytes(meta_, p.n_head, p.head_dim), "attention workspace"))
        return error_;
    kernels::AttentionParams ap;
    ap.n_head = p.n_head;
    ap.scale = p.scale;
    ap.sliding_window = static_cast<int32_t>(p.sliding_window);
    ap.softcap = p.logit_softcap;
    // The O projection, the next op, may take the output in its own form (F16 for cuBLAS) from here.
    const kernels::ActivationQuant act = quantize_for_next(out, int64_t{meta_.n_tokens} * p.n_head * p.head_dim);
    ok(kernels::paged_attention(q, kv, meta_, ap, out, attention_scratch_.data(), attention_scratch_.size(), stream_,
                                act),
       "paged attention");
    return error_;
}

void CudaOps::silu_mul(float* gate, const float* up, int64_t n) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (n) ok(kernels::silu_mul(gate, up, n, stream_, quantize_for_next(gate, n)), "silu_mul");
}

void CudaOps::gelu_mul(float* gate, const float* up, int64_t n) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (n) ok(kernels::gelu_mul(gate, up, n, stream_, quantize_for_next(gate, n)), "gelu_mul");
}

void CudaOps::add(float* x, const float* y, int64_t n) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (n) ok(kernels::add(x, y, n, stream_), "add");
}

void CudaOps::add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (const float* b = vector(bias, "add_bias")) ok(kernels::add_bias(x, b, n_rows, dim, stream_), "add_bias");
}

void CudaOps::scale(float* x, float s, int64_t n) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (n) ok(kernels::scale(x, s, n, stream_), "scale");
}

void CudaOps::softcap(float* x, float cap, int64_t n) {
    ++op_;
    if (!error_) return;  // a failed launch or allocation earlier in this step: launch nothing more
    if (n) ok(kernels::softcap(x, cap, n, stream_), "softcap");
}

float* CudaOps::logits_target(std::span<float>, int64_t n) { return buffer(model::Buffer::Logits, std::max<int64_t>(1, n)); }

Status CudaOps::to_host(const float* src, std::span<float> dst, int64_t n) {
    if (capturing_) return error_;
    if (!error_) {
        cudaStreamSynchronize(stream_);
        return error_;
    }
    if (n > 0)
        ok(cudaMemcpyAsync(dst.data(), src, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost, stream_),
           "download");
    ok(cudaStreamSynchronize(stream_), "step");
    return error_;
}

Status CudaOps::add_column_stats(const float* x, int64_t n_rows, int64_t dim, std::span<float> squares,
                                 std::span<double> abs) {
    if (capturing_) return make_error("add_column_stats: not in a CUDA graph");
    if (!error_ || n_rows <= 0) return error_;
    const int64_t work = kernels::column_stats_workspace_floats(n_rows, dim);
    const size_t totals = static_cast<size_t>(2 * dim) * sizeof(float);
    if (!grow(stats_scratch_, static_cast<size_t>(work) * sizeof(float) + totals, "column statistics", InGraphs::No))
        return error_;
    if (!ok(stats_host_.reserve(totals), "column statistics (pinned)")) return error_;
    float* out = static_cast<float*>(stats_scratch_.data()) + work;
    if (!ok(kernels::column_stats(x, n_rows, dim, out, static_cast<float*>(stats_scratch_.data()), stream_),
            "column statistics") ||
        !ok(cudaMemcpyAsync(stats_host_.data(), out, totals, cudaMemcpyDeviceToHost, stream_), "download") ||
        !ok(cudaStreamSynchronize(stream_), "step"))
        return error_;
    const auto* host = reinterpret_cast<const float*>(stats_host_.data());
    for (int64_t j = 0; j < dim; ++j) squares[static_cast<size_t>(j)] += host[j];
    if (!abs.empty())
        for (int64_t j = 0; j < dim; ++j) abs[static_cast<size_t>(j)] += host[dim + j];
    return error_;
}

Status CudaOps::choose_tokens(const float* logits, int64_t n_rows, int64_t vocab, std::span<int32_t> ids) {
    if (capturing_) return error_;
    if (static_cast<int64_t>(ids.size()) < n_rows) return make_error("choose_tokens: the id buffer is too small");
    if (!error_) {
        cudaStreamSynchronize(stream_);
        return error_;
    }
    // Only each row's chosen id comes back.
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(n_rows, 1)) * sizeof(int32_t);
    if (n_rows > 0 && grow(argmax_device_, bytes, "argmax ids", InGraphs::No) &&
        ok(kernels::argmax_rows(logits, n_rows, vocab, static_cast<int32_t*>(argmax_device_.data()), stream_), "argmax"))
        ok(cudaMemcpyAsync(ids.data(), argmax_device_.data(), static_cast<size_t>(n_rows) * sizeof(int32_t),
                           cudaMemcpyDeviceToHost, stream_),
           "download");
    ok(cudaStreamSynchronize(stream_), "step");
    return error_;
}

Status CudaOps::draw_tokens(float* logits, int64_t n_rows, int64_t vocab, const RowDraws& draws,
                            std::span<int32_t> ids) {
    if (capturing_) return error_;
    const auto rows = static_cast<size_t>(std::max<int64_t>(n_rows, 0));
    if (ids.size() < rows || draws.temperatures.size() < rows || draws.uniforms.size() < rows)
        return make_error("draw_tokens: " + std::to_string(rows) + " rows for too few draws or ids");
    if (!error_) {
        cudaStreamSynchronize(stream_);
        return error_;
    }
    // Uniforms (double) first, then temperatures, drawn ids, the penalty
    // lists (offsets, params, ids, counts), then draw_rows' workspace.
    const size_t n_penalties = draws.penalty_ids.size();
    const size_t temps_at = rows * sizeof(double), ids_at = temps_at + rows * sizeof(float);
    const size_t offsets_at = ids_at + rows * sizeof(int32_t);
    const size_t params_at = offsets_at + (n_penalties ? (rows + 1) * sizeof(int32_t) : 0);
    const size_t penalty_ids_at = params_at + (n_penalties ? 3 * rows * sizeof(float) : 0);
    const size_t penalty_counts_at = penalty_ids_at + n_penalties * sizeof(int32_t);
    const size_t workspace_at = (penalty_counts_at + n_penalties * sizeof(float) + 255) / 256 * 256;
    const size_t workspace_bytes = kernels::draw_rows_workspace_bytes(n_rows, vocab);
    // Top-p and min-p rows are drawn after draw_rows has penalized them
    // (below): there they count as greedy, which skips the temperature
    // draw's sums.
    std::vector<size_t> top_p_rows;
    std::vector<WholeRowDraw> top_p;
    std::vector<float> temperatures(draws.temperatures.begin(), draws.temperatures.begin() + rows);
    for (size_t r = 0; r < rows && !draws.top_p.empty(); ++r)
        if ((draws.top_p[r] < 1.0f || draws.min_p[r] > 0.0f) && draws.temperatures[r] > 0.0f) {
            top_p_rows.push_back(r);
            top_p.push_back({draws.temperatures[r], draws.top_p[r], draws.min_p[r], draws.uniforms[r]});
            temperatures[r] = 0.0f;
        }
    if (rows > 0 && grow(draw_device_, workspace_at + workspace_bytes, "draws", InGraphs::No)) {
        auto* base = static_cast<char*>(draw_device_.data());
        auto upload = [&](size_t at, const void* src, size_t bytes) {
            return ok(cudaMemcpyAsync(base + at, src, bytes, cudaMemcpyHostToDevice, stream_), "upload");
        };
        kernels::DrawPenalties penalties;
        bool uploaded = upload(0, draws.uniforms.data(), rows * sizeof(double)) &&
                        upload(temps_at, temperatures.data(), rows * sizeof(float));
        if (n_penalties > 0) {
            uploaded = uploaded && upload(offsets_at, draws.penalty_offsets.data(), (rows + 1) * sizeof(int32_t)) &&
                       upload(params_at, draws.penalty_params.data(), 3 * rows * sizeof(float)) &&
                       upload(penalty_ids_at, draws.penalty_ids.data(), n_penalties * sizeof(int32_t)) &&
                       upload(penalty_counts_at, draws.penalty_counts.data(), n_penalties * sizeof(float));
            penalties = {reinterpret_cast<const int32_t*>(base + offsets_at),
                         reinterpret_cast<const int32_t*>(base + penalty_ids_at),
                         reinterpret_cast<const float*>(base + penalty_counts_at),
                         reinterpret_cast<const float*>(base + params_at)};
        }
        auto* chosen = reinterpret_cast<int32_t*>(base + ids_at);
        if (uploaded && ok(kernels::draw_rows(logits, n_rows, vocab,
                                              reinterpret_cast<const float*>(base + temps_at),
                                              reinterpret_cast<const double*>(base), penalties, chosen,
                                              base + workspace_at, workspace_bytes, stream_),
                           "draw"))
            ok(cudaMemcpyAsync(ids.data(), chosen, rows * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_),
               "download");
    }
    ok(cudaStreamSynchronize(stream_), "step");
    if (top_p_rows.empty() || !error_) return error_;
    std::vector<DrawnToken> drawn(top_p_rows.size());
    if (Status s = top_p_draws(logits, vocab, top_p_rows, top_p, drawn); !s) return s;
    for (size_t i = 0; i < top_p_rows.size(); ++i) ids[top_p_rows[i]] = drawn[i].id;
    return error_;
}

Status CudaOps::top_k(const float* logits, int64_t n_rows, int64_t vocab, int32_t k, std::span<float> values,
                      std::span<int32_t> ids, const RowSums& sums) {
    if (capturing_) return error_;
    const auto n = static_cast<size_t>(n_rows) * static_cast<size_t>(std::max(k, 0));
    if (k < 1 || k > kernels::kMaxTopK || k > vocab || values.size() < n || ids.size() < n)
        return make_error("top_k: " + std::to_string(k) + " of " + std::to_string(vocab) + " into too small a buffer");
    if (Status checked = model::check_row_sums(sums, n_rows); !checked) return checked;
    if (!error_) {
        cudaStreamSynchronize(stream_);
        return error_;
    }
    last_logits_ = logits;
    last_rows_ = n_rows;
    last_vocab_ = vocab;
    // Only the k best of each row come back: values, then ids, then the
    // rows' sums (double sums, float log-normalizers, float temperatures
    // going in), then the kernel's workspace (few long rows are split over
    // several blocks), one buffer.
    const auto rows = static_cast<size_t>(std::max<int64_t>(n_rows, 0));
    const size_t sums_at = (n * (sizeof(float) + sizeof(int32_t)) + sizeof(double) - 1) / sizeof(double) * sizeof(double);
    const size_t out_bytes = sums.empty() ? n * (sizeof(float) + sizeof(int32_t))
                                          : sums_at + rows * (sizeof(double) + 2 * sizeof(float));
    const size_t workspace_bytes = kernels::top_k_workspace_bytes(n_rows, vocab, k);
    if (n > 0 && grow(top_k_device_, out_bytes + workspace_bytes, "top-k entries", InGraphs::No)) {
        auto* values_device = static_cast<float*>(top_k_device_.data());
        auto* ids_device = reinterpret_cast<int32_t*>(values_device + n);
        void* workspace = static_cast<char*>(top_k_device_.data()) + out_bytes;
        if (ok(kernels::top_k_rows(logits, n_rows, vocab, k, values_device, ids_device, stream_, workspace,
                                   workspace_bytes),
               "top-k") &&
            ok(cudaMemcpyAsync(values.data(), values_device, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
               "download"))
            ok(cudaMemcpyAsync(ids.data(), ids_device, n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_), "download");
        if (!sums.empty() && error_) {
            // The row maxima are the first entries of each row's k best.
            auto* sums_device = reinterpret_cast<double*>(static_cast<char*>(top_k_device_.data()) + sums_at);
            auto* normalizers_device = reinterpret_cast<float*>(sums_device + rows);
            float* temperatures_device = normalizers_device + rows;
            if (ok(cudaMemcpyAsync(temperatures_device, sums.temperatures.data(), rows * sizeof(float),
                                   cudaMemcpyHostToDevice, stream_),
                   "upload") &&
                ok(kernels::softmax_sums(logits, n_rows, vocab, values_device, k, temperatures_device, sums_device,
                                         normalizers_device, stream_),
                   "softmax sums") &&
                ok(cudaMemcpyAsync(sums.softmax_sums.data(), sums_device, rows * sizeof(double),
                                   cudaMemcpyDeviceToHost, stream_),
                   "download"))
                ok(cudaMemcpyAsync(sums.log_normalizers.data(), normalizers_device, rows * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream_),
                   "download");
        }
    }
    ok(cudaStreamSynchronize(stream_), "step");
    return error_;
}

Status CudaOps::check_last_rows(std::span<const size_t> rows, const char* what) const {
    for (const size_t row : rows)
        if (!last_logits_ || row >= static_cast<size_t>(last_rows_))
            return make_error(std::string(what) + ": row " + std::to_string(row) + " is not in the last top-k step");
    return error_;
}

Status CudaOps::last_logits_rows(std::span<const size_t> rows, std::span<float> out) {
    const auto vocab = static_cast<size_t>(last_vocab_);
    if (out.size() < rows.size() * vocab) return make_error("last_logits_rows: too small a buffer");
    if (Status checked = check_last_rows(rows, "last_logits_rows"); !checked) return checked;
    for (size_t i = 0; i < rows.size() && error_; ++i)
        ok(cudaMemcpyAsync(out.data() + i * vocab, last_logits_ + rows[i] * vocab, vocab * sizeof(float),
                           cudaMemcpyDeviceToHost, stream_),
           "download");
    ok(cudaStreamSynchronize(stream_), "step");
    return error_;
}

Status CudaOps::draw_last_rows(std::span<const size_t> rows, std::span<const WholeRowDraw> draws,
                               std::span<DrawnToken> out) {
    if (draws.size() != rows.size() || out.size() < rows.size())
        return make_error("draw_last_rows: rows, draws and outputs differ in number");
    if (Status checked = check_last_rows(rows, "draw_last_rows"); !checked) return checked;
    // Two groups: by temperature alone, by top-p or min-p.
    std::vector<size_t> at[2], group_rows[2];
    std::vector<WholeRowDraw> group_draws[2];
    for (size_t i = 0; i < rows.size(); ++i) {
        const int g = draws[i].top_p < 1.0f || draws[i].min_p > 0.0f ? 1 : 0;
        at[g].push_back(i), group_rows[g].push_back(rows[i]), group_draws[g].push_back(draws[i]);
    }
    for (int g = 0; g < 2 && error_; ++g) {
        if (at[g].empty()) continue;
        std::vector<DrawnToken> drawn(at[g].size());
        const Status s = g == 0 ? temperature_draws(last_logits_, last_vocab_, group_rows[g], group_draws[g], drawn)
                                : top_p_draws(last_logits_, last_vocab_, group_rows[g], group_draws[g], drawn);
        if (!s) return s;
        for (size_t j = 0; j < at[g].size(); ++j) out[at[g][j]] = drawn[j];
    }
    return error_;
}

Status CudaOps::temperature_draws(const float* logits, int64_t vocab, std::span<const size_t> rows,
                                  std::span<const WholeRowDraw> draws, std::span<DrawnToken> out) {
    const size_t n = rows.size();
    if (n == 0 || !error_) return error_;
    // One upload (row indices, temperatures, uniforms), the drawn ids and
    // their logits after them (one download), then draw_rows' workspace.
    auto align = [](size_t v, size_t to) { return (v + to - 1) / to * to; };
    const size_t temps_at = n * sizeof(int32_t), uniforms_at = align(temps_at + n * sizeof(float), 8);
    const size_t ids_at = uniforms_at + n * sizeof(double), logits_at = ids_at + n * sizeof(int32_t);
    const size_t work_at = align(logits_at + n * sizeof(float), 256);
    const size_t work_bytes = kernels::draw_rows_workspace_bytes(static_cast<int64_t>(n), vocab);
    if (!grow(temperature_device_, work_at + work_bytes, "temperature draws", InGraphs::No)) return error_;
    std::vector<std::byte> host(ids_at);
    for (size_t i = 0; i < n; ++i) {
        const auto row = static_cast<int32_t>(rows[i]);
        std::memcpy(host.data() + i * sizeof(int32_t), &row, sizeof row);
        std::memcpy(host.data() + temps_at + i * sizeof(float), &draws[i].temperature, sizeof(float));
        std::memcpy(host.data() + uniforms_at + i * sizeof(double), &draws[i].uniform, sizeof(double));
    }
    auto* base = static_cast<std::byte*>(temperature_device_.data());
    std::vector<std::byte> drawn(work_at - ids_at);
    // Without penalties draw_rows leaves the rows as they are.
    if (ok(cudaMemcpyAsync(base, host.data(), ids_at, cudaMemcpyHostToDevice, stream_), "upload") &&
        ok(kernels::draw_rows(const_cast<float*>(logits), static_cast<int64_t>(n), vocab,
                              reinterpret_cast<const float*>(base + temps_at),
                              reinterpret_cast<const double*>(base + uniforms_at), {},
                              reinterpret_cast<int32_t*>(base + ids_at), base + work_at, work_bytes, stream_,
                              reinterpret_cast<const int32_t*>(base), reinterpret_cast<float*>(base + logits_at)),
           "temperature draws"))
        ok(cudaMemcpyAsync(drawn.data(), base + ids_at, logits_at + n * sizeof(float) - ids_at,
                           cudaMemcpyDeviceToHost, stream_),
           "download");
    ok(cudaStreamSynchronize(stream_), "step");
    for (size_t i = 0; i < n && error_; ++i) {
        int32_t id = 0;
        float logit = 0.0f;
        std::memcpy(&id, drawn.data() + i * sizeof(int32_t), sizeof id);
        std::memcpy(&logit, drawn.data() + (logits_at - ids_at) + i * sizeof(float), sizeof logit);
        // As Sampler::sample reports a draw by temperature alone: from the whole vocabulary.
        out[i] = {id, static_cast<int32_t>(vocab), logit};
    }
    return error_;
}

Status CudaOps::top_p_draws(const float* logits, int64_t vocab, std::span<const size_t> rows,
                            std::span<const WholeRowDraw> draws, std::span<DrawnToken> out) {
    const size_t n = rows.size();
    if (n == 0 || !error_) return error_;
    // One upload (row indices, then [n][3] parameters, then uniforms), the
    // drawn tokens after them, then the kernel's workspace.
    auto align = [](size_t v, size_t to) { return (v + to - 1) / to * to; };
    const size_t params_at = align(n * sizeof(int32_t), 16), uniforms_at = params_at + align(n * 3 * sizeof(float), 16);
    const size_t out_at = align(uniforms_at + n * sizeof(double), 16);
    const size_t work_at = align(out_at + n * sizeof(kernels::TopPDrawn), 256);
    const size_t work_bytes = kernels::top_p_draw_workspace_bytes(static_cast<int64_t>(n), vocab);
    if (!grow(top_p_device_, work_at + work_bytes, "top-p draws", InGraphs::No)) {
        // No room for the sort: the rows come to the host and are drawn there, the same tokens.
        if (!top_p_on_host_)
            std::fprintf(stderr, "folio: %s; drawing wide top-p sets on the host\n", error_.error().message.c_str());
        top_p_on_host_ = true;
        error_ = {};
        std::vector<float> row(static_cast<size_t>(vocab));
        for (size_t i = 0; i < n && error_; ++i) {
            if (ok(cudaMemcpyAsync(row.data(), logits + rows[i] * static_cast<size_t>(vocab),
                                   row.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_),
                   "download"))
                ok(cudaStreamSynchronize(stream_), "download");
            SamplingParams p;
            p.temperature = draws[i].temperature, p.top_k = 0, p.top_p = draws[i].top_p, p.min_p = draws[i].min_p;
            SampleInfo info;
            const int32_t id = draw_with_uniform(row, p, draws[i].uniform, &info);
            out[i] = {id, info.n_candidates, sampling_math::clean(row[static_cast<size_t>(id)])};
        }
        return error_;
    }
    std::vector<std::byte> host(out_at);
    for (size_t i = 0; i < n; ++i) {
        const auto row = static_cast<int32_t>(rows[i]);
        const float p[3] = {draws[i].temperature, draws[i].top_p, draws[i].min_p};
        std::memcpy(host.data() + i * sizeof(int32_t), &row, sizeof row);
        std::memcpy(host.data() + params_at + i * sizeof p, p, sizeof p);
        std::memcpy(host.data() + uniforms_at + i * sizeof(double), &draws[i].uniform, sizeof(double));
    }
    auto* base = static_cast<std::byte*>(top_p_device_.data());
    std::vector<kernels::TopPDrawn> drawn(n);
    if (ok(cudaMemcpyAsync(base, host.data(), out_at, cudaMemcpyHostToDevice, stream_), "upload") &&
        ok(kernels::top_p_draw_rows(logits, reinterpret_cast<const int32_t*>(base), static_cast<int64_t>(n), vocab,
                                    reinterpret_cast<const float*>(base + params_at),
                                    reinterpret_cast<const double*>(base + uniforms_at),
                                    reinterpret_cast<kernels::TopPDrawn*>(base + out_at), base + work_at, work_bytes,
                                    stream_),
           "top-p draws"))
        ok(cudaMemcpyAsync(drawn.data(), base + out_at, n * sizeof(kernels::TopPDrawn), cudaMemcpyDeviceToHost,
                           stream_),
           "download");
    ok(cudaStreamSynchronize(stream_), "step");
    for (size_t i = 0; i < n && error_; ++i) out[i] = {drawn[i].id, drawn[i].n_candidates, drawn[i].logit};
    return error_;
}
}  // namespace folio::cuda
