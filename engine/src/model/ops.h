// The handful of operations a transformer forward pass is made of, as an
// interface: architecture files (llama.cpp, gemma3.cpp) say *what* to compute
// with these, a backend (CPU now, CUDA later) says *how*. Activations are
// row-major float matrices, one row per batch row (token).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "folio/batch.h"
#include "folio/error.h"
#include "folio/model.h"
#include "folio/tensor_type.h"

namespace folio::model {

// A weight matrix as stored (GGUF block format): out_features rows of
// in_features elements. y = x · Wᵀ.
struct Weight {
    TensorType type = TensorType::F32;
    const std::byte* data = nullptr;
    int64_t in_features = 0;
    int64_t out_features = 0;
};

struct AttentionParams {
    int layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    float scale = 1.0f;             // applied to q·k
    uint32_t sliding_window = 0;    // 0 = attend to the whole prefix; else keys with q_pos - k_pos < window
    float logit_softcap = 0.0f;     // 0 = off; else scores = cap * tanh(scores / cap)
};

class Ops {
public:
    virtual ~Ops() = default;

    // out[i] = row ids[i] of `table` as floats ([n][in_features]).
    virtual Status embed(const Weight& table, std::span<const int32_t> ids, float* out) = 0;
    // Each of n_rows rows of `dim`: out = x / rms(x) * weight. out may be x.
    virtual void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim,
                          float* out) = 0;
    // y [n_rows][out_features] = x [n_rows][in_features] · Wᵀ.
    virtual Status matmul(const Weight& w, const float* x, int64_t n_rows, float* y) = 0;
    // y[i] = x · w[i]ᵀ for weights that share their input (Q, K, V; gate, up).
    // A backend may run them as one pass; by default one matmul each.
    virtual Status matmuls(std::span<const Weight> w, const float* x, int64_t n_rows, std::span<float* const> y) {
        if (w.size() != y.size()) return make_error("matmuls: " + std::to_string(w.size()) + " weights for " +
                                                    std::to_string(y.size()) + " outputs");
        for (size_t i = 0; i < w.size(); ++i)
            if (Status s = matmul(w[i], x, n_rows, y[i]); !s) return s;
        return {};
    }
    // Rotates each head of each row by its row's position (RoPE): angle
    // position / scale * base^(-2i/head_dim) for pair i, pairs laid out by `style`.
    virtual void rope(float* x, int64_t n_rows, int n_heads, int head_dim, std::span<const int32_t> positions,
                      float base, float scale, RopeStyle style) = 0;
    // Stores k, v ([n_tokens][n_head_kv * head_dim]) into the layer's KV
    // cache at batch.slot_mapping, then out[row] = softmax(q·Kᵀ·scale) V over
    // each sequence's causal (and windowed) prefix read through its block table.
    virtual Status attention(const AttentionParams& params, const Batch& batch, const float* q, const float* k,
                             const float* v, float* out) = 0;

    // gate[i] = silu(gate[i]) * up[i]   (SwiGLU)
    virtual void silu_mul(float* gate, const float* up, int64_t n) = 0;
    // gate[i] = gelu_tanh(gate[i]) * up[i]   (GeGLU)
    virtual void gelu_mul(float* gate, const float* up, int64_t n) = 0;
    // x[i] += y[i]
    virtual void add(float* x, const float* y, int64_t n) = 0;
    // x[r][c] += bias[c]
    virtual void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) = 0;
    // x[i] *= s
    virtual void scale(float* x, float s, int64_t n) = 0;
};

}  // namespace folio::model
