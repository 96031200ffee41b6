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
// Up to kMaxQueries rows at once against one half row (the attention of a
// block of queries: each key or value row is read and converted once).
inline constexpr int kMaxQueries = 8;
// out[i] = Σ q[i][d] * k[d]  for i < n_q
void dot_f16_multi(const float* const* q, int n_q, const uint16_t* k, int64_t n, float* out);
// y[i][d] += s[i] * x[d]  for i < n_q
void axpy_f16_multi(float* const* y, const float* s, int n_q, const uint16_t* x, int64_t n);
// out = x rounded to the nearest IEEE half (kept as float); out may be x.
void round_to_f16(const float* x, float* out, int64_t n);
// Rounds a float row to IEEE half.
void to_f16(const float* x, uint16_t* out, int64_t n);

}  // namespace folio::cpu::vec
