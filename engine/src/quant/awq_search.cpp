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

}  // namespace

bool AwqClip::clips() const { return !choice.empty() || uniform < 1.0f; }

void AwqClip::apply(float* row, int64_t n_in, int64_t row_index) const {
    if (!clips()) return;
    const int64_t n_blocks = n_in / kBlock;
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float ratio = choice.empty() ? uniform : ratios[choice[size_t(row_index * n_blocks + b)]];
        if (ratio >= 1.0f) continue;
        float* x = row + b * kBlock;
        float largest = 0;
        for (int64_t j = 0; j < kBlock; ++j) largest = std::max(largest, std::fabs(x[j]));
        const float limit = ratio * largest;
        for (int64_t j = 0; j < kBlock; ++j) x[j] = std::clamp(x[j], -limit, limit);
    }
}

// delta = Q(W diag(s)) diag(1/s) - W, row by row on the pool.
Status awq_quantization_delta(const AwqMember& m, std::span<const float> scales, const AwqClip& clip,
                              std::vector<float>& delta, cpu::ThreadPool& pool) {
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
            clip.apply(s.scaled.data(), n_in, r);
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

namespace {

// sum over the sample of (x . delta_row)^2 for every row of one matrix.
Result<double> delta_error(const AwqMember& m, const std::vector<float>& delta, std::span<const float> samples,
                           int64_t n_samples, cpu::ThreadPool& pool, cpu::ScratchBuffer& scratch, std::vector<float>& y) {
    y.resize(size_t(n_samples * m.n_out));
    const cpu::WeightMatrix dw{TensorType::F32, reinterpret_cast<const std::byte*>(delta.data()), m.n_in, m.n_out};
    if (Status s = cpu::matmul(dw, samples.data(), n_samples, y.data(), pool, scratch); !s) return s.error();
    double sum = 0;
    for (float v : y) sum += double(v) * double(v);
    return sum;
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
        if (Status s = awq_quantization_delta(m, scales, AwqClip{}, delta, pool); !s) return s.error();
        auto e = delta_error(m, delta, samples, n_samples, pool, scratch, y);
        if (!e) return e.error();
        total += *e;
    }
    return total;
}

Result<AwqClipResult> search_awq_clip(const AwqMember& m, std::span<const float> scales, std::span<const float> samples,
                                      int64_t n_samples, std::span<const float> ratios, cpu::ThreadPool& pool) {
    const int64_t block = AwqClip::kBlock, n_blocks = m.n_in / block;
    if (m.n_in % block != 0 || ratios.empty() || ratios.size() > 255 || int64_t(samples.size()) != n_samples * m.n_in)
        return make_error("AWQ clip: tensor '" + m.name + "' does not split into blocks of 32 columns");
    // The sample's Gram matrix, block-diagonal part: gram[b] = sum_x x_b x_b^T.
    std::vector<double> gram(size_t(n_blocks * block * block), 0.0);
    pool.parallel_for(n_blocks, [&](int64_t b, int) {
        double* g = gram.data() + b * block * block;
        for (int64_t r = 0; r < n_samples; ++r) {
            const float* x = samples.data() + r * m.n_in + b * block;
            for (int64_t i = 0; i < block; ++i)
                for (int64_t j = 0; j < block; ++j) g[i * block + j] += double(x[i]) * double(x[j]);
        }
    });
    // Each (row, block)'s own error under each uniform ratio.
    std::vector<float> best_error(size_t(m.n_out * n_blocks), INFINITY);
    AwqClip chosen;
    chosen.ratios.assign(ratios.begin(), ratios.end());
    chosen.choice.assign(size_t(m.n_out * n_blocks), 0);
    std::vector<float> delta;
    for (size_t k = 0; k < ratios.size(); ++k) {
        AwqClip uniform;
        uniform.uniform = ratios[k];
        if (Status s = awq_quantization_delta(m, scales, uniform, delta, pool); !s) return s.error();
        pool.parallel_for(m.n_out, [&](int64_t r, int) {
            for (int64_t b = 0; b < n_blocks; ++b) {
                const float* d = delta.data() + r * m.n_in + b * block;
                const double* g = gram.data() + b * block * block;
                double e = 0;
                for (int64_t i = 0; i < block; ++i) {
                    double gi = 0;
                    for (int64_t j = 0; j < block; ++j) gi += g[i * block + j] * double(d[j]);
                    e += double(d[i]) * gi;
                }
                float& best = best_error[size_t(r * n_blocks + b)];
                if (float(e) < best) {
                    best = float(e);
                    chosen.choice[size_t(r * n_blocks + b)] = uint8_t(k);
                }
            }
        });
    }
    // K-quant blocks share super-block scales, so the per-block choices are
    // judged together on the real objective before they are kept.
    cpu::ScratchBuffer scratch;
    std::vector<float> y;
    AwqClipResult result;
    if (Status s = awq_quantization_delta(m, scales, AwqClip{}, delta, pool); !s) return s.error();
    auto unclipped = delta_error(m, delta, samples, n_samples, pool, scratch, y);
    if (!unclipped) return unclipped.error();
    if (Status s = awq_quantization_delta(m, scales, chosen, delta, pool); !s) return s.error();
    auto clipped = delta_error(m, delta, samples, n_samples, pool, scratch, y);
    if (!clipped) return clipped.error();
    result.error_unclipped = *unclipped;
    if (*clipped < *unclipped) {
        result.clip = std::move(chosen);
        result.error = *clipped;
    } else {
        result.error = *unclipped;
    }
    return result;
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
