// An Ops that runs another and writes one line per operation: its name, the
// output's size, and statistics of the output (sum, sum of squares, first
// values), copied to the host through Ops::to_host. Two backends given the
// same batch write traces that can be compared line by line: the first line
// that differs names the operation where they part. FOLIO_TRACE_OPS=FILE
// turns it on in every backend (the file is appended to).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/forwarding_ops.h"

namespace folio::model {

class TracingOps final : public ForwardingOps {
public:
    TracingOps(Ops& inner, std::FILE* out, std::string backend)
        : ForwardingOps(inner), out_(out), backend_(std::move(backend)) {}

    Status embed(const Weight& table, const Batch& batch, float* out) override {
        Status s = inner_.embed(table, batch, out);
        trace("embed", out, int64_t{batch.n_tokens()} * table.in_features);
        return s;
    }
    void select_logit_rows(const Batch& batch, const float* x, int64_t dim, float* out) override {
        inner_.select_logit_rows(batch, x, dim, out);
        trace("select_logit_rows", out, static_cast<int64_t>(batch.logits_rows.size()) * dim);
    }
    void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim, float* out) override {
        inner_.rms_norm(x, weight, eps, n_rows, dim, out);
        trace("rms_norm", out, n_rows * dim);
    }
    void qk_norm(float* q, const float* q_weight, int64_t q_rows, float* k, const float* k_weight, int64_t k_rows,
                 float eps, int64_t dim) override {
        inner_.qk_norm(q, q_weight, q_rows, k, k_weight, k_rows, eps, dim);
        trace("qk_norm.q", q, q_rows * dim);
        trace("qk_norm.k", k, k_rows * dim);
    }
    void add_rms_norm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t dim,
                      float* out) override {
        inner_.add_rms_norm(x, y, weight, eps, n_rows, dim, out);
        trace("add_rms_norm.x", x, n_rows * dim);
        trace("add_rms_norm", out, n_rows * dim);
    }
    Status matmul(const Weight& w, const float* x, int64_t n_rows, float* y) override {
        Status s = inner_.matmul(w, x, n_rows, y);
        trace("matmul " + std::to_string(w.out_features) + "x" + std::to_string(w.in_features) + " type " +
                  std::to_string(static_cast<int>(w.type)),
              y, n_rows * w.out_features);
        return s;
    }
    Status matmuls(std::span<const Weight> w, const float* x, int64_t n_rows, std::span<float* const> y) override {
        Status s = inner_.matmuls(w, x, n_rows, y);
        for (size_t i = 0; i < w.size() && i < y.size(); ++i)
            trace("matmuls[" + std::to_string(i) + "]", y[i], n_rows * w[i].out_features);
        return s;
    }
    Status attention(const AttentionParams& p, const Batch& batch, float* q, float* k, const float* v,
                     float* out) override {
        Status s = inner_.attention(p, batch, q, k, v, out);
        const int64_t n = batch.n_tokens();
        trace("attention.q_rotated", q, n * p.n_head * p.head_dim);
        trace("attention.k_rotated", k, n * p.n_head_kv * p.head_dim);
        trace("attention", out, n * p.n_head * p.head_dim);
        return s;
    }
    Status moe_ffn(const MoeFfn& ffn, const float* x, int64_t n_rows, float* out) override {
        Status s = inner_.moe_ffn(ffn, x, n_rows, out);
        trace("moe_ffn " + std::to_string(ffn.n_used) + " of " + std::to_string(ffn.router.out_features), out,
              n_rows * ffn.router.in_features);
        return s;
    }
    void silu_mul(float* gate, const float* up, int64_t n) override {
        inner_.silu_mul(gate, up, n);
        trace("silu_mul", gate, n);
    }
    void gelu_mul(float* gate, const float* up, int64_t n) override {
        inner_.gelu_mul(gate, up, n);
        trace("gelu_mul", gate, n);
    }
    void add(float* x, const float* y, int64_t n) override {
        inner_.add(x, y, n);
        trace("add", x, n);
    }
    void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) override {
        inner_.add_bias(x, bias, n_rows, dim);
        trace("add_bias", x, n_rows * dim);
    }
    void scale(float* x, float s, int64_t n) override {
        inner_.scale(x, s, n);
        trace("scale", x, n);
    }
    void softcap(float* x, float cap, int64_t n) override {
        inner_.softcap(x, cap, n);
        trace("softcap", x, n);
    }
private:
    void trace(const std::string& op, const float* data, int64_t n) {
        host_.resize(static_cast<size_t>(std::max<int64_t>(n, 1)));
        if (!inner_.to_host(data, host_, n)) return;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; ++i) {
            sum += host_[static_cast<size_t>(i)];
            sq += double{host_[static_cast<size_t>(i)]} * host_[static_cast<size_t>(i)];
        }
        std::fprintf(out_, "%s %4d %-40s n=%-9lld sum=%-14.7g sumsq=%-14.7g first=", backend_.c_str(), index_++,
                     op.c_str(), static_cast<long long>(n), sum, sq);
        for (int64_t i = 0; i < std::min<int64_t>(n, 4); ++i) std::fprintf(out_, " %.6g", double{host_[static_cast<size_t>(i)]});
        std::fprintf(out_, "\n");
    }

    std::FILE* out_;
    std::string backend_;
    std::vector<float> host_;
    int index_ = 0;
};

// The file FOLIO_TRACE_OPS names, opened once for appending; null when unset.
inline std::FILE* ops_trace_file() {
    static std::FILE* file = [] {
        const char* path = std::getenv("FOLIO_TRACE_OPS");
        return path && *path ? std::fopen(path, "a") : nullptr;
    }();
    return file;
}

// arch.forward(ops, ...), traced when FOLIO_TRACE_OPS is set.
template <typename Arch>
Status forward_traced(Arch& arch, Ops& ops, const char* backend, const Batch& batch, const StepOutput& out) {
    std::FILE* file = ops_trace_file();
    if (!file) return arch.forward(ops, batch, out);
    TracingOps tracing(ops, file, backend);
    Status s = arch.forward(tracing, batch, out);
    std::fflush(file);
    return s;
}

}  // namespace folio::model
