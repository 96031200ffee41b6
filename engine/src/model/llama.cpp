// The llama family: Llama 2/3/3.1, Mistral, SmolLM/SmolLM2, TinyLlama,
// Qwen2 (the same block with biases on Q, K and V) and Qwen3 (no biases; an
// RMSNorm on every query and key head before RoPE). Llama 3.1+ turns each
// RoPE pair at its base frequency divided by a factor (rope_freqs). Mixtral
// (`llama` with expert_count) and Qwen3-MoE (qwen3moe) replace every layer's
// FFN by a mixture of experts (model/moe.h: a router picks n_used of them).
//
//   x = embed(tokens)
//   per layer:  h = rmsnorm(x) ; q,k,v = h·Wq, h·Wk, h·Wv (+ bias)
//               q,k = rmsnorm per head (Qwen3) ; rope(q, k) (/ freq factors)
//               x += attention(q, k, v) · Wo
//               h = rmsnorm(x) ; x += (silu(h·Wgate) * (h·Wup)) · Wdown
//                                  (MoE: x += sum of the chosen experts' FFNs, weighted)
//   logits = rmsnorm(x) · Wout   (Wout = the embedding table when tied)
#include <algorithm>
#include <cmath>

#include "model/architecture.h"
#include "model/moe.h"
#include "model/tensors.h"

namespace folio::model {
namespace {

struct LlamaLayer {
    std::vector<float> attn_norm, ffn_norm;
    Weight wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;  // Qwen2 only
    std::vector<float> q_norm, k_norm;  // Qwen3 only: per head, head_dim each
    Weight ffn_gate, ffn_up, ffn_down;  // dense FFN
    MoeFfn moe;                         // mixture of experts, instead (Llama::moe_)
};

class Llama final : public Architecture {
public:
    // qk_norm: the Qwen3 block (attn_q_norm / attn_k_norm required).
    Status bind(const ModelDescription& model, bool qk_norm);
    Status forward(Ops& ops, const Batch& batch, const StepOutput& out) override;
    KvShape kv_shape() const override { return {n_layer_, n_head_kv_, head_dim_}; }
    RopeParams rope(int) const override {
        RopeParams rope{hp_.rope_freq_base, hp_.rope_scale_linear, hp_.rope_style,
                        hp_.rope_freq_factors.empty() ? nullptr : hp_.rope_freq_factors.data()};
        if (hp_.rope_yarn_factor > 0.0f)
            rope = yarn_rope(rope, head_dim_, hp_.rope_orig_context ? hp_.rope_orig_context : hp_.n_ctx_train,
                             hp_.rope_yarn_factor, hp_.rope_attn_factor);
        return rope;
    }
    int32_t n_vocab() const override { return static_cast<int32_t>(output_.out_features); }
    std::vector<Weight> matrices() const override;
    Weight embedding() const override { return token_embd_; }
    std::vector<std::vector<Weight>> matrix_groups() const override;
    std::vector<ExpertMatrix> expert_matrices() const override;
    std::vector<std::vector<ExpertMatrix>> expert_groups() const override;
    std::vector<std::span<const float>> vectors() const override;

private:
    HParams hp_;  // owns rope_freq_factors, whose address RopeParams carries
    bool qk_norm_ = false;
    bool moe_ = false;  // hparams.n_expert > 0: every layer's FFN is experts
    int n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0, head_dim_ = 0;
    int64_t n_embd_ = 0, n_ff_ = 0;
    Weight token_embd_, output_;
    std::vector<float> output_norm_;
    std::vector<LlamaLayer> layers_;

    ActivationBuffers act_;
};

Status Llama::bind(const ModelDescription& model, bool qk_norm) {
    hp_ = model.hparams;
    qk_norm_ = qk_norm;
    moe_ = hp_.n_expert > 0;
    n_layer_ = static_cast<int>(hp_.n_layer);
    n_head_ = static_cast<int>(hp_.n_head);
    n_head_kv_ = static_cast<int>(hp_.n_head_kv);
    head_dim_ = static_cast<int>(hp_.head_dim ? hp_.head_dim : hp_.n_embd / std::max(1u, hp_.n_head));
    n_embd_ = hp_.n_embd;
    n_ff_ = hp_.n_ff;
    if (n_layer_ <= 0 || n_head_ <= 0 || n_head_kv_ <= 0 || n_head_ % n_head_kv_ != 0 || head_dim_ <= 0 ||
        head_dim_ % 2 != 0 || n_embd_ <= 0 || n_ff_ <= 0 || hp_.n_vocab == 0)
        return make_error("model '" + model.name + "': inconsistent " + hp_.architecture + " hyper-parameters (heads " +
                          std::to_string(n_head_) + "/" + std::to_string(n_head_kv_) + ", head_dim " +
                          std::to_string(head_dim_) + ")");
    if (!hp_.rope_freq_factors.empty() && hp_.rope_freq_factors.size() != static_cast<size_t>(head_dim_ / 2))
        return make_error("model '" + model.name + "': " + std::to_string(hp_.rope_freq_factors.size()) +
                          " RoPE frequency factors for heads of " + std::to_string(head_dim_) + " (one per pair)");
    const int64_t q_dim = int64_t{n_head_} * head_dim_, kv_dim = int64_t{n_head_kv_} * head_dim_;
    TensorBinder t(model);
    auto ends = t.ends(n_embd_, hp_.n_vocab);
    if (!ends) return ends.error();
    token_embd_ = ends->token_embd;
    output_ = ends->output;
    output_norm_ = std::move(ends->output_norm);

    layers_.resize(static_cast<size_t>(n_layer_));
    for (int l = 0; l < n_layer_; ++l) {
        LlamaLayer& L = layers_[static_cast<size_t>(l)];
        auto bind_matrix = [&](Weight& w, const char* name, int64_t in, int64_t out) -> Status {
            auto r = t.matrix(layer_tensor(l, name), in, out);
            if (!r) return r.error();
            w = *r;
            return {};
        };
        auto bind_vector = [&](std::vector<float>& v, const char* name, int64_t n, bool norm) -> Status {
            auto r = norm ? t.norm(layer_tensor(l, name), n) : t.optional_vector(layer_tensor(l, name), n);
            if (!r) return r.error();
            v = std::move(*r);
            return {};
        };
        FOLIO_RETURN_IF_ERROR(bind_vector(L.attn_norm, "attn_norm.weight", n_embd_, true));
        FOLIO_RETURN_IF_ERROR(bind_vector(L.ffn_norm, "ffn_norm.weight", n_embd_, true));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wq, "attn_q.weight", n_embd_, q_dim));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wk, "attn_k.weight", n_embd_, kv_dim));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wv, "attn_v.weight", n_embd_, kv_dim));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.wo, "attn_output.weight", q_dim, n_embd_));
        FOLIO_RETURN_IF_ERROR(bind_vector(L.bq, "attn_q.bias", q_dim, false));
        FOLIO_RETURN_IF_ERROR(bind_vector(L.bk, "attn_k.bias", kv_dim, false));
        FOLIO_RETURN_IF_ERROR(bind_vector(L.bv, "attn_v.bias", kv_dim, false));
        if (qk_norm_) {
            FOLIO_RETURN_IF_ERROR(bind_vector(L.q_norm, "attn_q_norm.weight", head_dim_, true));
            FOLIO_RETURN_IF_ERROR(bind_vector(L.k_norm, "attn_k_norm.weight", head_dim_, true));
        }
        if (moe_) {
            auto moe = bind_moe_ffn(model, l);
            if (!moe) return moe.error();
            L.moe = *moe;
            continue;
        }
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.ffn_gate, "ffn_gate.weight", n_embd_, n_ff_));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.ffn_up, "ffn_up.weight", n_embd_, n_ff_));
        FOLIO_RETURN_IF_ERROR(bind_matrix(L.ffn_down, "ffn_down.weight", n_ff_, n_embd_));
    }
    return {};
}

std::vector<Weight> Llama::matrices() const {
    std::vector<Weight> all = layer_matrices(output_, layers_);
    if (!moe_) return all;
    // A MoE layer has a router where the dense FFN's matrices would be.
    std::erase_if(all, [](const Weight& w) { return w.data == nullptr; });
    for (const LlamaLayer& L : layers_) all.push_back(L.moe.router);
    return all;
}

std::vector<std::vector<Weight>> Llama::matrix_groups() const {
    std::vector<std::vector<Weight>> groups = layer_matrix_groups(layers_);
    if (moe_) std::erase_if(groups, [](const std::vector<Weight>& g) { return g.front().data == nullptr; });
    return groups;
}

std::vector<ExpertMatrix> Llama::expert_matrices() const {
    std::vector<ExpertMatrix> all;
    if (moe_)
        for (const LlamaLayer& L : layers_) all.insert(all.end(), {L.moe.gate, L.moe.up, L.moe.down});
    return all;
}

std::vector<std::vector<ExpertMatrix>> Llama::expert_groups() const {
    std::vector<std::vector<ExpertMatrix>> groups;
    if (moe_)
        for (const LlamaLayer& L : layers_) groups.push_back({L.moe.gate, L.moe.up});
    return groups;
}

std::vector<std::span<const float>> Llama::vectors() const {
    std::vector<std::span<const float>> all = {output_norm_};
    if (!hp_.rope_freq_factors.empty()) all.emplace_back(hp_.rope_freq_factors);
    for (const LlamaLayer& L : layers_)
        for (const std::vector<float>* v : {&L.attn_norm, &L.ffn_norm, &L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm})
            if (!v->empty()) all.emplace_back(*v);
    return all;
}

Status Llama::forward(Ops& ops, const Batch& batch, const StepOutput& out) {
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
    // Each sub-block's output is added to x by the next norm (add_rms_norm).
    ops.rms_norm(x, layers_[0].attn_norm.data(), eps, n, n_embd_, h);
    for (int l = 0; l < n_layer_; ++l) {
        const LlamaLayer& L = layers_[static_cast<size_t>(l)];
        // Self-attention block; h = attn_norm(x).
        const Weight qkv[] = {L.wq, L.wk, L.wv};
        float* const qkv_out[] = {q, k, v};
        FOLIO_RETURN_IF_ERROR(ops.matmuls(qkv, h, n, qkv_out));
        if (!L.bq.empty()) ops.add_bias(q, L.bq.data(), n, q_dim);
        if (!L.bk.empty()) ops.add_bias(k, L.bk.data(), n, kv_dim);
        if (!L.bv.empty()) ops.add_bias(v, L.bv.data(), n, kv_dim);
        if (qk_norm_) {
            ops.qk_norm(q, L.q_norm.data(), n * n_head_, k, L.k_norm.data(), n * n_head_kv_, eps, head_dim_);
        }
        attn.layer = l;
        FOLIO_RETURN_IF_ERROR(ops.attention(attn, batch, q, k, v, attn_out));
        FOLIO_RETURN_IF_ERROR(ops.matmul(L.wo, attn_out, n, h));

        // Feed-forward block (SwiGLU; or a mixture of SwiGLU experts).
        ops.add_rms_norm(x, h, L.ffn_norm.data(), eps, n, n_embd_, h);
        if (moe_) {
            FOLIO_RETURN_IF_ERROR(ops.moe_ffn(L.moe, h, n, h));
        } else {
            const Weight gate_up[] = {L.ffn_gate, L.ffn_up};
            FOLIO_RETURN_IF_ERROR(ops.gated_matmuls(gate_up, Ops::Glu::Silu, h, n, gate, up));
            FOLIO_RETURN_IF_ERROR(ops.matmul(L.ffn_down, gate, n, h));
        }
        if (l + 1 < n_layer_) ops.add_rms_norm(x, h, layers_[static_cast<size_t>(l) + 1].attn_norm.data(), eps, n, n_embd_, h);
    }
    ops.add(x, h, n * n_embd_);

    // Only the rows that need logits go through the output head.
    return output_head(ops, batch, x, act_.logit_rows, output_norm_.data(), eps, n_embd_, output_, 0.0f, out);
}

}  // namespace

Result<std::unique_ptr<Architecture>> create_llama(const ModelDescription& model) {
    auto arch = std::make_unique<Llama>();
    if (Status s = arch->bind(model, false); !s) return s.error();
    return std::unique_ptr<Architecture>(std::move(arch));
}

Result<std::unique_ptr<Architecture>> create_qwen3(const ModelDescription& model) {
    auto arch = std::make_unique<Llama>();
    if (Status s = arch->bind(model, true); !s) return s.error();
    return std::unique_ptr<Architecture>(std::move(arch));
}

Result<std::unique_ptr<Architecture>> create_qwen3moe(const ModelDescription& model) {
    if (model.hparams.n_expert == 0)
        return make_error("model '" + model.name + "': a qwen3moe file without qwen3moe.expert_count");
    return create_qwen3(model);
}

}  // namespace folio::model
