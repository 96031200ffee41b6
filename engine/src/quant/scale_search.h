// The scale searches behind the K-quants: given a group of values, choose
// the grid step (and, for the asymmetric types, the offset) whose rounded
// values reproduce the group best under a per-value weight. These are the
// searches GGML's reference quantizers run; the float operations are kept in
// their order (and the file built without FMA contraction) so the chosen
// integers, and so the bytes written, are the same as llama-quantize's.
#pragma once

#include <cstdint>
#include <cstring>

namespace folio::quant {

// Round to nearest, ties to even, for |v| < 2^22 (all the searches need):
// adding 1.5 * 2^23 puts the integer part in the low mantissa bits, rounded
// by the FPU. Inline: the searches call it for every value and step.
inline int nearest_int(float v) {
    const float shifted = v + 12582912.f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

// Asymmetric group x ~ scale * L - offset with L in [0, nmax]: starts from
// the min-max grid, then tries the steps (nmax + rmin + rdelta * k) / range
// for k = 0..nstep, each refitted by weighted least squares, keeping the one
// of least weighted squared error. Returns scale; *offset gets the offset
// (>= 0). L receives the levels. `weights` has n entries.
float search_offset_scale(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* offset,
                          float rmin, float rdelta, int nstep);

// Symmetric group x ~ scale * (L - nmax) with L - nmax in [-nmax, nmax - 1]:
// the grid through the value of largest magnitude, then 18 neighbouring
// steps, keeping the best weighted least-squares fit. `weights` null means
// x^2 (GGML's rmse_type 1). Returns scale (signed); L receives L - nmax + nmax.
float search_symmetric_scale(int n, int nmax, const float* x, int8_t* L, const float* weights);

// Positive values (the sub-block scales of a super-block) on a grid of
// nmax + 1 levels through zero, weighted: the step of least weighted error
// among 9 candidates, then refined level by level. Returns the step.
float search_positive_scale(int n, int nmax, const float* x, uint8_t* L, const float* weights);

}  // namespace folio::quant
