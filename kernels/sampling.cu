#include "folio_kernels/sampling.h"

#include "sampler_weight.cuh"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

namespace folio::kernels {
namespace {

using detail::sampler_weight;

constexpr int kThreads = 1024;

// Whether (v, i) beats (best, at): larger, or equal with a lower id.
__device__ bool beats(float v, int64_t i, float best, int64_t at) { return v > best || (v == best && i < at); }

__global__ void __launch_bounds__(kThreads) argmax_rows_kernel(const float* x, int64_t n_cols, int32_t* out) {
    const float* row = x + int64_t{blockIdx.x} * n_cols;
    float best = -INFINITY;
    int64_t at = LLONG_MAX;
    for (int64_t i = threadIdx.x; i < n_cols; i += kThreads) {
        const float v = row[i];  // NaN compares false: never taken
        if (beats(v, i, best, at)) best = v, at = i;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        const float v = __shfl_down_sync(0xffffffffu, best, offset);
        const int64_t i = __shfl_down_sync(0xffffffffu, at, offset);
        if (beats(v, i, best, at)) best = v, at = i;
    }
    __shared__ float warp_best[kThreads / 32];
    __shared__ int64_t warp_at[kThreads / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_best[warp] = best, warp_at[warp] = at;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < kThreads / 32; ++w)
            if (beats(warp_best[w], warp_at[w], best, at)) best = warp_best[w], at = warp_at[w];
        out[blockIdx.x] = at == LLONG_MAX ? 0 : static_cast<int32_t>(at);
    }
}

// ---- top-k -------------------------------------------------------------------
//
// One block of kThreads per row (or per segment of a row, see top_k_split).
// Each value is cleaned as the Sampler does
// (NaN -> -inf, +inf -> FLT_MAX) and mapped to a uint32 key whose unsigned
// order is the float order (-0.0 and +0.0 share a key). Four radix passes of
// 8-bit digits find T, the k-th largest key, and how many entries equal to T
// belong in the answer (`need`). One walk over the row then gathers every key
// above T (fewer than k, in any order) and the `need` lowest ids with key T (a
// block-wide ordered count per chunk of kThreads columns). A bitonic sort of
// the k (key, id) pairs in shared memory gives the final order. All bit
// operations: no float comparison can disagree with the reference.

constexpr uint32_t kSignBit = 0x80000000u;
constexpr uint32_t kPlusInfBits = 0x7f800000u;
constexpr uint32_t kMinusInfBits = 0xff800000u;
constexpr uint32_t kFltMaxBits = 0x7f7fffffu;

__device__ __forceinline__ uint32_t cleaned_bits(float v) {
    const uint32_t b = __float_as_uint(v);
    if ((b & ~kSignBit) > kPlusInfBits) return kMinusInfBits;  // NaN
    if (b == kPlusInfBits) return kFltMaxBits;
    return b;
}

// Unsigned order of keys == order of the cleaned floats; never 0 (-inf maps to 0x007fffff).
__device__ __forceinline__ uint32_t key_of(uint32_t bits) {
    if ((bits & ~kSignBit) == 0) bits = 0;  // -0.0 == +0.0
    return (bits & kSignBit) ? ~bits : (bits | kSignBit);
}

// A candidate sorts descending as (key, then lower id first); 0 is below every real one.
__device__ __forceinline__ uint64_t candidate(uint32_t key, uint32_t id) {
    return (uint64_t{key} << 32) | (0xffffffffu - id);
}

// Block (r, s) takes segment s (columns [s * seg_len, ...)) of row r of x
// (rows row_stride apart) and writes its top k into out[(r * gridDim.y + s) * k ...]:
// ids are the columns, or ids[] at those columns when given (a second stage
// over the first's candidates, which lie in id order among equal keys). A
// segment shorter than k pads its output with (-inf, INT32_MAX).
__global__ void __launch_bounds__(kThreads)
    top_k_rows_kernel(const float* x, const int32_t* ids, int64_t row_stride, int64_t n_cols, int64_t seg_len,
                      int32_t k_wanted, float* out_logits, int32_t* out_ids) {
    constexpr int kWarps = kThreads / 32;
    constexpr int kBins = 256;
    __shared__ uint32_t hist[kBins];
    __shared__ uint64_t cand[kMaxTopK];
    __shared__ uint32_t warp_count[2][kWarps];
    __shared__ uint32_t s_prefix, s_remaining, s_above;

    const int64_t seg_start = int64_t{blockIdx.y} * seg_len;
    const float* row = x + int64_t{blockIdx.x} * row_stride + seg_start;
    const int32_t* row_ids = ids ? ids + int64_t{blockIdx.x} * row_stride + seg_start : nullptr;
    n_cols = min(n_cols - seg_start, seg_len);
    const int32_t k = static_cast<int32_t>(min(int64_t{k_wanted}, n_cols));
    const int64_t out_base = (int64_t{blockIdx.x} * gridDim.y + blockIdx.y) * k_wanted;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const uint32_t lanes_below = (1u << lane) - 1u;
    // Every thread runs the same number of chunk iterations: warps stay converged and
    // __syncthreads() inside the loops is reached by all.
    const int n_chunks = static_cast<int>((n_cols + kThreads - 1) / kThreads);

    // ---- radix select of the k-th largest key ----
    uint32_t prefix = 0, mask = 0, remaining = static_cast<uint32_t>(k);
    for (int shift = 24; shift >= 0; shift -= 8) {
        if (tid < kBins) hist[tid] = 0;
        __syncthreads();
        for (int c = 0; c < n_chunks; ++c) {
            const int64_t i = int64_t{c} * kThreads + tid;
            uint32_t bin = kBins;  // none
            if (i < n_cols) {
                const uint32_t key = key_of(cleaned_bits(row[i]));
                if ((key & mask) == prefix) bin = (key >> shift) & (kBins - 1);
            }
            // Equal digits in a warp add once (logits crowd into few bins).
            const uint32_t peers = __match_any_sync(0xffffffffu, bin);
            if (bin < kBins && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], __popc(peers));
        }
        __syncthreads();
        if (warp == 0) {
            // Lane l holds bins 255-8l down to 248-8l; find the bin where the count from the
            // top reaches `remaining`.
            uint32_t counts[8], sum = 0;
            for (int j = 0; j < 8; ++j) counts[j] = hist[kBins - 1 - 8 * lane - j], sum += counts[j];
            uint32_t inclusive = sum;
            for (int d = 1; d < 32; d *= 2) {
                const uint32_t up = __shfl_up_sync(0xffffffffu, inclusive, d);
                if (lane >= d) inclusive += up;
            }
            uint32_t above = inclusive - sum;
            if (above < remaining && remaining <= inclusive) {
                for (int j = 0; j < 8; ++j) {
                    if (above + counts[j] >= remaining) {
                        s_prefix = prefix | (static_cast<uint32_t>(kBins - 1 - 8 * lane - j) << shift);
                        s_remaining = remaining - above;
                        break;
                    }
                    above += counts[j];
                }
            }
        }
        __syncthreads();
        prefix = s_prefix;
        remaining = s_remaining;
        mask |= static_cast<uint32_t>(kBins - 1) << shift;
    }
    const uint32_t threshold = prefix;
    const uint32_t need = remaining;  // entries with key == threshold to take: 1 <= need
    const uint32_t n_above = static_cast<uint32_t>(k) - need;

    // ---- gather: all keys above the threshold, and the `need` lowest ids at it ----
    if (tid == 0) s_above = 0;
    __syncthreads();
    uint32_t taken = 0;  // ties taken so far: the same in every thread
    for (int c = 0; c < n_chunks; ++c) {
        const int64_t i = int64_t{c} * kThreads + tid;
        uint32_t key = 0;
        if (i < n_cols) key = key_of(cleaned_bits(row[i]));
        const uint32_t above = __ballot_sync(0xffffffffu, key > threshold);
        if (above) {
            const int leader = __ffs(above) - 1;
            uint32_t base = 0;
            if (lane == leader) base = atomicAdd(&s_above, __popc(above));
            base = __shfl_sync(0xffffffffu, base, leader);
            if (key > threshold) cand[base + __popc(above & lanes_below)] = candidate(key, static_cast<uint32_t>(i));
        }
        if (taken < need) {
            const uint32_t tie = __ballot_sync(0xffffffffu, key == threshold);
            uint32_t* counts = warp_count[c & 1];  // double-buffered: one barrier per chunk
            if (lane == 0) counts[warp] = __popc(tie);
            __syncthreads();
            const uint32_t mine = counts[lane];
            uint32_t inclusive = mine;
            for (int d = 1; d < 32; d *= 2) {
                const uint32_t up = __shfl_up_sync(0xffffffffu, inclusive, d);
                if (lane >= d) inclusive += up;
            }
            const uint32_t before_warp = __shfl_sync(0xffffffffu, inclusive - mine, warp);
            const uint32_t total = __shfl_sync(0xffffffffu, inclusive, kWarps - 1);
            if (key == threshold) {
                const uint32_t rank = taken + before_warp + __popc(tie & lanes_below);
                if (rank < need) cand[n_above + rank] = candidate(key, static_cast<uint32_t>(i));
            }
            taken += total;
        }
    }

    // ---- bitonic sort of the k candidates, descending, padded with zeros ----
    int padded = 1;
    while (padded < k) padded *= 2;
    if (tid >= k && tid < padded) cand[tid] = 0;
    __syncthreads();
    for (int size = 2; size <= padded; size *= 2) {
        for (int stride = size / 2; stride > 0; stride /= 2) {
            const int j = tid ^ stride;
            if (tid < padded && j > tid) {
                const uint64_t a = cand[tid], b = cand[j];
                const bool descending = (tid & size) == 0;
                if (descending ? a < b : a > b) cand[tid] = b, cand[j] = a;
            }
            __syncthreads();
        }
    }
    if (tid < k) {
        const uint32_t pos = 0xffffffffu - static_cast<uint32_t>(cand[tid]);
        out_ids[out_base + tid] = row_ids ? row_ids[pos] : static_cast<int32_t>(seg_start + pos);
        out_logits[out_base + tid] = __uint_as_float(cleaned_bits(row[pos]));
    } else if (tid < k_wanted) {
        out_ids[out_base + tid] = 0x7fffffff;
        out_logits[out_base + tid] = __uint_as_float(kMinusInfBits);
    }
}

// Segments per row for a two-stage selection: enough blocks to fill the GPU
// when rows are few and long, each segment at least k (and 4096) columns.
int64_t top_k_split(int64_t n_rows, int64_t n_cols, int32_t k) {
    constexpr int64_t kTargetBlocks = 264;  // ~2 per SM of an H100 / H200
    constexpr int64_t kMinSegment = 4096;
    const int64_t by_rows = kTargetBlocks / n_rows;
    const int64_t by_cols = n_cols / std::max<int64_t>(kMinSegment, k);
    return std::max<int64_t>(1, std::min(by_rows, by_cols));
}

// ---- softmax sums -------------------------------------------------------------
//
// Each weight is sampler_weight's (the host's float); only the order of the
// double sum differs from the host's.
constexpr int kSumThreads = 512;

__device__ double block_sum(double v, double* shared) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();  // shared may still be read from the previous sum
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    double total = 0.0;
    for (int w = 0; w < kSumThreads / 32; ++w) total += shared[w];
    return total;
}

__global__ void __launch_bounds__(kSumThreads)
    softmax_sums_kernel(const float* x, int64_t n_cols, const float* row_max, int64_t max_stride,
                        const float* temperatures, double* softmax_sums, float* log_normalizers) {
    __shared__ double shared[kSumThreads / 32];
    const int64_t r = blockIdx.x;
    const float* row = x + r * n_cols;
    const float max = row_max[r * max_stride];
    const float t = temperatures[r];
    double at_t = 0.0, at_1 = 0.0;
    if (max != -INFINITY) {
        // Eight loads in flight per thread: one block per row reads its row
        // alone, and with one load at a time it waited on DRAM latency
        // (~0.2 ms for 64 rows of 128256).
        constexpr int kUnroll = 8;
        int64_t i = threadIdx.x;
        for (; i + (kUnroll - 1) * kSumThreads < n_cols; i += kUnroll * kSumThreads) {
            float v[kUnroll];
#pragma unroll
            for (int j = 0; j < kUnroll; ++j) v[j] = row[i + j * kSumThreads];
#pragma unroll
            for (int j = 0; j < kUnroll; ++j) {
                at_t += sampler_weight(v[j], max, t);
                at_1 += sampler_weight(v[j], max, 1.0f);
            }
        }
        for (; i < n_cols; i += kSumThreads) {
            at_t += sampler_weight(row[i], max, t);
            at_1 += sampler_weight(row[i], max, 1.0f);
        }
    }
    at_t = block_sum(at_t, shared);
    at_1 = block_sum(at_1, shared);
    if (threadIdx.x == 0) {
        softmax_sums[r] = at_t;
        log_normalizers[r] = max == -INFINITY ? -INFINITY : max + static_cast<float>(log(at_1));
    }
}

// ---- draws by temperature alone ---------------------------------------------------
//
// Sampler::sample_full, step for step: the weights are sampler_weight's
// (the host's floats), and the two double sums run in the host's order
// (softmax_math.h): the total as eight lanes (lane j sums the weights of
// columns 8b + j in order of b), added lane 0 first, then the columns past
// the last whole block of eight; the walk as cumulative sums over blocks of
// eight (each block summed from 0.0, column by column), then column by
// column from the block holding the target. Both are chains of dependent
// adds (~16 K for 128 K columns), fed from shared memory a chunk of 2048
// columns at a time, and they run side by side: the walk's cumulative sums do
// not depend on the target, so all of them are kept (the workspace) and the
// block holding the target is searched for afterwards by all threads. The
// rows run in parallel, one block each (~0.2 ms a step of 64 rows of 128256).

constexpr int kDrawThreads = 256;
constexpr int kDrawLanes = 8;               // sampling_math::kLanes
constexpr int kChunkBlocks = kDrawThreads;  // blocks of eight a chunk: one a thread
constexpr int kChunkCols = kChunkBlocks * kDrawLanes;
constexpr int kUnroll = 8;                  // loads a chain thread has ahead

// The Sampler's penalized_logit (sampling_params.cpp), each operation rounded on its own.
__device__ __forceinline__ float penalized(float logit, float count, const float* p) {
    logit = logit <= 0.0f ? __fmul_rn(logit, p[0]) : __fdiv_rn(logit, p[0]);
    return __fsub_rn(logit, __fadd_rn(__fmul_rn(count, p[1]), p[2]));
}

__global__ void __launch_bounds__(kDrawThreads)
    draw_rows_kernel(float* x, const int32_t* rows, int64_t n_cols, const float* temperatures, const double* uniforms,
                     DrawPenalties penalties, double* cumulative_after, int32_t* out, float* out_logits) {
    __shared__ float warp_best[kDrawThreads / 32];
    __shared__ int64_t warp_at[kDrawThreads / 32];
    __shared__ float weights[kChunkCols];       // a chunk's weights
    __shared__ double block_sums[kChunkBlocks];  // a chunk's blocks of eight, each summed from 0.0
    __shared__ double lane_totals[kDrawLanes];
    const int64_t r = blockIdx.x;
    float* row = x + (rows ? int64_t{rows[r]} : r) * n_cols;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    auto finish = [&](int64_t id) {
        out[r] = static_cast<int32_t>(id);
        if (out_logits) out_logits[r] = isnan(row[id]) ? -INFINITY : fminf(row[id], FLT_MAX);
    };
    if (penalties.ids) {  // the penalties first, in place (a row's ids are distinct)
        for (int32_t k = penalties.offsets[r] + tid; k < penalties.offsets[r + 1]; k += kDrawThreads) {
            const int32_t id = penalties.ids[k];
            if (id >= 0 && id < n_cols) row[id] = penalized(row[id], penalties.counts[k], penalties.params + 3 * r);
        }
        __syncthreads();
    }
    // The row's largest value and its first column (argmax_rows' answer):
    // the draw's maximum, and the token of a greedy row or of a row without
    // a number above -inf (the host returns argmax there too).
    float best = -INFINITY;
    int64_t at = LLONG_MAX;
    for (int64_t i = tid; i < n_cols; i += kDrawThreads) {
        const float v = row[i];
        if (beats(v, i, best, at)) best = v, at = i;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        const float v = __shfl_down_sync(0xffffffffu, best, offset);
        const int64_t i = __shfl_down_sync(0xffffffffu, at, offset);
        if (beats(v, i, best, at)) best = v, at = i;
    }
    if (lane == 0) warp_best[warp] = best, warp_at[warp] = at;
    __syncthreads();
    best = warp_best[0], at = warp_at[0];
    for (int w = 1; w < kDrawThreads / 32; ++w)
        if (beats(warp_best[w], warp_at[w], best, at)) best = warp_best[w], at = warp_at[w];
    const float t = temperatures[r];
    if (t == 0.0f || best == -INFINITY) {
        if (tid == 0) finish(at == LLONG_MAX ? 0 : at);
        return;
    }
    const float max = fminf(best, FLT_MAX);
    const int64_t n_blocks = n_cols / kDrawLanes, full = n_blocks * kDrawLanes;

    // One pass over the row, a chunk at a time: the chunk's weights and its
    // blocks' sums into shared memory (a block of eight a thread); then at
    // once threads 0..7 add their lanes' columns for the total, and thread 32
    // carries the walk's cumulative sum over the blocks, keeping the value
    // after each block (the walk's sums do not depend on where it stops).
    double lane_sum = 0.0, cumulative = 0.0;
    double* after = cumulative_after + r * n_blocks;
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks) {
        if (c0 + tid < n_blocks) {
            double sum = 0.0;
#pragma unroll
            for (int j = 0; j < kDrawLanes; ++j) {
                const float w = sampler_weight(row[(c0 + tid) * kDrawLanes + j], max, t);
                weights[tid * kDrawLanes + j] = w;
                sum = __dadd_rn(sum, static_cast<double>(w));
            }
            block_sums[tid] = sum;
        }
        __syncthreads();
        const int n = static_cast<int>(n_blocks - c0 < kChunkBlocks ? n_blocks - c0 : kChunkBlocks);
        if (tid < kDrawLanes) {  // loads kUnroll ahead of the adds: the chain waits on the adds alone
            int k = 0;
            for (; k + kUnroll <= n; k += kUnroll) {
                float v[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) v[u] = weights[(k + u) * kDrawLanes + tid];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) lane_sum = __dadd_rn(lane_sum, static_cast<double>(v[u]));
            }
            for (; k < n; ++k) lane_sum = __dadd_rn(lane_sum, static_cast<double>(weights[k * kDrawLanes + tid]));
        } else if (tid == 32) {
            int k = 0;
            for (; k + kUnroll <= n; k += kUnroll) {
                double v[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) v[u] = block_sums[k + u];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) after[c0 + k + u] = cumulative = __dadd_rn(cumulative, v[u]);
            }
            for (; k < n; ++k) after[c0 + k] = cumulative = __dadd_rn(cumulative, block_sums[k]);
        }
        __syncthreads();  // the chunk is read before the next one is written
    }
    if (tid < kDrawLanes) lane_totals[tid] = lane_sum;
    __syncthreads();
    const double total = detail::finish_host_sum(lane_totals, row, full, n_cols, max, t);
    const double target = __dmul_rn(uniforms[r], total);

    // The block holding the target: the first whose cumulative sum after it
    // passes the target (the sums never decrease), found by all threads.
    int64_t first = n_blocks;
    for (int64_t b = tid; b < n_blocks; b += kDrawThreads)
        if (target < after[b]) {
            first = b;
            break;
        }
    for (int offset = 16; offset > 0; offset /= 2) first = min(first, __shfl_down_sync(0xffffffffu, first, offset));
    if (lane == 0) warp_at[warp] = first;
    __syncthreads();
    if (tid != 0) return;
    for (int w = 0; w < kDrawThreads / 32; ++w) first = min(first, warp_at[w]);
    // Column by column from the block holding the target (or past the last
    // whole block), from the cumulative sum before it, as the host does.
    cumulative = first == 0 ? 0.0 : after[first - 1];
    for (int64_t i = first * kDrawLanes; i < n_cols; ++i) {
        const float w = sampler_weight(row[i], max, t);
        cumulative = __dadd_rn(cumulative, static_cast<double>(w));
        if (w > 0.0f && target < cumulative) return finish(i);
    }
    // Rounding left the target at the very top: the last token that can be drawn.
    for (int64_t last = n_cols; last-- > 0;)
        if (sampler_weight(row[last], max, t) > 0.0f) return finish(last);
    finish(0);
}

}  // namespace

cudaError_t argmax_rows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* out, cudaStream_t s) {
    if (n_rows <= 0) return cudaSuccess;
    if (n_rows > 0x7fffffff || n_cols <= 0 || n_cols > 0x7fffffff) return cudaErrorInvalidValue;
    argmax_rows_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, s>>>(x, n_cols, out);
    return cudaGetLastError();
}

cudaError_t top_k_rows(const float* x, int64_t n_rows, int64_t n_cols, int32_t k, float* out_logits,
                       int32_t* out_ids, cudaStream_t s, void* workspace, size_t workspace_bytes) {
    if (n_rows == 0) return cudaSuccess;
    if (n_rows < 0 || n_rows > 0x7fffffff || n_cols > 0x7fffffff || k < 1 || k > kMaxTopK || k > n_cols)
        return cudaErrorInvalidValue;
    const int64_t split = top_k_split(n_rows, n_cols, k);
    const size_t need = top_k_workspace_bytes(n_rows, n_cols, k);
    if (split == 1 || !workspace || workspace_bytes < need) {
        top_k_rows_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, s>>>(x, nullptr, n_cols, n_cols, n_cols, k,
                                                                          out_logits, out_ids);
        return cudaGetLastError();
    }
    // Each segment's k best, then the k best of those: the row's k best are
    // among them, and equal keys stay in id order.
    const int64_t seg_len = (n_cols + split - 1) / split;
    const int64_t n_candidates = split * k;
    auto* values = static_cast<float*>(workspace);
    auto* ids = reinterpret_cast<int32_t*>(values + n_rows * n_candidates);
    top_k_rows_kernel<<<dim3(static_cast<unsigned>(n_rows), static_cast<unsigned>(split)), kThreads, 0, s>>>(
        x, nullptr, n_cols, n_cols, seg_len, k, values, ids);
    top_k_rows_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, s>>>(values, ids, n_candidates, n_candidates,
                                                                      n_candidates, k, out_logits, out_ids);
    return cudaGetLastError();
}

size_t top_k_workspace_bytes(int64_t n_rows, int64_t n_cols, int32_t k) {
    if (n_rows <= 0 || n_cols <= 0 || k < 1 || k > kMaxTopK || k > n_cols) return 0;
    const int64_t split = top_k_split(n_rows, n_cols, k);
    if (split == 1) return 0;
    return static_cast<size_t>(n_rows * split * k) * (sizeof(float) + sizeof(int32_t));
}

cudaError_t softmax_sums(const float* x, int64_t n_rows, int64_t n_cols, const float* row_max, int64_t max_stride,
                         const float* temperatures, double* softmax_sums, float* log_normalizers, cudaStream_t s) {
    if (n_rows == 0) return cudaSuccess;
    if (n_rows < 0 || n_rows > 0x7fffffff || n_cols <= 0 || max_stride < 0) return cudaErrorInvalidValue;
    softmax_sums_kernel<<<static_cast<unsigned>(n_rows), kSumThreads, 0, s>>>(x, n_cols, row_max, max_stride,
                                                                             temperatures, softmax_sums, log_normalizers);
    return cudaGetLastError();
}

size_t draw_rows_workspace_bytes(int64_t n_rows, int64_t n_cols) {
    if (n_rows <= 0 || n_cols <= 0) return 0;
    return static_cast<size_t>(n_rows) * static_cast<size_t>(n_cols / kDrawLanes) * sizeof(double);
}

cudaError_t draw_rows(float* x, int64_t n_rows, int64_t n_cols, const float* temperatures, const double* uniforms,
                      const DrawPenalties& penalties, int32_t* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t s, const int32_t* rows, float* out_logits) {
    if (n_rows == 0) return cudaSuccess;
    if (n_rows < 0 || n_rows > 0x7fffffff || n_cols <= 0 || n_cols > 0x7fffffff ||
        workspace_bytes < draw_rows_workspace_bytes(n_rows, n_cols) || (!workspace && n_cols >= kDrawLanes))
        return cudaErrorInvalidValue;
    if (penalties.ids && (!penalties.offsets || !penalties.counts || !penalties.params)) return cudaErrorInvalidValue;
    draw_rows_kernel<<<static_cast<unsigned>(n_rows), kDrawThreads, 0, s>>>(
        x, rows, n_cols, temperatures, uniforms, penalties, static_cast<double*>(workspace), out, out_logits);
    return cudaGetLastError();
}

}  // namespace folio::kernels
