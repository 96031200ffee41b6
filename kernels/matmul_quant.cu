// Quantized weights times F32 activations, the way the CPU backend computes
// it: each activation row is quantized to the partner format (Q8_0 for
// Q4_0 / Q5_0 / Q8_0, Q8_1 for Q4_1 / Q5_1, Q8_K for the K-quants) with the
// CPU's rounding, then every block contributes an integer dot product
// (__dp4a) times its float scales.
//
// A quantize kernel writes the activation rows to the workspace, then one
// warp computes one weight row against a tile of up to kMatmulTileRows
// activation rows: lane l takes the row's units (a block, or a quarter of a
// K-quant super-block) l, l + 32, ... in that order and the lanes' sums are
// combined by one fixed butterfly, whatever the tile size, so a row's y is
// the same bits alone or in any batch (batch invariance). Both kernels use
// programmatic dependent launch: the product kernel loads its first weights
// while the quantize kernel runs. (Quantizing inside the product kernel, per
// block into shared memory, was measured slower: bench/results/cuda-matmul-*.)
#include <cuda_fp16.h>

#include <cstdlib>
#include <string>

#include "activation_quant.cuh"
#include "folio_kernels/check.h"
#include "matmul_layout.cuh"
#include "matmul_quant.cuh"

namespace folio::kernels::detail {
namespace {

constexpr int kWarpsPerBlock = 4;

// ---- activation quantization -----------------------------------------------------
// Workspace: as ActQ8 (matmul_quant.cuh) reads it.

struct ActLayout {
    size_t meta_offset = 0, d_offset = 0, bsums_offset = 0, bytes = 0;
};

ActLayout act_layout(bool k_quant, int64_t n, int64_t cols) {
    ActLayout l;
    const auto qs = align256(static_cast<size_t>(n * cols));
    if (k_quant) {
        l.d_offset = qs;
        l.bsums_offset = l.d_offset + align256(static_cast<size_t>(n * (cols / kQKK)) * sizeof(float));
        l.bytes = l.bsums_offset + align256(static_cast<size_t>(n * (cols / 16)) * sizeof(int16_t));
    } else {
        l.meta_offset = qs;
        l.bytes = l.meta_offset + align256(static_cast<size_t>(n * (cols / kQK)) * sizeof(float2));
    }
    return l;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float half_round(float v) { return __half2float(__float2half_rn(v)); }

// One block of 32 by one thread, as the CPU does it: d = amax / 127,
// q = round_even(x * (1 / d)), d and s stored as halves (read back as
// floats); meta.y is s for Q8_1, the exact sum of the quants for Q8_0.
template <bool kQ8_1>
__device__ __forceinline__ void quantize_block32(const float* __restrict__ x, int8_t* qs, float2* meta) {
    float v[kQK];
    const float4* in = reinterpret_cast<const float4*>(x);
#pragma unroll
    for (int k = 0; k < kQK / 4; ++k) {
        const float4 f = in[k];
        v[4 * k] = f.x, v[4 * k + 1] = f.y, v[4 * k + 2] = f.z, v[4 * k + 3] = f.w;
    }
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kQK; ++i) amax = fmaxf(amax, fabsf(v[i]));
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    int sum = 0;
#pragma unroll
    for (int k = 0; k < kQK / 4; ++k) {
        int word = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int q = __float2int_rn(__fmul_rn(v[4 * k + i], id));
            sum += q;
            word |= (q & 0xff) << (8 * i);
        }
        reinterpret_cast<int*>(qs)[k] = word;
    }
    const float s = kQ8_1 ? half_round(__fmul_rn(d, static_cast<float>(sum))) : static_cast<float>(sum);
    *meta = make_float2(half_round(d), s);
}

// One super-block of 256 by one warp (8 elements a lane): iscale = 127 /
// amax, q = round_even(x * iscale), d = 1 / iscale, sums of each 16 quants.
__device__ __forceinline__ void quantize_block256(const float* __restrict__ x, int lane, int8_t* qs, float* d_out,
                                                  int16_t* bsums) {
    const float4* in = reinterpret_cast<const float4*>(x + 8 * lane);
    const float4 v0 = in[0], v1 = in[1];
    const float v[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) m = fmaxf(m, fabsf(v[i]));
    const float amax = warp_max(m);
    const float iscale = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    int q[8], sum = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        q[i] = __float2int_rn(__fmul_rn(v[i], iscale));
        sum += q[i];
    }
    int2 packed;
    packed.x = (q[0] & 0xff) | ((q[1] & 0xff) << 8) | ((q[2] & 0xff) << 16) | (q[3] << 24);
    packed.y = (q[4] & 0xff) | ((q[5] & 0xff) << 8) | ((q[6] & 0xff) << 16) | (q[7] << 24);
    reinterpret_cast<int2*>(qs)[lane] = packed;
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);  // the two lanes of a run of 16
    if (lane % 2 == 0) bsums[lane / 2] = static_cast<int16_t>(sum);
    if (lane == 0) *d_out = amax != 0.0f ? __fdiv_rn(1.0f, iscale) : 0.0f;
}

// Where the rows to quantize are: x's rows in order, or (a grouped product's
// input, folio_kernels/moe.h) row x_row[i] of x for the i-th.
struct RowsIn {
    const float* x = nullptr;
    const int32_t* x_row = nullptr;  // null: in order
    int64_t blocks_per_row = 1;
    // Block b of the rows, of `elems` values.
    __device__ const float* block(int64_t b, int elems) const {
        if (!x_row) return x + b * elems;
        return x + (static_cast<int64_t>(x_row[b / blocks_per_row]) * blocks_per_row + b % blocks_per_row) * elems;
    }
};

// The activation rows of a matmul, one thread per block of 32.
template <bool kQ8_1>
__global__ void quantize_q8_blocks(RowsIn x, int64_t blocks, int8_t* __restrict__ qs, float2* __restrict__ meta) {
    allow_later_grids();  // dependents only start: they wait for this grid to finish
    wait_for_earlier_grids();
    const int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (b < blocks) quantize_block32<kQ8_1>(x.block(b, kQK), qs + b * kQK, meta + b);
}

// The activation rows of a K-quant matmul, one warp per super-block.
__global__ void quantize_q8_k_blocks(RowsIn x, int64_t blocks, int8_t* __restrict__ qs, float* __restrict__ d_out,
                                     int16_t* __restrict__ bsums) {
    allow_later_grids();
    wait_for_earlier_grids();
    const int64_t b = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
    if (b >= blocks) return;  // whole warps leave together
    quantize_block256(x.block(b, kQKK), threadIdx.x % 32, qs + b * kQKK, d_out + b, bsums + b * (kQKK / 16));
}

// ---- per-type units ---------------------------------------------------------------

// Bit 4 of each byte from 4 bits of t (the fifth bit of Q5 quants).
__device__ __forceinline__ int spread_bits(uint32_t t) {
    return static_cast<int>(((t & 1u) << 4) | ((t & 2u) << 11) | ((t & 4u) << 18) | ((t & 8u) << 25));
}
// The legacy types: one unit is one block of 32.
template <WeightType T>
struct Block32 {
    static constexpr int kUnitElems = kQK;
    struct Unit {
        uint4 qs, qs_hi;  // qs_hi: Q8_0's second 16 bytes
        uint32_t qh;
        float d, m;
    };
    __device__ static Unit load(const uint8_t* w, const SplitLayout& l, int64_t blk) {
        Unit u{};
        const uint8_t* qs = w + l.qs_offset + blk * split_qs_bytes(T);
        u.qs = load16(qs);
        if constexpr (T == WeightType::Q8_0) u.qs_hi = load16(qs + 16);
        if constexpr (has_qh(T)) u.qh = __ldg(reinterpret_cast<const uint32_t*>(w + l.qh_offset) + blk);
        if constexpr (has_min(T)) {
            const __half2 dm = __ldg(reinterpret_cast<const __half2*>(w + l.scale_offset) + blk);
            u.d = __low2float(dm);
            u.m = __high2float(dm);
        } else {
            u.d = __half2float(__ldg(reinterpret_cast<const __half*>(w + l.scale_offset) + blk));
        }
        return u;
    }
    // acc[j] += this block times activation row j0 + j.
    template <int NT>
    __device__ static void dot(const Unit& u, const ActQ8& a, int64_t row_unit, int64_t j0, float (&acc)[NT]) {
        const int64_t nb = a.cols / kQK;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int8_t* aq = a.qs + (j0 + j) * a.cols + row_unit * kQK;
            const int4 a_lo = load16(aq), a_hi = load16(aq + 16);
            const float2 meta = a.meta[(j0 + j) * nb + row_unit];
            int sumi = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                if constexpr (T == WeightType::Q8_0) {
                    sumi = __dp4a(static_cast<int>(word_of(u.qs, k)), int_of(a_lo, k), sumi);
                    sumi = __dp4a(static_cast<int>(word_of(u.qs_hi, k)), int_of(a_hi, k), sumi);
                } else {
                    int lo = static_cast<int>(word_of(u.qs, k) & 0x0f0f0f0fu);
                    int hi = static_cast<int>((word_of(u.qs, k) >> 4) & 0x0f0f0f0fu);
                    if constexpr (has_qh(T)) {
                        lo |= spread_bits(u.qh >> (4 * k));
                        hi |= spread_bits(u.qh >> (16 + 4 * k));
                    }
                    sumi = __dp4a(lo, int_of(a_lo, k), sumi);
                    sumi = __dp4a(hi, int_of(a_hi, k), sumi);
                }
            }
            float v;
            if constexpr (has_min(T)) {  // d * sum(q a) * da + m * s
                v = __fadd_rn(__fmul_rn(__fmul_rn(static_cast<float>(sumi), u.d), meta.x), __fmul_rn(u.m, meta.y));
            } else {
                if constexpr (T == WeightType::Q4_0) sumi -= 8 * __float2int_rn(meta.y);
                if constexpr (T == WeightType::Q5_0) sumi -= 16 * __float2int_rn(meta.y);
                v = __fmul_rn(__fmul_rn(static_cast<float>(sumi), u.d), meta.x);
            }
            acc[j] = __fadd_rn(acc[j], v);
        }
    }
};

// Q4_K / Q5_K: one unit is a pair of sub-blocks (64 elements, 32 bytes of qs).
template <WeightType T>
struct PairK {
    static constexpr int kUnitElems = 64;
    static constexpr bool kFive = T == WeightType::Q5_K;
    struct Unit {
        uint4 header;  // d, dmin, scales[12]
        uint4 qs[2];
        uint4 qh[2];
        int pair;
    };
    __device__ static Unit load(const uint8_t* w, const SplitLayout&, int64_t unit) {
        Unit u{};
        const uint8_t* b = w + (unit / 4) * gguf_block_bytes(T);
        u.pair = static_cast<int>(unit % 4);
        u.header = load16(b);
        const uint8_t* qs = b + (kFive ? 48 : 16) + 32 * u.pair;
        u.qs[0] = load16(qs);
        u.qs[1] = load16(qs + 16);
        if constexpr (kFive) {
            u.qh[0] = load16(b + 16);
            u.qh[1] = load16(b + 32);
        }
        return u;
    }
    template <int NT>
    __device__ static void dot(const Unit& u, const ActQ8& a, int64_t row_unit, int64_t j0, float (&acc)[NT]) {
        const int p = u.pair;
        const int64_t sb = row_unit / 4;
        int sc[2], mn[2];
        pair_scales(u.header, p, sc, mn);
        const float d = header_d(u.header), dmin = header_dmin(u.header);
        // Quants as bytes: lo[k] elements 4k.. of sub-block 2p, hi[k] of 2p + 1.
        int lo[8], hi[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const uint32_t q = word_of(u.qs[k / 4], k % 4);
            lo[k] = static_cast<int>(q & 0x0f0f0f0fu);
            hi[k] = static_cast<int>((q >> 4) & 0x0f0f0f0fu);
            if constexpr (kFive) {
                const uint32_t h = word_of(u.qh[k / 4], k % 4);
                lo[k] |= static_cast<int>(((h >> (2 * p)) & 0x01010101u) << 4);
                hi[k] |= static_cast<int>(((h >> (2 * p + 1)) & 0x01010101u) << 4);
            }
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int8_t* aq = a.qs + (j0 + j) * a.cols + row_unit * 64;
            const int4 a0 = load16(aq), a1 = load16(aq + 16), a2 = load16(aq + 32), a3 = load16(aq + 48);
            const int2 bs = *reinterpret_cast<const int2*>(a.bsums + (j0 + j) * (a.cols / 16) + 4 * row_unit);
            const float da = a.d[(j0 + j) * (a.cols / kQKK) + sb];
            int dot_lo = 0, dot_hi = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                dot_lo = __dp4a(lo[k], int_of(a0, k), dot_lo);
                dot_lo = __dp4a(lo[k + 4], int_of(a1, k), dot_lo);
                dot_hi = __dp4a(hi[k], int_of(a2, k), dot_hi);
                dot_hi = __dp4a(hi[k + 4], int_of(a3, k), dot_hi);
            }
            const int scaled = sc[0] * dot_lo + sc[1] * dot_hi;
            const int offsets = mn[0] * (low_half(bs.x) + high_half(bs.x)) + mn[1] * (low_half(bs.y) + high_half(bs.y));
            acc[j] = __fadd_rn(acc[j], pair_k_value(da, d, dmin, scaled, offsets));
        }
    }
};

// Q6_K: one unit is a quarter of the super-block: half h (128 elements), and
// within it the runs 16s.. of each of its four 32-element groups (64 elements,
// sub-blocks 8h + s + 2t for t = 0..3).
struct QuarterQ6K {
    static constexpr int kUnitElems = 64;
    struct Unit {
        uint4 ql_lo, ql_hi, qh, scales;
        float d;
        int quarter;
    };
    __device__ static Unit load(const uint8_t* w, const SplitLayout& l, int64_t unit) {
        Unit u;
        const int64_t blk = unit / 4;
        u.quarter = static_cast<int>(unit % 4);
        const int h = u.quarter >> 1, s = u.quarter & 1;
        const uint8_t* b = w + l.qs_offset + blk * 208;
        u.ql_lo = load16(b + 64 * h + 16 * s);
        u.ql_hi = load16(b + 64 * h + 32 + 16 * s);
        u.qh = load16(b + 128 + 32 * h + 16 * s);
        u.scales = load16(b + 192);
        u.d = __half2float(__ldg(reinterpret_cast<const __half*>(w + l.scale_offset) + blk));
        return u;
    }
    template <int NT>
    __device__ static void dot(const Unit& u, const ActQ8& a, int64_t row_unit, int64_t j0, float (&acc)[NT]) {
        const int h = u.quarter >> 1, s = u.quarter & 1;
        const int64_t sb = row_unit / 4;
        // q[t][k]: elements 128h + 16s + 32t + 4k .. + 3, as bytes 0..63.
        int q[4][4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t lo = word_of(u.ql_lo, k), hi = word_of(u.ql_hi, k), hb = word_of(u.qh, k);
            q[0][k] = static_cast<int>((lo & 0x0f0f0f0fu) | ((hb << 4) & 0x30303030u));
            q[1][k] = static_cast<int>((hi & 0x0f0f0f0fu) | ((hb << 2) & 0x30303030u));
            q[2][k] = static_cast<int>(((lo >> 4) & 0x0f0f0f0fu) | (hb & 0x30303030u));
            q[3][k] = static_cast<int>(((hi >> 4) & 0x0f0f0f0fu) | ((hb >> 2) & 0x30303030u));
        }
        int sc[4];
#pragma unroll
        for (int t = 0; t < 4; ++t) sc[t] = static_cast<int8_t>(byte_of(u.scales, 8 * h + s + 2 * t));
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int8_t* aq = a.qs + (j0 + j) * a.cols + sb * kQKK + 128 * h + 16 * s;
            const int4 bs8 = *reinterpret_cast<const int4*>(a.bsums + (j0 + j) * (a.cols / 16) + sb * 16 + 8 * h);
            const float da = a.d[(j0 + j) * (a.cols / kQKK) + sb];
            int sumi = 0;
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                const int4 av = load16(aq + 32 * t);
                int dot = 0;
#pragma unroll
                for (int k = 0; k < 4; ++k) dot = __dp4a(q[t][k], int_of(av, k), dot);
                const int word = int_of(bs8, t);  // bsums 8h + 2t, 8h + 2t + 1
                sumi += sc[t] * (dot - 32 * (s == 0 ? low_half(word) : high_half(word)));
            }
            acc[j] = __fadd_rn(acc[j], q6_k_value(da, u.d, sumi));
        }
    }
};

template <WeightType T>
struct UnitOf {
    using type = Block32<T>;
};
template <>
struct UnitOf<WeightType::Q4_K> {
    using type = PairK<WeightType::Q4_K>;
};
template <>
struct UnitOf<WeightType::Q5_K> {
    using type = PairK<WeightType::Q5_K>;
};
template <>
struct UnitOf<WeightType::Q6_K> {
    using type = QuarterQ6K;
};

template <WeightType T>
constexpr bool kSuperBlocks = T == WeightType::Q4_K || T == WeightType::Q5_K || T == WeightType::Q6_K;

// Units each lane loads before it computes (bytes in flight).
template <WeightType T>
constexpr int kUnroll = kSuperBlocks<T> ? 2 : 4;

template <WeightType T>
__device__ __forceinline__ void load_first(const uint8_t* __restrict__ w, const SplitLayout& l, int64_t first_unit,
                                           int units, int lane, typename UnitOf<T>::type::Unit (&unit)[kUnroll<T>]) {
#pragma unroll
    for (int i = 0; i < kUnroll<T>; ++i) {
        const int u = 32 * i + lane;
        if (u < units) unit[i] = UnitOf<T>::type::load(w, l, first_unit + u);
    }
}

// acc[j] = weight row (units first_unit ..) times activation row j0 + j for
// the calling warp: lane l takes units l, l + 32, ... in this order, kU at a
// time; `unit` holds the first kU units already when `first_loaded`. The
// same order for every tile size: batch invariance rests on it. With one
// activation row (and the first units loaded) and more than one round, each
// slot of `unit`, once used, loads the unit one round (32 kU) ahead, so that
// a long row streams without a round trip between rounds (more registers:
// tiles of several rows keep the plain rounds).
template <WeightType T, int NT>
__device__ __forceinline__ void row_dot(const uint8_t* __restrict__ w, const SplitLayout& l, int64_t first_unit,
                                        int units, int lane, typename UnitOf<T>::type::Unit (&unit)[kUnroll<T>],
                                        bool first_loaded, const ActQ8& a, int64_t j0, float (&acc)[NT]) {
    using U = typename UnitOf<T>::type;
    constexpr int kU = kUnroll<T>;
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j] = 0.0f;
    if (NT == 1 && first_loaded && units > 32 * kU) {
        for (int base = 0; base < units; base += 32 * kU) {
#pragma unroll
            for (int i = 0; i < kU; ++i) {
                const int u = base + 32 * i + lane;
                if (u >= units) break;
                U::template dot<NT>(unit[i], a, u, j0, acc);
                if (u + 32 * kU < units) unit[i] = U::load(w, l, first_unit + u + 32 * kU);
            }
        }
    } else {
        for (int base = 0; base < units; base += 32 * kU) {
            if (base > 0 || !first_loaded) {
#pragma unroll
                for (int i = 0; i < kU; ++i) {
                    const int u = base + 32 * i + lane;
                    if (u < units) unit[i] = U::load(w, l, first_unit + u);
                }
            }
#pragma unroll
            for (int i = 0; i < kU; ++i) {
                const int u = base + 32 * i + lane;
                if (u < units) U::template dot<NT>(unit[i], a, u, j0, acc);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[j] = __fadd_rn(acc[j], __shfl_xor_sync(0xffffffffu, acc[j], o));
    }
}

// Blocks an SM the register cap is set for, so that enough warps stream
// weights: 8 (64 registers a thread) for one or two activation rows, 4 (128)
// for larger tiles. The K-quants' larger units: at one row Q4_K fits 64
// registers (8 blocks: tg128 of the 8B shape 331 -> 367-372 tok/s against 5
// blocks), Q6_K 72 (7 blocks, +1.5 %; 8 gained nothing), Q5_K spills below
// ~100 (5 blocks); bench/results/cuda-kquant-occupancy-2026-12-02.txt.
template <WeightType T, int NT>
constexpr int kMinBlocks = NT > 2 ? 4
                           : !kSuperBlocks<T> ? 8
                           : NT == 2 || T == WeightType::Q5_K ? 5
                           : T == WeightType::Q4_K ? 8
                                                   : 7;

// y[j][row] for activation rows j_begin .. j_begin + tiles * NT (quantized
// in the workspace), one warp a row, written to the part holding the row.
template <WeightType T, int NT>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, kMinBlocks<T, NT>)
    mmq_kernel(const uint8_t* __restrict__ w, SplitLayout l, int64_t rows, int64_t cols, ActQ8 a, int64_t j_begin,
               int tiles, SplitParts parts) {
    using U = typename UnitOf<T>::type;
    constexpr int kU = kUnroll<T>;
    const int lane = threadIdx.x % 32;
    const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
    if (row >= rows) return;
    const int units = static_cast<int>(cols / U::kUnitElems);
    // The first units' weights load while the activations are still being
    // quantized; a row of at most 32 * kU units stays in registers for every tile.
    typename U::Unit unit[kU];
    load_first<T>(w, l, row * units, units, lane, unit);
    allow_later_grids();  // dependents only start: they wait for this grid to finish
    wait_for_earlier_grids();
    const bool row_in_registers = units <= 32 * kU;
    for (int tile = 0; tile < tiles; ++tile) {
        const int64_t j0 = j_begin + static_cast<int64_t>(tile) * NT;
        float acc[NT];
        row_dot<T, NT>(w, l, row * units, units, lane, unit, tile == 0 || row_in_registers, a, j0, acc);
        const RowOutput out = row_output(parts, row);
#pragma unroll
        for (int j = 0; j < NT; ++j)
            if (lane == j) out.at[(j0 + j) * out.stride] = acc[j];
    }
}

template <WeightType T, int NT>
cudaError_t launch_tiles(const DeviceMatrix& w, const SplitLayout& l, const ActQ8& a, int64_t j_begin, int tiles,
                         const SplitParts& y, cudaStream_t s) {
    const unsigned grid = blocks_for(w.rows, kWarpsPerBlock);
    return launch_overlapped(kPdlMatmul, mmq_kernel<T, NT>, dim3(grid), dim3(kWarpsPerBlock * 32), s,
                             static_cast<const uint8_t*>(w.data), l, w.rows, w.cols, a, j_begin, tiles, y);
}

// Quantizes n rows of x (unless the producer did: x_in_workspace) into ws,
// laid out for n_alloc >= n rows; the kernels' view of them. x_row: row i
// is x's row x_row[i] (null: x's rows in order).
template <WeightType T>
cudaError_t quantize_rows(const float* x, const int32_t* x_row, int64_t n, int64_t n_alloc, int64_t cols, void* ws,
                          bool x_in_workspace, cudaStream_t s, ActQ8& a) {
    constexpr bool kK = kSuperBlocks<T>;
    const ActLayout al = act_layout(kK, n_alloc, cols);
    auto* base = static_cast<uint8_t*>(ws);
    a = ActQ8{};
    a.cols = cols;
    a.qs = reinterpret_cast<const int8_t*>(base);
    constexpr int kThreads = 256;
    if constexpr (kK) {
        a.d = reinterpret_cast<const float*>(base + al.d_offset);
        a.bsums = reinterpret_cast<const int16_t*>(base + al.bsums_offset);
        const int64_t blocks = n * (cols / kQKK);
        if (!x_in_workspace)
            FOLIO_CUDA_TRY(launch_overlapped(kPdlMatmul, quantize_q8_k_blocks, dim3(blocks_for(blocks * 32, kThreads)),
                                             dim3(kThreads), s, RowsIn{x, x_row, cols / kQKK}, blocks,
                                             reinterpret_cast<int8_t*>(base), reinterpret_cast<float*>(base + al.d_offset),
                                             reinterpret_cast<int16_t*>(base + al.bsums_offset)));
    } else {
        a.meta = reinterpret_cast<const float2*>(base + al.meta_offset);
        const int64_t blocks = n * (cols / kQK);
        constexpr bool kQ8_1 = has_min(T);
        // x_in_workspace: the kernel that produced x wrote its blocks already.
        if (!x_in_workspace)
            FOLIO_CUDA_TRY(launch_overlapped(kPdlMatmul, quantize_q8_blocks<kQ8_1>, dim3(blocks_for(blocks, kThreads)),
                                             dim3(kThreads), s, RowsIn{x, x_row, cols / kQK}, blocks,
                                             reinterpret_cast<int8_t*>(base), reinterpret_cast<float2*>(base + al.meta_offset)));
    }
    return cudaSuccess;
}

// FOLIO_CUDA_MMQ=mma sends whole tiles of 32 K-quant rows to the tensor-core
// kernels, =dp4a keeps every row on the warp-per-row ones (the same bits):
// to measure the two side by side. kMmaRowsByDefault: the choice without it.
constexpr bool kMmaRowsByDefault = false;  // not yet run on a GPU: opt-in until it is
bool use_mma_rows() {
    static const bool mma = [] {
        const char* v = std::getenv("FOLIO_CUDA_MMQ");
        if (!v) return kMmaRowsByDefault;
        return std::string(v) == "mma";
    }();
    return mma;
}

template <WeightType T>
cudaError_t launch_mmq(const DeviceMatrix& w, const float* x, int64_t n, const SplitParts& y, void* ws,
                       bool x_in_workspace, cudaStream_t s) {
    ActQ8 a;
    // The K-quants' Q8_K rows are always quantized here (no producer writes them).
    FOLIO_CUDA_TRY(quantize_rows<T>(x, nullptr, n, n, w.cols, ws, x_in_workspace && !kSuperBlocks<T>, s, a));
    const SplitLayout l = is_split(T) ? split_layout(T, w.rows, w.cols) : SplitLayout{};
    // Whole tiles of 32 rows on the tensor cores where the matrix has that
    // kernel (the same bits, matmul_quant_mma.cu), the rest here.
    int64_t j = 0;
    if (use_mma_rows() && mma_quantized_supported(w)) {
        const int64_t mma_tiles = n / kMmaTileRows;
        for (int64_t t = 0; t < mma_tiles; t += 1 << 20) {
            const int64_t tiles = mma_tiles - t < (1 << 20) ? mma_tiles - t : (1 << 20);
            FOLIO_CUDA_TRY(mma_quantized_rows(w, a, t * kMmaTileRows, tiles, y, s));
        }
        j = mma_tiles * kMmaTileRows;
    }
    constexpr int kTile = kMatmulTileRows;
    const int64_t full = (n - j) / kTile;
    // Tiles per launch stay well inside int; each launch walks its tiles in order.
    for (int64_t t = 0; t < full; t += 1 << 20) {
        const int tiles = static_cast<int>(full - t < (1 << 20) ? full - t : (1 << 20));
        FOLIO_CUDA_TRY((launch_tiles<T, kTile>(w, l, a, j + t * kTile, tiles, y, s)));
    }
    j += full * kTile;
    switch (n - j) {
        case 0: return cudaSuccess;
        case 1: return launch_tiles<T, 1>(w, l, a, j, 1, y, s);
        case 2: return launch_tiles<T, 2>(w, l, a, j, 1, y, s);
        case 3: return launch_tiles<T, 3>(w, l, a, j, 1, y, s);
        case 4: return launch_tiles<T, 4>(w, l, a, j, 1, y, s);
        case 5: return launch_tiles<T, 5>(w, l, a, j, 1, y, s);
        case 6: return launch_tiles<T, 6>(w, l, a, j, 1, y, s);
        default: return launch_tiles<T, 7>(w, l, a, j, 1, y, s);
    }
}


// ---- grouped products (mixture of experts, folio_kernels/moe.h) ----------------
// Block (x, g): weight rows 4x .. 4x + 3 of group g's expert times the
// group's rows (consecutive sorted positions), in tiles of NT as mmq_kernel
// walks them; a partial last tile computes rows past the group (quantized
// padding or the next group's rows) and stores only its own. The group is
// known only after the routing kernel: the weights load after the wait.
template <WeightType T, int NT>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, kMinBlocks<T, NT>)
    grouped_mmq_kernel(const uint8_t* __restrict__ w, size_t stride, SplitLayout l, int64_t rows, int64_t cols,
                       ActQ8 a, const int4* __restrict__ groups, const int32_t* __restrict__ n_groups,
                       float* __restrict__ y) {
    using U = typename UnitOf<T>::type;
    constexpr int kU = kUnroll<T>;
    allow_later_grids();
    wait_for_earlier_grids();
    const int lane = threadIdx.x % 32;
    const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
    if (row >= rows || static_cast<int>(blockIdx.y) >= *n_groups) return;
    const int4 g = groups[blockIdx.y];  // expert, first position, count
    const uint8_t* we = w + static_cast<size_t>(g.x) * stride;
    const int units = static_cast<int>(cols / U::kUnitElems);
    typename U::Unit unit[kU];
    load_first<T>(we, l, row * units, units, lane, unit);
    const bool row_in_registers = units <= 32 * kU;
    for (int first = 0; first < g.z; first += NT) {
        const int64_t j0 = g.y + first;
        float acc[NT];
        row_dot<T, NT>(we, l, row * units, units, lane, unit, first == 0 || row_in_registers, a, j0, acc);
#pragma unroll
        for (int j = 0; j < NT; ++j)
            if (lane == j && first + j < g.z) y[(j0 + j) * rows + row] = acc[j];
    }
}

template <WeightType T, int NT>
cudaError_t launch_grouped_tiles(const DeviceExperts& w, const SplitLayout& l, const ActQ8& a, const int4* groups,
                                 const int32_t* n_groups, unsigned max_groups, float* y, cudaStream_t s) {
    const dim3 grid(blocks_for(w.rows, kWarpsPerBlock), max_groups);
    return launch_overlapped(kPdlMatmul, grouped_mmq_kernel<T, NT>, grid, dim3(kWarpsPerBlock * 32), s,
                             static_cast<const uint8_t*>(w.data), w.stride, l, w.rows, w.cols, a, groups, n_groups, y);
}

template <WeightType T>
cudaError_t launch_grouped_mmq(const DeviceExperts& w, const float* x, const int32_t* x_row, int64_t n_entries, int tile,
                               const int4* groups, const int32_t* n_groups, unsigned max_groups, float* y, void* ws,
                               bool x_in_workspace, cudaStream_t s) {
    ActQ8 a;
    FOLIO_CUDA_TRY(quantize_rows<T>(x, x_row, n_entries, n_entries + kMatmulTileRows, w.cols, ws, x_in_workspace, s, a));
    const SplitLayout l = is_split(T) ? split_layout(T, w.rows, w.cols) : SplitLayout{};
    switch (tile) {
        case 1: return launch_grouped_tiles<T, 1>(w, l, a, groups, n_groups, max_groups, y, s);
        case 2: return launch_grouped_tiles<T, 2>(w, l, a, groups, n_groups, max_groups, y, s);
        case 3: return launch_grouped_tiles<T, 3>(w, l, a, groups, n_groups, max_groups, y, s);
        case 4: return launch_grouped_tiles<T, 4>(w, l, a, groups, n_groups, max_groups, y, s);
        case 5: return launch_grouped_tiles<T, 5>(w, l, a, groups, n_groups, max_groups, y, s);
        case 6: return launch_grouped_tiles<T, 6>(w, l, a, groups, n_groups, max_groups, y, s);
        case 7: return launch_grouped_tiles<T, 7>(w, l, a, groups, n_groups, max_groups, y, s);
        default: return launch_grouped_tiles<T, 8>(w, l, a, groups, n_groups, max_groups, y, s);
    }
}

}  // namespace

size_t grouped_quantized_workspace_bytes(WeightType t, int64_t n_entries, int64_t cols) {
    return quantized_workspace_bytes(t, n_entries + kMatmulTileRows, cols);
}

cudaError_t grouped_quantized_matmul(const DeviceExperts& w, const float* x, const int32_t* x_row, int64_t n_entries,
                                     int tile, const int4* groups, const int32_t* n_groups, unsigned max_groups, float* y,
                                     void* ws, bool x_in_workspace, cudaStream_t s) {
    switch (w.type) {
#define FOLIO_GROUPED(T) \
    case WeightType::T: \
        return launch_grouped_mmq<WeightType::T>(w, x, x_row, n_entries, tile, groups, n_groups, max_groups, y, ws, x_in_workspace, s);
        FOLIO_GROUPED(Q4_0)
        FOLIO_GROUPED(Q4_1)
        FOLIO_GROUPED(Q5_0)
        FOLIO_GROUPED(Q5_1)
        FOLIO_GROUPED(Q8_0)
        FOLIO_GROUPED(Q4_K)
        FOLIO_GROUPED(Q5_K)
        FOLIO_GROUPED(Q6_K)
#undef FOLIO_GROUPED
        default: return cudaErrorInvalidValue;
    }
}

size_t quantized_workspace_bytes(WeightType t, int64_t n, int64_t cols) {
    const bool k = t == WeightType::Q4_K || t == WeightType::Q5_K || t == WeightType::Q6_K;
    return act_layout(k, n, cols).bytes;
}

cudaError_t quantized_matmul(const DeviceMatrix& w, const float* x, int64_t n, const SplitParts& y, void* ws,
                             bool x_in_workspace, cudaStream_t s) {
    if (x_in_workspace && fused_activation_format(w.type) == ActivationFormat::None) return cudaErrorInvalidValue;
    switch (w.type) {
        case WeightType::Q4_0: return launch_mmq<WeightType::Q4_0>(w, x, n, y, ws, x_in_workspace, s);
        case WeightType::Q4_1: return launch_mmq<WeightType::Q4_1>(w, x, n, y, ws, x_in_workspace, s);
        case WeightType::Q5_0: return launch_mmq<WeightType::Q5_0>(w, x, n, y, ws, x_in_workspace, s);
        case WeightType::Q5_1: return launch_mmq<WeightType::Q5_1>(w, x, n, y, ws, x_in_workspace, s);
        case WeightType::Q8_0: return launch_mmq<WeightType::Q8_0>(w, x, n, y, ws, x_in_workspace, s);
        case WeightType::Q4_K: return launch_mmq<WeightType::Q4_K>(w, x, n, y, ws, x_in_workspace, s);
        case WeightType::Q5_K: return launch_mmq<WeightType::Q5_K>(w, x, n, y, ws, x_in_workspace, s);
        case WeightType::Q6_K: return launch_mmq<WeightType::Q6_K>(w, x, n, y, ws, x_in_workspace, s);
        default: return cudaErrorInvalidValue;
    }
}

cudaError_t quantize_activations(const float* x, int64_t count, const ActivationQuant& q, cudaStream_t s) {
    if (count % kQK != 0 || !q.workspace || reinterpret_cast<uintptr_t>(x) % 16 != 0) return cudaErrorInvalidValue;
    if (q.format == ActivationFormat::F16) return convert_to(WeightType::F16, x, static_cast<size_t>(count), q.workspace, s);
    if (q.format == ActivationFormat::BF16) return convert_to(WeightType::BF16, x, static_cast<size_t>(count), q.workspace, s);
    const ActivationBlocks out = activation_blocks(q, count);
    const int64_t blocks = count / kQK;
    constexpr int kThreads = 256;
    switch (q.format) {
        case ActivationFormat::Q8_0:
            return launch_overlapped(kPdlMatmul, quantize_q8_blocks<false>, dim3(blocks_for(blocks, kThreads)),
                                     dim3(kThreads), s, RowsIn{x}, blocks, out.qs, out.meta);
        case ActivationFormat::Q8_1:
            return launch_overlapped(kPdlMatmul, quantize_q8_blocks<true>, dim3(blocks_for(blocks, kThreads)),
                                     dim3(kThreads), s, RowsIn{x}, blocks, out.qs, out.meta);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace folio::kernels::detail
