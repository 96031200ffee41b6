// An Ops that hands every operation to another: the base of decorators that
// watch or change one step of a forward pass (TracingOps; the sensitivity
// bench's perturbation) without repeating the whole interface.
#pragma once

#include "model/ops.h"

namespace folio::model {

class ForwardingOps : public Ops {
public:
    explicit ForwardingOps(Ops& inner) : inner_(inner) {}

    float* buffer(Buffer which, int64_t n) override { return inner_.buffer(which, n); }
    Status embed(const Weight& table, const Batch& batch, float* out) override { return inner_.embed(table, batch, out); }
    void select_logit_rows(const Batch& batch, const float* x, int64_t dim, float* out) override {
        inner_.select_logit_rows(batch, x, dim, out);
    }
    void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim, float* out) override {
        inner_.rms_norm(x, weight, eps, n_rows, dim, out);
    }
    void qk_norm(float* q, const float* q_weight, int64_t q_rows, float* k, const float* k_weight, int64_t k_rows,
                 float eps, int64_t dim) override {
        inner_.qk_norm(q, q_weight, q_rows, k, k_weight, k_rows, eps, dim);
    }
    void add_rms_norm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t dim,
                      float* out) override {
        inner_.add_rms_norm(x, y, weight, eps, n_rows, dim, out);
    }
    Status matmul(const Weight& w, const float* x, int64_t n_rows, float* y) override {
        return inner_.matmul(w, x, n_rows, y);
    }
    Status matmuls(std::span<const Weight> w, const float* x, int64_t n_rows, std::span<float* const> y) override {
        return inner_.matmuls(w, x, n_rows, y);
    }
    Status attention(const AttentionParams& p, const Batch& batch, float* q, float* k, const float* v,
                     float* out) override {
        return inner_.attention(p, batch, q, k, v, out);
    }
    // gated_matmuls() is not handed on: its default (matmuls, then silu_mul or
    // gelu_mul) runs here, so a decorator sees both steps.
    Status moe_ffn(const MoeFfn& ffn, const float* x, int64_t n_rows, float* out) override {
        return inner_.moe_ffn(ffn, x, n_rows, out);
    }
    void silu_mul(float* gate, const float* up, int64_t n) override { inner_.silu_mul(gate, up, n); }
    void gelu_mul(float* gate, const float* up, int64_t n) override { inner_.gelu_mul(gate, up, n); }
    void add(float* x, const float* y, int64_t n) override { inner_.add(x, y, n); }
    void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) override {
        inner_.add_bias(x, bias, n_rows, dim);
    }
    void scale(float* x, float s, int64_t n) override { inner_.scale(x, s, n); }
    void softcap(float* x, float cap, int64_t n) override { inner_.softcap(x, cap, n); }
    float* logits_target(std::span<float> logits, int64_t n) override { return inner_.logits_target(logits, n); }
    Status to_host(const float* src, std::span<float> dst, int64_t n) override { return inner_.to_host(src, dst, n); }
    Status choose_tokens(const float* logits, int64_t n_rows, int64_t vocab, std::span<int32_t> ids) override {
        return inner_.choose_tokens(logits, n_rows, vocab, ids);
    }
    Status top_k(const float* logits, int64_t n_rows, int64_t vocab, int32_t k, std::span<float> values,
                 std::span<int32_t> ids, const RowSums& sums) override {
        return inner_.top_k(logits, n_rows, vocab, k, values, ids, sums);
    }
    Status add_column_stats(const float* x, int64_t n_rows, int64_t dim, std::span<float> squares,
                            std::span<double> abs) override {
        return inner_.add_column_stats(x, n_rows, dim, squares, abs);
    }
    Status draw_tokens(float* logits, int64_t n_rows, int64_t vocab, const RowDraws& draws,
                       std::span<int32_t> ids) override {
        return inner_.draw_tokens(logits, n_rows, vocab, draws, ids);
    }

protected:
    Ops& inner_;
};

}  // namespace folio::model
