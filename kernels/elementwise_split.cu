// split_columns: one launch for every part, a thread per four columns.
#include "folio_kernels/elementwise.h"

namespace folio::kernels {
namespace {

__global__ void split_columns_kernel(const float* src, int64_t src_cols, SplitParts parts) {
    const int64_t row = blockIdx.y;
    const float* in = src + row * src_cols;
    int64_t first = 0;
    for (int p = 0; p < parts.count; ++p) {
        const int64_t width = parts.width[p];
        float* out = parts.dst[p] + row * width;
        for (int64_t c = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; c < width; c += int64_t{gridDim.x} * blockDim.x)
            out[c] = in[first + c];
        first += width;
    }
}

}  // namespace

cudaError_t split_columns(const float* src, int64_t n_rows, const SplitParts& parts, cudaStream_t s) {
    if (n_rows <= 0 || parts.count <= 0) return cudaSuccess;
    if (parts.count > kMaxSplitParts || n_rows > 65535) return cudaErrorInvalidValue;
    int64_t cols = 0, widest = 0;
    for (int p = 0; p < parts.count; ++p) {
        cols += parts.width[p];
        widest = parts.width[p] > widest ? parts.width[p] : widest;
    }
    constexpr int kThreads = 256;
    const unsigned blocks_x = static_cast<unsigned>((widest + kThreads - 1) / kThreads);
    split_columns_kernel<<<dim3(blocks_x > 64 ? 64 : blocks_x, static_cast<unsigned>(n_rows)), kThreads, 0, s>>>(src, cols, parts);
    return cudaGetLastError();
}

}  // namespace folio::kernels
