// Paged attention over the flat batch (decode rows and prefill chunks of
// several sequences in one launch): the split-K planning, the launch, the
// merge of split-K partials, and a flash-attention kernel on CUDA cores (the
// tensor-core kernel is attention_mma.cu; this one stays as a cross-check).
//
// A block takes one sequence, one KV head and a tile of that sequence's query
// rows: every query head of the KV head's group for each of those rows (GQA:
// the group shares each K/V tile read), and one split of the keys. Key tiles
// are gathered through the block table into shared memory with cp.async,
// double-buffered; scores, an online softmax and the P·V update follow per
// tile. Long prefixes are split over several blocks (flash-decoding) whose
// partial (max, sum, output) a second kernel merges.
//
// Rounding follows the CPU backend: the query is rounded to half (K and V are
// half in the cache), scores and sums are F32, and probabilities are rounded
// to half before they weight V.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>

#include <cuda_fp16.h>

#include "activation_quant.cuh"
#include "attention_common.cuh"
#include "folio_kernels/attention.h"
#include "folio_kernels/check.h"

namespace folio::kernels {
using namespace attention_detail;
namespace {

constexpr int kThreads = 128;  // four warps per block

template <int D>
struct TileShape {
    static constexpr int kKeys = D <= 128 ? 64 : 32;  // keys per tile: 16 KB of K and 16 KB of V at D=128
    static constexpr int kPrefillRows = D <= 64 ? 64 : 32;
    static constexpr int kKeyStride = D + 8;  // halves per smem key row: padding avoids bank conflicts
    static constexpr int kScoreStride = kKeys + 4;
};

template <int D, int Rows>
constexpr size_t smem_bytes() {
    using T = TileShape<D>;
    return sizeof(float) * Rows * D                                  // queries
           + sizeof(__half) * 2 * 2 * T::kKeys * T::kKeyStride       // K and V, two stages
           + sizeof(float) * Rows * T::kScoreStride                  // scores / probabilities
           + sizeof(float) * Rows * 3 + sizeof(int) * Rows * 2;      // running max, sum, rescale; key range
}

struct Split {
    int n = 1;               // splits of the key range
    int keys_per_split = 0;  // multiple of 64
};

// How many blocks share one row's keys. Enough blocks to fill the GPU several
// times over, but no split shorter than 128 keys. Depends only on what
// attention_workspace_bytes is given, so both agree.
Split plan_split(const AttentionBatch& b, int n_head) {
    Split s;
    const int64_t len = std::max<int64_t>(1, b.max_seq_len);
    const int64_t units = std::max<int64_t>(1, int64_t{b.n_seqs} * n_head * ((std::max(1, b.max_n_query) + 15) / 16));
    const int64_t by_len = std::max<int64_t>(1, (len + 127) / 128);
    const int64_t n = std::clamp<int64_t>((2048 + units - 1) / units, 1, by_len);
    s.keys_per_split = static_cast<int>(((len + n - 1) / n + 63) / 64 * 64);
    s.n = static_cast<int>((len + s.keys_per_split - 1) / s.keys_per_split);
    return s;
}

// Rows of a block are (query row, head of the group) pairs: row m is token
// m / group of the tile, head kv_head * group + m % group.
template <int D, int Rows>
__global__ void __launch_bounds__(kThreads) attention_kernel(const Args a) {
    using T = TileShape<D>;
    constexpr int TK = T::kKeys, KS = T::kKeyStride, SS = T::kScoreStride;
    constexpr int kScoreGroups = kThreads / TK;       // threads per key in the score phase
    constexpr int kScoreRows = Rows / kScoreGroups;   // rows per thread there
    constexpr int kOutGroups = kThreads / (D / 2);    // a thread owns two output columns...
    constexpr int kOutRows = Rows / kOutGroups;       // ...of this many rows
    static_assert(Rows % kScoreGroups == 0 && Rows % kOutGroups == 0 && TK % 32 == 0);

    extern __shared__ __align__(16) unsigned char smem[];
    float* q_s = reinterpret_cast<float*>(smem);
    __half* k_s = reinterpret_cast<__half*>(q_s + Rows * D);
    __half* v_s = k_s + 2 * TK * KS;
    float* s_s = reinterpret_cast<float*>(v_s + 2 * TK * KS);
    float* m_run = s_s + Rows * SS;
    float* l_run = m_run + Rows;
    float* alpha = l_run + Rows;
    int* key_lo = reinterpret_cast<int*>(alpha + Rows);
    int* key_hi = key_lo + Rows;
    __shared__ int tile_lo, tile_hi;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int seq = blockIdx.y / a.n_head_kv, kv_head = blockIdx.y % a.n_head_kv;
    const int t0 = blockIdx.x * a.tokens_per_tile;
    const int n_query = a.n_query[seq];
    if (t0 >= n_query) return;
    const int row0 = a.query_start[seq] + t0;
    const int n_active = min(a.tokens_per_tile, n_query - t0) * a.group;
    const int split_lo = blockIdx.z * a.keys_per_split, split_hi = split_lo + a.keys_per_split - 1;

    // Each row's keys within this split: causal, windowed; the block's key
    // range is their union.
    if (tid == 0) tile_lo = 0x7fffffff, tile_hi = -1;
    __syncthreads();
    bool reaches_split = false;
    for (int m = tid; m < Rows; m += kThreads) {
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
        m_run[m] = -INFINITY;
        l_run[m] = 0.0f;
    }
    // No row of this tile reaches this split: the merge won't read it.
    if (!__syncthreads_or(reaches_split)) return;

    // Queries, rounded to half; rows past the tile's last token are zeros.
    constexpr int kQuads = Rows * D / 4;
#pragma unroll
    for (int it = 0; it < (kQuads + kThreads - 1) / kThreads; ++it) {
        const int quad = tid + it * kThreads;
        if (quad >= kQuads) break;
        const int i = quad * 4, m = i / D, d = i % D;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (m < n_active) {
            const int head = kv_head * a.group + m % a.group;
            x = *reinterpret_cast<const float4*>(a.q + (int64_t{row0} + m / a.group) * a.n_head * D + head * D + d);
            x.x = __half2float(__float2half_rn(x.x));
            x.y = __half2float(__float2half_rn(x.y));
            x.z = __half2float(__float2half_rn(x.z));
            x.w = __half2float(__float2half_rn(x.w));
        }
        *reinterpret_cast<float4*>(q_s + i) = x;
    }

    const int lo_all = tile_lo, hi_all = tile_hi;
    const int n_tiles = hi_all >= lo_all ? (hi_all - lo_all + TK) / TK : 0;
    const int32_t* table = a.block_tables + int64_t{seq} * a.max_blocks;

    auto load_tile = [&](int t, int buf) {
        constexpr int kChunks = D / 8;  // 16-byte pieces of a key row
        constexpr int kPerThread = TK * kChunks / kThreads;
        static_assert(TK * kChunks % kThreads == 0);
        const int first_key = lo_all + t * TK;
        // All table look-ups first, so that their latencies overlap.
        int64_t src[kPerThread];
#pragma unroll
        for (int it = 0; it < kPerThread; ++it) {
            const int c = tid + it * kThreads, key = min(first_key + c / kChunks, hi_all);
            const int64_t block = table[key / a.block_size];
            src[it] = ((block * a.n_head_kv + kv_head) * a.block_size + key % a.block_size) * D + (c % kChunks) * 8;
        }
#pragma unroll
        for (int it = 0; it < kPerThread; ++it) {
            const int c = tid + it * kThreads;
            const int j = c / kChunks, part = c % kChunks;
            __half* k_dst = k_s + (buf * TK + j) * KS + part * 8;
            __half* v_dst = v_s + (buf * TK + j) * KS + part * 8;
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

    // Rows are handled in groups of up to 8 whose first row decides (uniformly
    // across the warp) whether the group has work: a decode sequence in a
    // prefill-sized tile skips the empty groups.
    constexpr int kGroup = 8;
    constexpr int kAccSplit = Rows <= 8 ? 2 : 1;  // independent partial sums when rows are few
    float o[kOutRows][2][kAccSplit];
#pragma unroll
    for (int i = 0; i < kOutRows; ++i)
#pragma unroll
        for (int u = 0; u < kAccSplit; ++u) o[i][0][u] = o[i][1][u] = 0.0f;

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

        {  // scores: thread (key j, row group g) for rows g, g + kScoreGroups, ...
            const int j = tid % TK, g = tid / TK, key = lo_all + t * TK + j;
            const __half* k_row = k_s + (buf * TK + j) * KS;
            float acc[kScoreRows][2];
#pragma unroll
            for (int i = 0; i < kScoreRows; ++i) acc[i][0] = acc[i][1] = 0.0f;
#pragma unroll
            for (int i0 = 0; i0 < kScoreRows; i0 += kGroup) {
                if (g + kScoreGroups * i0 >= n_active) break;
#pragma unroll 2
                for (int c = 0; c < D / 8; ++c) {
                    const uint4 raw = *reinterpret_cast<const uint4*>(k_row + c * 8);
                    const float2 k0 = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
                    const float2 k1 = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
                    const float2 k2 = __half22float2(*reinterpret_cast<const __half2*>(&raw.z));
                    const float2 k3 = __half22float2(*reinterpret_cast<const __half2*>(&raw.w));
#pragma unroll
                    for (int i = i0; i < i0 + kGroup && i < kScoreRows; ++i) {
                        const int m = g + kScoreGroups * i;
                        const float4 qa = *reinterpret_cast<const float4*>(q_s + m * D + c * 8);
                        const float4 qb = *reinterpret_cast<const float4*>(q_s + m * D + c * 8 + 4);
                        acc[i][0] += qa.x * k0.x + qa.y * k0.y + qa.z * k1.x + qa.w * k1.y;
                        acc[i][1] += qb.x * k2.x + qb.y * k2.y + qb.z * k3.x + qb.w * k3.y;
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < kScoreRows; ++i) {
                const int m = g + kScoreGroups * i;
                float s = (acc[i][0] + acc[i][1]) * a.scale;
                if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
                if (key < key_lo[m] || key > key_hi[m]) s = -INFINITY;
                s_s[m * SS + j] = s;
            }
        }
        __syncthreads();

        // Online softmax, a warp per row.
        for (int m = warp; m < Rows; m += kThreads / 32) {
            if (m >= n_active) {  // no keys: zero weights, outputs stay 0
#pragma unroll
                for (int u = 0; u < TK / 32; ++u) s_s[m * SS + lane + 32 * u] = 0.0f;
                if (lane == 0) alpha[m] = 1.0f;
                continue;
            }
            float s[TK / 32];
            float tile_max = -INFINITY;
#pragma unroll
            for (int u = 0; u < TK / 32; ++u) tile_max = fmaxf(tile_max, s[u] = s_s[m * SS + lane + 32 * u]);
            tile_max = warp_max(tile_max);
            const float m_old = m_run[m], m_new = fmaxf(m_old, tile_max);
            float sum = 0.0f;
#pragma unroll
            for (int u = 0; u < TK / 32; ++u) {
                const float p = m_new == -INFINITY ? 0.0f : expf(s[u] - m_new);
                sum += p;
                s_s[m * SS + lane + 32 * u] = __half2float(__float2half_rn(p));
            }
            sum = warp_sum(sum);
            if (lane == 0) {
                const float rescale = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);
                alpha[m] = rescale;
                l_run[m] = l_run[m] * rescale + sum;
                m_run[m] = m_new;
            }
        }
        __syncthreads();

        {  // o = o * alpha + P · V: thread (column pair c, row group g)
            const int c = tid % (D / 2), g = tid / (D / 2);
#pragma unroll
            for (int i = 0; i < kOutRows; ++i) {
                const float r = alpha[g + kOutGroups * i];
#pragma unroll
                for (int u = 0; u < kAccSplit; ++u) o[i][0][u] *= r, o[i][1][u] *= r;
            }
            const __half* v_col = v_s + buf * TK * KS + 2 * c;
#pragma unroll
            for (int i0 = 0; i0 < kOutRows; i0 += kGroup) {
                if (g + kOutGroups * i0 >= n_active) break;
#pragma unroll 2
                for (int j = 0; j < TK; j += 4) {
                    float2 vv[4];
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        vv[u] = __half22float2(*reinterpret_cast<const __half2*>(v_col + (j + u) * KS));
#pragma unroll
                    for (int i = i0; i < i0 + kGroup && i < kOutRows; ++i) {
                        const int m = g + kOutGroups * i;
                        const float4 p = *reinterpret_cast<const float4*>(s_s + m * SS + j);
                        if constexpr (kAccSplit == 2) {
                            o[i][0][0] += p.x * vv[0].x + p.y * vv[1].x;
                            o[i][0][1] += p.z * vv[2].x + p.w * vv[3].x;
                            o[i][1][0] += p.x * vv[0].y + p.y * vv[1].y;
                            o[i][1][1] += p.z * vv[2].y + p.w * vv[3].y;
                        } else {
                            o[i][0][0] += p.x * vv[0].x + p.y * vv[1].x + p.z * vv[2].x + p.w * vv[3].x;
                            o[i][1][0] += p.x * vv[0].y + p.y * vv[1].y + p.z * vv[2].y + p.w * vv[3].y;
                        }
                    }
                }
            }
        }
        __syncthreads();
    }
    cp_async_wait<0>();

    const int c = tid % (D / 2), g = tid / (D / 2);
#pragma unroll
    for (int i = 0; i < kOutRows; ++i) {
        const int m = g + kOutGroups * i;
        if (m >= n_active) continue;
        float o0 = 0.0f, o1 = 0.0f;
#pragma unroll
        for (int u = 0; u < kAccSplit; ++u) o0 += o[i][0][u], o1 += o[i][1][u];
        const int64_t row = row0 + m / a.group;
        const int head = kv_head * a.group + m % a.group;
        if (a.n_splits == 1) {
            const float inv = 1.0f / l_run[m];
            *reinterpret_cast<float2*>(a.out + (row * a.n_head + head) * D + 2 * c) =
                make_float2(o0 * inv, o1 * inv);
        } else {
            const int64_t at = (int64_t{blockIdx.z} * a.n_tokens + row) * a.n_head + head;
            *reinterpret_cast<float2*>(a.part_o + at * D + 2 * c) = make_float2(o0, o1);
            if (c == 0) *reinterpret_cast<float2*>(a.part_ml + at * 2) = make_float2(m_run[m], l_run[m]);
        }
    }
}

// Merges the splits of each (row, head): the splits up to the one holding the
// row's own position were written (the others hold nothing for it).
__global__ void __launch_bounds__(256) merge_splits_kernel(const float* part_o, const float* part_ml,
                                                           const int32_t* positions, int n_tokens, int n_head,
                                                           int head_dim, int keys_per_split, int n_splits,
                                                           float* out) {
    const int64_t row = blockIdx.x;
    const int head = blockIdx.y;
    const int n = min(n_splits, positions[row] / keys_per_split + 1);
    float m_max = -INFINITY;
    for (int j = 0; j < n; ++j) m_max = fmaxf(m_max, part_ml[((int64_t{j} * n_tokens + row) * n_head + head) * 2]);
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float sum = 0.0f, acc = 0.0f;
        for (int j = 0; j < n; ++j) {
            const int64_t at = (int64_t{j} * n_tokens + row) * n_head + head;
            const float m = part_ml[at * 2], l = part_ml[at * 2 + 1];
            const float w = m == -INFINITY ? 0.0f : expf(m - m_max);
            sum += l * w;
            acc += part_o[at * head_dim + d] * w;
        }
        out[(row * n_head + head) * head_dim + d] = acc / sum;
    }
}

template <int D, int Rows>
cudaError_t launch_attention(const Args& a, dim3 grid, cudaStream_t s) {
    constexpr size_t bytes = smem_bytes<D, Rows>();
    // Raising the shared-memory limit is done once per device, outside any
    // graph capture that may come later.
    static std::atomic<uint64_t> raised{0};
    int device = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    const uint64_t bit = uint64_t{1} << (device & 63);
    if (!(raised.load(std::memory_order_acquire) & bit)) {
        const cudaError_t e = cudaFuncSetAttribute(attention_kernel<D, Rows>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
        if (e != cudaSuccess) return e;
        const cudaError_t c = cudaFuncSetAttribute(attention_kernel<D, Rows>,
                                                   cudaFuncAttributePreferredSharedMemoryCarveout,
                                                   cudaSharedmemCarveoutMaxShared);
        if (c != cudaSuccess) return c;
        raised.fetch_or(bit, std::memory_order_release);
    }
    attention_kernel<D, Rows><<<grid, kThreads, bytes, s>>>(a);
    return cudaGetLastError();
}

// Rows per block: the whole group of one decode row (4 or 8), else a prefill tile.
template <int D>
cudaError_t launch_for_dim(Args a, const AttentionBatch& b, int split_count, cudaStream_t s) {
    const int decode_rows = std::max(1, b.max_n_query) * a.group;
    const int rows = decode_rows <= 4 ? 4 : decode_rows <= 8 ? 8 : TileShape<D>::kPrefillRows;
    a.tokens_per_tile = rows / a.group;
    const dim3 grid(static_cast<unsigned>((std::max(1, b.max_n_query) + a.tokens_per_tile - 1) / a.tokens_per_tile),
                    static_cast<unsigned>(b.n_seqs * a.n_head_kv), static_cast<unsigned>(split_count));
    if (rows == 4) return launch_attention<D, 4>(a, grid, s);
    if (rows == 8) return launch_attention<D, 8>(a, grid, s);
    return launch_attention<D, TileShape<D>::kPrefillRows>(a, grid, s);
}

// FOLIO_ATTENTION_KERNEL=simt selects the CUDA-core kernel above instead of
// the tensor-core one (attention_mma.cu): a cross-check when debugging.
bool use_simt_kernel() {
    static const bool simt = [] {
        const char* v = std::getenv("FOLIO_ATTENTION_KERNEL");
        return v && std::string(v) == "simt";
    }();
    return simt;
}

}  // namespace

size_t attention_workspace_bytes(const AttentionBatch& b, int n_head, int head_dim) {
    if (!use_simt_kernel()) return attention_mma_workspace_bytes(b, n_head, head_dim);
    const Split split = plan_split(b, n_head);
    if (split.n <= 1) return 0;
    return sizeof(float) * static_cast<size_t>(split.n) * static_cast<size_t>(b.n_tokens) *
           static_cast<size_t>(n_head) * static_cast<size_t>(head_dim + 2);
}

cudaError_t paged_attention(const float* q, const PagedKvLayer& kv, const AttentionBatch& b, const AttentionParams& p,
                            float* out, void* workspace, size_t workspace_bytes, cudaStream_t s,
                            const ActivationQuant& act) {
    if (b.n_tokens <= 0 || b.n_seqs <= 0) return cudaSuccess;
    const int d = kv.head_dim;
    if ((d != 64 && d != 128 && d != 256) || kv.n_head_kv <= 0 || p.n_head <= 0 || p.n_head % kv.n_head_kv != 0 ||
        p.n_head / kv.n_head_kv > 8 || kv.block_size <= 0 || !kv.k || !kv.v || b.max_seq_len <= 0 ||
        int64_t{b.n_seqs} * kv.n_head_kv > 65535)
        return cudaErrorInvalidValue;
    if (kv.format != KvFormat::F16 && (kv.block_size % 16 != 0 || use_simt_kernel()))
        return cudaErrorInvalidValue;  // the CUDA-core kernel reads half caches only
    const size_t needed = attention_workspace_bytes(b, p.n_head, d);
    if (workspace_bytes < needed || (needed > 0 && !workspace)) return cudaErrorInvalidValue;

    Args a{};
    a.q = q;
    a.out = out;
    a.k = static_cast<const __half*>(kv.k);
    a.v = static_cast<const __half*>(kv.v);
    a.kv_block_bytes = static_cast<int64_t>(kv.block_bytes());
    a.kv_format = kv.format;
    a.positions = b.positions;
    a.query_start = b.query_start;
    a.n_query = b.n_query;
    a.block_tables = b.block_tables;
    a.n_head = p.n_head;
    a.n_head_kv = kv.n_head_kv;
    a.group = p.n_head / kv.n_head_kv;
    a.block_size = kv.block_size;
    a.max_blocks = b.max_blocks;
    a.n_tokens = b.n_tokens;
    a.window = std::max(0, p.sliding_window);
    a.scale = p.scale;
    a.softcap = p.softcap;

    if (act.format != ActivationFormat::None && !act.workspace) return cudaErrorInvalidValue;
    const bool fused_act = act.format == ActivationFormat::F16 || act.format == ActivationFormat::BF16;
    const int64_t out_count = int64_t{b.n_tokens} * p.n_head * d;
    if (!use_simt_kernel()) {
        if (needed > 0) {
            const size_t values = needed / sizeof(float);
            a.part_o = static_cast<float*>(workspace);
            a.part_ml = a.part_o + values / static_cast<size_t>(d + 2) * static_cast<size_t>(d);
        }
        const bool in_kernel = fused_act || q8_in_kernel(d);
        if (in_kernel && act.format != ActivationFormat::None) a.act = detail::activation_blocks(act, out_count);
        FOLIO_CUDA_TRY(launch_attention_mma(a, d, b, s));
        return in_kernel || act.format == ActivationFormat::None ? cudaSuccess
                                                                 : detail::quantize_activations(out, out_count, act, s);
    }

    // The CUDA-core kernel (a cross-check; its split plan depends on the batch, so it is not batch-invariant).
    const Split split = plan_split(b, p.n_head);
    a.keys_per_split = split.keys_per_split;
    a.n_splits = split.n;
    if (split.n > 1) {
        a.part_o = static_cast<float*>(workspace);
        a.part_ml = a.part_o + static_cast<size_t>(split.n) * b.n_tokens * p.n_head * d;
    }
    cudaError_t e = d == 64    ? launch_for_dim<64>(a, b, split.n, s)
                    : d == 128 ? launch_for_dim<128>(a, b, split.n, s)
                               : launch_for_dim<256>(a, b, split.n, s);
    if (e == cudaSuccess && split.n > 1) {
        merge_splits_kernel<<<dim3(static_cast<unsigned>(b.n_tokens), static_cast<unsigned>(p.n_head)),
                              std::min(d, 256), 0, s>>>(a.part_o, a.part_ml, b.positions, b.n_tokens, p.n_head, d,
                                                        split.keys_per_split, split.n, out);
        e = cudaGetLastError();
    }
    if (e != cudaSuccess || act.format == ActivationFormat::None) return e;
    return detail::quantize_activations(out, out_count, act, s);
}

}  // namespace folio::kernels
