// The weight side of the matmul: device layout sizes, repacking GGUF bytes
// into it, random weights for dummy loads, and the embedding lookup.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "folio_kernels/check.h"
#include "folio_kernels/matmul.h"
#include "matmul_layout.cuh"

namespace folio::kernels {
namespace {

using detail::kQK;
using detail::kQKK;

// ---- repacking -------------------------------------------------------------------

// One GGUF block of a split type into its three regions. Reads bytewise:
// GGUF blocks are only 2-byte aligned.
template <WeightType T>
__global__ void split_blocks(const uint8_t* __restrict__ src, int64_t blocks, detail::SplitLayout l,
                             uint8_t* __restrict__ dst) {
    const int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (b >= blocks) return;
    constexpr int kBytes = detail::gguf_block_bytes(T);
    constexpr int kQs = detail::split_qs_bytes(T);
    const uint8_t* in = src + b * kBytes;
    uint8_t* qs = dst + l.qs_offset + b * kQs;
    if constexpr (T == WeightType::Q6_K) {
        for (int i = 0; i < kQs; ++i) qs[i] = in[i];  // ql, qh, scales
        auto* d = reinterpret_cast<uint16_t*>(dst + l.scale_offset);
        d[b] = static_cast<uint16_t>(in[208] | (in[209] << 8));
    } else {
        constexpr int kScaleBytes = detail::has_min(T) ? 4 : 2;
        constexpr int kQhBytes = detail::has_qh(T) ? 4 : 0;
        uint8_t* scale = dst + l.scale_offset + b * kScaleBytes;
        for (int i = 0; i < kScaleBytes; ++i) scale[i] = in[i];
        if constexpr (kQhBytes > 0) {
            uint8_t* qh = dst + l.qh_offset + b * 4;
            for (int i = 0; i < 4; ++i) qh[i] = in[kScaleBytes + i];
        }
        for (int i = 0; i < kQs; ++i) qs[i] = in[kScaleBytes + kQhBytes + i];
    }
}

template <WeightType T>
cudaError_t launch_split(const void* src, int64_t rows, int64_t cols, void* dst, cudaStream_t s) {
    const detail::SplitLayout l = detail::split_layout(T, rows, cols);
    FOLIO_CUDA_TRY(cudaMemsetAsync(dst, 0, l.bytes, s));  // the alignment padding
    split_blocks<T><<<blocks_for(l.blocks, 256), 256, 0, s>>>(static_cast<const uint8_t*>(src), l.blocks, l,
                                                             static_cast<uint8_t*>(dst));
    return cudaGetLastError();
}

// ---- random weights --------------------------------------------------------------

__device__ __forceinline__ uint64_t mix64(uint64_t z) {  // splitmix64's finalizer
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
__device__ __forceinline__ uint64_t random_at(uint64_t seed, uint64_t i) {
    return mix64(seed * 0x9e3779b97f4a7c15ull + i + 0x632be59bd9b4e019ull);
}
// Uniform in [-1, 1).
__device__ __forceinline__ float random_signed(uint64_t seed, uint64_t i) {
    return static_cast<float>(static_cast<int64_t>(random_at(seed, i) >> 40) - (1ll << 23)) * (1.0f / (1 << 23));
}
// Uniform in [0.5, 1.5): block scales vary a little around their mean.
__device__ __forceinline__ float random_spread(uint64_t seed, uint64_t i) {
    return 1.0f + 0.5f * random_signed(seed, i);
}

__global__ void random_bytes(uint8_t* __restrict__ dst, size_t bytes, uint64_t seed) {
    const size_t words = bytes / 8;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const uint64_t v = random_at(seed, i);
        if ((reinterpret_cast<uintptr_t>(dst) & 7) == 0) {
            reinterpret_cast<uint64_t*>(dst)[i] = v;
        } else {
            for (int k = 0; k < 8; ++k) dst[8 * i + k] = static_cast<uint8_t>(v >> (8 * k));
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < bytes % 8)
        dst[8 * words + threadIdx.x] = static_cast<uint8_t>(random_at(seed, words) >> (8 * threadIdx.x));
}

template <WeightType T>
__global__ void random_floats(void* __restrict__ dst, size_t count, uint64_t seed, float scale) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const float v = scale * random_signed(seed, i);
        if constexpr (T == WeightType::F32) static_cast<float*>(dst)[i] = v;
        if constexpr (T == WeightType::F16) static_cast<__half*>(dst)[i] = __float2half_rn(v);
        if constexpr (T == WeightType::BF16) static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(v);
    }
}

__device__ __forceinline__ uint16_t half_bits(float v) { return __half_as_ushort(__float2half_rn(v)); }

// Block scales over random quants: the weights come out of magnitude ~scale.
template <WeightType T>
__global__ void random_scales(uint8_t* __restrict__ dst, int64_t blocks, detail::SplitLayout l, uint64_t seed,
                              float scale) {
    const int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (b >= blocks) return;
    const uint64_t key = seed ^ 0x5ca1ab1eull;
    const float spread = random_spread(key, static_cast<uint64_t>(b));
    if constexpr (T == WeightType::Q4_K || T == WeightType::Q5_K) {
        // x = d * sc * q - dmin * m with sc, m six bits (~32) and q 4 or 5 bits.
        auto* header = reinterpret_cast<uint16_t*>(dst + b * detail::gguf_block_bytes(T));
        const float q_mean = T == WeightType::Q4_K ? 7.5f : 15.5f;
        header[0] = half_bits(scale * spread / (32.0f * q_mean));
        header[1] = half_bits(scale * spread / 32.0f);
    } else if constexpr (T == WeightType::Q6_K) {
        // x = d * scales * (q - 32) with int8 scales (~64) and |q - 32| ~16.
        reinterpret_cast<uint16_t*>(dst + l.scale_offset)[b] = half_bits(scale * spread / 1024.0f);
    } else if constexpr (detail::has_min(T)) {
        // x = d * q + m, q in [0, 16) or [0, 32): centre on zero with m = -scale.
        const float q_max = T == WeightType::Q4_1 ? 16.0f : 32.0f;
        auto* dm = reinterpret_cast<uint16_t*>(dst + l.scale_offset) + 2 * b;
        dm[0] = half_bits(2.0f * scale * spread / q_max);
        dm[1] = half_bits(-scale * spread);
    } else {
        // x = d * q with |q| ~4 (Q4_0), ~8 (Q5_0), ~64 (Q8_0).
        const float q_mean = T == WeightType::Q4_0 ? 4.0f : T == WeightType::Q5_0 ? 8.0f : 64.0f;
        reinterpret_cast<uint16_t*>(dst + l.scale_offset)[b] = half_bits(scale * spread / q_mean);
    }
}

template <WeightType T>
cudaError_t launch_random(void* dst, int64_t rows, int64_t cols, uint64_t seed, float scale, cudaStream_t s) {
    constexpr int kThreads = 256;
    const size_t bytes = device_matrix_bytes(T, rows, cols);
    const unsigned grid = blocks_for(static_cast<long long>(bytes / 8 + 1), kThreads) < 8192
                              ? blocks_for(static_cast<long long>(bytes / 8 + 1), kThreads)
                              : 8192u;
    if constexpr (T == WeightType::F32 || T == WeightType::F16 || T == WeightType::BF16) {
        random_floats<T><<<grid, kThreads, 0, s>>>(dst, static_cast<size_t>(rows * cols), seed, scale);
        return cudaGetLastError();
    } else {
        random_bytes<<<grid, kThreads, 0, s>>>(static_cast<uint8_t*>(dst), bytes, seed);
        FOLIO_CUDA_TRY(cudaGetLastError());
        const detail::SplitLayout l =
            detail::is_split(T) ? detail::split_layout(T, rows, cols) : detail::SplitLayout{};
        const int64_t blocks = rows * (cols / detail::block_elems(T));
        random_scales<T><<<blocks_for(blocks, kThreads), kThreads, 0, s>>>(static_cast<uint8_t*>(dst), blocks, l,
                                                                           seed, scale);
        return cudaGetLastError();
    }
}

// ---- embedding lookup ---------------------------------------------------------------

__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) {
    return *reinterpret_cast<const uint16_t*>(p);  // 2-byte aligned in every layout
}

// Element (r, c) of the matrix, rounded as the engine's dequantizer rounds it
// (explicit _rn operations: no fused multiply-adds).
template <WeightType T>
__device__ float weight_at(const uint8_t* __restrict__ w, const detail::SplitLayout& l, int64_t cols, int64_t r,
                           int64_t c) {
    if constexpr (T == WeightType::F32) {
        return reinterpret_cast<const float*>(w)[r * cols + c];
    } else if constexpr (T == WeightType::F16) {
        return detail::half_bits_to_float(load_u16(w + 2 * (r * cols + c)));
    } else if constexpr (T == WeightType::BF16) {
        return detail::bf16_bits_to_float(load_u16(w + 2 * (r * cols + c)));
    } else if constexpr (T == WeightType::Q4_K || T == WeightType::Q5_K) {
        const uint8_t* b = w + (r * (cols / kQKK) + c / kQKK) * detail::gguf_block_bytes(T);
        const int e = static_cast<int>(c % kQKK), sub = e / 32, l32 = e % 32;
        int sc, m;
        detail::k_scale_min(sub, b + 4, sc, m);
        const float d1 = __fmul_rn(detail::half_bits_to_float(load_u16(b)), static_cast<float>(sc));
        const float m1 = __fmul_rn(detail::half_bits_to_float(load_u16(b + 2)), static_cast<float>(m));
        const uint8_t* qs = b + (T == WeightType::Q4_K ? 16 : 48);
        int q = (qs[(sub / 2) * 32 + l32] >> ((sub % 2) * 4)) & 0xF;
        if constexpr (T == WeightType::Q5_K) q |= ((b[16 + l32] >> sub) & 1) << 4;
        return __fsub_rn(__fmul_rn(d1, static_cast<float>(q)), m1);
    } else if constexpr (T == WeightType::Q6_K) {
        const int64_t blk = r * (cols / kQKK) + c / kQKK;
        const uint8_t* b = w + l.qs_offset + blk * 208;
        const int e = static_cast<int>(c % kQKK), group = e / 32, h = group / 4, k = group % 4, l32 = e % 32;
        const int q = ((b[h * 64 + (k % 2) * 32 + l32] >> ((k / 2) * 4)) & 0xF) |
                      (((b[128 + h * 32 + l32] >> (2 * k)) & 3) << 4);
        const float d = detail::half_bits_to_float(load_u16(w + l.scale_offset + 2 * blk));
        const float ds = __fmul_rn(d, static_cast<float>(static_cast<int8_t>(b[192 + e / 16])));
        return __fmul_rn(ds, static_cast<float>(q - 32));
    } else {
        const int64_t blk = r * (cols / kQK) + c / kQK;
        const int e = static_cast<int>(c % kQK);
        const uint8_t* qs = w + l.qs_offset + blk * detail::split_qs_bytes(T);
        const uint8_t* scale = w + l.scale_offset + blk * (detail::has_min(T) ? 4 : 2);
        const float d = detail::half_bits_to_float(load_u16(scale));
        if constexpr (T == WeightType::Q8_0) return __fmul_rn(static_cast<float>(static_cast<int8_t>(qs[e])), d);
        int q = (qs[e % 16] >> (e < 16 ? 0 : 4)) & 0xF;
        if constexpr (detail::has_qh(T)) {
            const uint32_t qh = *reinterpret_cast<const uint32_t*>(w + l.qh_offset + 4 * blk);
            q |= static_cast<int>((qh >> e) & 1u) << 4;
        }
        if constexpr (T == WeightType::Q4_0) return __fmul_rn(d, static_cast<float>(q - 8));
        if constexpr (T == WeightType::Q5_0) return __fmul_rn(d, static_cast<float>(q - 16));
        const float m = detail::half_bits_to_float(load_u16(scale + 2));
        return __fadd_rn(__fmul_rn(d, static_cast<float>(q)), m);
    }
}

template <WeightType T>
__global__ void gather_kernel(const uint8_t* __restrict__ w, detail::SplitLayout l, int64_t cols,
                              const int32_t* __restrict__ ids, int64_t n, float* __restrict__ out) {
    for (int64_t i = blockIdx.y; i < n; i += gridDim.y) {
        const int64_t r = ids[i];
        for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < cols;
             c += static_cast<int64_t>(gridDim.x) * blockDim.x)
            out[i * cols + c] = weight_at<T>(w, l, cols, r, c);
    }
}

template <WeightType T>
cudaError_t launch_gather(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, cudaStream_t s) {
    const detail::SplitLayout l = detail::is_split(T) ? detail::split_layout(T, w.rows, w.cols) : detail::SplitLayout{};
    constexpr int kThreads = 256;
    const unsigned gx = blocks_for(w.cols, kThreads) < 64 ? blocks_for(w.cols, kThreads) : 64u;
    const unsigned gy = n < 65535 ? static_cast<unsigned>(n) : 65535u;
    gather_kernel<T><<<dim3(gx, gy), kThreads, 0, s>>>(static_cast<const uint8_t*>(w.data), l, w.cols, ids, n, out);
    return cudaGetLastError();
}

bool valid_shape(WeightType t, int64_t rows, int64_t cols) {
    return matmul_supported(t) && rows > 0 && cols > 0 && cols % detail::block_elems(t) == 0;
}

}  // namespace

bool matmul_supported(WeightType t) {
    switch (t) {
        case WeightType::F32:
        case WeightType::F16:
        case WeightType::BF16:
        case WeightType::Q4_0:
        case WeightType::Q4_1:
        case WeightType::Q5_0:
        case WeightType::Q5_1:
        case WeightType::Q8_0:
        case WeightType::Q4_K:
        case WeightType::Q5_K:
        case WeightType::Q6_K: return true;
    }
    return false;
}

int64_t weight_block_elems(WeightType t) { return matmul_supported(t) ? detail::block_elems(t) : 0; }

size_t device_matrix_bytes(WeightType t, int64_t rows, int64_t cols) {
    if (!valid_shape(t, rows, cols)) return 0;
    if (detail::is_split(t)) return detail::split_layout(t, rows, cols).bytes;
    return static_cast<size_t>(rows) * static_cast<size_t>(cols / detail::block_elems(t)) *
           static_cast<size_t>(detail::gguf_block_bytes(t));
}

cudaError_t prepare_matrix(WeightType t, const void* src, int64_t rows, int64_t cols, void* dst, cudaStream_t s) {
    if (!valid_shape(t, rows, cols) || !src || !dst) return cudaErrorInvalidValue;
    switch (t) {
        case WeightType::Q4_0: return launch_split<WeightType::Q4_0>(src, rows, cols, dst, s);
        case WeightType::Q4_1: return launch_split<WeightType::Q4_1>(src, rows, cols, dst, s);
        case WeightType::Q5_0: return launch_split<WeightType::Q5_0>(src, rows, cols, dst, s);
        case WeightType::Q5_1: return launch_split<WeightType::Q5_1>(src, rows, cols, dst, s);
        case WeightType::Q8_0: return launch_split<WeightType::Q8_0>(src, rows, cols, dst, s);
        case WeightType::Q6_K: return launch_split<WeightType::Q6_K>(src, rows, cols, dst, s);
        default:
            return cudaMemcpyAsync(dst, src, device_matrix_bytes(t, rows, cols), cudaMemcpyDeviceToDevice, s);
    }
}

cudaError_t fill_random_matrix(WeightType t, void* dst, int64_t rows, int64_t cols, uint64_t seed, float scale,
                               cudaStream_t s) {
    if (!valid_shape(t, rows, cols) || !dst) return cudaErrorInvalidValue;
    switch (t) {
        case WeightType::F32: return launch_random<WeightType::F32>(dst, rows, cols, seed, scale, s);
        case WeightType::F16: return launch_random<WeightType::F16>(dst, rows, cols, seed, scale, s);
        case WeightType::BF16: return launch_random<WeightType::BF16>(dst, rows, cols, seed, scale, s);
        case WeightType::Q4_0: return launch_random<WeightType::Q4_0>(dst, rows, cols, seed, scale, s);
        case WeightType::Q4_1: return launch_random<WeightType::Q4_1>(dst, rows, cols, seed, scale, s);
        case WeightType::Q5_0: return launch_random<WeightType::Q5_0>(dst, rows, cols, seed, scale, s);
        case WeightType::Q5_1: return launch_random<WeightType::Q5_1>(dst, rows, cols, seed, scale, s);
        case WeightType::Q8_0: return launch_random<WeightType::Q8_0>(dst, rows, cols, seed, scale, s);
        case WeightType::Q4_K: return launch_random<WeightType::Q4_K>(dst, rows, cols, seed, scale, s);
        case WeightType::Q5_K: return launch_random<WeightType::Q5_K>(dst, rows, cols, seed, scale, s);
        case WeightType::Q6_K: return launch_random<WeightType::Q6_K>(dst, rows, cols, seed, scale, s);
    }
    return cudaErrorInvalidValue;
}

cudaError_t gather_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, cudaStream_t s) {
    if (!valid_shape(w.type, w.rows, w.cols) || !w.data || n < 0) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    switch (w.type) {
        case WeightType::F32: return launch_gather<WeightType::F32>(w, ids, n, out, s);
        case WeightType::F16: return launch_gather<WeightType::F16>(w, ids, n, out, s);
        case WeightType::BF16: return launch_gather<WeightType::BF16>(w, ids, n, out, s);
        case WeightType::Q4_0: return launch_gather<WeightType::Q4_0>(w, ids, n, out, s);
        case WeightType::Q4_1: return launch_gather<WeightType::Q4_1>(w, ids, n, out, s);
        case WeightType::Q5_0: return launch_gather<WeightType::Q5_0>(w, ids, n, out, s);
        case WeightType::Q5_1: return launch_gather<WeightType::Q5_1>(w, ids, n, out, s);
        case WeightType::Q8_0: return launch_gather<WeightType::Q8_0>(w, ids, n, out, s);
        case WeightType::Q4_K: return launch_gather<WeightType::Q4_K>(w, ids, n, out, s);
        case WeightType::Q5_K: return launch_gather<WeightType::Q5_K>(w, ids, n, out, s);
        case WeightType::Q6_K: return launch_gather<WeightType::Q6_K>(w, ids, n, out, s);
    }
    return cudaErrorInvalidValue;
}

}  // namespace folio::kernels
