// Many activation rows times K-quant weights (Q4_K, Q5_K, Q6_K) on the
// tensor cores, with the bits of the warp-per-row kernel (matmul_quant.cu):
// a prompt's rows and a large batch take this path, a decode step's few rows
// the other, and a row's y is the same either way (batch invariance).
//
// What makes the bits the same: every integer the warp-per-row kernel forms
// by __dp4a (a sub-block's dot, 32 elements; Q6_K's runs of 16) is exact, so
// mma.sync int8 (m16n8k32, m16n8k16 for Q6_K) forms the same integers; each
// unit's float epilogue is the shared one (matmul_quant.cuh); and the float
// sums follow the other kernel's order. There, lane l of a warp adds the
// units l, l + 32, ... in turn, then the lanes' sums meet in a butterfly
// (xor 16, 8, 4, 2, 1): a binary tree whose first level pairs lane l with
// l + 16 and whose last pairs the lanes of even and odd index. Here each
// thread walks the 32 lane classes in bit-reversed order (0, 16, 8, 24, ...),
// the units of a class in turn, and adds the classes' sums as that tree does
// (class_tree): at most five partial sums wait at a time.
//
// A block: 4 warps, each 16 weight rows x 32 activation rows (four n8 tiles);
// thread (g, t) of a warp (g = lane / 4, t = lane % 4) holds the outputs of
// weight rows g, g + 8 and activation rows 8i + 2t, 8i + 2t + 1. Weights and
// activations load straight from global memory (a unit's weights are read
// by one warp; the block's warps read the same activations, from L1). The
// grid's x walks the activation tiles, so that consecutive blocks share
// their weights.
#include <cuda_fp16.h>

#include "folio_kernels/check.h"
#include "matmul_quant.cuh"

namespace folio::kernels::detail {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 16;
constexpr int kNTiles = kMmaTileRows / 8;
constexpr int kOut = 4 * kNTiles;  // outputs a thread holds
constexpr int64_t kBlockRows = kWarps * kRowsPerWarp;
static_assert(kMmaTileRows % 8 == 0, "whole n8 tiles");

// c = a · b for one m16n8k32 int8 tile (row-major A, column-major B).
__device__ __forceinline__ void mma_k32(int (&c)[4], const int (&a)[4], int b0, int b1) {
    c[0] = c[1] = c[2] = c[3] = 0;
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// c = a · b for one m16n8k16 int8 tile.
__device__ __forceinline__ void mma_k16(int (&c)[4], int a0, int a1, int b0) {
    c[0] = c[1] = c[2] = c[3] = 0;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0));
}

// What a thread works on: its two weight rows (clamped to the matrix for
// loads; `stores` says which exist), its B rows (activation row 8i + g of
// each n8 tile) and its C columns (rows 8i + 2t, + 1).
struct Thread {
    int64_t wrow[2];
    bool stores[2];
    int64_t brow[kNTiles];
    int64_t crow[kNTiles][2];
    int t;
};

// Unit u (64 elements) of the two rows times the tile, added to acc.
template <WeightType T>
struct MmaUnit;

template <WeightType T>
struct PairUnit {  // Q4_K, Q5_K
    static constexpr bool kFive = T == WeightType::Q5_K;
    __device__ static void add(const uint8_t* __restrict__ w, const SplitLayout&, const ActQ8& a, int64_t sbs,
                               const Thread& th, int u, float (&acc)[kOut]) {
        const int sb = u / 4, p = u % 4, t = th.t;
        int alo[4], ahi[4], sc[2][2], mn[2][2];
        float d[2], dmin[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // weight row g + 8h
            const uint8_t* b = w + (th.wrow[h] * sbs + sb) * gguf_block_bytes(T);
            const uint4 header = load16(b);
            pair_scales(header, p, sc[h], mn[h]);
            d[h] = header_d(header);
            dmin[h] = header_dmin(header);
            const uint8_t* qs = b + (kFive ? 48 : 16) + 32 * p;
#pragma unroll
            for (int k = 0; k < 2; ++k) {  // elements 4t .. and 16 + 4t .. of each sub-block
                const uint32_t q = load4(qs + 16 * k + 4 * t);
                int lo = static_cast<int>(q & 0x0f0f0f0fu), hi = static_cast<int>((q >> 4) & 0x0f0f0f0fu);
                if constexpr (kFive) {
                    const uint32_t hb = load4(b + 16 + 16 * k + 4 * t);
                    lo |= static_cast<int>(((hb >> (2 * p)) & 0x01010101u) << 4);
                    hi |= static_cast<int>(((hb >> (2 * p + 1)) & 0x01010101u) << 4);
                }
                alo[2 * k + h] = lo;  // a0 (row g, k 4t), a1 (row g + 8), a2 (row g, k 16 + 4t), a3
                ahi[2 * k + h] = hi;
            }
        }
#pragma unroll
        for (int i = 0; i < kNTiles; ++i) {
            const int8_t* aq = a.qs + th.brow[i] * a.cols + u * 64 + 4 * t;
            int clo[4], chi[4];
            mma_k32(clo, alo, load4(aq), load4(aq + 16));
            mma_k32(chi, ahi, load4(aq + 32), load4(aq + 48));
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                const int64_t j = th.crow[i][c];
                const int2 bs = *reinterpret_cast<const int2*>(a.bsums + j * (a.cols / 16) + 4 * u);
                const float da = a.d[j * (a.cols / kQKK) + sb];
                const int b01 = low_half(bs.x) + high_half(bs.x), b23 = low_half(bs.y) + high_half(bs.y);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int e = 2 * h + c;
                    const int scaled = sc[h][0] * clo[e] + sc[h][1] * chi[e];
                    const int offsets = mn[h][0] * b01 + mn[h][1] * b23;
                    acc[4 * i + e] = __fadd_rn(acc[4 * i + e], pair_k_value(da, d[h], dmin[h], scaled, offsets));
                }
            }
        }
    }
};

template <>
struct MmaUnit<WeightType::Q4_K> : PairUnit<WeightType::Q4_K> {};
template <>
struct MmaUnit<WeightType::Q5_K> : PairUnit<WeightType::Q5_K> {};

// Q6_K: unit u is quarter (h, s) of super-block u / 4 (QuarterQ6K in
// matmul_quant.cu): the runs 128h + 16s + 32r .. + 15, r = 0..3, each with
// its own scale.
template <>
struct MmaUnit<WeightType::Q6_K> {
    __device__ static void add(const uint8_t* __restrict__ w, const SplitLayout& l, const ActQ8& a, int64_t sbs,
                               const Thread& th, int u, float (&acc)[kOut]) {
        const int sb = u / 4, hh = (u % 4) >> 1, s = u & 1, t = th.t;
        int q[2][4], sc[2][4];
        float d[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t blk = th.wrow[h] * sbs + sb;
            const uint8_t* b = w + l.qs_offset + blk * 208;
            const uint32_t lo = load4(b + 64 * hh + 16 * s + 4 * t), hi = load4(b + 64 * hh + 32 + 16 * s + 4 * t);
            const uint32_t hb = load4(b + 128 + 32 * hh + 16 * s + 4 * t);
            q[h][0] = static_cast<int>((lo & 0x0f0f0f0fu) | ((hb << 4) & 0x30303030u));
            q[h][1] = static_cast<int>((hi & 0x0f0f0f0fu) | ((hb << 2) & 0x30303030u));
            q[h][2] = static_cast<int>(((lo >> 4) & 0x0f0f0f0fu) | (hb & 0x30303030u));
            q[h][3] = static_cast<int>(((hi >> 4) & 0x0f0f0f0fu) | ((hb >> 2) & 0x30303030u));
            const uint4 scales = load16(b + 192);
#pragma unroll
            for (int r = 0; r < 4; ++r) sc[h][r] = static_cast<int8_t>(byte_of(scales, 8 * hh + s + 2 * r));
            d[h] = __half2float(__ldg(reinterpret_cast<const __half*>(w + l.scale_offset) + blk));
        }
#pragma unroll
        for (int i = 0; i < kNTiles; ++i) {
            const int8_t* aq = a.qs + th.brow[i] * a.cols + sb * kQKK + 128 * hh + 16 * s + 4 * t;
            int c[4][4];
#pragma unroll
            for (int r = 0; r < 4; ++r) mma_k16(c[r], q[0][r], q[1][r], load4(aq + 32 * r));
#pragma unroll
            for (int cc = 0; cc < 2; ++cc) {
                const int64_t j = th.crow[i][cc];
                const int4 bs8 = *reinterpret_cast<const int4*>(a.bsums + j * (a.cols / 16) + sb * 16 + 8 * hh);
                const float da = a.d[j * (a.cols / kQKK) + sb];
                int bsum[4];
#pragma unroll
                for (int r = 0; r < 4; ++r) bsum[r] = s == 0 ? low_half(int_of(bs8, r)) : high_half(int_of(bs8, r));
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int e = 2 * h + cc;
                    int sumi = 0;
#pragma unroll
                    for (int r = 0; r < 4; ++r) sumi += sc[h][r] * (c[r][e] - 32 * bsum[r]);
                    acc[4 * i + e] = __fadd_rn(acc[4 * i + e], q6_k_value(da, d[h], sumi));
                }
            }
        }
    }
};

// acc = the sum, in the warp-per-row kernel's tree, of the lane classes
// whose low kDepth bits are `prefix`: depth 5 is one class (its units in
// turn, from 0), each level above adds the half with bit kDepth clear to
// the half with it set.
template <WeightType T, int kDepth>
__device__ __forceinline__ void class_tree(const uint8_t* __restrict__ w, const SplitLayout& l, const ActQ8& a,
                                           int64_t sbs, const Thread& th, int units, int prefix, float (&acc)[kOut]) {
    if constexpr (kDepth == 5) {
#pragma unroll
        for (int i = 0; i < kOut; ++i) acc[i] = 0.0f;
        for (int u = prefix; u < units; u += 32) MmaUnit<T>::add(w, l, a, sbs, th, u, acc);
    } else {
        float other[kOut];
        class_tree<T, kDepth + 1>(w, l, a, sbs, th, units, prefix, acc);
        class_tree<T, kDepth + 1>(w, l, a, sbs, th, units, prefix | (1 << kDepth), other);
#pragma unroll
        for (int i = 0; i < kOut; ++i) acc[i] = __fadd_rn(acc[i], other[i]);
    }
}

template <WeightType T>
__global__ void __launch_bounds__(kWarps * 32) mma_rows_kernel(const uint8_t* __restrict__ w, SplitLayout l, int64_t rows,
                                                             int64_t cols, ActQ8 a, int64_t j_begin, SplitParts parts) {
    allow_later_grids();
    const int lane = threadIdx.x % 32, g = lane / 4;
    Thread th;
    th.t = lane % 4;
    const int64_t first = (static_cast<int64_t>(blockIdx.y) * kWarps + threadIdx.x / 32) * kRowsPerWarp;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int64_t r = first + g + 8 * h;
        th.stores[h] = r < rows;
        th.wrow[h] = r < rows ? r : rows - 1;
    }
    const int64_t j0 = j_begin + static_cast<int64_t>(blockIdx.x) * kMmaTileRows;
#pragma unroll
    for (int i = 0; i < kNTiles; ++i) {
        th.brow[i] = j0 + 8 * i + g;
        th.crow[i][0] = j0 + 8 * i + 2 * th.t;
        th.crow[i][1] = th.crow[i][0] + 1;
    }
    wait_for_earlier_grids();
    if (first >= rows) return;  // a whole warp past the matrix (after the wait: every block waits)
    float acc[kOut];
    class_tree<T, 0>(w, l, a, cols / kQKK, th, static_cast<int>(cols / 64), 0, acc);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        if (!th.stores[h]) continue;
        const RowOutput out = row_output(parts, first + g + 8 * h);
#pragma unroll
        for (int i = 0; i < kNTiles; ++i)
#pragma unroll
            for (int c = 0; c < 2; ++c) out.at[th.crow[i][c] * out.stride] = acc[4 * i + 2 * h + c];
    }
}

template <WeightType T>
cudaError_t launch_rows(const DeviceMatrix& w, const ActQ8& a, int64_t j_begin, int64_t tiles, const SplitParts& y,
                        cudaStream_t s) {
    const SplitLayout l = is_split(T) ? split_layout(T, w.rows, w.cols) : SplitLayout{};
    const int64_t row_blocks = (w.rows + kBlockRows - 1) / kBlockRows;
    // grid.x at most 2^31 - 1 tiles: callers pass fewer.
    return launch_overlapped(kPdlMatmul, mma_rows_kernel<T>, dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(row_blocks)),
                             dim3(kWarps * 32), s, static_cast<const uint8_t*>(w.data), l, w.rows, w.cols, a, j_begin, y);
}

}  // namespace

bool mma_quantized_supported(const DeviceMatrix& w) {
    const bool type = w.type == WeightType::Q4_K || w.type == WeightType::Q5_K || w.type == WeightType::Q6_K;
    return type && w.rows <= int64_t{65535} * kBlockRows;  // grid.y walks the weight rows' blocks
}

cudaError_t mma_quantized_rows(const DeviceMatrix& w, const ActQ8& a, int64_t j_begin, int64_t tiles,
                               const SplitParts& y, cudaStream_t s) {
    if (!mma_quantized_supported(w)) return cudaErrorInvalidValue;
    switch (w.type) {
        case WeightType::Q4_K: return launch_rows<WeightType::Q4_K>(w, a, j_begin, tiles, y, s);
        case WeightType::Q5_K: return launch_rows<WeightType::Q5_K>(w, a, j_begin, tiles, y, s);
        case WeightType::Q6_K: return launch_rows<WeightType::Q6_K>(w, a, j_begin, tiles, y, s);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace folio::kernels::detail
