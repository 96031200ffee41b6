#include "folio_kernels/sampling.h"

#include <climits>
#include <cmath>

namespace folio::kernels {
namespace {

constexpr int kThreads = 1024;

// Whether (v, i) beats (best, at): larger, or equal with a lower id.
__device__ bool beats(float v, int64_t i, float best, int64_t at) { return v > best || (v == best && i < at); }

__global__ void __launch_bounds__(kThreads) argmax_rows_kernel(const float* x, int64_t n_cols, int32_t* out) {
    const float* row = x + int64_t{blockIdx.x} * n_cols;
    float best = -INFINITY;
    int64_t at = LLONG_MAX;
    for (int64_t i = threadIdx.x; i < n_cols; i += kThreads) {
        const float v = row[i];  // NaN compares false: never taken
        if (beats(v, i, best, at)) best = v, at = i;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        const float v = __shfl_down_sync(0xffffffffu, best, offset);
        const int64_t i = __shfl_down_sync(0xffffffffu, at, offset);
        if (beats(v, i, best, at)) best = v, at = i;
    }
    __shared__ float warp_best[kThreads / 32];
    __shared__ int64_t warp_at[kThreads / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_best[warp] = best, warp_at[warp] = at;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < kThreads / 32; ++w)
            if (beats(warp_best[w], warp_at[w], best, at)) best = warp_best[w], at = warp_at[w];
        out[blockIdx.x] = at == LLONG_MAX ? 0 : static_cast<int32_t>(at);
    }
}

}  // namespace

cudaError_t argmax_rows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* out, cudaStream_t s) {
    if (n_rows <= 0) return cudaSuccess;
    if (n_rows > 0x7fffffff || n_cols <= 0 || n_cols > 0x7fffffff) return cudaErrorInvalidValue;
    argmax_rows_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, s>>>(x, n_cols, out);
    return cudaGetLastError();
}

}  // namespace folio::kernels
