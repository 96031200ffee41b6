// The handful of operations a transformer forward pass is made of, as an
// interface: architecture files (llama.cpp, gemma3.cpp) say *what* to compute
// with these, a backend (CPU, CUDA) says *how*. Activations are row-major
// float matrices, one row per batch row (token), in memory the backend hands
// out (buffer()): host memory on the CPU, device memory on a GPU, so an
// architecture never reads or writes an activation itself. Weights and norm
// vectors are named by their host address; a backend that keeps its own
// copies (a GPU) maps the address to them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <string>
#include <vector>

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

// The matrices of n_expert experts stored as one 3-D GGUF tensor
// ([in_features, out_features, n_expert] in GGML order): expert e's matrix is
// a Weight of its own, the e-th run of out_features rows.
struct ExpertMatrix {
    TensorType type = TensorType::F32;
    const std::byte* data = nullptr;
    int64_t in_features = 0;
    int64_t out_features = 0;
    int32_t n_expert = 0;
    size_t expert_bytes = 0;  // bytes of one expert's matrix

    Weight expert(int32_t e) const {
        return {type, data + static_cast<size_t>(e) * expert_bytes, in_features, out_features};
    }
};

// A mixture-of-experts feed-forward block (Mixtral, Qwen3-MoE): each row
// goes to the n_used experts its router scores highest, and the block's
// output is their SwiGLU FFNs' outputs weighted by the router's softmax
// probabilities (renormalised over the chosen experts when norm_weights).
struct MoeFfn {
    Weight router;                  // ffn_gate_inp: [n_embd] -> [n_expert] logits
    ExpertMatrix gate, up, down;    // ffn_gate_exps, ffn_up_exps, ffn_down_exps
    int32_t n_used = 0;
    bool norm_weights = true;
};

// Rotary position embedding: pair i of a head turns by
// position * base^(-2i/head_dim) / freq_factors[i] / scale, in that order
// (GGML's: the factors divide the unscaled angle, then 1/scale multiplies
// it), pairs laid out by `style`. freq_factors (head_dim / 2 values, Llama
// 3.1's rope_freqs) is a host address like a norm weight's; null = all 1.
// YaRN (ext_factor > 0): pair i's angle is the interpolated one (times
// 1/scale) blended with the unscaled one by ramp(i) * ext_factor, ramp(i) =
// 1 - clamp((i - yarn_low) / max(0.001, yarn_high - yarn_low), 0, 1) (GGML's
// rope_yarn); cos and sin are multiplied by mscale (YaRN's 1 + 0.1 ln scale).
struct RopeParams {
    float base = 10000.0f;
    float scale = 1.0f;
    RopeStyle style = RopeStyle::Interleaved;
    const float* freq_factors = nullptr;
    float ext_factor = 0.0f;
    float yarn_low = 0.0f, yarn_high = 0.0f;  // the correction range, in pairs
    float mscale = 1.0f;

    // The angle of pair i at unscaled angle theta (position * base^(-2i/d)),
    // in GGML's order of float operations.
    float angle(float theta, int i) const {
        const float extrapolated = freq_factors ? theta / freq_factors[i] : theta;
        const float interpolated = extrapolated * (1.0f / scale);
        if (ext_factor == 0.0f) return interpolated;
        const float y = (static_cast<float>(i) - yarn_low) / std::max(0.001f, yarn_high - yarn_low);
        const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * ext_factor;
        return interpolated * (1.0f - mix) + extrapolated * mix;
    }
};

// YaRN's RopeParams for a model trained at context n_ctx_orig and extended by
// `factor` (GGML's ggml_rope_yarn_corr_dims, beta_fast 32 and beta_slow 1,
// the magnitude 1 + 0.1 ln factor times attn_factor, as llama.cpp sets it).
inline RopeParams yarn_rope(RopeParams rope, int head_dim, uint32_t n_ctx_orig, float factor, float attn_factor,
                            float beta_fast = 32.0f, float beta_slow = 1.0f) {
    auto corr_dim = [&](float n_rot) {
        return static_cast<float>(head_dim) *
               std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
               (2.0f * std::log(rope.base));
    };
    rope.scale = factor;
    rope.ext_factor = 1.0f;
    rope.yarn_low = std::max(0.0f, std::floor(corr_dim(beta_fast)));
    rope.yarn_high = std::min(static_cast<float>(head_dim - 1), std::ceil(corr_dim(beta_slow)));
    // llama.cpp: attn_factor * get_mscale(factor) / (1 + 0.1 ln factor), then GGML's rope_yarn multiplies
    // by 1 + 0.1 ln(1 / freq_scale) again: both in float, in that order.
    const float mscale = factor <= 1.0f ? 1.0f : 0.1f * std::log(factor) + 1.0f;
    float m = mscale * (1.0f / (1.0f + 0.1f * std::log(factor))) * attn_factor;
    m *= 1.0f + 0.1f * std::log(1.0f / (1.0f / factor));
    rope.mscale = m;
    return rope;
}

struct AttentionParams {
    int layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    float scale = 1.0f;             // applied to q·k
    uint32_t sliding_window = 0;    // 0 = attend to the whole prefix; else keys with q_pos - k_pos < window
    float logit_softcap = 0.0f;     // 0 = off; else scores = cap * tanh(scores / cap)
    RopeParams rope;
};

// What a step hands back to the host: each logits row; or only each row's
// highest-scoring id (greedy steps); or each row's top_k best entries
// (top-k sampling); or each row's token drawn by temperature alone
// (RowDraws) — in the last three the logits stay in the backend's memory.
// The caller may want fewer rows than the step computes (a batch padded to a
// CUDA graph's size): the first rows(vocab).
struct StepOutput {
    std::span<float> logits;        // all logits [rows][vocab], or top-k values [rows][top_k]
    std::span<int32_t> token_ids;   // argmax or drawn ids [rows], or top-k ids [rows][top_k]
    int32_t top_k = 0;
    RowSums sums;                   // with top-k: sums over each whole row, when asked for
    RowDraws draws;                 // with drawn ids: each row's temperature and uniform value

    static StepOutput all_logits(std::span<float> logits) { return {logits, {}, 0, {}, {}}; }
    static StepOutput argmax_ids(std::span<int32_t> ids) { return {{}, ids, 0, {}, {}}; }
    static StepOutput best_k(int32_t k, std::span<float> values, std::span<int32_t> ids, const RowSums& sums) {
        return {values, ids, k, sums, {}};
    }
    static StepOutput drawn_ids(const RowDraws& draws, std::span<int32_t> ids) { return {{}, ids, 0, {}, draws}; }
    // Only ids come back: argmax ids, or drawn ones (draws_tokens()).
    bool chooses_tokens() const { return top_k == 0 && !token_ids.empty(); }
    bool draws_tokens() const { return chooses_tokens() && !draws.uniforms.empty(); }
    bool keeps_top_k() const { return top_k > 0; }
    int64_t rows(int64_t vocab) const {
        if (keeps_top_k())
            return static_cast<int64_t>(std::min(logits.size(), token_ids.size())) / top_k;
        return chooses_tokens() ? static_cast<int64_t>(token_ids.size())
                                : static_cast<int64_t>(logits.size()) / std::max<int64_t>(1, vocab);
    }
};

// The activation buffers of a forward step (see ActivationBuffers).
enum class Buffer { X, H, Q, K, V, AttnOut, Gate, Up, LogitRows, Logits, Count };

class Ops {
public:
    virtual ~Ops() = default;

    // At least n floats of activation memory for `which`, kept (and reused)
    // across steps; a larger request may move it.
    virtual float* buffer(Buffer which, int64_t n) = 0;

    // out[i] = row batch.token_ids[i] of `table` as floats ([n_tokens][in_features]).
    virtual Status embed(const Weight& table, const Batch& batch, float* out) = 0;
    // out[i] = row batch.logits_rows[i] of x ([n][dim]).
    virtual void select_logit_rows(const Batch& batch, const float* x, int64_t dim, float* out) = 0;
    // Each of n_rows rows of `dim`: out = x / rms(x) * weight. out may be x.
    virtual void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim,
                          float* out) = 0;
    // Per-head norms of Q and K in place (Qwen3, Gemma 3): rms_norm of each of
    // q's q_rows and k's k_rows rows of `dim`; a backend may run both as one pass.
    virtual void qk_norm(float* q, const float* q_weight, int64_t q_rows, float* k, const float* k_weight,
                         int64_t k_rows, float eps, int64_t dim) {
        rms_norm(q, q_weight, eps, q_rows, dim, q);
        rms_norm(k, k_weight, eps, k_rows, dim, k);
    }
    // The residual add fused with the next norm: x += y, then out = rms_norm(x) * weight.
    virtual void add_rms_norm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t dim,
                              float* out) {
        add(x, y, n_rows * dim);
        rms_norm(x, weight, eps, n_rows, dim, out);
    }
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
    // Rotates q and k by their rows' positions (params.rope), stores k and v
    // ([n_tokens][n_head_kv * head_dim]) into the layer's KV cache at
    // batch.slot_mapping, then out[row] = softmax(q·Kᵀ·scale) V over each
    // sequence's causal (and windowed) prefix read through its block table.
    // q and k are scratch: a backend may rotate them in place.
    virtual Status attention(const AttentionParams& params, const Batch& batch, float* q, float* k, const float* v,
                             float* out) = 0;

    // gate[i] = silu(gate[i]) * up[i]   (SwiGLU)
    virtual void silu_mul(float* gate, const float* up, int64_t n) = 0;
    // gate[i] = gelu_tanh(gate[i]) * up[i]   (GeGLU)
    virtual void gelu_mul(float* gate, const float* up, int64_t n) = 0;
    // A gated feed-forward's input side: gate [n_rows][out_features] =
    // act(x · w[0]ᵀ) * (x · w[1]ᵀ), w = {gate, up} (one matmuls() group); up
    // is scratch of the same size. By default matmuls() then silu_mul() or
    // gelu_mul(); a backend whose stacked product needs a split pass to fill
    // gate and up (CUDA's cuBLAS products) applies act to the product as it is.
    enum class Glu { Silu, Gelu };
    virtual Status gated_matmuls(std::span<const Weight> w, Glu act, const float* x, int64_t n_rows, float* gate,
                                 float* up) {
        if (w.size() != 2)
            return make_error("gated_matmuls: " + std::to_string(w.size()) + " weights, not gate and up");
        float* const out[] = {gate, up};
        if (Status s = matmuls(w, x, n_rows, out); !s) return s;
        const int64_t n = n_rows * w[0].out_features;
        if (act == Glu::Silu) silu_mul(gate, up, n);
        else gelu_mul(gate, up, n);
        return {};
    }
    // A mixture-of-experts FFN (model/moe.h says the rule; route_experts() is
    // its routing): out [n_rows][n_embd] = sum over row r's chosen experts e
    // of weight(r, e) * (silu(x·gate_eᵀ) * (x·up_eᵀ))·down_eᵀ, the chosen
    // experts' terms added in the router's order (best first). Only the
    // chosen experts' matrices are read: rows are grouped by expert, so each
    // chosen expert's matrices are read once per step however many rows chose
    // it. out may be x. Backends that do not run experts say so.
    virtual Status moe_ffn(const MoeFfn&, const float*, int64_t, float*) {
        return make_error("this backend does not run mixture-of-experts layers (Ops::moe_ffn)");
    }
    // x[i] += y[i]
    virtual void add(float* x, const float* y, int64_t n) = 0;
    // x[r][c] += bias[c]
    virtual void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) = 0;
    // x[i] *= s
    virtual void scale(float* x, float s, int64_t n) = 0;
    // x[i] = cap * tanh(x[i] / cap)
    virtual void softcap(float* x, float cap, int64_t n) = 0;

    // Where the output head writes the first n floats of `logits` (the
    // backend's memory; on the CPU `logits` itself when it holds n).
    virtual float* logits_target(std::span<float> logits, int64_t n) = 0;
    // Copies n floats of backend memory into dst once everything before is
    // computed (nothing to do when src is dst); the step's errors come here.
    virtual Status to_host(const float* src, std::span<float> dst, int64_t n) = 0;
    // ids[r] = the index of the largest of the vocab logits of row r (the
    // first one on ties, 0 when none is a number above -inf), for n_rows rows
    // of backend memory, on the host once computed; the step's errors come here.
    virtual Status choose_tokens(const float* logits, int64_t n_rows, int64_t vocab, std::span<int32_t> ids) = 0;
    // Each of n_rows rows' k best entries (as select_top_k orders and cleans
    // them) into values / ids ([n_rows][k]), and the rows' RowSums when
    // `sums` is not empty, on the host once computed.
    virtual Status top_k(const float* logits, int64_t n_rows, int64_t vocab, int32_t k, std::span<float> values,
                         std::span<int32_t> ids, const RowSums& sums) = 0;
    // Column statistics of n_rows rows of dim (backend memory), added on the
    // host once computed: squares[j] += x[r][j]^2 and, where abs is not
    // empty, abs[j] += |x[r][j]|, over r in order (the importance matrix's
    // and AWQ's sums, quant/imatrix_collect.cpp). By default the rows come
    // to the host (to_host) and are summed there; the CPU sums them in place,
    // a GPU on the device.
    virtual Status add_column_stats(const float* x, int64_t n_rows, int64_t dim, std::span<float> squares,
                                    std::span<double> abs) {
        std::vector<float> rows(static_cast<size_t>(n_rows * dim));
        if (Status s = to_host(x, rows, n_rows * dim); !s) return s;
        add_column_stats_on_host(rows.data(), n_rows, dim, squares, abs);
        return {};
    }
    static void add_column_stats_on_host(const float* x, int64_t n_rows, int64_t dim, std::span<float> squares,
                                         std::span<double> abs) {
        for (int64_t r = 0; r < n_rows; ++r) {
            const float* row = x + r * dim;
            for (int64_t j = 0; j < dim; ++j) squares[static_cast<size_t>(j)] += row[j] * row[j];
            if (!abs.empty())
                for (int64_t j = 0; j < dim; ++j) abs[static_cast<size_t>(j)] += std::fabs(row[j]);
        }
    }

    // ids[r] = the token Sampler::sample would draw from row r by
    // temperature alone (draws.temperatures[r], 0 = greedy), or by top-p and
    // min-p where draws.top_p[r] < 1 or draws.min_p[r] > 0, with
    // draws.uniforms[r] as its uniform value,
    // for n_rows rows of backend memory (which the row's penalties change in
    // place), on the host once computed. Backends that do not draw say so.
    virtual Status draw_tokens(float*, int64_t, int64_t, const RowDraws&, std::span<int32_t>) {
        return make_error("this backend does not draw tokens itself");
    }
};

}  // namespace folio::model
