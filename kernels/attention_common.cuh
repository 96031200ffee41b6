// Shared by the attention kernels (attention.cu, attention_mma.cu): the
// arguments a launch passes, and small device helpers. Internal to kernels/.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "activation_quant.cuh"
#include "folio_kernels/attention.h"

namespace folio::kernels::attention_detail {

// One paged_attention launch, as the kernels see it. A block covers
// tokens_per_tile consecutive rows of one sequence, every head of one KV
// head's group for each, and one split of the keys.
struct Args {
    const float* q;
    float* out;
    const __half* k;  // a quantized cache's bytes when kv_format says so (PagedKvLayer's layouts)
    const __half* v;
    int64_t kv_block_bytes;
    KvFormat kv_format;
    const int32_t* positions;
    const int32_t* query_start;
    const int32_t* n_query;
    const int32_t* block_tables;
    // Split-K partials. CUDA-core kernel: [n_splits][n_tokens][n_head][D] and [..][2].
    // Tensor-core kernel: [slot row][n_head][n_chunks][D] and [..][2], slot row = the
    // token row when part_by_row, else seq * kDecodeTokens + the row's index in its sequence.
    float* part_o;
    float* part_ml;
    // out again in the form the next matmul reads (qs null: none). F16 / BF16 by every kernel that
    // writes out; Q8_0 / Q8_1 only by the tensor-core kernels' kQ8 instances (q8_in_kernel()).
    detail::ActivationBlocks act;
    int n_head, n_head_kv, group, tokens_per_tile, block_size, max_blocks, n_tokens;
    int keys_per_split, n_splits, window;  // CUDA-core kernel's split plan
    int n_chunks;                          // tensor-core kernel: kChunkKeys-key chunks of the longest sequence
    int chunks_per_block;                  // tensor-core decode kernel: consecutive chunks a block takes
    bool part_by_row;
    float scale, softcap;
};

// Output element pair (d, d + 1) at flat index i (even): out, and its F16 / BF16 copy when asked for.
// The Q8 forms are written a block at a time (quantize_quad_block, quantize_warp_block) by the kernels'
// kQ8 instances, which leave the copy to them here.
template <bool kQ8 = false>
inline __device__ void store_out2(const Args& a, int64_t i, float x, float y) {
    *reinterpret_cast<float2*>(a.out + i) = make_float2(x, y);
    if (kQ8 || !a.act.qs) return;
    if (a.act.format == static_cast<int>(ActivationFormat::BF16))
        reinterpret_cast<__nv_bfloat162*>(a.act.qs)[i / 2] = __floats2bfloat162_rn(x, y);
    else
        reinterpret_cast<__half2*>(a.act.qs)[i / 2] = __floats2half2_rn(x, y);
}
template <bool kQ8 = false>
inline __device__ void store_out(const Args& a, int64_t i, float x) {
    a.out[i] = x;
    if (kQ8 || !a.act.qs) return;
    if (a.act.format == static_cast<int>(ActivationFormat::BF16))
        reinterpret_cast<__nv_bfloat16*>(a.act.qs)[i] = __float2bfloat16_rn(x);
    else
        reinterpret_cast<__half*>(a.act.qs)[i] = __float2half_rn(x);
}

// Batch invariance (tensor-core kernel). A row's result depends only on its
// own query, keys, position, window and softcap, never on the rest of the
// batch or on the host-side bounds:
//  - keys are cut into chunks at fixed multiples of kChunkKeys; within a chunk,
//    key tiles start at multiples of the tile size and the online softmax runs
//    over them in order (a tile with no key of the row is an exact no-op);
//  - a chunk's partial (max, sum, unnormalised output) is folded into the
//    row's state in chunk order with fold_step / fold_value, whether that
//    happens in registers (prefill kernel) or in the merge kernel (decode);
//  - every sum, product and exponential is an explicitly rounded operation
//    (no contraction that could differ between the kernels' instantiations).
constexpr int kChunkKeys = 128;

// A key tile's probability sum is ((g0 + g1) + (g2 + g3)), g_k a lane's sum
// over the k-th quarter of the tile's n8 score tiles in order: the decode
// kernel's four warps each take one quarter.
constexpr int kSumGroups = 4;
// A sequence goes through the decode kernel (one 16-row group, four warps per
// key tile) when its rows are this few; else through the prefill kernel.
constexpr int kDecodeTokens = 4;
__host__ __device__ constexpr bool is_decode_sequence(int n_query, int group) {
    return n_query <= kDecodeTokens && n_query * group <= 16;
}

// 2^(x log2 e) on the special-function unit; exp_approx(-inf) = 0.
inline __device__ float exp_approx(float x) {
    const float y = __fmul_rn(x, 1.4426950408889634f);
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(y));
    return r;
}

// Folding a chunk's partial (m, l, o) into a row's state (M, L, O), both with
// finite maxima: M' = max(M, m), L' = L a + l b, O' = O a + o b. The first
// chunk's partial becomes the state as it is; the output is O / L.
struct FoldStep {
    float m, a, b;
};
inline __device__ FoldStep fold_step(float state_max, float chunk_max) {
    const float m = fmaxf(state_max, chunk_max);
    return {m, exp_approx(__fsub_rn(state_max, m)), exp_approx(__fsub_rn(chunk_max, m))};
}
inline __device__ float fold_value(float state, float chunk, const FoldStep& f) {
    return __fmaf_rn(state, f.a, __fmul_rn(chunk, f.b));
}

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

// Chunks of the longest sequence, and the scratch the tensor-core kernel's
// decode partials need (0 when every row fits one chunk).
int attention_mma_chunks(const AttentionBatch& b);
size_t attention_mma_workspace_bytes(const AttentionBatch& b, int n_head, int head_dim);

// Launches the tensor-core kernels (attention_mma.cu): the decode kernel over
// (chunk group, sequence, KV head), the prefill kernel over (row tile, sequence,
// KV head) unless every sequence is a decode one, and the merge of decode
// rows that span several chunks. a.part_o / a.part_ml point into the workspace.
cudaError_t launch_attention_mma(Args a, int head_dim, const AttentionBatch& b, cudaStream_t s);

// Whether the tensor-core kernels write a Q8 copy of their output themselves at this head size: each
// warp's output columns must be whole blocks of 32 (the decode kernel's warps have head_dim / 4).
constexpr bool q8_in_kernel(int head_dim) { return head_dim % 128 == 0; }

}  // namespace folio::kernels::attention_detail
