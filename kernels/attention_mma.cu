// Paged attention on tensor cores (flash-attention 2 style): half Q, K, V
// operands of mma.sync m16n8k16 with F32 accumulation; scores, the online
// softmax and the outputs stay in registers.
//
// A block holds 16 * R query-head rows (R row groups of 16, a warp each) and
// KG warps per row group that split each key tile between them. Decode uses
// R = 1 (the group's heads of a few rows, padded to 16) and KG = 4 (2 at
// head_dim 256), so that four warps share a KV tile; prefill uses R = 4,
// KG = 1. Key tiles come through the block table into shared memory with
// cp.async, double-buffered. At the end the KG warps of a row group merge
// their (max, sum, output) in shared memory.
#include <algorithm>
#include <atomic>

#include "attention_common.cuh"

namespace folio::kernels::attention_detail {
namespace {

template <int D, int R, int KG>
struct Config {
    static constexpr int kWarps = R * KG;
    static constexpr int kThreads = 32 * kWarps;
    static constexpr int kTileKeys = D <= 128 ? 64 : 32;
    static constexpr int kWarpKeys = kTileKeys / KG;  // keys of a tile each warp takes
    static constexpr int kStride = D + 8;             // halves per smem row: conflict-free fragment loads
    static constexpr int kRows = 16 * R;
    static constexpr int kOutStride = D + 2;          // floats per row of the epilogue's partial outputs
    static constexpr size_t kKvBytes = sizeof(__half) * 2 * 2 * kTileKeys * kStride;  // K and V, two stages
    static constexpr size_t smem_bytes() {
        return sizeof(__half) * kRows * kStride + kKvBytes + sizeof(int) * 2 * kRows + sizeof(float) * 2 * kWarps * 16;
    }
    static_assert(kWarpKeys % 16 == 0, "a warp's keys are whole k16 steps of P·V");
    static_assert(sizeof(float) * kWarps * 16 * kOutStride <= kKvBytes, "epilogue reuses the K/V buffers");
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

template <int D, int R, int KG>
__global__ void __launch_bounds__(32 * R * KG) attention_mma_kernel(const Args a) {
    using C = Config<D, R, KG>;
    constexpr int TK = C::kTileKeys, KW = C::kWarpKeys, S = C::kStride, kRows = C::kRows;
    constexpr int kThreads = C::kThreads, OS = C::kOutStride;

    extern __shared__ __align__(16) unsigned char smem[];
    __half* q_s = reinterpret_cast<__half*>(smem);  // [kRows][S]
    __half* k_s = q_s + kRows * S;                   // [2][TK][S]
    __half* v_s = k_s + 2 * TK * S;                  // [2][TK][S]
    int* key_lo = reinterpret_cast<int*>(v_s + 2 * TK * S);
    int* key_hi = key_lo + kRows;
    float* m_w = reinterpret_cast<float*>(key_hi + kRows);  // [warp][16] after the loop
    float* l_w = m_w + C::kWarps * 16;
    float* o_w = reinterpret_cast<float*>(k_s);  // [warp][16][OS] after the loop, over K/V
    __shared__ int tile_lo, tile_hi;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int gq = lane / 4, tq = lane % 4;  // fragment row and column pair of this lane
    const int rg = warp / KG, kg = warp % KG;
    const int seq = blockIdx.y / a.n_head_kv, kv_head = blockIdx.y % a.n_head_kv;
    const int t0 = blockIdx.x * a.tokens_per_tile;
    const int n_query = a.n_query[seq];
    if (t0 >= n_query) return;
    const int row0 = a.query_start[seq] + t0;
    const int n_active = min(a.tokens_per_tile, n_query - t0) * a.group;
    const int split_lo = blockIdx.z * a.keys_per_split, split_hi = split_lo + a.keys_per_split - 1;

    // Each row's keys within this split (causal, windowed); the block's key
    // range is their union.
    if (tid == 0) tile_lo = 0x7fffffff, tile_hi = -1;
    __syncthreads();
    bool reaches_split = false;
    for (int m = tid; m < kRows; m += kThreads) {
        int lo = 1, hi = 0;
        if (m < n_active) {
            const int pos = a.positions[row0 + m / a.group];
            lo = max(split_lo, a.window > 0 ? max(0, pos + 1 - a.window) : 0);
            hi = min(split_hi, pos);
            reaches_split = pos >= split_lo;
            if (lo <= hi) atomicMin(&tile_lo, lo), atomicMax(&tile_hi, hi);
        }
        key_lo[m] = lo;
        key_hi[m] = hi;
    }
    // No row of this tile reaches this split: the merge won't read it.
    if (!__syncthreads_or(reaches_split)) return;

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

    const int lo_all = tile_lo, hi_all = tile_hi;
    const int n_tiles = hi_all >= lo_all ? (hi_all - lo_all + TK) / TK : 0;
    const int32_t* table = a.block_tables + int64_t{seq} * a.max_blocks;

    auto load_tile = [&](int t, int buf) {
        constexpr int kChunks = D / 8;  // 16-byte pieces of a key row
        constexpr int kPerThread = TK * kChunks / kThreads;
        static_assert(TK * kChunks % kThreads == 0);
        const int first_key = lo_all + t * TK;
        int64_t src[kPerThread];
#pragma unroll
        for (int it = 0; it < kPerThread; ++it) {  // the table look-ups first: their latencies overlap
            const int c = tid + it * kThreads, key = min(first_key + c / kChunks, hi_all);
            const int64_t block = table[key / a.block_size];
            src[it] = ((block * a.n_head_kv + kv_head) * a.block_size + key % a.block_size) * D + (c % kChunks) * 8;
        }
#pragma unroll
        for (int it = 0; it < kPerThread; ++it) {
            const int c = tid + it * kThreads;
            const int j = c / kChunks, part = c % kChunks;
            __half* k_dst = k_s + (buf * TK + j) * S + part * 8;
            __half* v_dst = v_s + (buf * TK + j) * S + part * 8;
            if (first_key + j <= hi_all) {
                cp_async16(k_dst, a.k + src[it]);
                cp_async16(v_dst, a.v + src[it]);
            } else {  // past the range: zeros, so that 0-weight keys add 0, never NaN
                *reinterpret_cast<uint4*>(k_dst) = make_uint4(0, 0, 0, 0);
                *reinterpret_cast<uint4*>(v_dst) = make_uint4(0, 0, 0, 0);
            }
        }
        cp_async_commit();
    };

    // This lane's two rows (gq and gq + 8 of the warp's row group).
    const int r_a = rg * 16 + gq, r_b = r_a + 8;
    const int lo_a = key_lo[r_a], hi_a = key_hi[r_a], lo_b = key_lo[r_b], hi_b = key_hi[r_b];
    const bool warp_active = rg * 16 < n_active;
    float o[D / 8][4];
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
    float m_row[2] = {-INFINITY, -INFINITY};
    float l_row[2] = {0.0f, 0.0f};  // this lane's share of the row sums

    if (n_tiles > 0) load_tile(0, 0);
    for (int t = 0; t < n_tiles; ++t) {
        const int buf = t & 1;
        if (t + 1 < n_tiles) {
            load_tile(t + 1, buf ^ 1);
        } else {
            cp_async_commit();  // an empty group keeps the wait count uniform
        }
        cp_async_wait<1>();
        __syncthreads();

        if (warp_active) {
            const __half* qb = q_s + rg * 16 * S;
            const __half* kb = k_s + (buf * TK + kg * KW) * S;
            const __half* vb = v_s + (buf * TK + kg * KW) * S;

            // S = Q · Kᵀ for the warp's 16 rows and KW keys.
            float s[KW / 8][4];
#pragma unroll
            for (int nt = 0; nt < KW / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < D / 16; ++ks) {
                uint32_t qa[4];
                qa[0] = *reinterpret_cast<const uint32_t*>(qb + gq * S + ks * 16 + 2 * tq);
                qa[1] = *reinterpret_cast<const uint32_t*>(qb + (gq + 8) * S + ks * 16 + 2 * tq);
                qa[2] = *reinterpret_cast<const uint32_t*>(qb + gq * S + ks * 16 + 2 * tq + 8);
                qa[3] = *reinterpret_cast<const uint32_t*>(qb + (gq + 8) * S + ks * 16 + 2 * tq + 8);
#pragma unroll
                for (int nt = 0; nt < KW / 8; ++nt) {
                    const __half* k_row = kb + (nt * 8 + gq) * S + ks * 16 + 2 * tq;
                    mma_16816(s[nt], qa, *reinterpret_cast<const uint32_t*>(k_row),
                              *reinterpret_cast<const uint32_t*>(k_row + 8));
                }
            }

            // Scale, softcap, mask; the tile's row maxima (a row's values sit in one lane quad).
            const int key_base = lo_all + t * TK + kg * KW;
            float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int nt = 0; nt < KW / 8; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = key_base + nt * 8 + 2 * tq + (e & 1);
                    float x = s[nt][e] * a.scale;
                    if (a.softcap > 0.0f) x = a.softcap * tanhf(x / a.softcap);
                    const bool in_range = e < 2 ? key >= lo_a && key <= hi_a : key >= lo_b && key <= hi_b;
                    s[nt][e] = in_range ? x : -INFINITY;
                    tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[nt][e]);
                }
            float rescale[2];
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
                tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
                const float m_new = fmaxf(m_row[r], tile_max[r]);
                rescale[r] = m_new == -INFINITY ? 1.0f : expf(m_row[r] - m_new);
                m_row[r] = m_new;
                l_row[r] *= rescale[r];
            }
#pragma unroll
            for (int nt = 0; nt < KW / 8; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const float m = m_row[e >> 1];
                    const float p = m == -INFINITY ? 0.0f : expf(s[nt][e] - m);
                    l_row[e >> 1] += p;
                    s[nt][e] = p;
                }
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt) {
                o[dt][0] *= rescale[0];
                o[dt][1] *= rescale[0];
                o[dt][2] *= rescale[1];
                o[dt][3] *= rescale[1];
            }

            // O += P · V: P (rounded to half) is the A operand straight from the score registers.
            const int mat = lane >> 3, mat_row = lane & 7;
#pragma unroll
            for (int kk = 0; kk < KW / 16; ++kk) {
                const uint32_t pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                                        pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                        pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
                const __half* v_rows = vb + (kk * 16 + mat_row + (mat & 1) * 8) * S + (mat >> 1) * 8;
#pragma unroll
                for (int dt = 0; dt < D / 8; dt += 2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, v_rows + dt * 8);
                    mma_16816(o[dt], pa, b[0], b[1]);
                    mma_16816(o[dt + 1], pa, b[2], b[3]);
                }
            }
        }
        __syncthreads();
    }
    cp_async_wait<0>();
    __syncthreads();  // the K/V buffers become the epilogue's

    // Each warp's partial (max, sum, output) to shared memory.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l_row[r] += __shfl_xor_sync(0xffffffffu, l_row[r], 1);
        l_row[r] += __shfl_xor_sync(0xffffffffu, l_row[r], 2);
    }
    float* ow = o_w + warp * 16 * OS;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
        *reinterpret_cast<float2*>(ow + gq * OS + dt * 8 + 2 * tq) = make_float2(o[dt][0], o[dt][1]);
        *reinterpret_cast<float2*>(ow + (gq + 8) * OS + dt * 8 + 2 * tq) = make_float2(o[dt][2], o[dt][3]);
    }
    if (tq == 0) {
        m_w[warp * 16 + gq] = m_row[0];
        m_w[warp * 16 + gq + 8] = m_row[1];
        l_w[warp * 16 + gq] = l_row[0];
        l_w[warp * 16 + gq + 8] = l_row[1];
    }
    __syncthreads();

    // Merge the KG warps of each row group; write the rows out (or this split's partials).
    for (int pair = tid; pair < kRows * D / 2; pair += kThreads) {
        const int m = pair * 2 / D, d = pair * 2 % D;
        if (m >= n_active) continue;
        const int group_row = m % 16, first_warp = (m / 16) * KG;
        float m_max = -INFINITY;
#pragma unroll
        for (int k = 0; k < KG; ++k) m_max = fmaxf(m_max, m_w[(first_warp + k) * 16 + group_row]);
        float sum = 0.0f, o0 = 0.0f, o1 = 0.0f;
#pragma unroll
        for (int k = 0; k < KG; ++k) {
            const int at = (first_warp + k) * 16 + group_row;
            const float w = m_w[at] == -INFINITY ? 0.0f : expf(m_w[at] - m_max);
            const float2 part = *reinterpret_cast<const float2*>(o_w + at * OS + d);
            sum += l_w[at] * w;
            o0 += part.x * w;
            o1 += part.y * w;
        }
        const int64_t row = row0 + m / a.group;
        const int head = kv_head * a.group + m % a.group;
        if (a.n_splits == 1) {
            const float inv = 1.0f / sum;
            *reinterpret_cast<float2*>(a.out + (row * a.n_head + head) * D + d) = make_float2(o0 * inv, o1 * inv);
        } else {
            const int64_t at = (int64_t{blockIdx.z} * a.n_tokens + row) * a.n_head + head;
            *reinterpret_cast<float2*>(a.part_o + at * D + d) = make_float2(o0, o1);
            if (d == 0) *reinterpret_cast<float2*>(a.part_ml + at * 2) = make_float2(m_max, sum);
        }
    }
}

template <int D, int R, int KG>
cudaError_t launch(Args a, int max_n_query, int n_seqs, int split_count, cudaStream_t s) {
    using C = Config<D, R, KG>;
    constexpr size_t bytes = C::smem_bytes();
    // Raising the shared-memory limit is done once per device, outside any
    // graph capture that may come later.
    static std::atomic<uint64_t> raised{0};
    int device = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    const uint64_t bit = uint64_t{1} << (device & 63);
    if (!(raised.load(std::memory_order_acquire) & bit)) {
        if (cudaError_t e = cudaFuncSetAttribute(attention_mma_kernel<D, R, KG>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
            e != cudaSuccess)
            return e;
        if (cudaError_t e = cudaFuncSetAttribute(attention_mma_kernel<D, R, KG>,
                                                 cudaFuncAttributePreferredSharedMemoryCarveout,
                                                 cudaSharedmemCarveoutMaxShared);
            e != cudaSuccess)
            return e;
        raised.fetch_or(bit, std::memory_order_release);
    }
    a.tokens_per_tile = C::kRows / a.group;
    const dim3 grid(static_cast<unsigned>((std::max(1, max_n_query) + a.tokens_per_tile - 1) / a.tokens_per_tile),
                    static_cast<unsigned>(n_seqs * a.n_head_kv), static_cast<unsigned>(split_count));
    attention_mma_kernel<D, R, KG><<<grid, C::kThreads, bytes, s>>>(a);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_attention_mma(Args a, int head_dim, int max_n_query, int n_seqs, int split_count,
                                 cudaStream_t s) {
    // Decode (a few rows per sequence): one row group, warps split the keys.
    const bool decode = std::max(1, max_n_query) * a.group <= 16;
    switch (head_dim) {
        case 64:
            return decode ? launch<64, 1, 4>(a, max_n_query, n_seqs, split_count, s)
                          : launch<64, 4, 1>(a, max_n_query, n_seqs, split_count, s);
        case 128:
            return decode ? launch<128, 1, 4>(a, max_n_query, n_seqs, split_count, s)
                          : launch<128, 4, 1>(a, max_n_query, n_seqs, split_count, s);
        case 256:
            return decode ? launch<256, 1, 2>(a, max_n_query, n_seqs, split_count, s)
                          : launch<256, 4, 1>(a, max_n_query, n_seqs, split_count, s);
        default:
            return cudaErrorInvalidValue;
    }
}

}  // namespace folio::kernels::attention_detail
