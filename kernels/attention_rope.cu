// The fused RoPE + KV-cache write: rotates each batch row's query heads in
// place and its key heads, and stores the rotated keys and the values as half
// into the paged cache at the row's slot. One thread per rotated pair (or pair
// of values): a row is spread over several blocks, so that a decode step of
// one row does not wait on one block's serial loop (a single 128-thread block
// per row took 10.7 us for the 8B shape; bench/results/cuda-decode-profile-*).
// A quantized cache's (fp8, Q8_0) keys and values go one thread per value
// instead, a warp per block of 32: the warp's largest magnitude gives the
// block's scale.
#include <cmath>

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "folio_kernels/attention.h"
#include "launch.cuh"

namespace folio::kernels {
namespace {

constexpr int kRopeThreads = 256;
constexpr int kMaxHeadDim = 256;
static_assert(kMaxHeadDim / 2 <= kRopeThreads, "a block's threads compute all of a row's angles");

// Cache element (slot, kv head, d) of the [n_blocks][n_head_kv][block_size][head_dim] layout.
__device__ __forceinline__ int64_t cache_index(int64_t slot, int head, int d, int block_size, int n_head_kv,
                                               int head_dim) {
    const int64_t block = slot / block_size, offset = slot % block_size;
    return ((block * n_head_kv + head) * block_size + offset) * head_dim + d;
}

// Where value d of (slot, kv head) and its block's scale sit in a quantized layer (PagedKvLayer's Fp8 and
// Q8_0 layouts: scale_width bytes a scale, kv_scale_bytes).
struct BlockLayout {
    int64_t block_bytes;
    int block_size, n_head_kv, head_dim, scale_width;
    __device__ __forceinline__ int64_t value(int64_t slot, int head, int d) const {
        const int64_t block = slot / block_size, offset = slot % block_size;
        return block * block_bytes + (head * int64_t{block_size} + offset) * head_dim + d;
    }
    __device__ __forceinline__ int64_t scale(int64_t slot, int head, int d) const {
        const int64_t block = slot / block_size, offset = slot % block_size;
        return block * block_bytes + int64_t{n_head_kv} * block_size * head_dim +
               ((head * int64_t{block_size} + offset) * (head_dim / 32) + d / 32) * scale_width;
    }
};

BlockLayout block_layout(const PagedKvLayer& kv) {
    return {static_cast<int64_t>(kv.block_bytes()), kv.block_size, kv.n_head_kv, kv.head_dim,
            kv_scale_bytes(kv.format)};
}

// The E8M0 byte of a block whose largest magnitude is amax (cpu::mx_scale_byte, the same float operations).
__device__ __forceinline__ int mx_scale_byte(float amax) {
    if (!(amax > 0.0f) || !isfinite(amax)) return 127;
    int e = 0;
    const float f = frexpf(__fdiv_rn(amax, 448.0f), &e);
    if (f == 0.5f) --e;
    return min(max(e + 127, 0), 254);
}

// A warp's 32 values x (lane i: value i of the block) stored as one block: fp8 (cpu::vec::quantize_fp8) or
// Q8_0 (GGML's quantize_row_q8_0_ref, cpu::vec::quantize_q8_0), the same float operations.
template <KvFormat kFormat>
__device__ __forceinline__ void store_block(float x, unsigned char* values, unsigned char* scale, int lane) {
    float amax = fabsf(x);
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if constexpr (kFormat == KvFormat::Q8_0) {
        const float d = __fdiv_rn(amax, 127.0f), id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
        values[lane] = static_cast<unsigned char>(static_cast<int8_t>(roundf(__fmul_rn(x, id))));
        if (lane == 0) *reinterpret_cast<__half*>(scale) = __float2half_rn(d);
    } else {
        const int e = mx_scale_byte(amax);
        const float inv = ldexpf(1.0f, 127 - e);  // x * inv is x / 2^(e - 127) exactly
        values[lane] = __nv_cvt_float_to_fp8(__fmul_rn(x, inv), __NV_SATFINITE, __NV_E4M3);
        if (lane == 0) *scale = static_cast<unsigned char>(e);
    }
}

// A stored value back as float (exact): e4m3 * 2^(e - 127), or q * d.
template <KvFormat kFormat>
__device__ __forceinline__ float stored_value(unsigned char v, const unsigned char* scale) {
    if constexpr (kFormat == KvFormat::Q8_0)
        return __fmul_rn(__half2float(*reinterpret_cast<const __half*>(scale)), static_cast<float>(static_cast<int8_t>(v)));
    const __half_raw h = __nv_cvt_fp8_to_halfraw(v, __NV_E4M3);
    return __fmul_rn(__half2float(__half(h)), ldexpf(1.0f, min(int{*scale}, 254) - 127));
}

// Pair i's angle, built by repeated multiplication in float, then divided by
// the pair's factor and scaled, exactly as the CPU backend (and GGML) does, so
// both round the same way (IEEE division: no fast-math reciprocal).
// YaRN's blend (RopeParams::ext_factor) in the same float operations, none fused.
__device__ __forceinline__ void rope_angle(int32_t position, float freq_scale, float theta_scale, const RopeParams& rope,
                                           int i, float& c, float& s) {
    float theta = static_cast<float>(position);
    for (int j = 0; j < i; ++j) theta *= theta_scale;
    if (rope.freq_factors) theta = __fdiv_rn(theta, rope.freq_factors[i]);
    const float extrapolated = theta;
    theta = __fmul_rn(theta, freq_scale);
    if (rope.ext_factor != 0.0f) {
        const float y = __fdiv_rn(__fsub_rn(static_cast<float>(i), rope.yarn_low),
                                  fmaxf(0.001f, __fsub_rn(rope.yarn_high, rope.yarn_low)));
        const float mix = __fmul_rn(__fsub_rn(1.0f, fminf(1.0f, fmaxf(0.0f, y))), rope.ext_factor);
        theta = __fadd_rn(__fmul_rn(theta, __fsub_rn(1.0f, mix)), __fmul_rn(extrapolated, mix));
    }
    c = __fmul_rn(cosf(theta), rope.mscale);
    s = __fmul_rn(sinf(theta), rope.mscale);
}

// The pair (a, b) that pair i of a head rotates: (2i, 2i + 1), or (i, i + d/2) (NeoX).
__device__ __forceinline__ int2 rope_pair(int i, int head_dim, bool split_half) {
    return split_half ? make_int2(i, i + head_dim / 2) : make_int2(2 * i, 2 * i + 1);
}

// Query pair `item` (head item / half, pair item % half) of a row's heads q, rotated in place.
__device__ __forceinline__ void rotate_query_pair(float* q, int item, int head_dim, const RopeParams& rope,
                                                  const float* cos_s, const float* sin_s) {
    const int half = head_dim / 2, head = item / half, i = item % half;
    float* x = q + head * head_dim;
    const int2 p = rope_pair(i, head_dim, rope.split_half);
    const float x0 = x[p.x], x1 = x[p.y], c = cos_s[i], s = sin_s[i];
    x[p.x] = x0 * c - x1 * s;
    x[p.y] = x0 * s + x1 * c;
}

// Value d of a head x after RoPE: its pair rotated by (cos_s, sin_s), the same products as rotate_query_pair.
__device__ __forceinline__ float rotated_value(const float* x, int d, int head_dim, bool split_half,
                                               const float* cos_s, const float* sin_s) {
    const int half = head_dim / 2, i = split_half ? d % half : d / 2;
    const int2 p = rope_pair(i, head_dim, split_half);
    const float x0 = x[p.x], x1 = x[p.y], c = cos_s[i], s = sin_s[i];
    return d == p.x ? x0 * c - x1 * s : x0 * s + x1 * c;
}

// Items of a row, in order: the query pairs (n_head * half), the key pairs
// (n_head_kv * half), the value pairs (n_head_kv * half). blockIdx.x is the
// row, blockIdx.y the run of kRopeThreads items. The row's angles are computed
// once a block, by its first `half` threads, into shared memory: each of them
// is a loop of up to half - 1 dependent multiplies and a sine and cosine,
// which every rotated pair used to redo (16.3 us a prefill layer of 512 rows
// for the 8B shape; bench/results/cuda-split-2026-11-30.txt).
__global__ void __launch_bounds__(kRopeThreads)
    rope_store_kv_kernel(float* q, const float* k, const float* v, int n_head, int n_head_kv, int head_dim,
                         int block_size, __half* k_cache, __half* v_cache, const int32_t* positions,
                         const int64_t* slot_mapping, float freq_scale, float theta_scale, RopeParams rope) {
    __shared__ float cos_s[kMaxHeadDim / 2], sin_s[kMaxHeadDim / 2];
    detail::allow_later_grids();
    // The angles and the slot come from the step's batch, which no kernel writes: they are read
    // before the wait, while the projection before this kernel finishes.
    const int64_t row = blockIdx.x;
    const int half = head_dim / 2;
    const int q_items = n_head * half, kv_items = n_head_kv * half;
    const int first = blockIdx.y * kRopeThreads, item = first + threadIdx.x;
    if (first < q_items + kv_items && static_cast<int>(threadIdx.x) < half)
        rope_angle(positions[row], freq_scale, theta_scale, rope, threadIdx.x, cos_s[threadIdx.x],
                   sin_s[threadIdx.x]);
    const int64_t slot = slot_mapping[row];
    __syncthreads();
    detail::wait_for_earlier_grids();
    if (item >= q_items + 2 * kv_items) return;
    const int a_step = rope.split_half ? 1 : 2, b_offset = rope.split_half ? half : 1;
    if (item < q_items) return rotate_query_pair(q + row * int64_t{n_head} * head_dim, item, head_dim, rope, cos_s, sin_s);
    if (slot < 0) return;  // a padding row: nothing to store
    const int64_t kv_dim = int64_t{n_head_kv} * head_dim;
    if (item < q_items + kv_items) {
        const int head = (item - q_items) / half, i = (item - q_items) % half;
        const float* x = k + row * kv_dim + head * head_dim;
        const float c = cos_s[i], s = sin_s[i];
        const int a = i * a_step, b = a + b_offset;
        const float x0 = x[a], x1 = x[b];
        k_cache[cache_index(slot, head, a, block_size, n_head_kv, head_dim)] = __float2half_rn(x0 * c - x1 * s);
        k_cache[cache_index(slot, head, b, block_size, n_head_kv, head_dim)] = __float2half_rn(x0 * s + x1 * c);
        return;
    }
    const int head = (item - q_items - kv_items) / half, d = 2 * ((item - q_items - kv_items) % half);
    const float2 x = *reinterpret_cast<const float2*>(v + row * kv_dim + head * head_dim + d);
    *reinterpret_cast<__half2*>(v_cache + cache_index(slot, head, d, block_size, n_head_kv, head_dim)) =
        __floats2half2_rn(x.x, x.y);
}

// The quantized form of rope_store_kv_kernel: the query pairs as there, then one
// thread per key or value (keys rotated by the same products), a warp per
// block of 32 values. blockIdx.x is the row, blockIdx.y the run of
// kRopeThreads items: the query pairs (n_head * half, a multiple of 32), the
// keys (n_head_kv * head_dim), the values.
template <KvFormat kFormat>
__global__ void __launch_bounds__(kRopeThreads)
    rope_store_kv_quantized_kernel(float* q, const float* k, const float* v, int n_head, BlockLayout layout,
                             unsigned char* k_cache, unsigned char* v_cache, const int32_t* positions,
                             const int64_t* slot_mapping, float freq_scale, float theta_scale, RopeParams rope) {
    __shared__ float cos_s[kMaxHeadDim / 2], sin_s[kMaxHeadDim / 2];
    detail::allow_later_grids();
    const int64_t row = blockIdx.x;
    const int head_dim = layout.head_dim, half = head_dim / 2;
    const int q_items = n_head * half, kv_dim = layout.n_head_kv * head_dim;
    const int first = blockIdx.y * kRopeThreads, item = first + threadIdx.x;
    if (first < q_items + kv_dim && static_cast<int>(threadIdx.x) < half)
        rope_angle(positions[row], freq_scale, theta_scale, rope, threadIdx.x, cos_s[threadIdx.x],
                   sin_s[threadIdx.x]);
    const int64_t slot = slot_mapping[row];
    __syncthreads();
    detail::wait_for_earlier_grids();
    if (item >= q_items + 2 * kv_dim) return;  // whole warps: every range is a multiple of 32
    if (item < q_items) return rotate_query_pair(q + row * int64_t{n_head} * head_dim, item, head_dim, rope, cos_s, sin_s);
    if (slot < 0) return;  // a padding row: nothing to store
    const bool is_key = item < q_items + kv_dim;
    const int at = (item - q_items) % kv_dim, head = at / head_dim, d = at % head_dim;
    const float* x = (is_key ? k : v) + row * kv_dim + head * head_dim;
    const float value = is_key ? rotated_value(x, d, head_dim, rope.split_half, cos_s, sin_s) : x[d];
    unsigned char* cache = is_key ? k_cache : v_cache;
    store_block<kFormat>(value, cache + layout.value(slot, head, d - d % 32), cache + layout.scale(slot, head, d),
                         d % 32);
}

// One block per cached slot (blockIdx.x: the list's block, then the slot in
// it), one thread per key pair of the slot's heads.
__global__ void __launch_bounds__(kRopeThreads)
    shift_keys_kernel(__half* k_cache, const int32_t* blocks, int n_head_kv, int head_dim, int block_size,
                      int32_t position, float freq_scale, float theta_scale, RopeParams rope) {
    __shared__ float cos_s[kMaxHeadDim / 2], sin_s[kMaxHeadDim / 2];
    const int half = head_dim / 2;
    if (static_cast<int>(threadIdx.x) < half)
        rope_angle(position, freq_scale, theta_scale, rope, threadIdx.x, cos_s[threadIdx.x], sin_s[threadIdx.x]);
    __syncthreads();
    const int item = blockIdx.y * kRopeThreads + threadIdx.x;
    if (item >= n_head_kv * half) return;
    const int64_t slot = int64_t{blocks[blockIdx.x / block_size]} * block_size + blockIdx.x % block_size;
    const int head = item / half, i = item % half;
    const int a = rope.split_half ? i : 2 * i, b = rope.split_half ? i + half : 2 * i + 1;
    __half* ka = k_cache + cache_index(slot, head, a, block_size, n_head_kv, head_dim);
    __half* kb = k_cache + cache_index(slot, head, b, block_size, n_head_kv, head_dim);
    const float x0 = __half2float(*ka), x1 = __half2float(*kb), c = cos_s[i], s = sin_s[i];
    *ka = __float2half_rn(x0 * c - x1 * s);
    *kb = __float2half_rn(x0 * s + x1 * c);
}

// The quantized form: one block per (slot, kv head), one thread per value.
// The head's keys are read back whole first (a pair's two values may sit in
// different blocks of 32), then each warp rotates and stores its block.
template <KvFormat kFormat>
__global__ void shift_keys_quantized_kernel(unsigned char* k_cache, const int32_t* blocks, BlockLayout layout,
                                            int32_t position, float freq_scale, float theta_scale, RopeParams rope) {
    __shared__ float cos_s[kMaxHeadDim / 2], sin_s[kMaxHeadDim / 2], x[kMaxHeadDim];
    const int head_dim = layout.head_dim, half = head_dim / 2, d = threadIdx.x, head = blockIdx.y;
    if (d < half) rope_angle(position, freq_scale, theta_scale, rope, d, cos_s[d], sin_s[d]);
    const int64_t slot =
        int64_t{blocks[blockIdx.x / layout.block_size]} * layout.block_size + blockIdx.x % layout.block_size;
    x[d] = stored_value<kFormat>(k_cache[layout.value(slot, head, d)], k_cache + layout.scale(slot, head, d));
    __syncthreads();
    const float value = rotated_value(x, d, head_dim, rope.split_half, cos_s, sin_s);
    __syncthreads();  // every value read before any block is rewritten
    store_block<kFormat>(value, k_cache + layout.value(slot, head, d - d % 32), k_cache + layout.scale(slot, head, d),
                         d % 32);
}

}  // namespace

cudaError_t shift_keys(const PagedKvLayer& kv, const int32_t* blocks, int32_t n_blocks, int32_t delta,
                       const RopeParams& rope, cudaStream_t s) {
    if (n_blocks <= 0) return cudaSuccess;
    if (kv.head_dim <= 0 || kv.head_dim % 2 != 0 || kv.head_dim > kMaxHeadDim || kv.n_head_kv <= 0 ||
        kv.block_size <= 0 || !kv.k || !blocks || !(rope.scale != 0.0f))
        return cudaErrorInvalidValue;
    const float theta_scale = std::pow(rope.base, -2.0f / static_cast<float>(kv.head_dim));
    if (kv.format != KvFormat::F16) {
        if (kv.head_dim % 32 != 0) return cudaErrorInvalidValue;
        const dim3 grid(static_cast<unsigned>(n_blocks * kv.block_size), static_cast<unsigned>(kv.n_head_kv));
        auto* kernel = kv.format == KvFormat::Q8_0 ? shift_keys_quantized_kernel<KvFormat::Q8_0>
                                                   : shift_keys_quantized_kernel<KvFormat::Fp8>;
        kernel<<<grid, kv.head_dim, 0, s>>>(static_cast<unsigned char*>(kv.k), blocks, block_layout(kv), -delta,
                                            1.0f / rope.scale, theta_scale, rope);
        return cudaGetLastError();
    }
    const int items = kv.n_head_kv * (kv.head_dim / 2);
    const dim3 grid(static_cast<unsigned>(n_blocks * kv.block_size),
                    static_cast<unsigned>((items + kRopeThreads - 1) / kRopeThreads));
    shift_keys_kernel<<<grid, kRopeThreads, 0, s>>>(static_cast<__half*>(kv.k), blocks, kv.n_head_kv, kv.head_dim,
                                                    kv.block_size, -delta, 1.0f / rope.scale, theta_scale, rope);
    return cudaGetLastError();
}

cudaError_t rope_store_kv(float* q, const float* k, const float* v, int n_head, const PagedKvLayer& kv,
                          const RopeParams& rope, const AttentionBatch& b, cudaStream_t s) {
    if (b.n_tokens <= 0) return cudaSuccess;
    if (kv.head_dim <= 0 || kv.head_dim % 2 != 0 || kv.head_dim > kMaxHeadDim || kv.n_head_kv <= 0 || n_head <= 0 ||
        kv.block_size <= 0 || !kv.k || !kv.v || !(rope.scale != 0.0f))
        return cudaErrorInvalidValue;
    // base^(-2/d) and 1/scale computed on the host in float, as the CPU backend does.
    const float theta_scale = std::pow(rope.base, -2.0f / static_cast<float>(kv.head_dim));
    const float freq_scale = 1.0f / rope.scale;
    if (kv.format != KvFormat::F16) {
        if (kv.head_dim % 64 != 0) return cudaErrorInvalidValue;  // whole warps of query pairs and of values
        const int items = n_head * (kv.head_dim / 2) + 2 * kv.n_head_kv * kv.head_dim;
        const dim3 grid(static_cast<unsigned>(b.n_tokens),
                        static_cast<unsigned>((items + kRopeThreads - 1) / kRopeThreads));
        auto* kernel = kv.format == KvFormat::Q8_0 ? rope_store_kv_quantized_kernel<KvFormat::Q8_0>
                                                   : rope_store_kv_quantized_kernel<KvFormat::Fp8>;
        return detail::launch_overlapped(detail::kPdlRope, kernel, grid, dim3(kRopeThreads), s, q, k, v, n_head,
                                         block_layout(kv), static_cast<unsigned char*>(kv.k),
                                         static_cast<unsigned char*>(kv.v), b.positions, b.slot_mapping, freq_scale,
                                         theta_scale, rope);
    }
    const int items = (n_head + 2 * kv.n_head_kv) * (kv.head_dim / 2);
    const dim3 grid(static_cast<unsigned>(b.n_tokens), static_cast<unsigned>((items + kRopeThreads - 1) / kRopeThreads));
    return detail::launch_overlapped(detail::kPdlRope, rope_store_kv_kernel, grid, dim3(kRopeThreads), s, q, k, v,
                                     n_head, kv.n_head_kv, kv.head_dim, kv.block_size, static_cast<__half*>(kv.k),
                                     static_cast<__half*>(kv.v), b.positions, b.slot_mapping, freq_scale, theta_scale,
                                     rope);
}

}  // namespace folio::kernels
