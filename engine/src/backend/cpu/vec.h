// Row-level vector primitives of the CPU forward pass (everything but the
// matmul): RMSNorm, the GLU activations, softmax pieces and the F16 K/V
// rows of the attention. AVX2/FMA/F16C bodies chosen at run time
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

}  // namespace folio::cpu::vec
