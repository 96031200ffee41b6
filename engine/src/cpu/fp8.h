// FP8 E4M3 (OCP 8-bit floating point, "fn": no infinities, 448 the largest
// finite value) and the MXFP8 block scale of the fp8 KV cache
// (folio/kv_type.h). Exact scalar conversions; the CUDA kernels compute the
// same bits (kernels/attention_rope.cu, checked by test_gpu_backend).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace folio::cpu {

inline constexpr float kE4m3Max = 448.0f;

// x rounded to the nearest E4M3 value (ties to even), saturating at ±448;
// NaN becomes 0x7F.
inline uint8_t fp32_to_e4m3(float x) {
    if (std::isnan(x)) return 0x7F;
    const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
    const float a = std::fabs(x);
    if (a == 0.0f) return sign;
    // 2^e <= a with e at least the smallest normal exponent (-6): the
    // 3-bit mantissa counts steps of 2^(e - 3), subnormals included.
    int e = 0;
    std::frexp(a, &e);
    e = std::max(e - 1, -6);
    const float steps = std::nearbyint(std::ldexp(a, 3 - e));  // 8..16 (0..8 below 2^-6), to nearest even
    const int code = ((e + 7) << 3) + static_cast<int>(std::fmin(steps, 16.0f)) - 8;
    return static_cast<uint8_t>(sign | std::min(code, 0x7E));
}

inline float e4m3_to_fp32(uint8_t b) {
    const int exponent = (b >> 3) & 0xF, mantissa = b & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return std::nanf("");
    const float a = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                  : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
    return (b & 0x80) ? -a : a;
}

// The E8M0 byte e of a block whose largest magnitude is amax: the smallest
// power of two 2^(e - 127) with amax / 2^(e - 127) <= 448 (127, a scale of 1,
// for an all-zero block).
inline uint8_t mx_scale_byte(float amax) {
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 127;
    int e = 0;
    const float f = std::frexp(amax / kE4m3Max, &e);  // amax / 448 = f 2^e, f in [0.5, 1)
    if (f == 0.5f) --e;                              // exactly a power of two
    return static_cast<uint8_t>(std::clamp(e + 127, 0, 254));
}

inline float mx_scale(uint8_t e) { return std::ldexp(1.0f, int{e} - 127); }

}  // namespace folio::cpu
