// Helpers for the AVX2 kernel files. Every function carries the target
// attribute so the library builds without -march flags and only calls into
// this code after a run-time CPU check (kernels.cpp). Internal linkage keeps
// these AVX2-compiled bodies from being merged with anything called elsewhere.
#pragma once

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define FOLIO_AVX2 __attribute__((target("avx2,fma,f16c")))
// Tile loops have compile-time trip counts; unrolled, their accumulator
// arrays live in registers instead of being stored and reloaded per block.
#if defined(__clang__)
#define FOLIO_UNROLL _Pragma("unroll")
#else
#define FOLIO_UNROLL _Pragma("GCC unroll 16")
#endif

namespace folio::cpu {
namespace {

FOLIO_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

FOLIO_AVX2 inline int hsum_i32(__m128i v) {
    v = _mm_add_epi32(v, _mm_unpackhi_epi64(v, v));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(v);
}

FOLIO_AVX2 inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }
FOLIO_AVX2 inline uint16_t float_to_half(float f) {
    return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

FOLIO_AVX2 inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16 bytes of packed nibbles -> 32 bytes: the low nibbles, then the high ones.
FOLIO_AVX2 inline __m256i unpack_nibbles16(const uint8_t* qs) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 32 bits -> 32 bytes, 0xFF where the bit is set: byte i looks at bit i.
FOLIO_AVX2 inline __m256i bytes_from_bits32(const uint8_t* bits) {
    uint32_t x;
    std::memcpy(&x, bits, sizeof x);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(x)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    // every bit set except bit (i % 8): all ones exactly when that bit is set.
    const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
    return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
}

// Signed int8 x signed int8, pairwise summed into 8 int32 lanes.
FOLIO_AVX2 inline __m256i dot_i8_abs(__m256i w_abs, __m256i w, __m256i a) {
    // maddubs wants one unsigned side: move w's sign onto a.
    const __m256i products = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(a, w));
    return _mm256_madd_epi16(products, _mm256_set1_epi16(1));
}

// Unsigned int8 (< 128) x signed int8, pairwise summed into 8 int32 lanes.
FOLIO_AVX2 inline __m256i dot_u8(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
}

// 32 floats -> 32 int8 of round-half-even(x * scale), in order; also the
// 8-lane int32 vectors before packing, for sums.
struct Quantized32 {
    __m256i bytes;
    __m256i lo;  // int32 sums of elements {0..7} + {8..15}, lane-wise
    __m256i hi;  // same for {16..23} + {24..31}
};
FOLIO_AVX2 inline Quantized32 quantize32(const float* x, float scale) {
    const __m256 s = _mm256_set1_ps(scale);
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), s), kRound));
    const __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8), s), kRound));
    const __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 16), s), kRound));
    const __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 24), s), kRound));
    // packs work within 128-bit lanes; the permute restores element order.
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    const __m256i bytes = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    return {bytes, _mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)};
}

FOLIO_AVX2 inline float amax32(const float* x, int n) {  // n a multiple of 32
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 32) {
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i + 8)));
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i + 16)));
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i + 24)));
    }
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

}  // namespace
}  // namespace folio::cpu

#endif  // __x86_64__
