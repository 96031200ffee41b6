// Row-level vector primitives of the CPU forward pass (everything but the
// matmul): RMSNorm, the GLU activations, softmax pieces and the F16,
// Q8_0 or fp8 K/V rows of the attention. AVX2/FMA/F16C bodies chosen at run time
// (cpu::best_isa()), with a portable scalar fallback.
#pragma once

#include <cstdint>

namespace folio::cpu::vec {

// out = x / sqrt(mean(x²) + eps) * w; out may be x.
void rms_norm(const float* x, const float* w, float eps, int64_t n, float* out);
// gate = silu(gate) * up
void silu_mul(float* gate, const float* up, int64_t n);
// gate = gelu_tanh(gate) * up
void gelu_mul(float* gate, const float* up, int64_t n);
// x = exp(x - max) in place; returns the sum.
float exp_sum(float* x, int64_t n, float max);
// Σ a[i] * b[i] with b in IEEE half.
float dot_f16(const float* a, const uint16_t* b, int64_t n);
// y += s * x with x in IEEE half.
void axpy_f16(float* y, float s, const uint16_t* x, int64_t n);
// Up to kMaxQueries query rows at once against a run of half rows (the
// attention of a block of queries over the keys of one KV block: each key
// or value row is read and converted once for all the queries). Each
// output is computed as the one-row functions above would: a row's result
// does not depend on the other rows of its block.
inline constexpr int kMaxQueries = 8;
// out[i][j] = scale * Σ_d q[i][d] * k_j[d]  for i < n_q, j < n_keys;  k_j = k + j * k_stride
void scores_f16_multi(const float* const* q, int n_q, const uint16_t* k, int64_t k_stride, int64_t n_keys,
                      int64_t n, float scale, float* const* out);
// y[i][d] += s[i][j] * x_j[d]  for j = 0 .. n_keys-1 in order, i < n_q;  x_j = x + j * x_stride
void weighted_sum_f16_multi(float* const* y, const float* const* s, int n_q, const uint16_t* x, int64_t x_stride,
                            int64_t n_keys, int64_t n);
// out = x rounded to the nearest IEEE half (kept as float); out may be x.
void round_to_f16(const float* x, float* out, int64_t n);
// Rounds a float row to IEEE half.
void to_f16(const float* x, uint16_t* out, int64_t n);

// Q8_0 K/V rows (backend/cpu/vec_q8_0.cpp): GGML block_q8_0, 34 bytes per 32
// values (fp16 d, 32 int8 q, x = d * q); n is a multiple of 32.
// x as Q8_0 with GGML's reference rounding (quantize_row_q8_0_ref):
// d = amax / 127, q = roundf(x / d).
void quantize_q8_0(const float* x, uint8_t* out, int64_t n);
// out = d * q (exact in float).
void dequantize_q8_0(const uint8_t* x, float* out, int64_t n);
// Scores of Q8_0 queries against Q8_0 keys, as llama.cpp's CPU attention
// takes them (the query quantized to the key's dot type): per block b an
// integer dot sumi_b, then out[i][j] = scale * Σ_b sumi_b * (d_q,b * d_k,b),
// summed over b in order in float.
void scores_q8_0_multi(const uint8_t* const* q, int n_q, const uint8_t* k, int64_t k_stride, int64_t n_keys,
                       int64_t n, float scale, float* const* out);
// y[i][d] = fma(s[i][j], d_j * q_j[d], y[i][d])  for j = 0 .. n_keys-1 in order: the
// values dequantized on the fly into the weighted sum.
void weighted_sum_q8_0_multi(float* const* y, const float* const* s, int n_q, const uint8_t* x, int64_t x_stride,
                             int64_t n_keys, int64_t n);

// fp8 K/V rows (backend/cpu/vec_fp8.cpp): MXFP8 blocks, 33 bytes per 32
// values (an E8M0 scale byte, 32 E4M3 bytes; folio/kv_type.h); n is a
// multiple of 32.
void quantize_fp8(const float* x, uint8_t* out, int64_t n);
// out = e4m3 * scale (exact in float).
void dequantize_fp8(const uint8_t* x, float* out, int64_t n);
// out = half(e4m3 * scale): the row an fp8 cache's attention reads.
void dequantize_fp8_f16(const uint8_t* x, uint16_t* out, int64_t n);

// Kernel<n_q>::run(args...) for n_q in 1..kMaxQueries: the multi-query
// kernels are templates on their row count, so each count unrolls.
template <template <int> class Kernel, typename... Args>
void with_query_count(int n_q, Args... args) {
    static_assert(kMaxQueries == 8);
    switch (n_q) {
        case 1: return Kernel<1>::run(args...);
        case 2: return Kernel<2>::run(args...);
        case 3: return Kernel<3>::run(args...);
        case 4: return Kernel<4>::run(args...);
        case 5: return Kernel<5>::run(args...);
        case 6: return Kernel<6>::run(args...);
        case 7: return Kernel<7>::run(args...);
        default: return Kernel<8>::run(args...);
    }
}

}  // namespace folio::cpu::vec
