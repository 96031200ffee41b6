// The Q8_0 K/V rows of the CPU attention. The AVX2 bodies compute each
// block's integer dot exactly and add the blocks in the scalar order, and
// the weighted sum is a fused multiply-add in both: AVX2 and scalar give
// the same bits.
#include <cmath>
#include <cstring>

#include "backend/cpu/vec.h"
#include "cpu/fp16.h"
#include "cpu/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define FOLIO_VEC_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace folio::cpu::vec {
namespace {

constexpr int64_t kQ8 = 32;
constexpr int64_t kQ8Bytes = 34;

[[maybe_unused]] bool use_avx2() {
    static const bool avx2 = best_isa() == Isa::Avx2;
    return avx2;
}

float block_scale(const uint8_t* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return fp16_to_fp32(d);
}

const int8_t* block_values(const uint8_t* block) { return reinterpret_cast<const int8_t*>(block + 2); }

int32_t block_dot_scalar(const uint8_t* a, const uint8_t* b) {
    const int8_t* qa = block_values(a);
    const int8_t* qb = block_values(b);
    int32_t sum = 0;
    for (int64_t i = 0; i < kQ8; ++i) sum += int32_t{qa[i]} * qb[i];
    return sum;
}

#if defined(__x86_64__)

// Σ a[i] * b[i] over one block's 32 int8 values, exactly (|q| <= 127, so
// maddubs' pair sums fit in int16).
FOLIO_VEC_AVX2 inline int32_t block_dot_avx2(const uint8_t* a, const uint8_t* b) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2));
    const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qa, qa), _mm256_sign_epi8(qb, qa));
    const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

template <int NQ>
FOLIO_VEC_AVX2 void scores_q8_0_avx2(const uint8_t* const* q, const uint8_t* k, int64_t k_stride, int64_t n_keys,
                                     int64_t n, float scale, float* const* out) {
    for (int64_t j = 0; j < n_keys; ++j, k += k_stride) {
        float acc[NQ] = {};
        for (int64_t b = 0; b < n / kQ8; ++b) {
            const uint8_t* kb = k + b * kQ8Bytes;
            const float dk = block_scale(kb);
            for (int i = 0; i < NQ; ++i) {
                const uint8_t* qb = q[i] + b * kQ8Bytes;
                acc[i] += static_cast<float>(block_dot_avx2(qb, kb)) * (block_scale(qb) * dk);
            }
        }
        for (int i = 0; i < NQ; ++i) out[i][j] = acc[i] * scale;
    }
}

// Eight output values of NQ rows stay in registers over all the keys.
template <int NQ>
FOLIO_VEC_AVX2 void weighted_sum_q8_0_avx2(float* const* y, const float* const* s, const uint8_t* x,
                                           int64_t x_stride, int64_t n_keys, int64_t n) {
    for (int64_t d = 0; d < n; d += 8) {
        __m256 acc[NQ];
        for (int i = 0; i < NQ; ++i) acc[i] = _mm256_loadu_ps(y[i] + d);
        const uint8_t* block = x + d / kQ8 * kQ8Bytes;
        const int64_t within = d % kQ8;
        for (int64_t j = 0; j < n_keys; ++j, block += x_stride) {
            const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + within));
            const __m256 xv = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)),
                                            _mm256_set1_ps(block_scale(block)));
            for (int i = 0; i < NQ; ++i) acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(s[i][j]), xv, acc[i]);
        }
        for (int i = 0; i < NQ; ++i) _mm256_storeu_ps(y[i] + d, acc[i]);
    }
}

template <int NQ>
struct ScoresQ8Avx2 {
    static void run(const uint8_t* const* q, const uint8_t* k, int64_t k_stride, int64_t n_keys, int64_t n,
                    float scale, float* const* out) {
        scores_q8_0_avx2<NQ>(q, k, k_stride, n_keys, n, scale, out);
    }
};

template <int NQ>
struct WeightedSumQ8Avx2 {
    static void run(float* const* y, const float* const* s, const uint8_t* x, int64_t x_stride, int64_t n_keys,
                    int64_t n) {
        weighted_sum_q8_0_avx2<NQ>(y, s, x, x_stride, n_keys, n);
    }
};

#endif  // __x86_64__

}  // namespace

void quantize_q8_0(const float* x, uint8_t* out, int64_t n) {
    for (int64_t b = 0; b < n / kQ8; ++b, x += kQ8, out += kQ8Bytes) {
        float amax = 0.0f;
        for (int64_t i = 0; i < kQ8; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t d16 = fp32_to_fp16(d);
        std::memcpy(out, &d16, sizeof d16);
        auto* q = reinterpret_cast<int8_t*>(out + 2);
        for (int64_t i = 0; i < kQ8; ++i) q[i] = static_cast<int8_t>(std::roundf(x[i] * id));
    }
}

void dequantize_q8_0(const uint8_t* x, float* out, int64_t n) {
    for (int64_t b = 0; b < n / kQ8; ++b, x += kQ8Bytes, out += kQ8) {
        const float d = block_scale(x);
        for (int64_t i = 0; i < kQ8; ++i) out[i] = d * static_cast<float>(block_values(x)[i]);
    }
}

void scores_q8_0_multi(const uint8_t* const* q, int n_q, const uint8_t* k, int64_t k_stride, int64_t n_keys,
                       int64_t n, float scale, float* const* out) {
    if (n_q <= 0) return;
#if defined(__x86_64__)
    if (use_avx2()) return with_query_count<ScoresQ8Avx2>(n_q, q, k, k_stride, n_keys, n, scale, out);
#endif
    for (int64_t j = 0; j < n_keys; ++j) {
        const uint8_t* kj = k + j * k_stride;
        for (int i = 0; i < n_q; ++i) {
            float acc = 0.0f;
            for (int64_t b = 0; b < n / kQ8; ++b) {
                const uint8_t* qb = q[i] + b * kQ8Bytes;
                const uint8_t* kb = kj + b * kQ8Bytes;
                acc += static_cast<float>(block_dot_scalar(qb, kb)) * (block_scale(qb) * block_scale(kb));
            }
            out[i][j] = acc * scale;
        }
    }
}

void weighted_sum_q8_0_multi(float* const* y, const float* const* s, int n_q, const uint8_t* x, int64_t x_stride,
                             int64_t n_keys, int64_t n) {
    if (n_q <= 0) return;
#if defined(__x86_64__)
    if (use_avx2()) return with_query_count<WeightedSumQ8Avx2>(n_q, y, s, x, x_stride, n_keys, n);
#endif
    for (int64_t j = 0; j < n_keys; ++j) {
        const uint8_t* xj = x + j * x_stride;
        for (int64_t b = 0; b < n / kQ8; ++b) {
            const float d = block_scale(xj + b * kQ8Bytes);
            const int8_t* qv = block_values(xj + b * kQ8Bytes);
            for (int i = 0; i < n_q; ++i)
                for (int64_t e = 0; e < kQ8; ++e)
                    y[i][b * kQ8 + e] = std::fma(s[i][j], d * static_cast<float>(qv[e]), y[i][b * kQ8 + e]);
        }
    }
}

}  // namespace folio::cpu::vec
