// F32, F16 and BF16 weights times F32 activations. One activation row (batch-1
// decode): one warp per weight row, 16-byte weight loads, F32 arithmetic.
// More rows: cuBLAS (faster from two rows on, measured), with the activations
// converted to the weights' type in the workspace (F32 weights: F32 math, no
// TF32), accumulating in F32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>

#include "folio_kernels/check.h"
#include "matmul_layout.cuh"

namespace folio::kernels::detail {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;  // what cuBLAS asks for on Hopper

template <WeightType T>
constexpr int kElemBytes = T == WeightType::F32 ? 4 : 2;

// 16 bytes of weights as floats (4 for F32, 8 for F16 / BF16).
template <WeightType T>
__device__ __forceinline__ void unpack16(const uint4& v, float (&out)[16 / kElemBytes<T>]) {
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        if constexpr (T == WeightType::F32) {
            out[k] = __uint_as_float(words[k]);
        } else if constexpr (T == WeightType::F16) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&words[k]));
            out[2 * k] = f.x;
            out[2 * k + 1] = f.y;
        } else {
            out[2 * k] = __uint_as_float(words[k] << 16);
            out[2 * k + 1] = __uint_as_float(words[k] & 0xffff0000u);
        }
    }
}

// acc + f · x over one 16-byte chunk of weights (x: its kElems activations,
// 16-byte aligned), one fma at a time in order.
template <int kElems>
__device__ __forceinline__ float fma_chunk(const float (&f)[kElems], const float* x, float acc) {
    const auto* xv = reinterpret_cast<const float4*>(x);
#pragma unroll
    for (int q = 0; q < kElems / 4; ++q) {
        const float4 a = __ldg(xv + q);
        acc = fmaf(f[4 * q], a.x, acc);
        acc = fmaf(f[4 * q + 1], a.y, acc);
        acc = fmaf(f[4 * q + 2], a.z, acc);
        acc = fmaf(f[4 * q + 3], a.w, acc);
    }
    return acc;
}

template <WeightType T>
__device__ __forceinline__ float element(const uint8_t* w, int64_t i) {
    if constexpr (T == WeightType::F32) return reinterpret_cast<const float*>(w)[i];
    if constexpr (T == WeightType::F16) return __half2float(reinterpret_cast<const __half*>(w)[i]);
    return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(w)[i]);
}

// y[j0 + j][row] for j < NT, one warp per row, written to the part holding
// the row. kVec: rows are whole 16-byte chunks.
// kUnroll: 16-byte chunks each lane has in flight (8: 64 registers a thread,
// 32 warps a multiprocessor; 16: 128 registers, 16 warps, one round trip for
// a 4096-column F16 row).
template <WeightType T, int NT, bool kVec, int kUnroll = 8>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, kUnroll >= 16 || NT > 2 ? 4 : 8)
    matvec_float(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, const float* __restrict__ x, int64_t j0,
                 SplitParts parts) {
    constexpr int kElems = 16 / kElemBytes<T>;
    const int lane = threadIdx.x % 32;
    const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
    if (row >= rows) return;
    float acc[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j] = 0.0f;
    const float* xs = x + j0 * cols;
    if constexpr (kVec) {
        const int64_t chunks = cols / kElems;
        const uint8_t* wr = w + row * cols * kElemBytes<T>;
        uint4 v[kUnroll];
        // The first chunks load while the grid before this one finishes.
#pragma unroll
        for (int i = 0; i < kUnroll; ++i) {
            const int64_t c = 32 * i + lane;
            if (c < chunks) v[i] = __ldcs(reinterpret_cast<const uint4*>(wr) + c);
        }
        allow_later_grids();  // dependents only start: they wait for this grid to finish
        wait_for_earlier_grids();
        // F16: each slot, once unpacked, loads the chunk one round (32
        // kUnroll) ahead, so that a long row streams without a round trip
        // between rounds. F32 and BF16 load a round at a time: the same form
        // spills their registers (ptxas).
        constexpr bool kRolling = T == WeightType::F16;
        for (int64_t base = 0; base < chunks; base += 32 * kUnroll) {
            if (!kRolling && base > 0) {
#pragma unroll
                for (int i = 0; i < kUnroll; ++i) {
                    const int64_t c = base + 32 * i + lane;
                    if (c < chunks) v[i] = __ldcs(reinterpret_cast<const uint4*>(wr) + c);
                }
            }
#pragma unroll
            for (int i = 0; i < kUnroll; ++i) {
                const int64_t c = base + 32 * i + lane;
                if (c >= chunks) break;
                float f[kElems];
                unpack16<T>(v[i], f);
                if (kRolling && c + 32 * kUnroll < chunks)
                    v[i] = __ldcs(reinterpret_cast<const uint4*>(wr) + c + 32 * kUnroll);
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    acc[j] = fma_chunk(f, xs + j * cols + c * kElems, acc[j]);
                }
            }
        }
    } else {
        allow_later_grids();  // dependents only start: they wait for this grid to finish
        wait_for_earlier_grids();
        for (int64_t c = lane; c < cols; c += 32) {
            const float f = element<T>(w, row * cols + c);
#pragma unroll
            for (int j = 0; j < NT; ++j) acc[j] = fmaf(f, xs[j * cols + c], acc[j]);
        }
    }
    const RowOutput out = row_output(parts, row);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
        if (lane == j) out.at[(j0 + j) * out.stride] = acc[j];
    }
}

template <WeightType T, int NT>
cudaError_t launch_matvec(const DeviceMatrix& w, const float* x, int64_t j0, const SplitParts& y, cudaStream_t s) {
    constexpr int kElems = 16 / kElemBytes<T>;
    const bool vec = w.cols % kElems == 0 && reinterpret_cast<uintptr_t>(w.data) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const unsigned grid = blocks_for(w.rows, kWarpsPerBlock);
    const auto* wp = static_cast<const uint8_t*>(w.data);
    // Few rows (k, v projections): fewer warps, so more bytes in flight per lane (measured).
    if (vec && w.rows <= 2048)
        return launch_overlapped(kPdlMatmul, matvec_float<T, NT, true, 16>, dim3(grid), dim3(kWarpsPerBlock * 32), s,
                                 wp, w.rows, w.cols, x, j0, y);
    if (vec)
        return launch_overlapped(kPdlMatmul, matvec_float<T, NT, true>, dim3(grid), dim3(kWarpsPerBlock * 32), s, wp,
                                 w.rows, w.cols, x, j0, y);
    return launch_overlapped(kPdlMatmul, matvec_float<T, NT, false>, dim3(grid), dim3(kWarpsPerBlock * 32), s, wp,
                             w.rows, w.cols, x, j0, y);
}

// Grouped products of float experts (folio_kernels/moe.h): block (x, g) is
// weight rows 4x .. 4x + 3 of group g's expert times the group's rows, NT at
// a time, F32 sums in a fixed order per row (lane l: elements l, l + 32, ...
// of 16-byte chunks, one butterfly), the same whatever the tile.
template <WeightType T, int NT>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, 4)
    grouped_float_kernel(const uint8_t* __restrict__ w, size_t stride, int64_t rows, int64_t cols,
                         const float* __restrict__ x, const int32_t* __restrict__ x_row,
                         const int4* __restrict__ groups, const int32_t* __restrict__ n_groups,
                         float* __restrict__ y) {
    constexpr int kElems = 16 / kElemBytes<T>;
    allow_later_grids();
    wait_for_earlier_grids();
    const int lane = threadIdx.x % 32;
    const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
    if (row >= rows || static_cast<int>(blockIdx.y) >= *n_groups) return;
    const int4 g = groups[blockIdx.y];  // expert, first position, count
    const uint8_t* wr = w + static_cast<size_t>(g.x) * stride + row * cols * kElemBytes<T>;
    const int64_t chunks = cols / kElems;  // whole: grouped_float_matmul checks
    for (int first = 0; first < g.z; first += NT) {
        const int valid = g.z - first < NT ? g.z - first : NT;
        const float* xs[NT];
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int64_t p = g.y + first + (j < valid ? j : 0);
            xs[j] = x + (x_row ? static_cast<int64_t>(x_row[p]) : p) * cols;
        }
        float acc[NT];
#pragma unroll
        for (int j = 0; j < NT; ++j) acc[j] = 0.0f;
        for (int64_t c = lane; c < chunks; c += 32) {
            float f[kElems];
            unpack16<T>(__ldg(reinterpret_cast<const uint4*>(wr) + c), f);
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                if (j >= valid) break;
                acc[j] = fma_chunk(f, xs[j] + c * kElems, acc[j]);
            }
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
            if (lane == j && j < valid) y[(g.y + first + j) * rows + row] = acc[j];
        }
    }
}

template <WeightType T>
cudaError_t launch_grouped_float(const DeviceExperts& w, const float* x, const int32_t* x_row, int tile,
                                 const int4* groups, const int32_t* n_groups, unsigned max_groups, float* y,
                                 cudaStream_t s) {
    const dim3 grid(blocks_for(w.rows, kWarpsPerBlock), max_groups);
    const auto* wp = static_cast<const uint8_t*>(w.data);
    if (tile == 1)
        return launch_overlapped(kPdlMatmul, grouped_float_kernel<T, 1>, grid, dim3(kWarpsPerBlock * 32), s, wp,
                                 w.stride, w.rows, w.cols, x, x_row, groups, n_groups, y);
    if (tile <= 4)
        return launch_overlapped(kPdlMatmul, grouped_float_kernel<T, 4>, grid, dim3(kWarpsPerBlock * 32), s, wp,
                                 w.stride, w.rows, w.cols, x, x_row, groups, n_groups, y);
    return launch_overlapped(kPdlMatmul, grouped_float_kernel<T, 8>, grid, dim3(kWarpsPerBlock * 32), s, wp,
                             w.stride, w.rows, w.cols, x, x_row, groups, n_groups, y);
}

// A mixture-of-experts router (folio_kernels/moe.h): block (e, b) is expert
// e's logit for rows kRouterRows b .., kRouterTile rows at a time; thread t
// sums 16-byte chunks t, t + 128, ... in order, then one butterfly a warp and
// the warps in order. The same order whatever the rows: a row's logits, and so its
// routing, never depend on its batch-mates.
constexpr int kRouterThreads = 128;
constexpr int kRouterTile = 4;
constexpr int64_t kRouterRows = 64;  // a block's
template <WeightType T>
__global__ void __launch_bounds__(kRouterThreads) router_kernel(const uint8_t* __restrict__ w, int64_t cols,
                                                               const float* __restrict__ x, int64_t n_rows,
                                                               int n_expert, float* __restrict__ logits) {
    constexpr int kElems = 16 / kElemBytes<T>;
    constexpr int kWarps = kRouterThreads / 32;
    __shared__ float partial[kRouterTile][kWarps];
    allow_later_grids();
    wait_for_earlier_grids();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int e = blockIdx.x;
    const auto* wr = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(e) * cols * kElemBytes<T>);
    const int64_t chunks = cols / kElems;  // whole: router_matmul checks
    const int64_t end = n_rows < (blockIdx.y + 1) * kRouterRows ? n_rows : (blockIdx.y + 1) * kRouterRows;
    for (int64_t r0 = blockIdx.y * kRouterRows; r0 < end; r0 += kRouterTile) {
        const int valid = end - r0 < kRouterTile ? static_cast<int>(end - r0) : kRouterTile;
        float acc[kRouterTile];
#pragma unroll
        for (int j = 0; j < kRouterTile; ++j) acc[j] = 0.0f;
        for (int64_t c = threadIdx.x; c < chunks; c += kRouterThreads) {
            float f[kElems];
            unpack16<T>(__ldg(wr + c), f);
#pragma unroll
            for (int j = 0; j < kRouterTile; ++j) {
                if (j >= valid) break;
                acc[j] = fma_chunk(f, x + (r0 + j) * cols + c * kElems, acc[j]);
            }
        }
#pragma unroll
        for (int j = 0; j < kRouterTile; ++j) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
            if (lane == 0) partial[j][warp] = acc[j];
        }
        __syncthreads();
        if (threadIdx.x < valid) {
            float sum = partial[threadIdx.x][0];
#pragma unroll
            for (int k = 1; k < kWarps; ++k) sum += partial[threadIdx.x][k];
            logits[(r0 + threadIdx.x) * n_expert + e] = sum;
        }
        __syncthreads();  // partial is written again by the next tile
    }
}

template <WeightType T>
__global__ void convert_activations(const float* __restrict__ x, size_t count, void* __restrict__ out) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        if constexpr (T == WeightType::F16) static_cast<__half*>(out)[i] = __float2half_rn(x[i]);
        if constexpr (T == WeightType::BF16) static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(x[i]);
    }
}

}  // namespace

cudaError_t convert_to(WeightType t, const float* x, size_t count, void* out, cudaStream_t s) {
    const unsigned grid = blocks_for(static_cast<long long>(count), 256) < 4096
                              ? blocks_for(static_cast<long long>(count), 256)
                              : 4096u;
    if (t == WeightType::F16)
        convert_activations<WeightType::F16><<<grid, 256, 0, s>>>(x, count, out);
    else if (t == WeightType::BF16)
        convert_activations<WeightType::BF16><<<grid, 256, 0, s>>>(x, count, out);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

namespace {

cudaError_t cublas_error(cublasStatus_t st) {
    switch (st) {
        case CUBLAS_STATUS_SUCCESS: return cudaSuccess;
        case CUBLAS_STATUS_NOT_INITIALIZED: return cudaErrorNotReady;
        case CUBLAS_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
        case CUBLAS_STATUS_ARCH_MISMATCH: return cudaErrorNotSupported;
        default: return cudaErrorUnknown;
    }
}

size_t converted_bytes(WeightType t, int64_t n, int64_t cols) {
    return t == WeightType::F32 ? 0 : align256(static_cast<size_t>(n * cols) * 2);
}

// y (col-major rows x n, i.e. row-major [n][rows]) = Wᵀ-view of the row-major
// weights (col-major cols x rows, transposed) times x (col-major cols x n).
cudaError_t cublas_matmul(const DeviceMatrix& w, const float* x, int64_t n, float* y, const MatmulWorkspace& ws,
                          cudaStream_t s) {
    if (!ws.cublas) return cudaErrorInvalidValue;
    if (w.rows > INT32_MAX || w.cols > INT32_MAX || n > INT32_MAX) return cudaErrorInvalidValue;
    auto* base = static_cast<uint8_t*>(ws.data);
    const size_t conv = converted_bytes(w.type, n, w.cols);
    const void* b = x;
    cudaDataType_t type = CUDA_R_32F;
    if (w.type != WeightType::F32) {
        type = w.type == WeightType::F16 ? CUDA_R_16F : CUDA_R_16BF;
        // x_in_workspace: the kernel that produced x converted it already.
        if (!ws.x_in_workspace) FOLIO_CUDA_TRY(convert_to(w.type, x, static_cast<size_t>(n * w.cols), base, s));
        b = base;
    }
    FOLIO_CUDA_TRY(cublas_error(cublasSetStream(ws.cublas, s)));
    FOLIO_CUDA_TRY(cublas_error(cublasSetWorkspace(ws.cublas, base + conv, kCublasWorkspaceBytes)));
    FOLIO_CUDA_TRY(cublas_error(cublasSetMathMode(ws.cublas, CUBLAS_DEFAULT_MATH)));  // no TF32 for F32
    const float alpha = 1.0f, beta = 0.0f;
    const int m = static_cast<int>(w.rows), nn = static_cast<int>(n), k = static_cast<int>(w.cols);
    return cublas_error(cublasGemmEx(ws.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, nn, k, &alpha, w.data, type, k, b, type,
                                     k, &beta, y, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

size_t float_workspace_bytes(WeightType t, int64_t n, int64_t cols) {
    if (n <= kFloatMatvecMaxRows) return 0;
    return converted_bytes(t, n, cols) + kCublasWorkspaceBytes;
}

// cuBLAS writes one row-major y, so a product of several parts goes through
// the workspace (after the converted activations and cuBLAS's own) and is
// split from there. One GEMM per part with its own output (ldc = width) was
// the alternative, not taken: cuBLAS picks its kernel by shape, so the parts'
// bits could differ from matmul()'s, and narrow parts (K, V: a quarter of Q)
// make GEMMs too small to fill the GPU. The split moves 8 bytes per output
// element (n x rows): Q, K and V at pp512 of the 8B shape, 25 MB a layer.
// (Gate and up are not split: the gated activation reads that product in
// place, CudaOps::gated_matmuls.)
cudaError_t float_matmul(const DeviceMatrix& w, const float* x, int64_t n, const SplitParts& y,
                         const MatmulWorkspace& ws, cudaStream_t s) {
    if (n > kFloatMatvecMaxRows) {
        if (y.count == 1) return cublas_matmul(w, x, n, y.dst[0], ws, s);
        auto* stacked = reinterpret_cast<float*>(static_cast<uint8_t*>(ws.data) + float_workspace_bytes(w.type, n, w.cols));
        FOLIO_CUDA_TRY(cublas_matmul(w, x, n, stacked, ws, s));
        return split_columns(stacked, n, y, s);
    }
    switch (w.type) {
        case WeightType::F32: return launch_matvec<WeightType::F32, 1>(w, x, 0, y, s);
        case WeightType::F16: return launch_matvec<WeightType::F16, 1>(w, x, 0, y, s);
        case WeightType::BF16: return launch_matvec<WeightType::BF16, 1>(w, x, 0, y, s);
        default: return cudaErrorInvalidValue;
    }
}

bool router_supported(const DeviceMatrix& w) {
    return is_float(w.type) && w.cols % (16 / (w.type == WeightType::F32 ? 4 : 2)) == 0 && w.rows <= INT_MAX;
}

cudaError_t router_matmul(const DeviceMatrix& w, const float* x, int64_t n_rows, float* logits, cudaStream_t s) {
    if (!router_supported(w) || reinterpret_cast<uintptr_t>(x) % 16 != 0) return cudaErrorInvalidValue;
    if (n_rows == 0 || w.rows == 0) return cudaSuccess;
    const auto* wp = static_cast<const uint8_t*>(w.data);
    const int64_t chunks = (n_rows + kRouterRows - 1) / kRouterRows;
    if (chunks > 65535) return cudaErrorInvalidValue;
    const dim3 grid(static_cast<unsigned>(w.rows), static_cast<unsigned>(chunks)), block(kRouterThreads);
    const int n_expert = static_cast<int>(w.rows);
    switch (w.type) {
        case WeightType::F32:
            return launch_overlapped(kPdlMatmul, router_kernel<WeightType::F32>, grid, block, s, wp, w.cols, x, n_rows, n_expert, logits);
        case WeightType::F16:
            return launch_overlapped(kPdlMatmul, router_kernel<WeightType::F16>, grid, block, s, wp, w.cols, x, n_rows, n_expert, logits);
        case WeightType::BF16:
            return launch_overlapped(kPdlMatmul, router_kernel<WeightType::BF16>, grid, block, s, wp, w.cols, x, n_rows, n_expert, logits);
        default: return cudaErrorInvalidValue;
    }
}

cudaError_t grouped_float_matmul(const DeviceExperts& w, const float* x, const int32_t* x_row, int tile,
                                 const int4* groups, const int32_t* n_groups, unsigned max_groups, float* y,
                                 cudaStream_t s) {
    if (w.cols % (16 / (w.type == WeightType::F32 ? 4 : 2)) != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0)
        return cudaErrorInvalidValue;
    switch (w.type) {
        case WeightType::F32: return launch_grouped_float<WeightType::F32>(w, x, x_row, tile, groups, n_groups, max_groups, y, s);
        case WeightType::F16: return launch_grouped_float<WeightType::F16>(w, x, x_row, tile, groups, n_groups, max_groups, y, s);
        case WeightType::BF16: return launch_grouped_float<WeightType::BF16>(w, x, x_row, tile, groups, n_groups, max_groups, y, s);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace folio::kernels::detail
