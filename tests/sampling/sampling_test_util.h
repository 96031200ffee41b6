// Shared helpers for the sampling suites: hand-made distributions and
// empirical frequencies from seeded draws.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "folio/sampling.h"

namespace sampling_test {

// Logits whose softmax (at temperature 1) is `probabilities`.
inline std::vector<float> logits_of(const std::vector<double>& probabilities) {
    std::vector<float> logits;
    for (const double p : probabilities) logits.push_back(static_cast<float>(std::log(p)));
    return logits;
}

inline std::vector<double> softmax(std::span<const float> logits, double temperature) {
    double max = logits[0];
    for (const float l : logits) max = std::max(max, static_cast<double>(l));
    std::vector<double> p;
    double sum = 0.0;
    for (const float l : logits) {
        p.push_back(std::exp((l - max) / temperature));
        sum += p.back();
    }
    for (double& x : p) x /= sum;
    return p;
}

// Only the parts of the pipeline a test names are on.
inline folio::SamplingParams plain(float temperature, uint64_t seed = 1234) {
    folio::SamplingParams params;
    params.temperature = temperature;
    params.top_k = 0;
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.seed = seed;
    return params;
}

// How often each id came out of `draws` calls.
inline std::vector<int> counts(folio::Sampler& sampler, std::span<const float> logits, int draws) {
    std::vector<int> seen(logits.size(), 0);
    for (int i = 0; i < draws; ++i) {
        const int32_t id = sampler.sample(logits, {});
        if (id >= 0 && static_cast<size_t>(id) < seen.size()) ++seen[static_cast<size_t>(id)];
    }
    return seen;
}

// Pearson's statistic of observed counts against expected probabilities
// (ids with probability 0 must not be seen at all: they add infinity).
inline double chi_square(const std::vector<int>& seen, const std::vector<double>& expected, int draws) {
    double chi = 0.0;
    for (size_t i = 0; i < seen.size(); ++i) {
        const double e = expected[i] * draws;
        if (e == 0.0) {
            if (seen[i] != 0) return INFINITY;
            continue;
        }
        chi += (seen[i] - e) * (seen[i] - e) / e;
    }
    return chi;
}

}  // namespace sampling_test
