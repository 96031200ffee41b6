// split_columns: one launch for every part and row, a grid-stride loop over
// runs of four columns (one column where a width or a pointer does not allow
// float4). The kernel before (one column a thread, a block per 256 columns
// of a row) moved ~0.8 TB/s: at pp512 of the 8B shape the Q/K/V split took
// ~1 ms of a 15.4 ms step (bench/results/cuda-glu-rows-2026-11-30.txt).
#include <type_traits>

#include "folio_kernels/elementwise.h"
#include "launch.cuh"
#include "matmul_layout.cuh"

namespace folio::kernels {
namespace {

// V columns a unit: float4 when every width is a multiple of 4 and every
// pointer 16-byte aligned, else one float.
template <int V>
__global__ void split_columns_kernel(const float* __restrict__ src, int64_t n_rows, int64_t cols, SplitParts parts) {
    using Vec = std::conditional_t<V == 4, float4, float>;
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    const int64_t row_units = cols / V, units = n_rows * row_units;
    for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < units; u += int64_t{gridDim.x} * blockDim.x) {
        const int64_t row = u / row_units;
        const int64_t c = (u - row * row_units) * V;
        const detail::RowOutput out = detail::row_output(parts, c);  // column c's part, as a matmul's row's
        *reinterpret_cast<Vec*>(out.at + row * out.stride) = *reinterpret_cast<const Vec*>(src + row * cols + c);
    }
}

}  // namespace

cudaError_t split_columns(const float* src, int64_t n_rows, const SplitParts& parts, cudaStream_t s) {
    if (n_rows <= 0 || parts.count <= 0) return cudaSuccess;
    if (parts.count > kMaxSplitParts) return cudaErrorInvalidValue;
    int64_t cols = 0;
    bool vec4 = reinterpret_cast<uintptr_t>(src) % 16 == 0;
    for (int p = 0; p < parts.count; ++p) {
        if (parts.width[p] <= 0) return cudaErrorInvalidValue;
        cols += parts.width[p];
        vec4 = vec4 && parts.width[p] % 4 == 0 && reinterpret_cast<uintptr_t>(parts.dst[p]) % 16 == 0;
    }
    constexpr int kThreads = 256;
    constexpr int64_t kMaxBlocks = 132 * 16;  // a few waves on an H200 (132 SMs); the loop does the rest
    const int64_t units = n_rows * (vec4 ? cols / 4 : cols);
    const int64_t blocks = (units + kThreads - 1) / kThreads;
    const dim3 grid(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
    if (vec4)
        return detail::launch_overlapped(detail::kPdlOther, split_columns_kernel<4>, grid, dim3(kThreads), s, src,
                                         n_rows, cols, parts);
    return detail::launch_overlapped(detail::kPdlOther, split_columns_kernel<1>, grid, dim3(kThreads), s, src, n_rows,
                                     cols, parts);
}

}  // namespace folio::kernels
