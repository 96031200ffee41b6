// The acceptance rule of speculative sampling (folio/spec.h).
#include <algorithm>
#include <vector>

#include "folio/spec.h"

namespace folio {

Verdict verify_one_hot(std::span<const int32_t> drafts, std::span<const int32_t> targets) {
    size_t j = 0;
    while (j < drafts.size() && j + 1 < targets.size() && targets[j] == drafts[j]) ++j;
    return {static_cast<int32_t>(j), j < targets.size() ? targets[j] : -1};
}

int32_t draw_from_weights(std::span<const float> weights, double u) {
    double total = 0.0;
    for (float w : weights) total += std::max(w, 0.0f);
    if (!(total > 0.0)) return -1;
    const double target = u * total;
    double cumulative = 0.0;
    int32_t last = -1;
    for (size_t i = 0; i < weights.size(); ++i) {
        if (!(weights[i] > 0.0f)) continue;
        cumulative += weights[i];
        last = static_cast<int32_t>(i);
        if (target < cumulative) return last;
    }
    return last;  // rounding left the target at the very top
}

Verdict verify_full_q(std::span<const std::span<const float>> p, std::span<const std::span<const float>> q,
                      std::span<const int32_t> drafts, Sampler& sampler) {
    const size_t k = std::min({drafts.size(), q.size(), p.empty() ? size_t{0} : p.size() - 1});
    std::vector<float> residual;
    for (size_t j = 0; j < k; ++j) {
        const auto x = static_cast<size_t>(drafts[j]);
        const float px = x < p[j].size() ? p[j][x] : 0.0f;
        const float qx = x < q[j].size() ? q[j][x] : 0.0f;
        // Accept with probability min(1, p(x) / q(x)): u * q(x) < p(x).
        if (sampler.take_uniform() * static_cast<double>(qx) < static_cast<double>(px)) continue;
        residual.resize(p[j].size());
        for (size_t v = 0; v < residual.size(); ++v)
            residual[v] = std::max(0.0f, p[j][v] - (v < q[j].size() ? q[j][v] : 0.0f));
        int32_t token = draw_from_weights(residual, sampler.take_uniform());
        // p <= q everywhere means p == q: the rejection had probability 0 (rounding); draw from p.
        if (token < 0) token = draw_from_weights(p[j], sampler.take_uniform());
        return {static_cast<int32_t>(j), token};
    }
    if (p.size() <= k) return {static_cast<int32_t>(k), -1};
    return {static_cast<int32_t>(k), draw_from_weights(p[k], sampler.take_uniform())};
}

}  // namespace folio
