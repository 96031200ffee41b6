// The fused RoPE + KV-cache write: one block per batch row rotates the row's
// query heads in place and its key heads, and stores the rotated keys and the
// values as half into the paged cache at the row's slot.
#include <cmath>

#include <cuda_fp16.h>

#include "folio_kernels/attention.h"

namespace folio::kernels {
namespace {

constexpr int kRopeThreads = 128;
constexpr int kMaxHeadDim = 256;

// Cache element (slot, kv head, d) of the [n_blocks][n_head_kv][block_size][head_dim] layout.
__device__ __forceinline__ int64_t cache_index(int64_t slot, int head, int d, int block_size, int n_head_kv,
                                               int head_dim) {
    const int64_t block = slot / block_size, offset = slot % block_size;
    return ((block * n_head_kv + head) * block_size + offset) * head_dim + d;
}

__global__ void __launch_bounds__(kRopeThreads)
    rope_store_kv_kernel(float* q, const float* k, const float* v, int n_head, int n_head_kv, int head_dim,
                         int block_size, __half* k_cache, __half* v_cache, const int32_t* positions,
                         const int64_t* slot_mapping, float scale, float theta_scale,
                         bool split_half) {
    __shared__ float cos_of[kMaxHeadDim / 2], sin_of[kMaxHeadDim / 2];
    const int64_t row = blockIdx.x;
    const int half = head_dim / 2;
    // Pair i's angle, built by repeated multiplication in float exactly as the
    // CPU backend (and GGML) does, so both round the same way.
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float theta = static_cast<float>(positions[row]) / scale;
        for (int j = 0; j < i; ++j) theta *= theta_scale;
        cos_of[i] = cosf(theta);
        sin_of[i] = sinf(theta);
    }
    __syncthreads();

    const int a_step = split_half ? 1 : 2, b_offset = split_half ? half : 1;
    float* q_row = q + row * int64_t{n_head} * head_dim;
    for (int idx = threadIdx.x; idx < n_head * half; idx += blockDim.x) {
        const int head = idx / half, i = idx % half;
        float* x = q_row + head * head_dim;
        const int a = i * a_step, b = a + b_offset;
        const float x0 = x[a], x1 = x[b];
        x[a] = x0 * cos_of[i] - x1 * sin_of[i];
        x[b] = x0 * sin_of[i] + x1 * cos_of[i];
    }

    const int64_t slot = slot_mapping[row];
    if (slot < 0) return;  // a padding row: nothing to store
    const int64_t kv_dim = int64_t{n_head_kv} * head_dim;
    const float* k_row = k + row * kv_dim;
    for (int idx = threadIdx.x; idx < n_head_kv * half; idx += blockDim.x) {
        const int head = idx / half, i = idx % half;
        const float* x = k_row + head * head_dim;
        const int a = i * a_step, b = a + b_offset;
        const float x0 = x[a], x1 = x[b];
        k_cache[cache_index(slot, head, a, block_size, n_head_kv, head_dim)] =
            __float2half_rn(x0 * cos_of[i] - x1 * sin_of[i]);
        k_cache[cache_index(slot, head, b, block_size, n_head_kv, head_dim)] =
            __float2half_rn(x0 * sin_of[i] + x1 * cos_of[i]);
    }
    const float* v_row = v + row * kv_dim;
    for (int idx = threadIdx.x; idx < n_head_kv * head_dim; idx += blockDim.x) {
        const int head = idx / head_dim, d = idx % head_dim;
        v_cache[cache_index(slot, head, d, block_size, n_head_kv, head_dim)] = __float2half_rn(v_row[idx]);
    }
}

}  // namespace

cudaError_t rope_store_kv(float* q, const float* k, const float* v, int n_head, const PagedKvLayer& kv,
                          const RopeParams& rope, const AttentionBatch& b, cudaStream_t s) {
    if (b.n_tokens <= 0) return cudaSuccess;
    if (kv.head_dim <= 0 || kv.head_dim % 2 != 0 || kv.head_dim > kMaxHeadDim || kv.n_head_kv <= 0 || n_head <= 0 ||
        kv.block_size <= 0 || !kv.k || !kv.v || !(rope.scale != 0.0f))
        return cudaErrorInvalidValue;
    // base^(-2/d) computed on the host in float, as the CPU backend does.
    const float theta_scale = std::pow(rope.base, -2.0f / static_cast<float>(kv.head_dim));
    rope_store_kv_kernel<<<static_cast<unsigned>(b.n_tokens), kRopeThreads, 0, s>>>(
        q, k, v, n_head, kv.n_head_kv, kv.head_dim, kv.block_size, static_cast<__half*>(kv.k),
        static_cast<__half*>(kv.v), b.positions, b.slot_mapping, rope.scale, theta_scale, rope.split_half);
    return cudaGetLastError();
}

}  // namespace folio::kernels
