// The AWQ alpha search for one group of matrices: quantize W diag(s) with the
// recipe's block quantizer, undo s on the decoded weights, and measure what
// the difference does to the sampled input rows.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>

#include "cpu/matmul.h"
#include "folio/dequant.h"
#include "folio/quant.h"
#include "quant/awq.h"

namespace folio::quant {

namespace {

// Rows of a matrix per quantization task.
constexpr int64_t kRowsPerTask = 16;

// delta = Q(W diag(s)) diag(1/s) - W, row by row on the pool.
Status quantization_delta(const AwqMember& m, std::span<const float> scales, std::vector<float>& delta,
                          cpu::ThreadPool& pool) {
    const int64_t n_in = m.n_in;
    std::vector<float> importance;
    if (!m.importance.empty()) {
        importance.resize(size_t(n_in));
        for (int64_t c = 0; c < n_in; ++c) importance[size_t(c)] = m.importance[size_t(c)] / (scales[size_t(c)] * scales[size_t(c)]);
    }
    const uint64_t row_bytes = quantized_size(m.type, n_in);
    delta.resize(size_t(m.n_out * n_in));
    struct Scratch {
        std::vector<float> scaled, decoded;
        std::vector<std::byte> bytes;
    };
    std::vector<Scratch> scratch(size_t(pool.size()));
    std::mutex error_mutex;
    std::optional<Error> error;
    const int64_t n_tasks = (m.n_out + kRowsPerTask - 1) / kRowsPerTask;
    pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
        Scratch& s = scratch[size_t(thread)];
        s.scaled.resize(size_t(n_in));
        s.decoded.resize(size_t(n_in));
        s.bytes.resize(size_t(row_bytes));
        for (int64_t r = task * kRowsPerTask; r < std::min(m.n_out, (task + 1) * kRowsPerTask); ++r) {
            const float* w = m.weights.data() + r * n_in;
            for (int64_t c = 0; c < n_in; ++c) s.scaled[size_t(c)] = w[c] * scales[size_t(c)];
            Status st = quantize_row(m.type, s.scaled, s.bytes, importance);
            if (st) st = dequantize(m.type, s.bytes.data(), s.bytes.size(), s.decoded.data(), n_in);
            if (!st) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = make_error("AWQ: tensor '" + m.name + "' row " + std::to_string(r) + ": " + st.error().message);
                return;
            }
            float* d = delta.data() + r * n_in;
            for (int64_t c = 0; c < n_in; ++c) d[c] = s.decoded[size_t(c)] / scales[size_t(c)] - w[c];
        }
    });
    if (error) return *error;
    return {};
}

}  // namespace

std::vector<float> awq_scales(std::span<const float> mean_abs, float alpha) {
    float largest = 0;
    for (float m : mean_abs) largest = std::max(largest, m);
    // A silent column would get a scale of 0 (and its norm weight 1/0): floor it.
    const float floor = std::max(largest * 1e-4f, 1e-12f);
    std::vector<float> s(mean_abs.size());
    float lo = INFINITY, hi = 0;
    for (size_t c = 0; c < s.size(); ++c) {
        s[c] = std::pow(std::max(mean_abs[c], floor), alpha);
        lo = std::min(lo, s[c]);
        hi = std::max(hi, s[c]);
    }
    // Centred on 1 geometrically: the scaled weights keep their magnitude.
    const float centre = std::sqrt(lo * hi);
    if (centre > 0 && std::isfinite(centre))
        for (float& v : s) v /= centre;
    return s;
}

Result<double> awq_output_error(std::span<const AwqMember> members, std::span<const float> scales,
                                std::span<const float> samples, int64_t n_samples, cpu::ThreadPool& pool) {
    double total = 0;
    std::vector<float> delta, y;
    cpu::ScratchBuffer scratch;
    for (const AwqMember& m : members) {
        if (int64_t(scales.size()) != m.n_in || int64_t(samples.size()) != n_samples * m.n_in ||
            int64_t(m.weights.size()) != m.n_in * m.n_out || (!m.importance.empty() && int64_t(m.importance.size()) != m.n_in))
            return make_error("AWQ: tensor '" + m.name + "': " + std::to_string(m.n_in) +
                              " columns do not match its scales, sample rows or importance weights");
        if (Status s = quantization_delta(m, scales, delta, pool); !s) return s.error();
        y.resize(size_t(n_samples * m.n_out));
        const cpu::WeightMatrix dw{TensorType::F32, reinterpret_cast<const std::byte*>(delta.data()), m.n_in, m.n_out};
        if (Status s = cpu::matmul(dw, samples.data(), n_samples, y.data(), pool, scratch); !s) return s.error();
        double sum = 0;
        for (float v : y) sum += double(v) * double(v);
        total += sum;
    }
    return total;
}

Result<AwqSearchResult> search_awq_scales(std::span<const AwqMember> members, std::span<const float> mean_abs,
                                          std::span<const float> samples, int64_t n_samples,
                                          const AwqOptions& options, cpu::ThreadPool& pool) {
    if (options.grid < 1) return make_error("AWQ: the alpha grid needs at least one point");
    if (n_samples < 1) return make_error("AWQ: no sampled activation rows to measure the output error on");
    AwqSearchResult best;
    for (int g = 0; g < options.grid; ++g) {
        const float alpha = float(g) / float(options.grid);
        std::vector<float> s = awq_scales(mean_abs, alpha);
        auto error = awq_output_error(members, s, samples, n_samples, pool);
        if (!error) return error.error();
        if (g == 0) {
            best = {alpha, std::move(s), *error, *error};
        } else if (*error < best.error) {
            best.alpha = alpha;
            best.scales = std::move(s);
            best.error = *error;
        }
    }
    return best;
}

}  // namespace folio::quant
