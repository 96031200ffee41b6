// The engine Sampler's weight on the GPU, shared by the sampling kernels.
#pragma once

#include <cfloat>
#include <cmath>

namespace folio::kernels::detail {

// The Sampler's weight, e^((v - max) / t) through its own exp
// (engine/src/sampling/softmax_math.h, exp_nonpositive), operation for
// operation: every multiply and add is rounded on its own (__fmul_rn /
// __fadd_rn, no fused multiply-add the host does not do), so each weight is
// the host's float bit for bit (the sums over weights are the callers').
__device__ __forceinline__ float sampler_weight(float v, float max, float t) {
    v = isnan(v) ? -INFINITY : fminf(v, FLT_MAX);
    float x = __fdiv_rn(__fsub_rn(v, max), t);
    x = x > -88.0f ? x : -88.0f;
    x = x < 0.0f ? x : 0.0f;
    const float n = __fsub_rn(__fadd_rn(__fmul_rn(x, 1.44269504088896341f), 12582912.0f), 12582912.0f);
    float r = __fsub_rn(x, __fmul_rn(n, 0.693359375f));
    r = __fsub_rn(r, __fmul_rn(n, -2.12194440e-4f));
    float p = 1.9875691500e-4f;
    p = __fadd_rn(__fmul_rn(p, r), 1.3981999507e-3f);
    p = __fadd_rn(__fmul_rn(p, r), 8.3334519073e-3f);
    p = __fadd_rn(__fmul_rn(p, r), 4.1665795894e-2f);
    p = __fadd_rn(__fmul_rn(p, r), 1.6666665459e-1f);
    p = __fadd_rn(__fmul_rn(p, r), 5.0000001201e-1f);
    p = __fadd_rn(__fadd_rn(__fmul_rn(p, __fmul_rn(r, r)), r), 1.0f);
    return __fmul_rn(p, __int_as_float((static_cast<int>(n) + 127) << 23));
}

// The end of the host's softmax sum (sampling_math::sum_weights): its eight
// lane sums added in order from 0.0, then the weights of the columns from
// `whole` (past the last whole block of eight) to n_cols, one by one.
__device__ __forceinline__ double finish_host_sum(const double* lanes, const float* row, int64_t whole,
                                                  int64_t n_cols, float max, float t) {
    double sum = 0.0;
    for (int j = 0; j < 8; ++j) sum = __dadd_rn(sum, lanes[j]);
    for (int64_t i = whole; i < n_cols; ++i) sum = __dadd_rn(sum, static_cast<double>(sampler_weight(row[i], max, t)));
    return sum;
}

}  // namespace folio::kernels::detail
