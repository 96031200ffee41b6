// Mixture-of-experts routing, grouping and combining on the device
// (folio_kernels/moe.h); the grouped products are matmul_quant.cu's and
// matmul_float.cu's.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>

#include "folio_kernels/check.h"
#include "folio_kernels/moe.h"
#include "matmul_layout.cuh"

namespace folio::kernels {
namespace {

using detail::align256;

// One block groups a whole routing: 1024 threads, or 128 for a few rows
// (decode: fewer warps to wait for at each of its barriers).
constexpr int kGroupThreads = 1024, kSmallGroupThreads = 128;
constexpr int kSmallGroupRows = 8;
// Shared memory the routing warps' probabilities may take (static limit).
constexpr size_t kRouteSmemBytes = 32 * 1024;

__device__ __forceinline__ int warp_inclusive_scan(int v, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

// Exclusive prefix sum of v over the block's kThreads threads; total = the sum.
template <int kThreads>
__device__ int block_exclusive_scan(int v, int* warp_sums, int& total) {
    constexpr int kWarps = kThreads / 32;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int inclusive = warp_inclusive_scan(v, lane);
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        const int sums = warp_inclusive_scan(lane < kWarps ? warp_sums[lane] : 0, lane);
        if (lane < kWarps) warp_sums[lane] = sums;
    }
    __syncthreads();
    const int before = warp == 0 ? 0 : warp_sums[warp - 1];
    total = warp_sums[kWarps - 1];
    __syncthreads();  // warp_sums is used again by the next scan
    return before + inclusive - v;
}

// Routing (warps 0 .. route_warps - 1, a row at a time each), then grouping
// (the whole block). probs: route_warps x n_expert floats of shared memory.
template <int kThreads>
__global__ void __launch_bounds__(kThreads) route_and_group_kernel(const float* __restrict__ logits,
                                                                        int n_rows, int n_expert, int k,
                                                                        bool norm_weights, int route_warps,
                                                                        ExpertRouting r) {
    extern __shared__ float probs_all[];
    __shared__ int count[kMaxExperts], cursor[kMaxExperts], warp_sums[kThreads / 32];
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int e = threadIdx.x; e < n_expert; e += kThreads) count[e] = 0;
    __syncthreads();

    if (warp < route_warps) {
        float* probs = probs_all + warp * n_expert;
        for (int row = warp; row < n_rows; row += route_warps) {
            const float* l = logits + static_cast<int64_t>(row) * n_expert;
            float m = -INFINITY;
            for (int e = lane; e < n_expert; e += 32) m = fmaxf(m, l[e]);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            double sum = 0;
            for (int e = lane; e < n_expert; e += 32) {
                const float p = expf(l[e] - m);
                probs[e] = p;
                sum += p;
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            const auto inv = static_cast<float>(1.0 / sum);
            for (int e = lane; e < n_expert; e += 32) probs[e] = __fmul_rn(probs[e], inv);
            __syncwarp();
            // The k best, best first (ties: the lower id); a chosen one is marked -1.
            // Every lane ends each round with the same best: lane s keeps the s-th.
            float chosen = 0.0f, my_weight = 0.0f;
            int my_id = 0;
            for (int s = 0; s < k; ++s) {
                float best = -1.0f;
                int best_e = INT_MAX;
                for (int e = lane; e < n_expert; e += 32) {
                    const float v = probs[e];
                    if (v > best || (best_e == INT_MAX && v != -1.0f)) best = v, best_e = e;
                }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) {
                    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
                    const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
                    if (oe != INT_MAX && (best_e == INT_MAX || ov > best || (ov == best && oe < best_e)))
                        best = ov, best_e = oe;
                }
                chosen = __fadd_rn(chosen, best);
                if (lane == s) my_weight = best, my_id = best_e;
                if (lane == 0) probs[best_e] = -1.0f;
                __syncwarp();
            }
            if (lane < k) {
                r.ids[row * k + lane] = my_id;
                r.weights[row * k + lane] = norm_weights ? __fdiv_rn(my_weight, fmaxf(chosen, 6.103515625e-5f)) : my_weight;
                atomicAdd(&count[my_id], 1);
            }
            __syncwarp();
        }
    }
    __syncthreads();

    // Groups in expert order: thread t takes a run of experts.
    const int per_thread = (n_expert + kThreads - 1) / kThreads;
    const int e0 = threadIdx.x * per_thread, e1 = min(n_expert, e0 + per_thread);
    int entries = 0, groups = 0;
    for (int e = e0; e < e1; ++e) {
        entries += count[e];
        groups += count[e] > 0;
    }
    int total_entries = 0, total_groups = 0;
    int at = block_exclusive_scan<kThreads>(entries, warp_sums, total_entries);
    int g = block_exclusive_scan<kThreads>(groups, warp_sums, total_groups);
    for (int e = e0; e < e1; ++e) {
        cursor[e] = at;
        if (count[e] > 0) r.groups[g++] = make_int4(e, at, count[e], 0);
        at += count[e];
    }
    if (threadIdx.x == 0) *r.n_groups = total_groups;
    __syncthreads();
    // Each entry to a free place in its group (the order within a group changes no result).
    const int n_entries = n_rows * k;
    for (int i = threadIdx.x; i < n_entries; i += kThreads) {
        const int p = atomicAdd(&cursor[r.ids[i]], 1);
        r.order[p] = i;
        r.x_row[p] = i / k;
        r.position[i] = p;
    }
}

// Block (r, y): columns 256y .. 256y + 255 of row r, one a thread; the
// row's weights and positions in shared memory, its k loads independent.
constexpr int kCombineThreads = 256;
__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const float* __restrict__ y,
                                                                  const float* __restrict__ weights,
                                                                  const int32_t* __restrict__ position, int k,
                                                                  int64_t dim, float* out) {
    __shared__ float w[kMaxExpertsUsed];
    __shared__ int64_t at[kMaxExpertsUsed];
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    const int64_t row = blockIdx.x;
    if (threadIdx.x < k) {
        w[threadIdx.x] = weights[row * k + threadIdx.x];
        at[threadIdx.x] = static_cast<int64_t>(position[row * k + threadIdx.x]) * dim;
    }
    __syncthreads();
    const int64_t j = blockIdx.y * static_cast<int64_t>(kCombineThreads) + threadIdx.x;
    if (j >= dim) return;
    float o = __fmul_rn(w[0], y[at[0] + j]);
    for (int s = 1; s < k; ++s) o = __fadd_rn(o, __fmul_rn(w[s], y[at[s] + j]));
    out[row * dim + j] = o;
}

using detail::is_float;

}  // namespace

size_t expert_stride(WeightType t, int64_t rows, int64_t cols) {
    return align256(device_matrix_bytes(t, rows, cols));
}

int64_t max_expert_groups(int64_t n_entries, int32_t n_expert) {
    return n_entries < n_expert ? n_entries : n_expert;
}

size_t expert_routing_bytes(int64_t n_rows, int32_t k, int32_t n_expert) {
    const auto entries = static_cast<size_t>(n_rows * k);
    return 5 * align256(entries * 4) + align256(static_cast<size_t>(max_expert_groups(n_rows * k, n_expert)) * 16) + 256;
}

ExpertRouting expert_routing(void* buffer, int64_t n_rows, int32_t k, int32_t n_expert) {
    const auto entries = static_cast<size_t>(n_rows * k);
    auto* at = static_cast<uint8_t*>(buffer);
    auto take = [&at](size_t bytes) {
        uint8_t* p = at;
        at += align256(bytes);
        return p;
    };
    ExpertRouting r;
    r.ids = reinterpret_cast<int32_t*>(take(entries * 4));
    r.weights = reinterpret_cast<float*>(take(entries * 4));
    r.order = reinterpret_cast<int32_t*>(take(entries * 4));
    r.x_row = reinterpret_cast<int32_t*>(take(entries * 4));
    r.position = reinterpret_cast<int32_t*>(take(entries * 4));
    r.groups = reinterpret_cast<int4*>(take(static_cast<size_t>(max_expert_groups(n_rows * k, n_expert)) * 16));
    r.n_groups = reinterpret_cast<int32_t*>(take(4));
    return r;
}

cudaError_t route_and_group_experts(const float* logits, int64_t n_rows, int32_t n_expert, int32_t k,
                                    bool norm_weights, const ExpertRouting& r, cudaStream_t s) {
    if (n_expert < 1 || n_expert > kMaxExperts || k < 1 || k > kMaxExpertsUsed || k > n_expert || n_rows < 0 ||
        n_rows * k > INT_MAX)
        return cudaErrorInvalidValue;
    if (n_rows == 0) return cudaSuccess;
    const size_t per_warp = static_cast<size_t>(n_expert) * sizeof(float);
    const bool small = n_rows <= kSmallGroupRows;
    const int threads = small ? kSmallGroupThreads : kGroupThreads;
    const int route_warps = static_cast<int>(std::min<size_t>(threads / 32, kRouteSmemBytes / per_warp));
    const size_t smem = per_warp * static_cast<size_t>(route_warps);
    auto* kernel = small ? route_and_group_kernel<kSmallGroupThreads> : route_and_group_kernel<kGroupThreads>;
    return detail::launch_overlapped_smem(detail::kPdlOther, kernel, dim3(1), dim3(threads), smem, s, logits,
                                          static_cast<int>(n_rows), n_expert, k, norm_weights, route_warps, r);
}

bool router_logits_supported(const DeviceMatrix& router) { return detail::router_supported(router); }

cudaError_t router_logits(const DeviceMatrix& router, const float* x, int64_t n_rows, float* logits, cudaStream_t s) {
    return detail::router_matmul(router, x, n_rows, logits, s);
}

size_t grouped_matmul_workspace_bytes(WeightType t, int64_t n_entries, int64_t cols) {
    return is_float(t) ? 0 : detail::grouped_quantized_workspace_bytes(t, n_entries, cols);
}

cudaError_t grouped_matmul(const DeviceExperts& w, const float* x, const int32_t* x_row, int64_t n_entries,
                           int64_t max_group_rows, const ExpertRouting& r, float* y, void* ws, bool x_in_workspace,
                           cudaStream_t s) {
    if (!w.data || w.n_expert < 1 || w.stride < device_matrix_bytes(w.type, w.rows, w.cols) || w.stride % 256 != 0 ||
        device_matrix_bytes(w.type, w.rows, w.cols) == 0 || !x || !y || max_group_rows < 1 ||
        reinterpret_cast<uintptr_t>(x) % 16 != 0)
        return cudaErrorInvalidValue;
    if (n_entries == 0) return cudaSuccess;
    const int64_t groups = max_expert_groups(n_entries, w.n_expert);
    if (groups > 65535 || w.rows > INT_MAX) return cudaErrorInvalidValue;
    const int tile = static_cast<int>(max_group_rows < kMatmulTileRows ? max_group_rows : kMatmulTileRows);
    if (is_float(w.type))
        return detail::grouped_float_matmul(w, x, x_row, tile, r.groups, r.n_groups, static_cast<unsigned>(groups), y, s);
    if (!ws || reinterpret_cast<uintptr_t>(ws) % 256 != 0) return cudaErrorInvalidValue;
    return detail::grouped_quantized_matmul(w, x, x_row, n_entries, tile, r.groups, r.n_groups, static_cast<unsigned>(groups),
                                            y, ws, x_in_workspace, s);
}

cudaError_t combine_experts(const float* y, const ExpertRouting& r, int64_t n_rows, int32_t k, int64_t dim,
                            float* out, cudaStream_t s) {
    if (n_rows == 0) return cudaSuccess;
    const int64_t chunks = (dim + kCombineThreads - 1) / kCombineThreads;
    if (n_rows > INT_MAX || k < 1 || k > kMaxExpertsUsed || dim < 1 || chunks > 65535) return cudaErrorInvalidValue;
    const dim3 grid(static_cast<unsigned>(n_rows), static_cast<unsigned>(chunks));
    return detail::launch_overlapped(detail::kPdlOther, combine_kernel, grid, dim3(kCombineThreads), s, y,
                                     static_cast<const float*>(r.weights), static_cast<const int32_t*>(r.position), k,
                                     dim, out);
}

}  // namespace folio::kernels
