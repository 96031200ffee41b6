// Paged attention on tensor cores (flash-attention 2 style): half Q, K, V
// operands of mma.sync m16n8k16 with F32 accumulation; scores, the online
// softmax and the outputs stay in registers. Batch-invariant: a row gets the
// same bits in any batch (see attention_common.cuh for the rules).
//
// A warp holds one row group (16 query-head rows) and a slice of the output
// columns. A block has R row groups and C (1 or 4) warps per row group. With
// C = 4 each warp takes a quarter of a key tile's scores and probabilities;
// the row maxima, the lanes' probability sums and the half probabilities are
// exchanged through shared memory, and each warp does its own columns of P·V.
// With C = 1 one warp does all of it, in the same order. Per row, every score,
// probability, sum and output element is computed by the same instructions on
// the same operands whatever R and C are.
//  - decode kernel (R = 1, C = 4): a block per (group of consecutive chunks,
//    sequence, KV head) for a sequence of a few rows; it folds the rows whose
//    chunks are all in its group, and leaves a partial per chunk of the other
//    rows for merge_chunks_kernel;
//  - prefill kernel (R = 4, C = 1 at head_dim 64; R = 2, C = 4 at 128 and
//    256): a block per (16 R-row tile, sequence, KV head) walks all the tile's
//    keys and folds each chunk's partial into the row's state in registers.
// Key tiles come through the block table into shared memory with cp.async,
// double-buffered. A quantized cache's tiles (fp8, Q8_0) come as bytes
// (about half the traffic) into a double-buffered byte stage, and are read
// back into one half tile that the same instructions then use: half(e4m3 *
// scale) or half(q * d), each rounded once from the exact product.
#include <algorithm>
#include <atomic>

#include <cuda_fp8.h>
#include <climits>

#include "attention_common.cuh"
#include "launch.cuh"

namespace folio::kernels::attention_detail {
namespace {

template <int D, int R, int C, bool kDecode, KvFormat kFormat = KvFormat::F16>
struct Config {
    static constexpr int kWarps = R * C;
    static constexpr int kThreads = 32 * kWarps;
    static constexpr int kTileKeys = D <= 128 ? 64 : 32;
    static constexpr int kNTiles = kTileKeys / 8;   // n8 score tiles per key tile
    static constexpr int kWarpNTiles = kNTiles / C;  // of them, computed by each warp
    static constexpr int kWarpCols = D / C;          // output columns of a warp
    static constexpr int kWarpDTiles = kWarpCols / 8;
    static constexpr int kStride = D + 8;  // halves per smem row: conflict-free fragment loads
    static constexpr int kRows = 16 * R;
    static constexpr int kPStride = kTileKeys + 8;  // halves per row of the exchanged probabilities
    // Per row group, when C > 1: each warp's row maxima [C][16], lane sums [C][32][2], and the tile's
    // probabilities [16][kPStride] as half. Decode keeps Q in registers, so this reuses the Q buffer.
    static constexpr size_t kQBytes = sizeof(__half) * kRows * kStride;
    static constexpr size_t kExchangeFloats = C * 16 + C * 64;
    static constexpr size_t kExchangeBytes = sizeof(float) * kExchangeFloats + sizeof(__half) * 16 * kPStride;
    static constexpr size_t kScoreBytes = C > 1 ? R * kExchangeBytes : 0;
    static constexpr size_t kQScoreBytes = kDecode ? (kQBytes > kScoreBytes ? kQBytes : kScoreBytes)
                                                   : kQBytes + kScoreBytes;
    // K and V half tiles: two stages, or one that a quantized stage is read back into.
    static constexpr bool kQuantized = kFormat != KvFormat::F16;
    static constexpr int kKvStages = kQuantized ? 1 : 2;
    static constexpr size_t kKvBytes = sizeof(__half) * 2 * kKvStages * kTileKeys * kStride;
    // A quantized stage: K and V values [kTileKeys][D] bytes, then their scales [kTileKeys][D / 32 scales];
    // two stages.
    static constexpr int kScaleBytes = D / 32 * kv_scale_bytes(kFormat);  // of a key row
    static constexpr size_t kStageBytes = kQuantized ? 2 * size_t{kTileKeys} * (D + kScaleBytes) : 0;
    static constexpr size_t smem_bytes() { return kQScoreBytes + kKvBytes + 2 * kStageBytes + sizeof(int) * 2 * kRows; }
    static_assert(kStageBytes % 16 == 0, "16-byte aligned stages");
    static_assert(kNTiles % kSumGroups == 0 && kWarpDTiles % 2 == 0, "whole n8 tiles per sum group, column pairs");
    static_assert(C == 1 || C == kSumGroups, "a warp of the row group per sum group, or one for all");
    static_assert(kChunkKeys % kTileKeys == 0, "chunks are whole key tiles");
    static_assert(!kDecode || R == 1, "a decode sequence is one row group");
};

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// c += a · b for one m16n8k16 tile (row-major A, column-major B).
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 half matrices, transposed: lanes 8i..8i+7 give matrix i's row addresses.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __half* row) {
    const auto addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ float quad_sum(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

inline __device__ void cp_async4(void* smem, const void* gmem) {
    const auto addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(addr), "l"(gmem) : "memory");
}

// Eight E4M3 values and their block's E8M0 scale byte as eight halves: half(e4m3 * 2^(e - 127)). E4M3 is
// exact in half; so is the product where 2^(e - 127) is a half (a half multiply rounds the exact product
// once, to nearest even, as the float path's conversion does).
__device__ __forceinline__ uint4 fp8x8_to_half8(uint2 raw, int e) {
    e = min(e, 254);  // 255 (NaN) only in never-written bytes, whose values are zeros here
    uint32_t h[4];
    const uint32_t words[2] = {raw.x, raw.y};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const auto pair = static_cast<__nv_fp8x2_storage_t>(words[i / 2] >> (16 * (i % 2)));
        const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
        h[i] = static_cast<uint32_t>(r.x) | (static_cast<uint32_t>(r.y) << 16);
    }
    const int k = e - 127;
    if (k >= -24 && k <= 15) {
        __half_raw sr;
        sr.x = static_cast<unsigned short>(k >= -14 ? (k + 15) << 10 : 1 << (k + 24));
        const __half2 s2 = __half2half2(__half(sr));
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            __half2 x = *reinterpret_cast<const __half2*>(&h[i]);
            x = __hmul2(x, s2);
            h[i] = *reinterpret_cast<const uint32_t*>(&x);
        }
    } else {
        const float scale = ldexpf(1.0f, k);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h[i]));
            const __half2 x = __floats2half2_rn(__fmul_rn(f.x, scale), __fmul_rn(f.y, scale));
            h[i] = *reinterpret_cast<const uint32_t*>(&x);
        }
    }
    return make_uint4(h[0], h[1], h[2], h[3]);
}

// Eight Q8_0 values and their block's fp16 scale d as eight halves: half(q * d), the product exact in
// float (8 + 11 bits), rounded once by the half multiply (q is exact in half).
__device__ __forceinline__ uint4 q8x8_to_half8(uint2 raw, __half d) {
    uint32_t h[4];
    const uint32_t words[2] = {raw.x, raw.y};
    const __half2 d2 = __half2half2(d);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const uint32_t w = words[i / 2] >> (16 * (i % 2));
        const auto lo = static_cast<int8_t>(w & 0xFF), hi = static_cast<int8_t>((w >> 8) & 0xFF);
        const __half2 x = __hmul2(__halves2half2(__int2half_rn(lo), __int2half_rn(hi)), d2);
        h[i] = *reinterpret_cast<const uint32_t*>(&x);
    }
    return make_uint4(h[0], h[1], h[2], h[3]);
}

// Query fragment (A operand) of k16 step ks for a row group, from shared memory.
__device__ __forceinline__ void load_q_fragment(uint32_t (&qa)[4], const __half* qb, int stride, int ks, int gq,
                                                int tq) {
    qa[0] = *reinterpret_cast<const uint32_t*>(qb + gq * stride + ks * 16 + 2 * tq);
    qa[1] = *reinterpret_cast<const uint32_t*>(qb + (gq + 8) * stride + ks * 16 + 2 * tq);
    qa[2] = *reinterpret_cast<const uint32_t*>(qb + gq * stride + ks * 16 + 2 * tq + 8);
    qa[3] = *reinterpret_cast<const uint32_t*>(qb + (gq + 8) * stride + ks * 16 + 2 * tq + 8);
}

// At head_dim <= 128: three decode blocks an SM, two 8-warp prefill blocks (as shared memory allows).
template <int D, int R, int C, bool kDecode, bool kQ8, KvFormat kFormat>
__global__ void __launch_bounds__(32 * R * C, D > 128 ? 1 : kDecode ? 3 : R * C == 8 ? 2 : 1)
    attention_mma_kernel(const Args a) {
    using Cf = Config<D, R, C, kDecode, kFormat>;
    constexpr bool kQuantKv = Cf::kQuantized;
    constexpr int TK = Cf::kTileKeys, NT = Cf::kNTiles, NTW = Cf::kWarpNTiles, S = Cf::kStride;
    constexpr int kRows = Cf::kRows, kThreads = Cf::kThreads, PS = Cf::kPStride;
    constexpr int NTG = NT / kSumGroups;  // n8 tiles of a sum group
    constexpr int DT = Cf::kWarpDTiles;

    extern __shared__ __align__(16) unsigned char smem[];
    __half* q_s = reinterpret_cast<__half*>(smem);  // [kRows][S]
    unsigned char* x_s = kDecode ? smem : smem + Cf::kQBytes;  // [R] exchange areas (C > 1)
    __half* k_s = reinterpret_cast<__half*>(smem + Cf::kQScoreBytes);            // [stages][TK][S]
    __half* v_s = k_s + Cf::kKvStages * TK * S;                                  // [stages][TK][S]
    unsigned char* stage_s = reinterpret_cast<unsigned char*>(v_s + Cf::kKvStages * TK * S);  // quantized: [2][stage]
    int* key_lo = reinterpret_cast<int*>(stage_s + 2 * Cf::kStageBytes);
    int* key_hi = key_lo + kRows;
    __shared__ int tile_lo, tile_hi;

    // Until the queries are read, this kernel reads only the step's batch (positions, sequences), which
    // no kernel writes: that happens before the wait, while RoPE (or the split before it) finishes. A
    // block that leaves early waits first all the same, so that this grid ends after the one before.
    detail::allow_later_grids();
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int gq = lane / 4, tq = lane % 4;  // fragment row and column pair of this lane
    const int rg = warp / C, cg = warp % C;
    // Decode: blockIdx.x is the group of chunks, y the (sequence, KV head). Prefill: x is the (sequence, KV
    // head) and y counts the row tiles from the last, so that the blocks with the most keys (causal) start first.
    const int seq_head = kDecode ? blockIdx.y : blockIdx.x;
    const int seq = seq_head / a.n_head_kv, kv_head = seq_head % a.n_head_kv;
    const int n_query = a.n_query[seq];
    const int t0 = kDecode ? 0 : static_cast<int>(gridDim.y - 1 - blockIdx.y) * a.tokens_per_tile;
    if (is_decode_sequence(n_query, a.group) != kDecode || t0 >= n_query) {  // the other kernel's sequence, or no rows
        detail::wait_for_earlier_grids();
        return;
    }
    const int row0 = a.query_start[seq] + t0;
    const int n_active = min(kDecode ? n_query : a.tokens_per_tile, n_query - t0) * a.group;
    // Decode: this block's group of chunks_per_block chunks. Prefill: all keys.
    const int group_keys = kChunkKeys * a.chunks_per_block;
    const int range_lo = kDecode ? static_cast<int>(blockIdx.x) * group_keys : 0;
    const int range_hi = kDecode ? range_lo + group_keys - 1 : INT_MAX;

    // Each row's keys (causal, windowed); the block's key range is the union
    // of their parts within [range_lo, range_hi].
    if (tid == 0) tile_lo = INT_MAX, tile_hi = -1;
    __syncthreads();
    for (int m = tid; m < kRows; m += kThreads) {
        int lo = 1, hi = 0;
        if (m < n_active) {
            const int pos = a.positions[row0 + m / a.group];
            lo = a.window > 0 ? max(0, pos + 1 - a.window) : 0;
            hi = pos;
            const int clo = max(lo, range_lo), chi = min(hi, range_hi);
            if (clo <= chi) atomicMin(&tile_lo, clo), atomicMax(&tile_hi, chi);
        }
        key_lo[m] = lo;
        key_hi[m] = hi;
    }
    __syncthreads();
    const int lo_all = tile_lo, hi_all = tile_hi;
    detail::wait_for_earlier_grids();
    if (hi_all < lo_all) return;  // no row has a key here

    // Queries as half (the CPU backend rounds them too); missing rows are zeros.
    for (int quad = tid; quad < kRows * D / 4; quad += kThreads) {
        const int i = quad * 4, m = i / D, d = i % D;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (m < n_active) {
            const int head = kv_head * a.group + m % a.group;
            x = *reinterpret_cast<const float4*>(a.q + (int64_t{row0} + m / a.group) * a.n_head * D + head * D + d);
        }
        *reinterpret_cast<uint2*>(q_s + m * S + d) = make_uint2(pack_half2(x.x, x.y), pack_half2(x.z, x.w));
    }

    // Tiles start at multiples of TK, so that a key sits at the same place of
    // the same tile whatever the other rows of the block need.
    const int first_key = lo_all / TK * TK;
    const int n_tiles = (hi_all - first_key) / TK + 1;
    const int32_t* table = a.block_tables + int64_t{seq} * a.max_blocks;

    // A quantized tile's bytes into stage `buf`: values in 16-byte pieces, scales in 4-byte ones (two keys
    // a piece for fp8 at head_dim 64: a KV block holds an even number of keys). Keys outside every row's
    // range are zeros, as in the half tiles.
    auto load_quantized_tile = [&](int t, int buf) {
        if constexpr (kQuantKv) {  // (an F16 cache has no scales to size the pieces by)
            constexpr int SB = Cf::kScaleBytes;
            constexpr int kPieces = D / 16, kPerThread = TK * kPieces / kThreads;
            static_assert(TK * kPieces % kThreads == 0);
            const int tile_key = first_key + t * TK;
            const auto* k8 = reinterpret_cast<const unsigned char*>(a.k);
            const auto* v8 = reinterpret_cast<const unsigned char*>(a.v);
            unsigned char* st = stage_s + buf * Cf::kStageBytes;
            const int64_t values_bytes = int64_t{a.n_head_kv} * a.block_size * D;  // a block's values
#pragma unroll
            for (int it = 0; it < kPerThread; ++it) {
                const int c = tid + it * kThreads, j = c / kPieces, part = c % kPieces, key = tile_key + j;
                unsigned char* k_dst = st + j * D + part * 16;
                unsigned char* v_dst = k_dst + TK * D;
                if (key >= lo_all && key <= hi_all) {
                    const int64_t at = table[key / a.block_size] * a.kv_block_bytes +
                                       (int64_t{kv_head} * a.block_size + key % a.block_size) * D + part * 16;
                    cp_async16(k_dst, k8 + at);
                    cp_async16(v_dst, v8 + at);
                } else {
                    *reinterpret_cast<uint4*>(k_dst) = make_uint4(0, 0, 0, 0);
                    *reinterpret_cast<uint4*>(v_dst) = make_uint4(0, 0, 0, 0);
                }
            }
            constexpr int kKeysPerPiece = SB >= 4 ? 1 : 4 / SB, kPiecesPerKey = SB >= 4 ? SB / 4 : 1;
            constexpr int kScalePieces = TK / kKeysPerPiece * kPiecesPerKey;
            static_assert(kScalePieces <= kThreads);
            if (tid < kScalePieces) {
                const int j = tid / kPiecesPerKey * kKeysPerPiece, part = tid % kPiecesPerKey, key = tile_key + j;
                unsigned char* k_dst = st + 2 * TK * D + j * SB + part * 4;
                unsigned char* v_dst = k_dst + TK * SB;
                if (key + kKeysPerPiece - 1 >= lo_all && key <= hi_all) {
                    const int in_range = max(key, lo_all);  // the piece's keys share a KV block
                    const int64_t at = table[in_range / a.block_size] * a.kv_block_bytes + values_bytes +
                                       (int64_t{kv_head} * a.block_size + key % a.block_size) * SB + part * 4;
                    cp_async4(k_dst, k8 + at);
                    cp_async4(v_dst, v8 + at);
                } else {
                    *reinterpret_cast<uint32_t*>(k_dst) = 0;
                    *reinterpret_cast<uint32_t*>(v_dst) = 0;
                }
            }
        }
        cp_async_commit();
    };
    // Stage `buf` read back into the half tiles.
    auto read_stage = [&](int buf) {
        constexpr int SB = Cf::kScaleBytes, kOcts = D / 8;
        const unsigned char* st = stage_s + buf * Cf::kStageBytes;
        for (int c = tid; c < 2 * TK * kOcts; c += kThreads) {
            const int which = c / (TK * kOcts), j = c % (TK * kOcts) / kOcts, part = c % kOcts;
            const uint2 raw = *reinterpret_cast<const uint2*>(st + which * TK * D + j * D + part * 8);
            const unsigned char* scale = st + 2 * TK * D + which * TK * SB + j * SB + part / 4 * kv_scale_bytes(kFormat);
            uint4 halves;
            if constexpr (kFormat == KvFormat::Q8_0)
                halves = q8x8_to_half8(raw, *reinterpret_cast<const __half*>(scale));
            else
                halves = fp8x8_to_half8(raw, *scale);
            *reinterpret_cast<uint4*>((which ? v_s : k_s) + j * S + part * 8) = halves;
        }
    };

    auto load_tile = [&](int t, int buf) {
        if constexpr (kQuantKv) return load_quantized_tile(t, buf);
        constexpr int kChunks = D / 8;  // 16-byte pieces of a key row
        constexpr int kPerThread = TK * kChunks / kThreads;
        static_assert(TK * kChunks % kThreads == 0);
        const int tile_key = first_key + t * TK;
        int64_t src[kPerThread];
#pragma unroll
        for (int it = 0; it < kPerThread; ++it) {  // the table look-ups first: their latencies overlap
            const int c = tid + it * kThreads, key = min(max(tile_key + c / kChunks, lo_all), hi_all);
            const int64_t block = table[key / a.block_size];
            src[it] = ((block * a.n_head_kv + kv_head) * a.block_size + key % a.block_size) * D + (c % kChunks) * 8;
        }
#pragma unroll
        for (int it = 0; it < kPerThread; ++it) {
            const int c = tid + it * kThreads;
            const int j = c / kChunks, part = c % kChunks, key = tile_key + j;
            __half* k_dst = k_s + (buf * TK + j) * S + part * 8;
            __half* v_dst = v_s + (buf * TK + j) * S + part * 8;
            if (key >= lo_all && key <= hi_all) {
                cp_async16(k_dst, a.k + src[it]);
                cp_async16(v_dst, a.v + src[it]);
            } else {  // outside every row's range: zeros, so that 0-weight keys add 0, never NaN
                *reinterpret_cast<uint4*>(k_dst) = make_uint4(0, 0, 0, 0);
                *reinterpret_cast<uint4*>(v_dst) = make_uint4(0, 0, 0, 0);
            }
        }
        cp_async_commit();
    };

    if (n_tiles > 0) load_tile(0, 0);

    // This lane's two rows (gq and gq + 8 of the warp's row group).
    __syncthreads();  // queries and key ranges stored
    const int r_a = rg * 16 + gq, r_b = r_a + 8;
    const int lo_a = key_lo[r_a], hi_a = key_hi[r_a], lo_b = key_lo[r_b], hi_b = key_hi[r_b];
    const bool warp_active = rg * 16 < n_active;
    const __half* qb = q_s + rg * 16 * S;
    // Decode holds the queries in registers (the exchange buffer overlays them).
    uint32_t q_reg[kDecode ? D / 16 : 1][4];
    if constexpr (kDecode) {
#pragma unroll
        for (int ks = 0; ks < D / 16; ++ks) load_q_fragment(q_reg[ks], qb, S, ks, gq, tq);
    }

    // The current chunk's partial: running max, this lane's share of the sum, outputs.
    float o[DT][4];
    float m_row[2] = {-INFINITY, -INFINITY};
    float l_row[2] = {0.0f, 0.0f};
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
    // The row's state folded over its chunks so far, when all of them are in
    // this block (always in prefill); else (decode) each chunk's partial goes
    // to the workspace for merge_chunks_kernel.
    float o_state[DT][4];
    float m_state[2] = {-INFINITY, -INFINITY};
    float l_state[2] = {0.0f, 0.0f};
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) o_state[dt][0] = o_state[dt][1] = o_state[dt][2] = o_state[dt][3] = 0.0f;
    bool in_block[2] = {true, true};
    int64_t part_at[2] = {0, 0};  // the row's first partial slot
    if constexpr (kDecode) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int m = r == 0 ? r_a : r_b, lo = r == 0 ? lo_a : lo_b, hi = r == 0 ? hi_a : hi_b;
            in_block[r] = lo / group_keys == hi / group_keys;
            const int64_t row = row0 + m / a.group;
            const int64_t slot_row = a.part_by_row ? row : int64_t{seq} * kDecodeTokens + m / a.group;
            part_at[r] = (slot_row * a.n_head + kv_head * a.group + m % a.group) * a.n_chunks;
        }
    }

    for (int t = 0; t < n_tiles; ++t) {
        const int buf = t & 1;
        const int tile_key = first_key + t * TK;
        if (t + 1 < n_tiles) {
            load_tile(t + 1, buf ^ 1);
        } else {
            cp_async_commit();  // an empty group keeps the wait count uniform
        }
        cp_async_wait<1>();
        __syncthreads();
        if constexpr (kQuantKv) {
            read_stage(buf);
            __syncthreads();
        }
        const int kv_buf = kQuantKv ? 0 : buf;  // the half tile this tile is in

        // S = Q · Kᵀ for this warp's n8 tiles (all of them when C = 1), each
        // accumulated over the k16 steps in order.
        float sc[NTW][4];
#pragma unroll
        for (int w = 0; w < NTW; ++w) sc[w][0] = sc[w][1] = sc[w][2] = sc[w][3] = 0.0f;
        if (warp_active) {
            const __half* kb = k_s + (kv_buf * TK + cg * NTW * 8) * S;
#pragma unroll
            for (int ks = 0; ks < D / 16; ++ks) {
                uint32_t qa[4];
                if constexpr (kDecode) {
                    qa[0] = q_reg[ks][0], qa[1] = q_reg[ks][1], qa[2] = q_reg[ks][2], qa[3] = q_reg[ks][3];
                } else {
                    load_q_fragment(qa, qb, S, ks, gq, tq);
                }
#pragma unroll
                for (int w = 0; w < NTW; ++w) {
                    const __half* k_row = kb + (w * 8 + gq) * S + ks * 16 + 2 * tq;
                    mma_16816(sc[w], qa, *reinterpret_cast<const uint32_t*>(k_row),
                              *reinterpret_cast<const uint32_t*>(k_row + 8));
                }
            }
        }

        // Scale, softcap, mask; row maxima (a row's values sit in one lane quad).
        float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int w = 0; w < NTW; ++w)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = tile_key + (cg * NTW + w) * 8 + 2 * tq + (e & 1);
                float x = __fmul_rn(sc[w][e], a.scale);
                if (a.softcap > 0.0f) x = __fmul_rn(a.softcap, tanhf(__fdiv_rn(x, a.softcap)));
                const bool in_range = e < 2 ? key >= lo_a && key <= hi_a : key >= lo_b && key <= hi_b;
                sc[w][e] = in_range ? x : -INFINITY;
                tile_max[e >> 1] = fmaxf(tile_max[e >> 1], sc[w][e]);
            }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        }
        float* ex_max = reinterpret_cast<float*>(x_s + rg * Cf::kExchangeBytes);  // [C][16]
        float* ex_sum = ex_max + C * 16;                                           // [C][32][2]
        __half* ex_p = reinterpret_cast<__half*>(ex_sum + C * 64);                 // [16][PS]
        if constexpr (C > 1) {  // the maximum over the whole tile (exact in any order)
            if (warp_active && tq == 0) ex_max[cg * 16 + gq] = tile_max[0], ex_max[cg * 16 + gq + 8] = tile_max[1];
            __syncthreads();
#pragma unroll
            for (int k = 0; k < C; ++k)
                tile_max[0] = fmaxf(tile_max[0], ex_max[k * 16 + gq]),
                tile_max[1] = fmaxf(tile_max[1], ex_max[k * 16 + gq + 8]);
        }
        float rescale[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float m_new = fmaxf(m_row[r], tile_max[r]);
            // An unchanged maximum rescales by exactly 1: a tile without the row's keys is a no-op.
            rescale[r] = m_new == m_row[r] ? 1.0f : exp_approx(__fsub_rn(m_row[r], m_new));
            m_row[r] = m_new;
        }
        // Probabilities; this lane's sums over each sum group of n8 tiles, in order.
        float group_sum[C == 1 ? kSumGroups : 1][2];
#pragma unroll
        for (int g = 0; g < (C == 1 ? kSumGroups : 1); ++g) group_sum[g][0] = group_sum[g][1] = 0.0f;
#pragma unroll
        for (int w = 0; w < NTW; ++w)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float m = m_row[e >> 1];
                const float p = m == -INFINITY ? 0.0f : exp_approx(__fsub_rn(sc[w][e], m));
                group_sum[w / NTG][e >> 1] = __fadd_rn(group_sum[w / NTG][e >> 1], p);
                sc[w][e] = p;
            }
        // P (rounded to half) as A operands of the k16 steps, and the tile's sums.
        uint32_t pa[TK / 16][4];
        float tile_sum[2];
        if constexpr (C == 1) {
#pragma unroll
            for (int kk = 0; kk < TK / 16; ++kk) {
                pa[kk][0] = pack_half2(sc[2 * kk][0], sc[2 * kk][1]);
                pa[kk][1] = pack_half2(sc[2 * kk][2], sc[2 * kk][3]);
                pa[kk][2] = pack_half2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
                pa[kk][3] = pack_half2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
            }
#pragma unroll
            for (int r = 0; r < 2; ++r)
                tile_sum[r] = __fadd_rn(__fadd_rn(group_sum[0][r], group_sum[1][r]),
                                        __fadd_rn(group_sum[2][r], group_sum[3][r]));
        } else {
            if (warp_active) {
#pragma unroll
                for (int w = 0; w < NTW; ++w) {
                    const int col = (cg * NTW + w) * 8 + 2 * tq;
                    *reinterpret_cast<uint32_t*>(ex_p + gq * PS + col) = pack_half2(sc[w][0], sc[w][1]);
                    *reinterpret_cast<uint32_t*>(ex_p + (gq + 8) * PS + col) = pack_half2(sc[w][2], sc[w][3]);
                }
                *reinterpret_cast<float2*>(ex_sum + (cg * 32 + lane) * 2) = make_float2(group_sum[0][0], group_sum[0][1]);
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < TK / 16; ++kk) {
                pa[kk][0] = *reinterpret_cast<const uint32_t*>(ex_p + gq * PS + kk * 16 + 2 * tq);
                pa[kk][1] = *reinterpret_cast<const uint32_t*>(ex_p + (gq + 8) * PS + kk * 16 + 2 * tq);
                pa[kk][2] = *reinterpret_cast<const uint32_t*>(ex_p + gq * PS + kk * 16 + 8 + 2 * tq);
                pa[kk][3] = *reinterpret_cast<const uint32_t*>(ex_p + (gq + 8) * PS + kk * 16 + 8 + 2 * tq);
            }
            float2 gs[kSumGroups];
#pragma unroll
            for (int k = 0; k < kSumGroups; ++k) gs[k] = *reinterpret_cast<const float2*>(ex_sum + (k * 32 + lane) * 2);
            tile_sum[0] = __fadd_rn(__fadd_rn(gs[0].x, gs[1].x), __fadd_rn(gs[2].x, gs[3].x));
            tile_sum[1] = __fadd_rn(__fadd_rn(gs[0].y, gs[1].y), __fadd_rn(gs[2].y, gs[3].y));
        }

        if (warp_active) {
#pragma unroll
            for (int r = 0; r < 2; ++r) l_row[r] = __fadd_rn(__fmul_rn(l_row[r], rescale[r]), tile_sum[r]);
#pragma unroll
            for (int dt = 0; dt < DT; ++dt) {
                o[dt][0] = __fmul_rn(o[dt][0], rescale[0]);
                o[dt][1] = __fmul_rn(o[dt][1], rescale[0]);
                o[dt][2] = __fmul_rn(o[dt][2], rescale[1]);
                o[dt][3] = __fmul_rn(o[dt][3], rescale[1]);
            }
            // O += P · V for this warp's columns.
            const int mat = lane >> 3, mat_row = lane & 7;
            const __half* vb = v_s + kv_buf * TK * S + cg * Cf::kWarpCols;
#pragma unroll
            for (int kk = 0; kk < TK / 16; ++kk) {
                const __half* v_rows = vb + (kk * 16 + mat_row + (mat & 1) * 8) * S + (mat >> 1) * 8;
#pragma unroll
                for (int dt = 0; dt < DT; dt += 2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, v_rows + dt * 8);
                    mma_16816(o[dt], pa[kk], b[0], b[1]);
                    mma_16816(o[dt + 1], pa[kk], b[2], b[3]);
                }
            }
        }

        // At a chunk's end: fold its partial into the rows' states, or store it.
        if (warp_active && ((tile_key + TK) % kChunkKeys == 0 || t + 1 == n_tiles)) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const float l = quad_sum(l_row[r]);
                const int m = r == 0 ? r_a : r_b;
                if (m_row[r] != -INFINITY && !in_block[r]) {
                    if (m < n_active) {
                        const int64_t at = part_at[r] + tile_key / kChunkKeys;
                        float* part = a.part_o + at * D + cg * Cf::kWarpCols + 2 * tq;
#pragma unroll
                        for (int dt = 0; dt < DT; ++dt)
                            *reinterpret_cast<float2*>(part + dt * 8) = make_float2(o[dt][2 * r], o[dt][2 * r + 1]);
                        if (cg == 0 && tq == 0)
                            *reinterpret_cast<float2*>(a.part_ml + at * 2) = make_float2(m_row[r], l);
                    }
                } else if (m_row[r] != -INFINITY) {
                    if (m_state[r] == -INFINITY) {
                        m_state[r] = m_row[r];
                        l_state[r] = l;
#pragma unroll
                        for (int dt = 0; dt < DT; ++dt)
                            o_state[dt][2 * r] = o[dt][2 * r], o_state[dt][2 * r + 1] = o[dt][2 * r + 1];
                    } else {
                        const FoldStep f = fold_step(m_state[r], m_row[r]);
                        m_state[r] = f.m;
                        l_state[r] = fold_value(l_state[r], l, f);
#pragma unroll
                        for (int dt = 0; dt < DT; ++dt) {
                            o_state[dt][2 * r] = fold_value(o_state[dt][2 * r], o[dt][2 * r], f);
                            o_state[dt][2 * r + 1] = fold_value(o_state[dt][2 * r + 1], o[dt][2 * r + 1], f);
                        }
                    }
                }
                m_row[r] = -INFINITY;
                l_row[r] = 0.0f;
#pragma unroll
                for (int dt = 0; dt < DT; ++dt) o[dt][2 * r] = o[dt][2 * r + 1] = 0.0f;
            }
        }
        __syncthreads();
    }
    cp_async_wait<0>();
    if (!warp_active) return;

    // Outputs: the state's O / L for the rows whose chunks were all here.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int m = r == 0 ? r_a : r_b;
        if (m >= n_active || !in_block[r] || m_state[r] == -INFINITY) continue;
        const int64_t row = row0 + m / a.group;
        const int head = kv_head * a.group + m % a.group;
        const int64_t first = (row * a.n_head + head) * D + cg * Cf::kWarpCols;  // this warp's first column
        float x[DT][2];
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
            x[dt][0] = __fdiv_rn(o_state[dt][2 * r], l_state[r]);
            x[dt][1] = __fdiv_rn(o_state[dt][2 * r + 1], l_state[r]);
            store_out2<kQ8>(a, first + dt * 8 + 2 * tq, x[dt][0], x[dt][1]);
        }
        if constexpr (kQ8) {  // the quad's row, a block of 32 (four n8 tiles) at a time
            static_assert(Cf::kWarpCols % 32 == 0, "a warp's columns are whole blocks");
#pragma unroll
            for (int b = 0; b < DT / 4; ++b) {
                const float v[8] = {x[4 * b][0],     x[4 * b][1],     x[4 * b + 1][0], x[4 * b + 1][1],
                                    x[4 * b + 2][0], x[4 * b + 2][1], x[4 * b + 3][0], x[4 * b + 3][1]};
                detail::quantize_quad_block(v, first + 32 * b, a.act);
            }
        }
    }
}

// Folds the chunk partials of each decode row whose chunks span several
// decode blocks, in chunk order, with the same arithmetic as the kernels'
// in-register fold. A block per (sequence, head, 32 output columns). For each
// segment of 128 chunks the block copies the segment's partial outputs of its
// columns into shared memory, every load in flight at once, and computes the
// segment's weights in parallel (the running maxima are a prefix maximum,
// which is exact in any order); then one warp runs the fold of its columns
// from shared memory. (A block per head, each thread folding straight from
// global memory, was latency-bound: 37 us a layer at 32k keys, 32 blocks.)
constexpr int kMergeThreads = 128, kMergeCols = 32;
template <bool kQ8>
__global__ void __launch_bounds__(kMergeThreads) merge_chunks_kernel(const Args a, int head_dim) {
    __shared__ float max_s[kMergeThreads], a_s[kMergeThreads], b_s[kMergeThreads], l_s[kMergeThreads];
    __shared__ float warp_max_s[kMergeThreads / 32];
    __shared__ float part_s[kMergeThreads][kMergeCols];  // [chunk of the segment][column]
    detail::allow_later_grids();
    detail::wait_for_earlier_grids();
    const int seq = blockIdx.x, head = blockIdx.y, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int d = static_cast<int>(blockIdx.z) * kMergeCols + lane;  // warp 0's column
    const int n_query = a.n_query[seq];
    if (!is_decode_sequence(n_query, a.group)) return;
    const int group_keys = kChunkKeys * a.chunks_per_block;
    for (int t = 0; t < n_query; ++t) {
        const int64_t row = a.query_start[seq] + t;
        const int pos = a.positions[row];
        const int lo = a.window > 0 ? max(0, pos + 1 - a.window) : 0;
        if (lo / group_keys == pos / group_keys) continue;  // written by its decode block
        const int j0 = lo / kChunkKeys, j1 = pos / kChunkKeys;
        const int64_t slot_row = a.part_by_row ? row : int64_t{seq} * kDecodeTokens + t;
        const int64_t base = (slot_row * a.n_head + head) * a.n_chunks;
        float state_max = -INFINITY, l_state = 0.0f, o_state = 0.0f;
        for (int seg = j0; seg <= j1; seg += kMergeThreads) {
            const int n = min(kMergeThreads, j1 + 1 - seg);
            for (int i = tid; i < n * kMergeCols; i += kMergeThreads) {
                const int k = i / kMergeCols, c = i % kMergeCols;
                cp_async4(&part_s[k][c], a.part_o + (base + seg + k) * head_dim + (d - lane) + c);
            }
            cp_async_commit();
            float2 ml = make_float2(-INFINITY, 0.0f);
            if (tid < n) ml = *reinterpret_cast<const float2*>(a.part_ml + (base + seg + tid) * 2);
            float x = ml.x;  // inclusive prefix maximum over the segment
            for (int o = 1; o < 32; o <<= 1) {
                const float y = __shfl_up_sync(0xffffffffu, x, o);
                if (lane >= o) x = fmaxf(x, y);
            }
            if (lane == 31) warp_max_s[warp] = x;
            __syncthreads();
            for (int w = 0; w < warp; ++w) x = fmaxf(x, warp_max_s[w]);
            x = fmaxf(x, state_max);
            max_s[tid] = x;
            __syncthreads();
            const float prev_max = tid == 0 ? state_max : max_s[tid - 1];
            a_s[tid] = exp_approx(__fsub_rn(prev_max, x));
            b_s[tid] = exp_approx(__fsub_rn(ml.x, x));
            l_s[tid] = ml.y;
            cp_async_wait<0>();
            __syncthreads();
            if (warp == 0) {
                float o = o_state;
#pragma unroll 8
                for (int k = 0; k < n; ++k) {
                    const float chunk = part_s[k][lane];
                    o = seg + k == j0 ? chunk : fold_value(o, chunk, FoldStep{0.0f, a_s[k], b_s[k]});
                }
                o_state = o;
                for (int k = 0; k < n; ++k)
                    l_state = seg + k == j0 ? l_s[k] : fold_value(l_state, l_s[k], FoldStep{0.0f, a_s[k], b_s[k]});
            }
            state_max = max_s[n - 1];
            __syncthreads();  // the segment's weights and partials are read before the next one's are written
        }
        if (warp == 0) {  // a whole warp: head_dim is a multiple of 32
            const int64_t at = (row * a.n_head + head) * head_dim + d;
            const float x = __fdiv_rn(o_state, l_state);
            store_out<kQ8>(a, at, x);
            if constexpr (kQ8) detail::quantize_warp_block(x, at - lane, a.act);
        }
    }
}

template <int D, int R, int C, bool kDecode, bool kQ8, KvFormat kFormat>
cudaError_t launch(const Args& a, dim3 grid, cudaStream_t s) {
    using Cf = Config<D, R, C, kDecode, kFormat>;
    constexpr size_t bytes = Cf::smem_bytes();
    // Raising the shared-memory limit is done once per device, outside any
    // graph capture that may come later.
    static std::atomic<uint64_t> raised{0};
    int device = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    const uint64_t bit = uint64_t{1} << (device & 63);
    if (!(raised.load(std::memory_order_acquire) & bit)) {
        if (cudaError_t e = cudaFuncSetAttribute(attention_mma_kernel<D, R, C, kDecode, kQ8, kFormat>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
            e != cudaSuccess)
            return e;
        if (cudaError_t e = cudaFuncSetAttribute(attention_mma_kernel<D, R, C, kDecode, kQ8, kFormat>,
                                                 cudaFuncAttributePreferredSharedMemoryCarveout,
                                                 cudaSharedmemCarveoutMaxShared);
            e != cudaSuccess)
            return e;
        raised.fetch_or(bit, std::memory_order_release);
    }
    return detail::launch_overlapped_smem(detail::kPdlAttention, attention_mma_kernel<D, R, C, kDecode, kQ8, kFormat>, grid,
                                          dim3(Cf::kThreads), bytes, s, a);
}

// Prefill blocks: PR row groups of 16 rows, PC warps each.
template <int D, int PR, int PC, bool kQ8, KvFormat kFormat>
cudaError_t launch_kernels(Args a, const AttentionBatch& b, cudaStream_t s) {
    const int max_n_query = std::max(1, b.max_n_query);
    const unsigned seq_heads = static_cast<unsigned>(b.n_seqs * a.n_head_kv);
    const unsigned groups = static_cast<unsigned>((a.n_chunks + a.chunks_per_block - 1) / a.chunks_per_block);
    // Without a decode sequence (a prefill: 4.5 us a layer for the two empty launches) neither the decode
    // kernel nor the merge of its partials runs.
    const bool some_decode = b.min_n_query <= 0 || is_decode_sequence(b.min_n_query, a.group);
    if (cudaError_t e = some_decode ? launch<D, 1, 4, true, kQ8, kFormat>(a, dim3(groups, seq_heads), s) : cudaSuccess;
        e != cudaSuccess)
        return e;
    if (!is_decode_sequence(max_n_query, a.group)) {  // some sequence may have more rows
        a.tokens_per_tile = 16 * PR / a.group;
        const unsigned tiles = static_cast<unsigned>((max_n_query + a.tokens_per_tile - 1) / a.tokens_per_tile);
        // Longest first: the GPU starts blocks in order (x fastest), and a causal tile's work grows with
        // its index; in tile order the longest tiles of the last heads started last, behind the short ones
        // (8B pp512: 53 us a layer before).
        if (tiles > 65535) return cudaErrorInvalidValue;  // grid y
        if (cudaError_t e = launch<D, PR, PC, false, kQ8, kFormat>(a, dim3(seq_heads, tiles), s); e != cudaSuccess) return e;
    }
    if (some_decode && a.chunks_per_block < a.n_chunks) {
        const dim3 grid(static_cast<unsigned>(b.n_seqs), static_cast<unsigned>(a.n_head),
                        static_cast<unsigned>(D / kMergeCols));
        return detail::launch_overlapped(detail::kPdlAttention, merge_chunks_kernel<kQ8>, grid, dim3(kMergeThreads), s,
                                         a, D);
    }
    return cudaSuccess;
}

// The kQ8 instances write the Q8 copy of the output (only at the head sizes q8_in_kernel() allows).
template <int D, int PR, int PC, KvFormat kFormat>
cudaError_t launch_for_cache(const Args& a, const AttentionBatch& b, cudaStream_t s) {
    const bool q8 = a.act.format == static_cast<int>(ActivationFormat::Q8_0) ||
                    a.act.format == static_cast<int>(ActivationFormat::Q8_1);
    if constexpr (q8_in_kernel(D)) {
        if (q8) return launch_kernels<D, PR, PC, true, kFormat>(a, b, s);
    }
    return q8 ? cudaErrorInvalidValue : launch_kernels<D, PR, PC, false, kFormat>(a, b, s);
}
template <int D, int PR, int PC>
cudaError_t launch_for_dim(const Args& a, const AttentionBatch& b, cudaStream_t s) {
    switch (a.kv_format) {
        case KvFormat::Fp8: return launch_for_cache<D, PR, PC, KvFormat::Fp8>(a, b, s);
        case KvFormat::Q8_0: return launch_for_cache<D, PR, PC, KvFormat::Q8_0>(a, b, s);
        default: return launch_for_cache<D, PR, PC, KvFormat::F16>(a, b, s);
    }
}

}  // namespace

int attention_mma_chunks(const AttentionBatch& b) {
    return static_cast<int>((std::max(1, b.max_seq_len) + int64_t{kChunkKeys} - 1) / kChunkKeys);
}

size_t attention_mma_workspace_bytes(const AttentionBatch& b, int n_head, int head_dim) {
    const int n_chunks = attention_mma_chunks(b);
    if (n_chunks <= 1) return 0;
    const int64_t slot_rows = std::min<int64_t>(b.n_tokens, int64_t{kDecodeTokens} * b.n_seqs);
    return sizeof(float) * static_cast<size_t>(slot_rows) * static_cast<size_t>(n_head) *
           static_cast<size_t>(n_chunks) * static_cast<size_t>(head_dim + 2);
}

cudaError_t launch_attention_mma(Args a, int head_dim, const AttentionBatch& b, cudaStream_t s) {
    a.n_chunks = attention_mma_chunks(b);
    a.part_by_row = b.n_tokens <= int64_t{kDecodeTokens} * b.n_seqs;
    // Chunks per decode block: as many as still leave ~512 blocks (about a
    // wave at three blocks an SM), so that few rows need the merge. Only the
    // speed depends on it: a row's arithmetic is the same for any value.
    const int64_t units = int64_t{b.n_seqs} * a.n_head_kv;
    a.chunks_per_block = static_cast<int>(std::clamp<int64_t>(a.n_chunks * units / 512, 1, a.n_chunks));
    switch (head_dim) {
        case 64:
            return launch_for_dim<64, 4, 1>(a, b, s);
        case 128:  // 32-row prefill tiles of four warps a row group: faster than 64 rows of one warp (spills)
            return launch_for_dim<128, 2, 4>(a, b, s);
        case 256:
            return launch_for_dim<256, 2, 4>(a, b, s);
        default:
            return cudaErrorInvalidValue;
    }
}

}  // namespace folio::kernels::attention_detail
