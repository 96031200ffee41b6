// Internal to the matmul files: where each part of a weight matrix lies in
// the device layout, and the small device helpers the kernels share.
//
// Device layouts (rows x cols, nb blocks per row, blocks in row-major order):
//   F32, F16, BF16, Q4_K, Q5_K: as in GGUF (Q4_K / Q5_K blocks are 144 / 176
//     bytes, multiples of 16, so their loads are aligned as they are).
//   Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 ("split"): all blocks' quants (16 or 32 bytes
//     per block), then for the Q5 types all blocks' high bits (a uint32 each),
//     then all blocks' scales (half d, or half2 d, m for Q4_1 / Q5_1).
//   Q6_K: all blocks' ql, qh, scales (208 bytes per block), then all blocks' d.
// Each region starts on a 256-byte boundary.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "folio_kernels/matmul.h"
#include "folio_kernels/moe.h"
#include "launch.cuh"

namespace folio::kernels::detail {

inline constexpr int kQK = 32;    // legacy block
inline constexpr int kQKK = 256;  // K-quant super-block

inline constexpr size_t align256(size_t v) { return (v + 255) / 256 * 256; }
// The float weight types (matmul_float.cu); the others are block-quantized.
inline constexpr bool is_float(WeightType t) {
    return t == WeightType::F32 || t == WeightType::F16 || t == WeightType::BF16;
}

// GGUF block bytes for the type (per block_elems elements).
__host__ __device__ inline constexpr int gguf_block_bytes(WeightType t) {
    switch (t) {
        case WeightType::F32: return 4;
        case WeightType::F16: return 2;
        case WeightType::BF16: return 2;
        case WeightType::Q4_0: return 18;
        case WeightType::Q4_1: return 20;
        case WeightType::Q5_0: return 22;
        case WeightType::Q5_1: return 24;
        case WeightType::Q8_0: return 34;
        case WeightType::Q4_K: return 144;
        case WeightType::Q5_K: return 176;
        case WeightType::Q6_K: return 210;
    }
    return 0;
}

__host__ __device__ inline constexpr int block_elems(WeightType t) {
    switch (t) {
        case WeightType::F32:
        case WeightType::F16:
        case WeightType::BF16: return 1;
        case WeightType::Q4_K:
        case WeightType::Q5_K:
        case WeightType::Q6_K: return kQKK;
        default: return kQK;
    }
}

// Offsets of the regions of a split (legacy) or Q6_K matrix.
struct SplitLayout {
    int64_t blocks = 0;     // rows * nb
    size_t qs_offset = 0;   // quants (16 / 32 bytes per block; Q6_K: 208)
    size_t qh_offset = 0;   // Q5_0 / Q5_1 high bits, uint32 per block
    size_t scale_offset = 0;  // half d or half2 (d, m) per block
    size_t bytes = 0;
};

__host__ __device__ inline constexpr int split_qs_bytes(WeightType t) {
    switch (t) {
        case WeightType::Q8_0: return 32;
        case WeightType::Q6_K: return 208;
        default: return 16;
    }
}
__host__ __device__ inline constexpr bool has_qh(WeightType t) { return t == WeightType::Q5_0 || t == WeightType::Q5_1; }
__host__ __device__ inline constexpr bool has_min(WeightType t) { return t == WeightType::Q4_1 || t == WeightType::Q5_1; }
__host__ __device__ inline constexpr bool is_split(WeightType t) {
    return t == WeightType::Q4_0 || t == WeightType::Q4_1 || t == WeightType::Q5_0 || t == WeightType::Q5_1 ||
           t == WeightType::Q8_0 || t == WeightType::Q6_K;
}

inline SplitLayout split_layout(WeightType t, int64_t rows, int64_t cols) {
    SplitLayout l;
    l.blocks = rows * (cols / block_elems(t));
    const auto blocks = static_cast<size_t>(l.blocks);
    l.qs_offset = 0;
    l.qh_offset = align256(blocks * split_qs_bytes(t));
    l.scale_offset = l.qh_offset + (has_qh(t) ? align256(blocks * 4) : 0);
    l.bytes = l.scale_offset + align256(blocks * (has_min(t) ? 4 : 2));
    return l;
}

// ---- device helpers ----------------------------------------------------------

__device__ __forceinline__ float half_bits_to_float(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
__device__ __forceinline__ float bf16_bits_to_float(uint16_t bits) {
    return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

// The 6-bit scale and min of sub-block j of a Q4_K / Q5_K super-block.
__device__ __forceinline__ void k_scale_min(int j, const uint8_t* s, int& sc, int& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// Where row `row` of the stacked product y goes: y[j][row] is at[j * stride],
// in the part holding that row (matmul_parts; matmul() is the one-part case,
// at = y + row, stride = rows). The loop is unrolled so that the kernel
// parameters are indexed by constants only.
struct RowOutput {
    float* at;
    int64_t stride;
};
__device__ __forceinline__ RowOutput row_output(const SplitParts& parts, int64_t row) {
    if (parts.count == 1) return RowOutput{parts.dst[0] + row, parts.width[0]};  // matmul()
    float* dst = parts.dst[0];
    int64_t width = parts.width[0];
#pragma unroll
    for (int i = 1; i < kMaxSplitParts; ++i) {
        if (i < parts.count && row >= width) {
            row -= width;
            dst = parts.dst[i];
            width = parts.width[i];
        }
    }
    return RowOutput{dst + row, width};
}

// ---- the product's two families (matmul_quant.cu, matmul_float.cu) ----------------
// Both take the output as checked parts (widths summing to w.rows).

size_t quantized_workspace_bytes(WeightType t, int64_t n, int64_t cols);
cudaError_t quantized_matmul(const DeviceMatrix& w, const float* x, int64_t n, const SplitParts& parts, void* ws,
                             bool x_in_workspace, cudaStream_t s);

size_t float_workspace_bytes(WeightType t, int64_t n, int64_t cols);
// x rounded to F16 / BF16 (t), as a cuBLAS product of those weights reads it.
cudaError_t convert_to(WeightType t, const float* x, size_t count, void* out, cudaStream_t s);
cudaError_t float_matmul(const DeviceMatrix& w, const float* x, int64_t n, const SplitParts& parts,
                         const MatmulWorkspace& ws, cudaStream_t s);

// The router's logits (moe.h: router_logits), F32 / F16 / BF16 weights.
bool router_supported(const DeviceMatrix& w);
cudaError_t router_matmul(const DeviceMatrix& w, const float* x, int64_t n_rows, float* logits, cudaStream_t s);

// Grouped products of stacked experts (moe.cu): grid.y = max_groups blocks
// of groups, those past *n_groups idle; tile = the rows a kernel takes at a
// time (1 .. kMatmulTileRows). x_row: position p's input is x's row
// x_row[p] (null: row p). The quantized one reads x rows past n_entries
// from its workspace's padding (grouped_quantized_workspace_bytes).
size_t grouped_quantized_workspace_bytes(WeightType t, int64_t n_entries, int64_t cols);
cudaError_t grouped_quantized_matmul(const DeviceExperts& w, const float* x, const int32_t* x_row, int64_t n_entries,
                                     int tile, const int4* groups, const int32_t* n_groups, unsigned max_groups, float* y,
                                     void* ws, bool x_in_workspace, cudaStream_t s);
cudaError_t grouped_float_matmul(const DeviceExperts& w, const float* x, const int32_t* x_row, int tile,
                                 const int4* groups, const int32_t* n_groups, unsigned max_groups, float* y,
                                 cudaStream_t s);

}  // namespace folio::kernels::detail
