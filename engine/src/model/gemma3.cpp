// Gemma 2 and Gemma 3: the llama block with an RMSNorm on each side of both
// sub-blocks, GeGLU, embeddings scaled by sqrt(n_embd), sliding-window
// (local) layers between global ones, and logits soft-capped where the model
// says (Gemma 2: attention scores at 50, output at 30). Gemma 3 also
// normalises every query and key head (QK-norm), has five local layers for
// every global one, and gives local layers their own RoPE base; Gemma 2
// alternates local and global layers. The output head is the embedding.
//
//   x = embed(tokens) * sqrt(n_embd)
//   per layer:  h = rmsnorm(x) ; q,k,v = h·Wq, h·Wk, h·Wv ; q,k = rmsnorm per head (Gemma 3)
//               rope(q, k)  (Gemma 3 local layers: base_swa, global: base)
//               x += rmsnorm(attention(q, k, v, window if local, softcap) · Wo)
//               h = rmsnorm(x) ; x += rmsnorm((gelu(h·Wgate) * (h·Wup)) · Wdown)
//   logits = softcap(rmsnorm(x) · Wembdᵀ)
#include <algorithm>
#include <cmath>

#include "model/architecture.h"
#include "model/tensors.h"

namespace folio::model {
namespace {

struct Gemma3Layer {
    std::vector<float> attn_norm, q_norm, k_norm, post_attn_norm, ffn_norm, post_ffn_norm;
    Weight wq, wk, wv, wo;
    Weight ffn_gate, ffn_up, ffn_down;
    bool is_local = false;  // sliding-window layer
};

class Gemma3 final : public Architecture {
public:
    // qk_norm: Gemma 3's per-head norms (attn_q_norm / attn_k_norm required); Gemma 2 has none.
    Status bind(const ModelDescription& model, bool qk_norm);
    Status forward(Ops& ops, const Batch& batch, const StepOutput& out) override;
    KvShape kv_shape() const override { return {n_layer_, n_head_kv_, head_dim_}; }
    // Sliding-window layers turn by their own base, unscaled.
    RopeParams rope(int layer) const override {
        if (!layers_[static_cast<size_t>(layer)].is_local)
            return {hp_.rope_freq_base, hp_.rope_scale_linear, hp_.rope_style};
        return {hp_.rope_freq_base_swa > 0 ? hp_.rope_freq_base_swa : hp_.rope_freq_base, 1.0f, hp_.rope_style};
    }
    int32_t n_vocab() const override { return static_cast<int32_t>(token_embd_.out_features); }
    std::vector<Weight> matrices() const override { return layer_matrices(output_, layers_); }
    Weight embedding() const override { return token_embd_; }
    std::vector<std::vector<Weight>> matrix_groups() const override { return layer_matrix_groups(layers_); }
    std::vector<std::span<const float>> vectors() const override;

private:
    HParams hp_;
    bool qk_norm_ = true;
    int n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0, head_dim_ = 0;
    int64_t n_embd_ = 0, n_ff_ = 0;
    Weight token_embd_, output_;
    std::vector<float> output_norm_;
    std::vector<Gemma3Layer> layers_;

    ActivationBuffers act_;
};

Status Gemma3::bind(const ModelDescription& model, bool qk_norm) {
    hp_ = model.hparams;
    qk_norm_ = qk_norm;
    n_layer_ = static_cast<int>(hp_.n_layer);
    n_head_ = static_cast<int>(hp_.n_head);
    n_head_kv_ = static_cast<int>(hp_.n_head_kv);
    head_dim_ = static_cast<int>(hp_.head_dim);
    n_embd_ = hp_.n_embd;
    n_ff_ = hp_.n_ff;
    if (n_layer_ <= 0 || n_head_ <= 0 || n_head_kv_ <= 0 || n_head_ % n_head_kv_ != 0 || head_dim_ <= 0 ||
        head_dim_ % 2 != 0 || n_embd_ <= 0 || n_ff_ <= 0 || hp_.n_vocab == 0)
        return make_error("model '" + model.name + "': inconsistent " + hp_.architecture + " hyper-parameters");
    if (!hp_.rope_freq_factors.empty())
        return make_error("model '" + model.name + "': " + hp_.architecture + " with RoPE frequency factors "
                          "(rope_freqs) is not supported; llama.cpp's graph for it has none");
    const int64_t q_dim = int64_t{n_head_} * head_dim_, kv_dim = int64_t{n_head_kv_} * head_dim_;
    TensorBinder t(model);
    auto ends = t.ends(n_embd_, hp_.n_vocab);
    if (!ends) return ends.error();
    token_embd_ = ends->token_embd;
    output_ = ends->output;
    output_norm_ = std::move(ends->output_norm);

    layers_.resize(static_cast<size_t>(n_layer_));
    for (int l = 0; l < n_layer_; ++l) {
        Gemma3Layer& L = layers_[static_cast<size_t>(l)];
        auto bind_matrix = [&](Weight& w, const char* name, int64_t in, int64_t out) -> Status {
            auto r = t.matrix(layer_tensor(l, name), in, out);
            if (!r) return r.error();
            w = *r;
            return {};
        };
        auto bind_norm = [&](std::vector<float>& v, const char* name, int64_t n) -> Status {
            auto r = t.norm(layer_tensor(l, name), n);
            if (!r) return r.error();
            v = std::move(*r);
            return {};
        };
        FOLIO_RETURN_IF_ERROR(bind_norm(L.attn_norm, "attn_norm.weight", n_embd_));
        if (qk_norm_) {
            FOLIO_RETURN_IF_ERROR(bind_norm(L.q_norm, "attn_q_norm.weight", head_dim_));
            FOLIO_RETURN_IF_ERROR(bind_norm(L.k_norm, "attn_k_norm.weight", head_dim_));
        }
        FOLIO_RETURN_IF_ERROR(bind_norm(L.post_attn_norm, "post_attention_norm.weight", n_embd_));
        FOLIO_RETURN_IF_ERROR(bind_norm(L.ffn_norm, "ffn_norm.weight", n_embd_));
        FOLIO_RETURN_IF_ERROR(bind_norm(L.post_ffn_norm, "post_ffw_norm.weight", n_embd_));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wq, "attn_q.weight", n_embd_, q_dim));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wk, "attn_k.weight", n_embd_, kv_dim));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wv, "attn_v.weight", n_embd_, kv_dim));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wo, "attn_output.weight", q_dim, n_embd_));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.ffn_gate, "ffn_gate.weight", n_embd_, n_ff_));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.ffn_up, "ffn_up.weight", n_embd_, n_ff_));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.ffn_down, "ffn_down.weight", n_ff_, n_embd_));
        // As llama.cpp: layer l is global when (l + 1) is a multiple of the pattern.
        const uint32_t pattern = hp_.sliding_window_pattern;
        L.is_local = hp_.sliding_window > 0 && pattern > 0 && (static_cast<uint32_t>(l) + 1) % pattern != 0;
    }
    return {};
}

std::vector<std::span<const float>> Gemma3::vectors() const {
    std::vector<std::span<const float>> all = {output_norm_};
    for (const Gemma3Layer& L : layers_)
        for (const std::vector<float>* v :
             {&L.attn_norm, &L.q_norm, &L.k_norm, &L.post_attn_norm, &L.ffn_norm, &L.post_ffn_norm})
            if (!v->empty()) all.emplace_back(*v);
    return all;
}

Status Gemma3::forward(Ops& ops, const Batch& batch, const StepOutput& out) {
    const int64_t n = batch.n_tokens();
    const int64_t n_out = static_cast<int64_t>(batch.logits_rows.size());
    const int64_t q_dim = int64_t{n_head_} * head_dim_, kv_dim = int64_t{n_head_kv_} * head_dim_;
    act_.prepare(ops, n, n_out, n_embd_, q_dim, kv_dim, n_ff_);
    float *x = act_.x, *h = act_.h, *q = act_.q, *k = act_.k, *v = act_.v;
    float *attn_out = act_.attn_out, *gate = act_.gate, *up = act_.up;
    const float eps = hp_.rms_norm_eps;

    FOLIO_RETURN_IF_ERROR(ops.embed(token_embd_, batch, x));
    ops.scale(x, std::sqrt(static_cast<float>(n_embd_)), n * n_embd_);

    AttentionParams attn;
    attn.n_head = n_head_;
    attn.n_head_kv = n_head_kv_;
    attn.head_dim = head_dim_;
    const float qk_scalar = hp_.query_pre_attn_scalar > 0 ? hp_.query_pre_attn_scalar : static_cast<float>(head_dim_);
    attn.scale = 1.0f / std::sqrt(qk_scalar);
    attn.logit_softcap = hp_.attn_logit_softcap;
    // Each sub-block's (post-normed) output is added to x by the next norm (add_rms_norm).
    ops.rms_norm(x, layers_[0].attn_norm.data(), eps, n, n_embd_, h);
    for (int l = 0; l < n_layer_; ++l) {
        const Gemma3Layer& L = layers_[static_cast<size_t>(l)];
        // h = attn_norm(x)
        const Weight qkv[] = {L.wq, L.wk, L.wv};
        float* const qkv_out[] = {q, k, v};
        FOLIO_RETURN_IF_ERROR(ops.matmuls(qkv, h, n, qkv_out));
        if (qk_norm_) {
            ops.qk_norm(q, L.q_norm.data(), n * n_head_, k, L.k_norm.data(), n * n_head_kv_, eps, head_dim_);
        }
        attn.rope = rope(l);
        attn.layer = l;
        attn.sliding_window = L.is_local ? hp_.sliding_window : 0;
        FOLIO_RETURN_IF_ERROR(ops.attention(attn, batch, q, k, v, attn_out));
        FOLIO_RETURN_IF_ERROR(ops.matmul(L.wo, attn_out, n, h));
        ops.rms_norm(h, L.post_attn_norm.data(), eps, n, n_embd_, h);

        ops.add_rms_norm(x, h, L.ffn_norm.data(), eps, n, n_embd_, h);
        const Weight gate_up[] = {L.ffn_gate, L.ffn_up};
        FOLIO_RETURN_IF_ERROR(ops.gated_matmuls(gate_up, Ops::Glu::Gelu, h, n, gate, up));
        FOLIO_RETURN_IF_ERROR(ops.matmul(L.ffn_down, gate, n, h));
        ops.rms_norm(h, L.post_ffn_norm.data(), eps, n, n_embd_, h);
        if (l + 1 < n_layer_) ops.add_rms_norm(x, h, layers_[static_cast<size_t>(l) + 1].attn_norm.data(), eps, n, n_embd_, h);
    }
    ops.add(x, h, n * n_embd_);

    return output_head(ops, batch, x, act_.logit_rows, output_norm_.data(), eps, n_embd_, output_,
                       hp_.final_logit_softcap, out);
}

}  // namespace

Result<std::unique_ptr<Architecture>> create_gemma3(const ModelDescription& model) {
    auto arch = std::make_unique<Gemma3>();
    if (Status s = arch->bind(model, true); !s) return s.error();
    return std::unique_ptr<Architecture>(std::move(arch));
}

Result<std::unique_ptr<Architecture>> create_gemma2(const ModelDescription& model) {
    auto arch = std::make_unique<Gemma3>();
    if (Status s = arch->bind(model, false); !s) return s.error();
    return std::unique_ptr<Architecture>(std::move(arch));
}

}  // namespace folio::model
