// Element-wise and row-wise kernels: memory-bound, one pass over their
// operands, 16-byte accesses where the sizes allow.
#include <algorithm>
#include <cstdint>
#include <cmath>

#include "activation_quant.cuh"
#include "folio_kernels/check.h"
#include "folio_kernels/elementwise.h"

namespace folio::kernels {
namespace {

using detail::ActivationBlocks;
constexpr int kThreads = 256;

// A grid that covers n items with grid-stride loops: a few waves of the
// largest part, capped so small tensors don't launch idle blocks.
unsigned grid_for(int64_t n, int per_thread = 1) {
    const int64_t blocks = (n + int64_t{kThreads} * per_thread - 1) / (int64_t{kThreads} * per_thread);
    return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 132 * 16));
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block; every thread gets the total.
__device__ float block_sum(float v, float* scratch) {
    v = warp_sum(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = blockDim.x / 32;
    __syncthreads();  // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = lane < n_warps ? scratch[lane] : 0.0f;
    return warp_sum(total);
}

// One block per row. With add_y, x += y first (written back), then the norm
// of the sum. Each thread touches the same columns in both passes.
// The block is as wide as the row allows (one float4 a thread, up to 1024
// threads): a batch-1 decode step has one row, and a 256-thread block took
// 5 us for 4096 columns, in four serial rounds of loads. The width depends on
// the row length only, never on the number of rows, so a row is summed in the
// same order alone or in any batch.
constexpr int kNormMaxThreads = 1024;

unsigned norm_threads(int64_t dim, bool vec) {
    const int64_t per_thread = vec ? 4 : 1;
    const int64_t lanes = (dim + per_thread - 1) / per_thread;
    return static_cast<unsigned>(std::clamp<int64_t>((lanes + 31) / 32 * 32, 32, kNormMaxThreads));
}

// Rows from `from` on: the rows of a second matrix, normed in place.
struct SecondRows {
    float* x = nullptr;
    const float* w = nullptr;
    int64_t from = INT64_MAX;
};

// With q.format set (vec only, dim % 32 == 0), the output is also quantized
// for the next matmul (activation_quant.cuh), which may start loading its
// weights while this runs.
template <bool AddY>
__global__ void __launch_bounds__(kNormMaxThreads) rms_norm_kernel(float* x, const float* y, const float* w, float eps,
                                                            int64_t dim, float* out, bool vec, ActivationBlocks q,
                                                            SecondRows second) {
    __shared__ float scratch[32];
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    int64_t row = blockIdx.x;
    if (row >= second.from) row -= second.from, x = out = second.x, w = second.w;
    float* xr = x + row * dim;
    float* outr = out + row * dim;
    float sum = 0.0f;
    if (vec) {
        const int64_t n4 = dim / 4;
        auto* x4 = reinterpret_cast<float4*>(xr);
        for (int64_t i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = x4[i];
            if constexpr (AddY) {
                const float4 u = reinterpret_cast<const float4*>(y + row * dim)[i];
                v.x += u.x, v.y += u.y, v.z += u.z, v.w += u.w;
                x4[i] = v;
            }
            sum += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
        const float inv = 1.0f / sqrtf(block_sum(sum, scratch) / static_cast<float>(dim) + eps);
        for (int64_t i = threadIdx.x; i < n4; i += blockDim.x) {
            const float4 v = x4[i], g = reinterpret_cast<const float4*>(w)[i];
            const float4 o = make_float4(v.x * inv * g.x, v.y * inv * g.y, v.z * inv * g.z, v.w * inv * g.w);
            reinterpret_cast<float4*>(outr)[i] = o;
            if (q.format) detail::store_activations(o, row * dim + 4 * i, q);
        }
    } else {
        for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
            float v = xr[i];
            if constexpr (AddY) xr[i] = v = v + y[row * dim + i];
            sum += v * v;
        }
        const float inv = 1.0f / sqrtf(block_sum(sum, scratch) / static_cast<float>(dim) + eps);
        for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) outr[i] = xr[i] * inv * w[i];
    }
}

// Applies f(a, b) -> a over n elements, four at a time when n allows.
template <typename F>
__global__ void __launch_bounds__(kThreads) binary_kernel(float* a, const float* b, int64_t n, F f, bool vec) {
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    const int64_t stride = int64_t{gridDim.x} * blockDim.x;
    const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (vec) {
        auto* a4 = reinterpret_cast<float4*>(a);
        const auto* b4 = reinterpret_cast<const float4*>(b);
        for (int64_t i = first; i < n / 4; i += stride) {
            float4 x = a4[i];
            const float4 y = b ? b4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
            x.x = f(x.x, y.x), x.y = f(x.y, y.y), x.z = f(x.z, y.z), x.w = f(x.w, y.w);
            a4[i] = x;
        }
    } else {
        for (int64_t i = first; i < n; i += stride) a[i] = f(a[i], b ? b[i] : 0.0f);
    }
}

// out = f(gate, up), four at a time, over rows of w4 float4s whose gate and
// up halves lie `in_stride4` float4s apart from row to row (a separate gate
// and up: one row of all n/4; a stacked gate/up product: 2 * w4). Each block
// of 32 results is quantized for the next matmul (q.format set: w4 % 8 == 0):
// eight consecutive threads hold a block in every round of the grid-stride loop.
template <typename F>
__global__ void __launch_bounds__(kThreads) glu_quantize_kernel(const float* gate, const float* up, int64_t n4,
                                                               int64_t w4, int64_t in_stride4, float* out, F f,
                                                               ActivationBlocks q) {
    detail::wait_for_earlier_grids();
    const int64_t stride = int64_t{gridDim.x} * blockDim.x;
    const auto* g4 = reinterpret_cast<const float4*>(gate);
    const auto* u4 = reinterpret_cast<const float4*>(up);
    auto* o4 = reinterpret_cast<float4*>(out);
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const int64_t at = i / w4 * in_stride4 + i % w4;
        float4 x = g4[at];
        const float4 y = u4[at];
        x.x = f(x.x, y.x), x.y = f(x.y, y.y), x.z = f(x.z, y.z), x.w = f(x.w, y.w);
        o4[i] = x;
        if (q.format) detail::store_activations(x, 4 * i, q);
    }
    // Not at the start, unlike the other kernels of a step: letting the down
    // projection launch while gate/up's last wave ran cost 6 % of a batch-1
    // F16 token when the norm, RoPE and attention also overlap (199.2-200.2
    // against 210.3-210.8 tok/s, bench/results/cuda-pdl-2026-11-30.txt).
    detail::allow_later_grids();
}

struct SiluMul {
    __device__ float operator()(float g, float u) const { return g / (1.0f + expf(-g)) * u; }
};
struct GeluMul {
    __device__ float operator()(float g, float u) const {
        return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
    }
};
struct Add {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct Scale {
    float v;
    __device__ float operator()(float a, float) const { return a * v; }
};
struct Softcap {
    float cap;
    __device__ float operator()(float a, float) const { return cap * tanhf(a / cap); }
};

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename F>
cudaError_t launch_binary(float* a, const float* b, int64_t n, F f, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    const bool vec = n % 4 == 0 && aligned16(a) && (!b || aligned16(b));
    return detail::launch_overlapped(detail::kPdlOther, binary_kernel<F>, dim3(grid_for(n, 4)), dim3(kThreads), s, a,
                                     b, n, f, vec);
}

__global__ void __launch_bounds__(kThreads) add_bias_kernel(float* x, const float* bias, int64_t n, int64_t dim) {
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    const int64_t stride = int64_t{gridDim.x} * blockDim.x;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) x[i] += bias[i % dim];
}

__global__ void __launch_bounds__(kThreads) gather_rows_kernel(const float* x, const int32_t* rows, int64_t dim,
                                                               float* out) {
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    const float* src = x + int64_t{rows[blockIdx.x]} * dim;
    float* dst = out + int64_t{blockIdx.x} * dim;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = src[i];
}

// A norm quantizes its output in the same pass where its rows are float4
// rows of whole blocks; otherwise a separate quantize launch follows.
template <bool AddY>
cudaError_t launch_norm(float* x, const float* y, const float* w, float eps, int64_t n_rows, int64_t dim, float* out,
                        bool vec, const ActivationQuant& q, cudaStream_t s, SecondRows second = {}, int64_t second_rows = 0) {
    const bool fuse = q.format != ActivationFormat::None && vec && dim % 32 == 0;
    if (q.format != ActivationFormat::None && !q.workspace) return cudaErrorInvalidValue;
    const ActivationBlocks blocks = fuse ? detail::activation_blocks(q, n_rows * dim) : ActivationBlocks{};
    FOLIO_CUDA_TRY(detail::launch_overlapped(detail::kPdlNorm, rms_norm_kernel<AddY>,
                                             dim3(static_cast<unsigned>(n_rows + second_rows)),
                                             dim3(norm_threads(dim, vec)), s, x, y, w, eps, dim, out, vec, blocks,
                                             second));
    if (q.format == ActivationFormat::None || fuse) return cudaSuccess;
    return detail::quantize_activations(out, n_rows * dim, q, s);
}

template <typename F>
cudaError_t launch_glu(float* gate, const float* up, int64_t n, F f, const ActivationQuant& q, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (q.format == ActivationFormat::None) return launch_binary(gate, up, n, f, s);
    if (!q.workspace) return cudaErrorInvalidValue;
    if (n % 32 != 0 || !aligned16(gate) || !aligned16(up)) {
        FOLIO_CUDA_TRY(launch_binary(gate, up, n, f, s));
        return detail::quantize_activations(gate, n, q, s);
    }
    return detail::launch_overlapped(detail::kPdlGlu, glu_quantize_kernel<F>, dim3(grid_for(n, 4)), dim3(kThreads), s,
                                     gate, up, n / 4, n / 4, n / 4, gate, f, detail::activation_blocks(q, n));
}

template <typename F>
cudaError_t launch_glu_rows(const float* stacked, int64_t n_rows, int64_t width, float* out, F f,
                            const ActivationQuant& q, cudaStream_t s) {
    if (n_rows <= 0 || width <= 0) return cudaSuccess;
    if (width % 4 != 0 || !aligned16(stacked) || !aligned16(out)) return cudaErrorInvalidValue;
    if (q.format != ActivationFormat::None && !q.workspace) return cudaErrorInvalidValue;
    const int64_t n = n_rows * width;
    const bool fuse = q.format != ActivationFormat::None && width % 32 == 0;
    const ActivationBlocks blocks = fuse ? detail::activation_blocks(q, n) : ActivationBlocks{};
    FOLIO_CUDA_TRY(detail::launch_overlapped(detail::kPdlGlu, glu_quantize_kernel<F>, dim3(grid_for(n, 4)),
                                             dim3(kThreads), s, stacked, stacked + width, n / 4, width / 4,
                                             width / 2, out, f, blocks));
    if (q.format == ActivationFormat::None || fuse) return cudaSuccess;
    return detail::quantize_activations(out, n, q, s);
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* w, float eps, int64_t n_rows, int64_t dim, float* out,
                     cudaStream_t s, const ActivationQuant& q) {
    if (n_rows <= 0 || dim <= 0) return cudaSuccess;
    if (n_rows > 0x7fffffff) return cudaErrorInvalidValue;
    // The float4 path needs 16-byte aligned rows; other shapes take the scalar one.
    const bool vec = dim % 4 == 0 && aligned16(x) && aligned16(w) && aligned16(out);
    return launch_norm<false>(const_cast<float*>(x), nullptr, w, eps, n_rows, dim, out, vec, q, s);
}

cudaError_t rms_norm_pair(float* a, const float* wa, int64_t a_rows, float* b, const float* wb, int64_t b_rows,
                          float eps, int64_t dim, cudaStream_t s) {
    if (a_rows < 0 || b_rows < 0 || dim <= 0 || a_rows + b_rows > 0x7fffffff) return cudaErrorInvalidValue;
    if (a_rows + b_rows == 0) return cudaSuccess;
    if (a_rows == 0) return rms_norm(b, wb, eps, b_rows, dim, b, s);
    const bool vec = dim % 4 == 0 && aligned16(a) && aligned16(wa) && aligned16(b) && aligned16(wb);
    return launch_norm<false>(a, nullptr, wa, eps, a_rows, dim, a, vec, {}, s, SecondRows{b, wb, a_rows}, b_rows);
}

cudaError_t add_rms_norm(float* x, const float* y, const float* w, float eps, int64_t n_rows, int64_t dim,
                         float* out, cudaStream_t s, const ActivationQuant& q) {
    if (n_rows <= 0 || dim <= 0) return cudaSuccess;
    if (n_rows > 0x7fffffff || out == x) return cudaErrorInvalidValue;
    const bool vec = dim % 4 == 0 && aligned16(x) && aligned16(y) && aligned16(w) && aligned16(out);
    return launch_norm<true>(x, y, w, eps, n_rows, dim, out, vec, q, s);
}

cudaError_t silu_mul(float* gate, const float* up, int64_t n, cudaStream_t s, const ActivationQuant& q) {
    return launch_glu(gate, up, n, SiluMul{}, q, s);
}

cudaError_t gelu_mul(float* gate, const float* up, int64_t n, cudaStream_t s, const ActivationQuant& q) {
    return launch_glu(gate, up, n, GeluMul{}, q, s);
}

cudaError_t silu_mul_rows(const float* stacked, int64_t n_rows, int64_t width, float* out, cudaStream_t s,
                          const ActivationQuant& q) {
    return launch_glu_rows(stacked, n_rows, width, out, SiluMul{}, q, s);
}

cudaError_t gelu_mul_rows(const float* stacked, int64_t n_rows, int64_t width, float* out, cudaStream_t s,
                          const ActivationQuant& q) {
    return launch_glu_rows(stacked, n_rows, width, out, GeluMul{}, q, s);
}

cudaError_t add(float* x, const float* y, int64_t n, cudaStream_t s) { return launch_binary(x, y, n, Add{}, s); }

cudaError_t add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim, cudaStream_t s) {
    if (n_rows <= 0 || dim <= 0) return cudaSuccess;
    return detail::launch_overlapped(detail::kPdlOther, add_bias_kernel, dim3(grid_for(n_rows * dim)),
                                     dim3(kThreads), s, x, bias, n_rows * dim, dim);
}

cudaError_t scale(float* x, float v, int64_t n, cudaStream_t s) {
    return launch_binary(x, nullptr, n, Scale{v}, s);
}

cudaError_t softcap(float* x, float cap, int64_t n, cudaStream_t s) {
    if (!(cap > 0.0f)) return cudaErrorInvalidValue;
    return launch_binary(x, nullptr, n, Softcap{cap}, s);
}

cudaError_t gather_rows_f32(const float* x, const int32_t* rows, int64_t n_rows, int64_t dim, float* out,
                            cudaStream_t s) {
    if (n_rows <= 0 || dim <= 0) return cudaSuccess;
    if (n_rows > 0x7fffffff) return cudaErrorInvalidValue;
    return detail::launch_overlapped(detail::kPdlOther, gather_rows_kernel, dim3(static_cast<unsigned>(n_rows)),
                                     dim3(kThreads), s, x, rows, dim, out);
}

}  // namespace folio::kernels
