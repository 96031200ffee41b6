// Column sums of squares and of magnitudes over the rows of a matmul's input
// (the importance matrix, quant/imatrix_collect.cpp). Rows are row-major, so
// a thread per column reads consecutive addresses across a warp; the rows are
// cut into slices summed side by side (a 512-row chunk is 16 slices: 16x the
// blocks of one pass down all rows), then the slices are added in order.
#include <algorithm>
#include <cmath>

#include "folio_kernels/elementwise.h"

namespace folio::kernels {
namespace {

constexpr int kThreads = 256;

int64_t n_slices(int64_t n_rows) { return (n_rows + kColumnStatsRows - 1) / kColumnStatsRows; }

// partial[slice][0][j] = sum of x^2, partial[slice][1][j] = sum of |x| over the slice's rows.
__global__ void slice_stats(const float* x, int64_t n_rows, int64_t dim, float* partial) {
    const int64_t col = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (col >= dim) return;
    const int64_t first = int64_t{blockIdx.y} * kColumnStatsRows;
    const int64_t last = min(n_rows, first + kColumnStatsRows);
    float squares = 0.0f, magnitudes = 0.0f;
    for (int64_t r = first; r < last; ++r) {
        const float v = x[r * dim + col];
        squares += v * v;
        magnitudes += fabsf(v);
    }
    float* out = partial + int64_t{blockIdx.y} * 2 * dim;
    out[col] = squares;
    out[dim + col] = magnitudes;
}

__global__ void add_slices(const float* partial, int64_t slices, int64_t dim, float* out) {
    const int64_t col = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (col >= dim) return;
    float squares = 0.0f, magnitudes = 0.0f;
    for (int64_t s = 0; s < slices; ++s) {
        squares += partial[s * 2 * dim + col];
        magnitudes += partial[s * 2 * dim + dim + col];
    }
    out[col] = squares;
    out[dim + col] = magnitudes;
}

}  // namespace

int64_t column_stats_workspace_floats(int64_t n_rows, int64_t dim) { return n_slices(n_rows) * 2 * dim; }

cudaError_t column_stats(const float* x, int64_t n_rows, int64_t dim, float* out, float* workspace, cudaStream_t s) {
    if (n_rows <= 0 || dim <= 0) return cudaErrorInvalidValue;
    const int64_t slices = n_slices(n_rows);
    if (slices > 65535) return cudaErrorInvalidValue;  // the grid's y limit: 2M rows
    const auto col_blocks = static_cast<unsigned>((dim + kThreads - 1) / kThreads);
    slice_stats<<<dim3(col_blocks, static_cast<unsigned>(slices)), kThreads, 0, s>>>(x, n_rows, dim, workspace);
    add_slices<<<col_blocks, kThreads, 0, s>>>(workspace, slices, dim, out);
    return cudaGetLastError();
}

}  // namespace folio::kernels
