// A model architecture: its tensors, bound by name from a ModelDescription,
// and its forward pass written with Ops. One architecture, one file
// (llama.cpp, gemma3.cpp); create_architecture() picks by
// hparams.architecture.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "folio/batch.h"
#include "folio/error.h"
#include "folio/model.h"
#include "model/ops.h"

namespace folio::model {

// What a backend must allocate for the KV cache.
struct KvShape {
    int n_layer = 0;
    int n_head_kv = 0;
    int head_dim = 0;
};

// The activations of one forward step, shared by every architecture, in the
// backend's memory (Ops::buffer): grown to the largest batch seen and then
// reused, so a warm decode step allocates nothing.
struct ActivationBuffers {
    float *x = nullptr, *h = nullptr, *q = nullptr, *k = nullptr, *v = nullptr;
    float *attn_out = nullptr, *gate = nullptr, *up = nullptr;
    float* logit_rows = nullptr;  // the rows that need logits, gathered before the output head

    void prepare(Ops& ops, int64_t n_tokens, int64_t n_logit_rows, int64_t n_embd, int64_t q_dim, int64_t kv_dim,
                 int64_t n_ff) {
        x = ops.buffer(Buffer::X, n_tokens * n_embd);
        h = ops.buffer(Buffer::H, n_tokens * n_embd);
        q = ops.buffer(Buffer::Q, n_tokens * q_dim);
        k = ops.buffer(Buffer::K, n_tokens * kv_dim);
        v = ops.buffer(Buffer::V, n_tokens * kv_dim);
        attn_out = ops.buffer(Buffer::AttnOut, n_tokens * q_dim);
        gate = ops.buffer(Buffer::Gate, n_tokens * n_ff);
        up = ops.buffer(Buffer::Up, n_tokens * n_ff);
        logit_rows = ops.buffer(Buffer::LogitRows, std::max<int64_t>(1, n_logit_rows) * n_embd);
    }
};

class Architecture {
public:
    virtual ~Architecture() = default;

    // Runs batch through the model; `out` gets (up to) batch.logits_rows.size()
    // rows of n_vocab logits, or those rows' argmax ids.
    virtual Status forward(Ops& ops, const Batch& batch, const StepOutput& out) = 0;

    virtual KvShape kv_shape() const = 0;
    // How layer `layer` rotates its queries and keys (AttentionParams::rope):
    // what the forward pass uses, and what a backend turns cached keys by
    // when it shifts them (Backend::shift_keys).
    virtual RopeParams rope(int layer) const = 0;
    virtual int32_t n_vocab() const = 0;
    // Every matrix the forward pass multiplies with, so a backend can check
    // it has kernels for their types before the first step (a GPU backend
    // copies them, and embedding(), to the device).
    virtual std::vector<Weight> matrices() const = 0;
    // The weights the forward pass multiplies with one input in one
    // Ops::matmuls call (Q, K, V; gate, up), so a backend may store each
    // group as one matrix.
    virtual std::vector<std::vector<Weight>> matrix_groups() const { return {}; }
    // The stacked expert matrices Ops::moe_ffn multiplies with (none in a
    // dense model), for the same checks and copies as matrices().
    virtual std::vector<ExpertMatrix> expert_matrices() const { return {}; }
    // The expert matrices one Ops::moe_ffn multiplies one input with (gate,
    // up), so a backend may store each expert's rows of them as one matrix.
    virtual std::vector<std::vector<ExpertMatrix>> expert_groups() const { return {}; }
    // The token embedding table (Ops::embed reads rows of it).
    virtual Weight embedding() const = 0;
    // The longest sequence the backend will run (its max_context), told once
    // before the first forward and before vectors() is read; an architecture
    // whose RoPE depends on it (Phi-3's LongRoPE factors) chooses here.
    virtual void set_context_length(uint32_t) {}
    // Every vector (norm weights, biases) it hands to Ops, for a backend that
    // keeps its own copies.
    virtual std::vector<std::span<const float>> vectors() const = 0;
};

// The end of every forward pass: the rows of x that need logits
// (batch.logits_rows, gathered into `rows`), the final norm, the output head
// (logits capped at `softcap` when > 0), delivered as `out` asks.
Status output_head(Ops& ops, const Batch& batch, const float* x, float* rows, const float* norm, float eps,
                   int64_t n_embd, const Weight& output, float softcap, const StepOutput& out);
// The first n_rows rows of the step's logits (backend memory) to the host as
// `out` asks: whole rows, argmax ids, top-k entries, or drawn ids (whose
// penalties change the rows in place).
Status deliver(Ops& ops, float* logits, int64_t n_rows, int64_t vocab, const StepOutput& out);

// What Architecture::matrices() and matrix_groups() list for a stack of
// layers whose matrices are named wq wk wv wo ffn_gate ffn_up ffn_down (the
// llama block and its relatives), the output head first.
template <typename Layer>
std::vector<Weight> layer_matrices(const Weight& output, const std::vector<Layer>& layers) {
    std::vector<Weight> all = {output};
    for (const Layer& L : layers) all.insert(all.end(), {L.wq, L.wk, L.wv, L.wo, L.ffn_gate, L.ffn_up, L.ffn_down});
    return all;
}
template <typename Layer>
std::vector<std::vector<Weight>> layer_matrix_groups(const std::vector<Layer>& layers) {
    std::vector<std::vector<Weight>> groups;
    for (const Layer& L : layers) {
        groups.push_back({L.wq, L.wk, L.wv});
        groups.push_back({L.ffn_gate, L.ffn_up});
    }
    return groups;
}

// The architecture of `model`, with its tensors bound and checked; an Error
// naming the architecture (or the missing / mis-shaped tensor) otherwise.
Result<std::unique_ptr<Architecture>> create_architecture(const ModelDescription& model);

Result<std::unique_ptr<Architecture>> create_llama(const ModelDescription& model);
Result<std::unique_ptr<Architecture>> create_qwen3(const ModelDescription& model);  // llama.cpp: the Qwen3 block
Result<std::unique_ptr<Architecture>> create_qwen3moe(const ModelDescription& model);  // llama.cpp: Qwen3 + experts
Result<std::unique_ptr<Architecture>> create_gemma3(const ModelDescription& model);
Result<std::unique_ptr<Architecture>> create_gemma2(const ModelDescription& model);  // gemma3.cpp, no QK-norm
Result<std::unique_ptr<Architecture>> create_phi3(const ModelDescription& model);

}  // namespace folio::model

// Returns the Status of `expr` from the enclosing function when it failed.
#define FOLIO_RETURN_IF_ERROR(expr)              \
    do {                                         \
        if (::folio::Status status_ = (expr); !status_) return status_; \
    } while (0)
