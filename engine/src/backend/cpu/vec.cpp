#include "backend/cpu/vec.h"

#include <cmath>

#include "cpu/fp16.h"
#include "cpu/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define FOLIO_VEC_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace folio::cpu::vec {
namespace {

[[maybe_unused]] bool use_avx2() {
    static const bool avx2 = best_isa() == Isa::Avx2;
    return avx2;
}

#if defined(__x86_64__)

FOLIO_VEC_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// exp(x) for 8 floats, Cephes' polynomial after range reduction by ln 2
// (relative error ~2e-7 over the clamped range).
FOLIO_VEC_AVX2 inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
    fx = _mm256_floor_ps(fx);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500E-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(pow2n));
}

FOLIO_VEC_AVX2 void rms_norm_avx2(const float* x, const float* w, float eps, int64_t n, float* out) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        acc = _mm256_fmadd_ps(v, v, acc);
    }
    float sum = hsum(acc);
    for (; i < n; ++i) sum += x[i] * x[i];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv), _mm256_loadu_ps(w + i)));
    for (; i < n; ++i) out[i] = x[i] * inv * w[i];
}

// gate * sigmoid(k * gate') * up, the shared shape of SiLU (k = 1, gate' =
// gate) and tanh-GELU (0.5 (1 + tanh u) = sigmoid(2u)).
FOLIO_VEC_AVX2 void silu_mul_avx2(float* gate, const float* up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
        _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)

FOLIO_VEC_AVX2 void gelu_mul_avx2(float* gate, const float* up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 c = _mm256_set1_ps(-2.0f * kGeluC), c3 = _mm256_set1_ps(0.044715f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(c3, g), _mm256_mul_ps(g, g), g);  // g + 0.044715 g³
        const __m256 e = exp8(_mm256_mul_ps(c, inner));
        _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; ++i) {
        const float g = gate[i];
        gate[i] = 0.5f * g * (1.0f + std::tanh(kGeluC * (g + 0.044715f * g * g * g))) * up[i];
    }
}

FOLIO_VEC_AVX2 float exp_sum_avx2(float* x, int64_t n, float max) {
    const __m256 vmax = _mm256_set1_ps(max);
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
        _mm256_storeu_ps(x + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum(acc);
    for (; i < n; ++i) sum += (x[i] = std::exp(x[i] - max));
    return sum;
}

FOLIO_VEC_AVX2 float dot_f16_avx2(const float* a, const uint16_t* b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
        const __m256 b1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + 8)));
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), b0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), b1, acc1);
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), b0, acc0);
    }
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += a[i] * _cvtsh_ss(b[i]);
    return sum;
}

FOLIO_VEC_AVX2 void axpy_f16_avx2(float* y, float s, const uint16_t* x, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vs, xv, _mm256_loadu_ps(y + i)));
    }
    for (; i < n; ++i) y[i] += s * _cvtsh_ss(x[i]);
}

// NQ query rows against n_keys key rows: the accumulators stay in registers
// (NQ is a compile-time count) and each key row is converted once for all.
template <int NQ>
FOLIO_VEC_AVX2 void scores_f16_avx2(const float* const* q, const uint16_t* k, int64_t k_stride, int64_t n_keys,
                                    int64_t n, float scale, float* const* out) {
    for (int64_t j = 0; j < n_keys; ++j, k += k_stride) {
        __m256 acc[NQ];
        for (int i = 0; i < NQ; ++i) acc[i] = _mm256_setzero_ps();
        for (int64_t d = 0; d < n; d += 8) {
            const __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + d)));
            for (int i = 0; i < NQ; ++i) acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(q[i] + d), kv, acc[i]);
        }
        for (int i = 0; i < NQ; ++i) out[i][j] = hsum(acc[i]) * scale;
    }
}

// Eight output values of NQ rows stay in registers over all the keys (the
// row-by-row axpy loaded and stored them once per key).
template <int NQ>
FOLIO_VEC_AVX2 void weighted_sum_f16_avx2(float* const* y, const float* const* s, const uint16_t* x,
                                          int64_t x_stride, int64_t n_keys, int64_t n) {
    for (int64_t d = 0; d < n; d += 8) {
        __m256 acc[NQ];
        for (int i = 0; i < NQ; ++i) acc[i] = _mm256_loadu_ps(y[i] + d);
        const uint16_t* xj = x + d;
        for (int64_t j = 0; j < n_keys; ++j, xj += x_stride) {
            const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xj)));
            for (int i = 0; i < NQ; ++i) acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(s[i][j]), xv, acc[i]);
        }
        for (int i = 0; i < NQ; ++i) _mm256_storeu_ps(y[i] + d, acc[i]);
    }
}

template <int NQ>
struct ScoresAvx2 {
    static void run(const float* const* q, const uint16_t* k, int64_t k_stride, int64_t n_keys, int64_t n,
                    float scale, float* const* out) {
        scores_f16_avx2<NQ>(q, k, k_stride, n_keys, n, scale, out);
    }
};

template <int NQ>
struct WeightedSumAvx2 {
    static void run(float* const* y, const float* const* s, const uint16_t* x, int64_t x_stride, int64_t n_keys,
                    int64_t n) {
        weighted_sum_f16_avx2<NQ>(y, s, x, x_stride, n_keys, n);
    }
};

FOLIO_VEC_AVX2 void round_to_f16_avx2(const float* x, float* out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; ++i) out[i] = _cvtsh_ss(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

FOLIO_VEC_AVX2 void to_f16_avx2(const float* x, uint16_t* out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) out[i] = fp32_to_fp16(x[i]);
}

#endif  // __x86_64__

}  // namespace

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out) {
#if defined(__x86_64__)
    if (use_avx2()) return rms_norm_avx2(x, w, eps, n, out);
#endif
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * w[i];
}

void silu_mul(float* gate, const float* up, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2()) return silu_mul_avx2(gate, up, n);
#endif
    for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void gelu_mul(float* gate, const float* up, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2()) return gelu_mul_avx2(gate, up, n);
#endif
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        gate[i] = 0.5f * g * (1.0f + std::tanh(0.7978845608028654f * (g + 0.044715f * g * g * g))) * up[i];
    }
}

float exp_sum(float* x, int64_t n, float max) {
#if defined(__x86_64__)
    if (use_avx2()) return exp_sum_avx2(x, n, max);
#endif
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - max));
    return sum;
}

float dot_f16(const float* a, const uint16_t* b, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2()) return dot_f16_avx2(a, b, n);
#endif
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += a[i] * fp16_to_fp32(b[i]);
    return sum;
}

void axpy_f16(float* y, float s, const uint16_t* x, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2()) return axpy_f16_avx2(y, s, x, n);
#endif
    for (int64_t i = 0; i < n; ++i) y[i] += s * fp16_to_fp32(x[i]);
}

void scores_f16_multi(const float* const* q, int n_q, const uint16_t* k, int64_t k_stride, int64_t n_keys,
                      int64_t n, float scale, float* const* out) {
    if (n_q <= 0) return;
#if defined(__x86_64__)
    if (use_avx2() && n % 8 == 0)
        return with_query_count<ScoresAvx2>(n_q, q, k, k_stride, n_keys, n, scale, out);
#endif
    for (int64_t j = 0; j < n_keys; ++j)
        for (int i = 0; i < n_q; ++i) out[i][j] = dot_f16(q[i], k + j * k_stride, n) * scale;
}

void weighted_sum_f16_multi(float* const* y, const float* const* s, int n_q, const uint16_t* x, int64_t x_stride,
                            int64_t n_keys, int64_t n) {
    if (n_q <= 0) return;
#if defined(__x86_64__)
    if (use_avx2() && n % 8 == 0) return with_query_count<WeightedSumAvx2>(n_q, y, s, x, x_stride, n_keys, n);
#endif
    for (int64_t j = 0; j < n_keys; ++j)
        for (int i = 0; i < n_q; ++i) axpy_f16(y[i], s[i][j], x + j * x_stride, n);
}

void round_to_f16(const float* x, float* out, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2()) return round_to_f16_avx2(x, out, n);
#endif
    for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
}

void to_f16(const float* x, uint16_t* out, int64_t n) {
#if defined(__x86_64__)
    if (use_avx2()) return to_f16_avx2(x, out, n);
#endif
    for (int64_t i = 0; i < n; ++i) out[i] = fp32_to_fp16(x[i]);
}

}  // namespace folio::cpu::vec
