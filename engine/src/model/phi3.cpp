// Phi-3 / Phi-3.5 / Phi-4 (GGUF `phi3`): the llama block with Q, K and V
// stored as one matrix (attn_qkv: Q's rows, then K's, then V's) and gate and
// up as one (ffn_up: 2 * n_ff rows, gate's first), split-half (NeoX) RoPE,
// and in the 128k variants LongRoPE: two sets of per-pair frequency divisors,
// the long ones when the context run is longer than the original one, the
// short ones otherwise (llama.cpp's rule, on the backend's max_context), and
// an attention factor that multiplies RoPE's cos and sin (q and k alike).
//
//   x = embed(tokens)
//   per layer:  h = rmsnorm(x) ; [q k v] = h·Wqkv ; rope(q, k) (/ long or short factors)
//               q, k *= attn_factor ; x += attention(q, k, v) · Wo
//               h = rmsnorm(x) ; [g u] = h·Wup ; x += (silu(g) * u) · Wdown
//   logits = rmsnorm(x) · Wout   (Wout = the embedding table when tied)
//
// The fused matrices are bound as row ranges of their tensors: a GGUF row is
// whole blocks of any type, so each range is a Weight of its own, and the
// ranges list as a matrices() group, which a GPU stacks back into one matrix.
#include <algorithm>
#include <cmath>

#include "model/architecture.h"
#include "model/tensors.h"

namespace folio::model {
namespace {

struct Phi3Layer {
    std::vector<float> attn_norm, ffn_norm;
    Weight wq, wk, wv, wo;           // wq wk wv: row ranges of attn_qkv (or the separate tensors)
    Weight ffn_gate, ffn_up, ffn_down;  // gate, up: the two halves of ffn_up
};

// Rows [first, first + count) of w.
Weight row_range(const Weight& w, int64_t first, int64_t count) {
    const TensorTypeTraits t = traits(w.type);
    const auto row_bytes = static_cast<size_t>(w.in_features / t.block_elems) * t.block_bytes;
    return {w.type, w.data + static_cast<size_t>(first) * row_bytes, w.in_features, count};
}

class Phi3 final : public Architecture {
public:
    Status bind(const ModelDescription& model);
    Status forward(Ops& ops, const Batch& batch, const StepOutput& out) override;
    KvShape kv_shape() const override { return {n_layer_, n_head_kv_, head_dim_}; }
    RopeParams rope(int) const override {
        return {hp_.rope_freq_base, hp_.rope_scale_linear, hp_.rope_style,
                rope_factors_->empty() ? nullptr : rope_factors_->data()};
    }
    int32_t n_vocab() const override { return static_cast<int32_t>(output_.out_features); }
    std::vector<Weight> matrices() const override { return layer_matrices(output_, layers_); }
    Weight embedding() const override { return token_embd_; }
    std::vector<std::vector<Weight>> matrix_groups() const override { return layer_matrix_groups(layers_); }
    std::vector<std::span<const float>> vectors() const override;
    void set_context_length(uint32_t n_ctx) override {
        const uint32_t orig = hp_.rope_orig_context ? hp_.rope_orig_context : hp_.n_ctx_train;
        rope_factors_ = n_ctx > orig ? &hp_.rope_factors_long : &hp_.rope_factors_short;
    }

private:
    HParams hp_;  // owns the LongRoPE factors, whose addresses RopeParams carries
    const std::vector<float>* rope_factors_ = &hp_.rope_factors_short;
    int n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0, head_dim_ = 0;
    int64_t n_embd_ = 0, n_ff_ = 0;
    Weight token_embd_, output_;
    std::vector<float> output_norm_;
    std::vector<Phi3Layer> layers_;

    ActivationBuffers act_;
};

Status Phi3::bind(const ModelDescription& model) {
    hp_ = model.hparams;
    n_layer_ = static_cast<int>(hp_.n_layer);
    n_head_ = static_cast<int>(hp_.n_head);
    n_head_kv_ = static_cast<int>(hp_.n_head_kv);
    head_dim_ = static_cast<int>(hp_.head_dim ? hp_.head_dim : hp_.n_embd / std::max(1u, hp_.n_head));
    n_embd_ = hp_.n_embd;
    n_ff_ = hp_.n_ff;
    if (n_layer_ <= 0 || n_head_ <= 0 || n_head_kv_ <= 0 || n_head_ % n_head_kv_ != 0 || head_dim_ <= 0 ||
        head_dim_ % 2 != 0 || n_embd_ <= 0 || n_ff_ <= 0 || hp_.n_vocab == 0)
        return make_error("model '" + model.name + "': inconsistent phi3 hyper-parameters (heads " +
                          std::to_string(n_head_) + "/" + std::to_string(n_head_kv_) + ", head_dim " +
                          std::to_string(head_dim_) + ")");
    for (const std::vector<float>* f : {&hp_.rope_factors_long, &hp_.rope_factors_short})
        if (!f->empty() && f->size() != static_cast<size_t>(head_dim_ / 2))
            return make_error("model '" + model.name + "': " + std::to_string(f->size()) +
                              " LongRoPE factors for heads of " + std::to_string(head_dim_) + " (one per pair)");
    if (!hp_.rope_freq_factors.empty())
        return make_error("model '" + model.name + "': phi3 with rope_freqs is not supported; its RoPE factors are "
                          "rope_factors_long / rope_factors_short");
    if (!(hp_.rope_attn_factor > 0.0f))
        return make_error("model '" + model.name + "': RoPE attention factor must be positive");
    set_context_length(hp_.n_ctx_train);  // until the backend says otherwise

    const int64_t q_dim = int64_t{n_head_} * head_dim_, kv_dim = int64_t{n_head_kv_} * head_dim_;
    TensorBinder t(model);
    auto ends = t.ends(n_embd_, hp_.n_vocab);
    if (!ends) return ends.error();
    token_embd_ = ends->token_embd;
    output_ = ends->output;
    output_norm_ = std::move(ends->output_norm);

    layers_.resize(static_cast<size_t>(n_layer_));
    for (int l = 0; l < n_layer_; ++l) {
        Phi3Layer& L = layers_[static_cast<size_t>(l)];
        auto matrix = [&](const char* name, int64_t in, int64_t out) { return t.matrix(layer_tensor(l, name), in, out); };
        auto bind_norm = [&](std::vector<float>& v, const char* name) -> Status {
            auto r = t.norm(layer_tensor(l, name), n_embd_);
            if (!r) return r.error();
            v = std::move(*r);
            return {};
        };
        FOLIO_RETURN_IF_ERROR(bind_norm(L.attn_norm, "attn_norm.weight"));
        FOLIO_RETURN_IF_ERROR(bind_norm(L.ffn_norm, "ffn_norm.weight"));
        // Fused QKV as converters write it; separate Q, K, V as llama.cpp also accepts.
        if (t.has(layer_tensor(l, "attn_qkv.weight"))) {
            auto qkv = matrix("attn_qkv.weight", n_embd_, q_dim + 2 * kv_dim);
            if (!qkv) return qkv.error();
            L.wq = row_range(*qkv, 0, q_dim);
            L.wk = row_range(*qkv, q_dim, kv_dim);
            L.wv = row_range(*qkv, q_dim + kv_dim, kv_dim);
        } else {
            auto q = matrix("attn_q.weight", n_embd_, q_dim);
            if (!q) return q.error();
            auto k = matrix("attn_k.weight", n_embd_, kv_dim);
            if (!k) return k.error();
            auto v = matrix("attn_v.weight", n_embd_, kv_dim);
            if (!v) return v.error();
            L.wq = *q;
            L.wk = *k;
            L.wv = *v;
        }
        auto wo = matrix("attn_output.weight", q_dim, n_embd_);
        if (!wo) return wo.error();
        L.wo = *wo;
        auto gate_up = matrix("ffn_up.weight", n_embd_, 2 * n_ff_);
        if (!gate_up) return gate_up.error();
        L.ffn_gate = row_range(*gate_up, 0, n_ff_);
        L.ffn_up = row_range(*gate_up, n_ff_, n_ff_);
        auto down = matrix("ffn_down.weight", n_ff_, n_embd_);
        if (!down) return down.error();
        L.ffn_down = *down;
    }
    return {};
}

std::vector<std::span<const float>> Phi3::vectors() const {
    std::vector<std::span<const float>> all = {output_norm_};
    for (const std::vector<float>* f : {&hp_.rope_factors_long, &hp_.rope_factors_short})
        if (!f->empty()) all.emplace_back(*f);
    for (const Phi3Layer& L : layers_) all.insert(all.end(), {L.attn_norm, L.ffn_norm});
    return all;
}

Status Phi3::forward(Ops& ops, const Batch& batch, const StepOutput& out) {
    const int64_t n = batch.n_tokens();
    const int64_t n_out = static_cast<int64_t>(batch.logits_rows.size());
    const int64_t q_dim = int64_t{n_head_} * head_dim_, kv_dim = int64_t{n_head_kv_} * head_dim_;
    act_.prepare(ops, n, n_out, n_embd_, q_dim, kv_dim, n_ff_);
    float *x = act_.x, *h = act_.h, *q = act_.q, *k = act_.k, *v = act_.v;
    float *attn_out = act_.attn_out, *gate = act_.gate, *up = act_.up;
    const float eps = hp_.rms_norm_eps;

    FOLIO_RETURN_IF_ERROR(ops.embed(token_embd_, batch, x));

    AttentionParams attn;
    attn.n_head = n_head_;
    attn.n_head_kv = n_head_kv_;
    attn.head_dim = head_dim_;
    attn.scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
    attn.rope = rope(0);
    ops.rms_norm(x, layers_[0].attn_norm.data(), eps, n, n_embd_, h);
    for (int l = 0; l < n_layer_; ++l) {
        const Phi3Layer& L = layers_[static_cast<size_t>(l)];
        // h = attn_norm(x)
        const Weight qkv[] = {L.wq, L.wk, L.wv};
        float* const qkv_out[] = {q, k, v};
        FOLIO_RETURN_IF_ERROR(ops.matmuls(qkv, h, n, qkv_out));
        if (hp_.rope_attn_factor != 1.0f) {
            // GGML multiplies RoPE's cos and sin by it. Scaling q and k here
            // rather than folding its square into attn.scale keeps the values
            // llama.cpp rounds to F16 (the cached keys, the scaled queries).
            ops.scale(q, hp_.rope_attn_factor, n * q_dim);
            ops.scale(k, hp_.rope_attn_factor, n * kv_dim);
        }
        attn.layer = l;
        FOLIO_RETURN_IF_ERROR(ops.attention(attn, batch, q, k, v, attn_out));
        FOLIO_RETURN_IF_ERROR(ops.matmul(L.wo, attn_out, n, h));

        ops.add_rms_norm(x, h, L.ffn_norm.data(), eps, n, n_embd_, h);
        const Weight gate_up[] = {L.ffn_gate, L.ffn_up};
        FOLIO_RETURN_IF_ERROR(ops.gated_matmuls(gate_up, Ops::Glu::Silu, h, n, gate, up));
        FOLIO_RETURN_IF_ERROR(ops.matmul(L.ffn_down, gate, n, h));
        if (l + 1 < n_layer_) ops.add_rms_norm(x, h, layers_[static_cast<size_t>(l) + 1].attn_norm.data(), eps, n, n_embd_, h);
    }
    ops.add(x, h, n * n_embd_);

    return output_head(ops, batch, x, act_.logit_rows, output_norm_.data(), eps, n_embd_, output_, 0.0f, out);
}

}  // namespace

Result<std::unique_ptr<Architecture>> create_phi3(const ModelDescription& model) {
    auto arch = std::make_unique<Phi3>();
    if (Status s = arch->bind(model); !s) return s.error();
    return std::unique_ptr<Architecture>(std::move(arch));
}

}  // namespace folio::model
