// The fp8 (MXFP8 E4M3) K/V rows of the CPU attention: a block is one E8M0
// scale byte and 32 E4M3 bytes (folio/kv_type.h). Rows are read back as
// half(e4m3 * scale) and attended as an F16 cache's rows are; the AVX2
// reading gives the same bits as the scalar one for every finite value (the
// product is exact in float, both round it to half to nearest even).
#include <array>
#include <cmath>

#include "backend/cpu/vec.h"
#include "cpu/fp16.h"
#include "cpu/fp8.h"
#include "cpu/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define FOLIO_VEC_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace folio::cpu::vec {
namespace {

constexpr int64_t kBlock = 32;
constexpr int64_t kBlockBytes = 33;

const std::array<float, 256>& e4m3_values() {
    static const std::array<float, 256> table = [] {
        std::array<float, 256> t{};
        for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = e4m3_to_fp32(static_cast<uint8_t>(b));
        return t;
    }();
    return table;
}

#if defined(__x86_64__)
bool use_avx2() {
    static const bool avx2 = best_isa() == Isa::Avx2;
    return avx2;
}

// An E4M3 byte's 7 magnitude bits shifted up by 7 are a half of the same
// mantissa whose exponent is 8 less (E4M3's bias is 7, half's 15; E4M3's
// subnormals land on half's): half(bits << 7) = e4m3 * 2^-8, exactly. So a
// block converts with shifts and F16C, no table: * (scale * 2^8), exact in
// float, then rounded to half. (Codes 0x7F / 0xFF, NaN, come out finite
// here; the cache holds them only for NaN inputs.)
FOLIO_VEC_AVX2 void dequantize_fp8_f16_avx2(const uint8_t* x, uint16_t* out, int64_t n) {
    const __m128i magnitude = _mm_set1_epi16(0x7F), sign = _mm_set1_epi16(0x80);
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlockBytes, out += kBlock) {
        if (x[0] > 254 - 8) {  // scale * 2^8 would overflow: the scalar way
            const auto& table = e4m3_values();
            for (int64_t i = 0; i < kBlock; ++i) out[i] = fp32_to_fp16(table[x[1 + i]] * mx_scale(x[0]));
            continue;
        }
        const __m256 scale = _mm256_set1_ps(mx_scale(static_cast<uint8_t>(x[0] + 8)));
        for (int64_t i = 0; i < kBlock; i += 8) {
            const __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + 1 + i)));
            const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(w, magnitude), 7),
                                           _mm_slli_epi16(_mm_and_si128(w, sign), 8));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                             _mm256_cvtps_ph(_mm256_mul_ps(_mm256_cvtph_ps(h), scale), _MM_FROUND_TO_NEAREST_INT));
        }
    }
}
#endif

}  // namespace

void quantize_fp8(const float* x, uint8_t* out, int64_t n) {
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, out += kBlockBytes) {
        float amax = 0.0f;
        for (int64_t i = 0; i < kBlock; ++i) amax = std::fmax(amax, std::fabs(x[i]));
        out[0] = mx_scale_byte(amax);
        const float inv = 1.0f / mx_scale(out[0]);  // a power of two: x * inv is x / scale exactly
        for (int64_t i = 0; i < kBlock; ++i) out[1 + i] = fp32_to_e4m3(x[i] * inv);
    }
}

void dequantize_fp8(const uint8_t* x, float* out, int64_t n) {
    const auto& table = e4m3_values();
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlockBytes, out += kBlock) {
        const float scale = mx_scale(x[0]);
        for (int64_t i = 0; i < kBlock; ++i) out[i] = table[x[1 + i]] * scale;
    }
}

void dequantize_fp8_f16(const uint8_t* x, uint16_t* out, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2()) return dequantize_fp8_f16_avx2(x, out, n);
#endif
    const auto& table = e4m3_values();
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlockBytes, out += kBlock) {
        const float scale = mx_scale(x[0]);
        for (int64_t i = 0; i < kBlock; ++i) out[i] = fp32_to_fp16(table[x[1 + i]] * scale);
    }
}

}  // namespace folio::cpu::vec
