// Paged attention on the GPU: the fused RoPE + KV-cache write of a step's rows,
// and attention of each row over its sequence's cached prefix read through the
// sequence's block table (vLLM's flat batch: decode rows and prefill chunks of
// several sequences in one launch). Semantics follow the CPU backend
// (engine/src/backend/cpu/attention.cpp): queries and probabilities rounded to
// half, K and V stored as half (or as fp8 blocks read back into half), F32
// accumulation.
//
// Every function only enqueues work on `s`: grid sizes come from the host-side
// bounds in AttentionBatch, actual lengths are read from its device arrays, so
// a step can be captured in a CUDA graph and replayed with new contents.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "folio_kernels/elementwise.h"

namespace folio::kernels {

// How a layer's K and V are stored (folio/kv_type.h names them f16, fp8 and q8_0).
enum class KvFormat : int32_t {
    F16,   // IEEE half
    Fp8,   // MXFP8: FP8 E4M3 values, blocks of 32 along a head's row sharing an E8M0 scale 2^(e - 127)
    Q8_0,  // GGML Q8_0: int8 values, blocks of 32 along a head's row sharing an fp16 scale d = amax / 127
};

#if defined(__CUDACC__)
#define FOLIO_KV_HOST_DEVICE __host__ __device__
#else
#define FOLIO_KV_HOST_DEVICE
#endif
// Bytes of a block-of-32 scale in `format` (0: F16 has none, nor blocks).
FOLIO_KV_HOST_DEVICE constexpr int kv_scale_bytes(KvFormat format) {
    return format == KvFormat::Q8_0 ? 2 : format == KvFormat::Fp8 ? 1 : 0;
}
#undef FOLIO_KV_HOST_DEVICE

// One layer's paged KV cache: K and V each n_blocks blocks of block_bytes() bytes.
//   F16: a block is [n_head_kv][block_size][head_dim] half.
//   Fp8:  a block is [n_head_kv][block_size][head_dim] E4M3 bytes, then [n_head_kv][block_size][head_dim / 32]
//         scale bytes; block_size a multiple of 16 (16-byte aligned blocks). A value reads back as
//         half(e4m3 * 2^(e - 127)), the value the CPU backend's fp8 cache reads.
//   Q8_0: the same with int8 values and fp16 scales (2 bytes each). A value reads back as half(q * d) (the
//         CPU backend's Q8_0 attention instead takes Q8_0 queries and integer dots, as llama.cpp's CPU does).
struct PagedKvLayer {
    void* k = nullptr;
    void* v = nullptr;
    int32_t n_blocks = 0, block_size = 16, n_head_kv = 0, head_dim = 0;
    KvFormat format = KvFormat::F16;

    size_t block_bytes() const {
        const size_t values = static_cast<size_t>(block_size) * static_cast<size_t>(n_head_kv) * static_cast<size_t>(head_dim);
        return format == KvFormat::F16 ? 2 * values : values + values / 32 * static_cast<size_t>(kv_scale_bytes(format));
    }
};

// The step's batch as the engine lays it out (vLLM's flat batch), in device memory.
struct AttentionBatch {
    const int32_t* positions = nullptr;     // [n_tokens] position of each row in its sequence
    const int64_t* slot_mapping = nullptr;  // [n_tokens] block_id * block_size + offset for the row's K/V (< 0: none)
    const int32_t* row_seq = nullptr;       // [n_tokens] the row's sequence index
    const int32_t* query_start = nullptr;   // [n_seqs] first row of each sequence (its rows are consecutive)
    const int32_t* n_query = nullptr;       // [n_seqs] rows of each sequence in this step
    const int32_t* seq_len = nullptr;       // [n_seqs] tokens in the cache after this step (prefix + rows)
    const int32_t* block_tables = nullptr;  // [n_seqs][max_blocks] physical block of each logical block
    int32_t n_tokens = 0, n_seqs = 0, max_blocks = 0;
    int32_t max_seq_len = 0;  // host-side upper bound of seq_len (grid sizing)
    int32_t max_n_query = 0;  // host-side upper bound of n_query
    int32_t min_n_query = 0;  // host-side lower bound of n_query (0: not known)
};

struct RopeParams {
    float base = 10000.f;
    float scale = 1.f;
    bool split_half = false;  // pairs (i, i + d/2) (NeoX) instead of (2i, 2i + 1)
    const float* freq_factors = nullptr;  // device, head_dim / 2 divisors of the angles (Llama 3.1); null = none
    // YaRN (ext_factor > 0): the interpolated angle blended per pair with the
    // unscaled one over the correction range [yarn_low, yarn_high]; cos and
    // sin times mscale (model::RopeParams says how, the CPU computes the same).
    float ext_factor = 0.f;
    float yarn_low = 0.f, yarn_high = 0.f;
    float mscale = 1.f;
};

// RoPE on q (in place, [n_tokens][n_head*head_dim]) and k, then K (rotated) and V ([n_tokens][n_head_kv*head_dim],
// F32) written into the cache at slot_mapping: as half, or as fp8 blocks (each block of 32 values: the smallest
// power-of-two scale that brings its largest magnitude to 448 or under, the values divided by it and rounded to
// the nearest E4M3, ties to even; the CPU backend's vec::quantize_fp8), or as Q8_0 blocks (GGML's reference
// rounding: d = amax / 127, q = roundf(x / d); vec::quantize_q8_0). One kernel (the fused RoPE + cache write). Angles as the
// CPU backend computes them: position * base^(-2i/head_dim) (in float, by repeated multiplication), divided by
// freq_factors[i], times 1/scale; with YaRN blended and scaled as model::RopeParams::angle says.
// Rows whose slot is negative (padding) rotate q and write nothing.
cudaError_t rope_store_kv(float* q, const float* k, const float* v, int n_head, const PagedKvLayer& kv,
                          const RopeParams& rope, const AttentionBatch& b, cudaStream_t s);

// Every slot's key heads in blocks[0..n_blocks) (device ids) turned by RoPE at
// position -delta, in place, in the cache's format: a key written at position p becomes the
// key of position p - delta (a sink window sliding without recomputation).
// Angles as rope_store_kv computes them; the caller passes mscale 1 (the
// stored keys carry it already). Values are not touched.
cudaError_t shift_keys(const PagedKvLayer& kv, const int32_t* blocks, int32_t n_blocks, int32_t delta,
                       const RopeParams& rope, cudaStream_t s);

struct AttentionParams {
    int n_head = 0;
    float scale = 1.f;           // applied to q·k
    int32_t sliding_window = 0;  // 0 = whole prefix; else keys with q_pos - k_pos < window
    float softcap = 0.f;         // 0 = off; else scores = cap * tanh(scores / cap)
};

// Scratch paged_attention needs for this batch shape (split-K partials of decode rows), 0 when none.
size_t attention_workspace_bytes(const AttentionBatch& b, int n_head, int head_dim);

// out[row] = softmax(q·Kᵀ·scale [softcapped]) V over the row's causal prefix (positions 0..pos, or the last
// sliding_window of them), read through the sequence's block table. GQA: head h uses kv head h / (n_head/n_head_kv).
// q and out are [n_tokens][n_head*head_dim] F32, 16-byte aligned. head_dim 64, 128 or 256; n_head/n_head_kv
// at most 8. Rows not in any sequence's query range (padding) get no defined output. An Fp8 or Q8_0 cache's
// tiles are copied as bytes and read back into the half tiles the F16 cache's are copied to: the result is the
// F16 cache's attention over the values read back, bit for bit (the tensor-core kernels only).
// Batch-invariant: a row's output bits depend only on its query, its sequence's keys and values up to its
// position, the window and the softcap; not on the other sequences of the batch, its place in it, how many rows
// its sequence has in this step, or the host-side bounds. (Keys are cut into fixed 128-key chunks whose partial
// results are folded in order; a decode row's chunks run on separate blocks and a merge kernel folds them.)
// Tensor cores (mma.sync, half operands, F32 accumulation); FOLIO_ATTENTION_KERNEL=simt in the environment selects
// the CUDA-core kernel instead, as a cross-check (that one is not batch-invariant).
// With act.format set, out is also written in the form the next matmul reads (elementwise.h ActivationQuant):
// F16 / BF16 by the kernel that writes out, in the same pass (the O projection's cuBLAS GEMM then converts
// nothing: 6.5 us a layer of the 8B shape's pp512); Q8_0 / Q8_1 the same way at head_dim 128 and 256 (a
// launch fewer in each layer of a quantized model's decode step), by a launch after it at head_dim 64 and
// under the CUDA-core kernel.
cudaError_t paged_attention(const float* q, const PagedKvLayer& kv, const AttentionBatch& b, const AttentionParams& p,
                            float* out, void* workspace, size_t workspace_bytes, cudaStream_t s,
                            const ActivationQuant& act = {});

}  // namespace folio::kernels
