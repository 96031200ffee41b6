// Shared by the attention kernels (attention.cu, attention_mma.cu): the
// arguments a launch passes, and small device helpers. Internal to kernels/.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace folio::kernels::attention_detail {

// One paged_attention launch, as the kernels see it. A block covers
// tokens_per_tile consecutive rows of one sequence, every head of one KV
// head's group for each, and one split of the keys.
struct Args {
    const float* q;
    float* out;
    const __half* k;
    const __half* v;
    const int32_t* positions;
    const int32_t* query_start;
    const int32_t* n_query;
    const int32_t* block_tables;
    float* part_o;   // [n_splits][n_tokens][n_head][D] unnormalised outputs (split-K only)
    float* part_ml;  // [n_splits][n_tokens][n_head][2] running max and sum (split-K only)
    int n_head, n_head_kv, group, tokens_per_tile, block_size, max_blocks, n_tokens;
    int keys_per_split, n_splits, window;
    float scale, softcap;
};

inline __device__ void cp_async16(void* smem, const void* gmem) {
    const auto addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(addr), "l"(gmem) : "memory");
}
inline __device__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
inline __device__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

inline __device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
inline __device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Launches the flash-attention kernel on tensor cores (attention_mma.cu) for
// this batch shape: 16 query-head rows per block when every sequence's rows
// times the group fit in 16 (decode), else 64; sets a.tokens_per_tile.
cudaError_t launch_attention_mma(Args a, int head_dim, int max_n_query, int n_seqs, int split_count,
                                 cudaStream_t s);

}  // namespace folio::kernels::attention_detail
