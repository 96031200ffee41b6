// The few passes over a whole vocabulary the Sampler makes (maximum, softmax
// sum, weights), written so the compiler vectorizes them at -O2: fixed
// 8-wide inner blocks (no remainder loop to guard), independent lanes (no
// reassociation of a sum), and an exp made of plain float arithmetic. That
// exp also makes weights bit-identical on every platform, where libm's
// expf may differ in the last bit.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace folio::sampling_math {

inline constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
inline constexpr size_t kLanes = 8;

// NaN never wins and never poisons a sum; +inf becomes the largest float so
// differences with the maximum stay finite.
inline float clean(float logit) {
    if (std::isnan(logit)) return kMinusInfinity;
    return std::min(logit, std::numeric_limits<float>::max());
}

// e^x for x <= 0, within about 2 ulp (Cephes' expf: Cody-Waite reduction by
// ln 2, then a degree-6 polynomial on [-ln2/2, ln2/2]). Exactly 1 at 0 (and
// above: +inf logits all weigh 1); 0 at or below about -87.7, where e^x
// leaves the normal floats, and for NaN. No branch, so it vectorizes.
inline float exp_nonpositive(float x) {
    x = x > -88.0f ? x : -88.0f;  // NaN too; -88 rounds to n = -127, whose 2^n below is 0
    x = x < 0.0f ? x : 0.0f;
    // Round to nearest by adding 1.5 * 2^23: float addition does the rounding.
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const float two_to_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
    return p * two_to_n;
}

// Probability relative to the most likely token, after temperature. One
// formula for the softmax sum, min-p, top-p, the draw and the logprobs. NaN
// weighs 0; `max` must be finite (max_logit's is).
inline float weight(float logit, float max, float temperature) {
    return exp_nonpositive((logit - max) / temperature);
}

// The largest logit, NaN ignored and +inf capped at the largest float (so
// differences with it stay finite); -inf when there is none.
inline float max_logit(std::span<const float> scores) {
    float lanes[kLanes];
    std::fill(lanes, lanes + kLanes, kMinusInfinity);
    size_t i = 0;
    for (; i + kLanes <= scores.size(); i += kLanes) {
        for (size_t j = 0; j < kLanes; ++j) {
            const float x = scores[i + j];
            lanes[j] = x > lanes[j] ? x : lanes[j];  // NaN compares false
        }
    }
    float best = kMinusInfinity;
    for (; i < scores.size(); ++i) best = scores[i] > best ? scores[i] : best;
    for (const float lane : lanes) best = std::max(best, lane);
    return std::min(best, std::numeric_limits<float>::max());
}

// weights[j] for the 8 scores at `block`.
inline void block_weights(const float* block, float max, float temperature, float* weights) {
    for (size_t j = 0; j < kLanes; ++j) weights[j] = weight(block[j], max, temperature);
}

inline double lane_sum(const float* weights) {
    double sum = 0.0;
    for (size_t j = 0; j < kLanes; ++j) sum += weights[j];
    return sum;
}

// Σ weight over `scores`, in a fixed order (so the same on every platform).
// With `out` (as long as `scores`), the weights are kept there too.
inline double sum_weights(std::span<const float> scores, float max, float temperature, float* out = nullptr) {
    double lanes[kLanes] = {};
    size_t i = 0;
    for (; i + kLanes <= scores.size(); i += kLanes) {
        float weights[kLanes];
        block_weights(scores.data() + i, max, temperature, weights);
        for (size_t j = 0; j < kLanes; ++j) lanes[j] += weights[j];
        if (out) std::copy(weights, weights + kLanes, out + i);
    }
    double sum = 0.0;
    for (const double lane : lanes) sum += lane;
    for (; i < scores.size(); ++i) {
        const float w = weight(scores[i], max, temperature);
        sum += w;
        if (out) out[i] = w;
    }
    return sum;
}

}  // namespace folio::sampling_math
