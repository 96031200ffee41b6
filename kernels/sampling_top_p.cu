// Top-p and min-p draws from whole rows (Sampler::sample_truncated without
// top-k, step for step), for the rows whose set reaches past the best
// entries top_k_rows hands the host.
//
// With top-p, the host keeps the entries weighing at least its floor (min-p,
// and a tail bound below which no entry can be in the set), sorts them best
// first (ties to the lower id), adds their weights in that order until the
// sum reaches top_p of the row's softmax sum, and walks the same cumulative
// sums to the first that passes u times their total. Here, per row:
//   1. the cleaned values (-0.0 as +0.0, so that ties go by id) and their
//      ids are sorted best first by CUB's segmented radix sort, which is
//      stable: equal values stay in id order, as the host's comparison
//      orders them;
//   2. threads 0..7 add the row's weights (sampler_weight: the host's
//      floats) in id order as the host's softmax sum does: eight lanes, then
//      the columns past the last whole block of eight;
//   3. the kept count is the first sorted entry under the floor: the weights
//      never increase along the sorted order (exp_nonpositive is monotone
//      over every float in [-90, 0], checked exhaustively,
//      bench/results/cuda-top-p-draws-2026-11-30.txt, and sampler_test
//      keeps checking it), so the kept entries are a prefix;
//   4. thread 0 adds the kept weights one by one, keeping every cumulative
//      sum, up to the first at or past the mass: the cut;
//   5. all threads find the first cumulative sum past u times the sum at
//      the cut: the drawn entry.
// With min-p alone (top_p 1) the host keeps the entries weighing at least
// min_p in id order, nothing sorted, and draws over all of them: here the
// kept entries are gathered in id order (a block-wide scan), then steps 4
// and 5 run over them with no cut. The sort still gives the row's maximum.
// Both chains are fed from shared memory a chunk of weights at a time. The
// cumulative sums are the host's own (the same floats added to the same
// double in the same order), so the token is the host's bit for bit. The
// one-by-one chain dominates (a dependent double add per entry): a flat row
// of 128256 whose set holds most of it takes ~2 ms; rows run in parallel,
// as many at a time as kGroupEntries allows.
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

#include "folio_kernels/sampling.h"
#include "sampler_weight.cuh"

namespace folio::kernels {
namespace {

using detail::sampler_weight;

constexpr int64_t kGroupEntries = int64_t{8} << 20;  // rows sorted and drawn at once: ~250 MB of workspace
constexpr int kPrepThreads = 256;
constexpr int kDrawThreads = 512;
constexpr int kChunk = 4096;  // weights a chunk of a chain (shared memory)
constexpr int kLanes = 8;     // sampling_math::kLanes
constexpr int kUnroll = 8;    // weights a chain thread loads ahead of its adds

// Rows a group holds.
int64_t group_rows(int64_t n_rows, int64_t n_cols) {
    const int64_t fit = kGroupEntries / n_cols > 1 ? kGroupEntries / n_cols : 1;
    return n_rows < fit ? n_rows : fit;
}

__global__ void __launch_bounds__(kPrepThreads)
    top_p_keys_kernel(const float* x, const int32_t* rows, int64_t n_cols, int32_t n_rows, float* keys, int32_t* ids,
                      int32_t* offsets) {
    const int64_t r = blockIdx.y;
    const float* row = x + int64_t{rows[r]} * n_cols;
    for (int64_t c = blockIdx.x * int64_t{kPrepThreads} + threadIdx.x; c < n_cols;
         c += int64_t{gridDim.x} * kPrepThreads) {
        float v = row[c];
        v = isnan(v) ? -INFINITY : fminf(v, FLT_MAX);
        keys[r * n_cols + c] = v == 0.0f ? 0.0f : v;
        ids[r * n_cols + c] = static_cast<int32_t>(c);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        offsets[r] = static_cast<int32_t>(r * n_cols);
        if (r == n_rows - 1) offsets[n_rows] = static_cast<int32_t>(n_rows * n_cols);
    }
}

// The first index in [0, n) whose predicate holds, or n: a block-wide min.
template <typename Pred>
__device__ int64_t block_first(int64_t n, Pred pred, int64_t* shared) {
    int64_t first = n;
    for (int64_t i = threadIdx.x; i < n; i += kDrawThreads)
        if (pred(i)) {
            first = i;
            break;
        }
    for (int offset = 16; offset > 0; offset /= 2) first = min(first, __shfl_down_sync(0xffffffffu, first, offset));
    __syncthreads();  // shared may still be read from the previous search
    if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = first;
    __syncthreads();
    for (int w = 0; w < kDrawThreads / 32; ++w) first = min(first, shared[w]);
    return first;
}

// Steps 4 and 5 over the kept entries (keys, ids)[0, kept): the cumulative
// sums of their weights one by one (a chunk of weights at a time through
// shared memory), up to the first that reaches the mass: the cut (thread 0
// carries the chain); then the first cumulative sum past u times the total
// at the cut. finish(id, cut) stores the drawn token.
template <typename Finish>
__device__ void draw_kept(const float* keys, const int32_t* ids, int64_t kept, double mass, float max, float t,
                          double uniform, double* sums, float* chunk, int64_t* shared, double& total_shared,
                          int64_t& cut_shared, Finish finish) {
    const int tid = threadIdx.x;
    double sum = 0.0;
    int64_t cut = kept;
    for (int64_t c0 = 0; c0 < kept && cut == kept; c0 += kChunk) {
        const int n = static_cast<int>(kept - c0 < kChunk ? kept - c0 : kChunk);
        for (int j = tid; j < n; j += kDrawThreads) chunk[j] = sampler_weight(keys[c0 + j], max, t);
        __syncthreads();
        if (tid == 0) {
            int j = 0;
            for (; j + kUnroll <= n && cut == kept; j += kUnroll) {
                float v[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) v[u] = chunk[j + u];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) {
                    sums[c0 + j + u] = sum = __dadd_rn(sum, static_cast<double>(v[u]));
                    if (sum >= mass && cut == kept) cut = c0 + j + u + 1;
                }
            }
            for (; j < n && cut == kept; ++j) {
                sums[c0 + j] = sum = __dadd_rn(sum, static_cast<double>(chunk[j]));
                if (sum >= mass) cut = c0 + j + 1;
            }
            cut_shared = cut;
            if (cut < kept || c0 + n == kept) total_shared = sums[cut - 1];
        }
        __syncthreads();
        cut = cut_shared;
    }
    const double target = __dmul_rn(uniform, total_shared);
    const int64_t drawn = block_first(cut, [&](int64_t i) { return target < sums[i]; }, shared);
    if (tid == 0) finish(ids[drawn < cut ? drawn : cut - 1], cut);
}

__global__ void __launch_bounds__(kDrawThreads)
    top_p_draw_kernel(const float* x, const int32_t* rows, int64_t n_cols, const float* sorted_keys,
                      const int32_t* sorted_ids, float* kept_keys, int32_t* kept_ids, const float* params,
                      const double* uniforms, double* cumulative, TopPDrawn* out) {
    using Scan = cub::BlockScan<int, kDrawThreads>;
    __shared__ typename Scan::TempStorage scan;
    __shared__ int64_t shared[kDrawThreads / 32];
    __shared__ float chunk[kChunk];
    __shared__ double lane_sums[kLanes];
    __shared__ int64_t cut_shared;
    __shared__ double total_shared;
    const int64_t r = blockIdx.x;
    const int tid = threadIdx.x;
    const float* row = x + int64_t{rows[r]} * n_cols;
    const float* keys = sorted_keys + r * n_cols;
    const int32_t* ids = sorted_ids + r * n_cols;
    double* sums = cumulative + r * n_cols;
    const float t = params[3 * r], top_p = params[3 * r + 1], min_p = params[3 * r + 2];
    const float max = keys[0];
    // The token, with what the host's SampleInfo says of it: the size of the
    // set drawn from, and the chosen column's cleaned logit.
    auto finish = [&](int32_t id, int64_t n_candidates) {
        const float v = row[id];
        out[r] = {id, static_cast<int32_t>(n_candidates), isnan(v) ? -INFINITY : fminf(v, FLT_MAX)};
    };
    // The host's argmax: the first column at the maximum (else, with nothing
    // above -inf, the first that is not NaN), else 0.
    auto argmax = [&] {
        const int64_t first =
            block_first(n_cols, [&](int64_t i) { return max == -INFINITY ? !isnan(row[i]) : row[i] >= max; }, shared);
        if (tid == 0) finish(first == n_cols ? 0 : static_cast<int32_t>(first), 1);
    };
    if (max == -INFINITY) return argmax();

    if (!(top_p < 1.0f)) {
        // Min-p alone: the kept entries (weight above 0 and at least min_p)
        // in id order, a block of columns at a time, then the draw over all
        // of them (no mass to reach).
        int64_t kept = 0;
        for (int64_t c0 = 0; c0 < n_cols; c0 += kDrawThreads) {
            const int64_t c = c0 + tid;
            const float w = c < n_cols ? sampler_weight(row[c], max, t) : 0.0f;
            const int keep = w > 0.0f && w >= min_p ? 1 : 0;
            int at = 0, n = 0;
            Scan(scan).ExclusiveSum(keep, at, n);
            if (keep) {
                const float v = row[c];
                kept_keys[r * n_cols + kept + at] = isnan(v) ? -INFINITY : fminf(v, FLT_MAX);
                kept_ids[r * n_cols + kept + at] = static_cast<int32_t>(c);
            }
            kept += n;
            __syncthreads();  // the scan's storage is read before it is used again
        }
        if (kept == 0) return argmax();  // (the maximum weighs 1: never, as min_p <= 1)
        draw_kept(kept_keys + r * n_cols, kept_ids + r * n_cols, kept, INFINITY, max, t, uniforms[r], sums, chunk,
                  shared, total_shared, cut_shared, finish);
        return;
    }

    // The host's softmax sum over the row in id order: lane j adds the
    // weights of columns 8b + j in order of b (a chunk of weights at a time
    // through shared memory), then the lanes in order, then the columns past
    // the last whole block of eight.
    const int64_t whole = n_cols / kLanes * kLanes;
    double lane = 0.0;
    for (int64_t c0 = 0; c0 < whole; c0 += kChunk) {
        const int n = static_cast<int>(whole - c0 < kChunk ? whole - c0 : kChunk);
        for (int j = tid; j < n; j += kDrawThreads) chunk[j] = sampler_weight(row[c0 + j], max, t);
        __syncthreads();
        if (tid < kLanes) {
            int b = 0;
            for (; b + kUnroll <= n / kLanes; b += kUnroll) {
                float v[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) v[u] = chunk[(b + u) * kLanes + tid];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) lane = __dadd_rn(lane, static_cast<double>(v[u]));
            }
            for (; b < n / kLanes; ++b) lane = __dadd_rn(lane, static_cast<double>(chunk[b * kLanes + tid]));
        }
        __syncthreads();  // the chunk is read before the next one is written
    }
    if (tid < kLanes) lane_sums[tid] = lane;
    __syncthreads();
    const double softmax_sum = detail::finish_host_sum(lane_sums, row, whole, n_cols, max, t);
    const double mass = __dmul_rn(static_cast<double>(top_p), softmax_sum);
    // The host's floor: min-p, or the tail bound 0.5 (1 - top_p) sum / vocab if
    // higher. The kept entries (weight above 0 and at least the floor) are a
    // prefix of the sorted order: the weights never increase along it.
    const double tail = __ddiv_rn(__dmul_rn(__dmul_rn(0.5, __dsub_rn(1.0, static_cast<double>(top_p))), softmax_sum),
                                  static_cast<double>(n_cols));
    const float floor = fmaxf(min_p, __double2float_rn(tail));
    const int64_t kept = block_first(
        n_cols,
        [&](int64_t i) {
            const float w = sampler_weight(keys[i], max, t);
            return !(w > 0.0f && w >= floor);
        },
        shared);

    if (kept == 0) return argmax();  // (the maximum weighs 1 and passes any floor: never)
    draw_kept(keys, ids, kept, mass, max, t, uniforms[r], sums, chunk, shared, total_shared, cut_shared, finish);
}

struct Layout {
    size_t keys_in, ids_in, keys_out, ids_out, sums, offsets, cub, bytes;
};

size_t align256(size_t v) { return (v + 255) / 256 * 256; }

Layout layout(int64_t n_rows, int64_t n_cols) {
    const auto rows = static_cast<size_t>(group_rows(n_rows, n_cols));
    const size_t entries = rows * static_cast<size_t>(n_cols);
    Layout l{};
    l.keys_in = 0;
    l.ids_in = l.keys_in + align256(entries * sizeof(float));
    l.keys_out = l.ids_in + align256(entries * sizeof(int32_t));
    l.ids_out = l.keys_out + align256(entries * sizeof(float));
    l.sums = l.ids_out + align256(entries * sizeof(int32_t));
    l.offsets = l.sums + align256(entries * sizeof(double));
    l.cub = l.offsets + align256((rows + 1) * sizeof(int32_t));
    size_t cub_bytes = 0;
    float* no_keys = nullptr;
    int32_t* no_ids = nullptr;
    cub::DeviceSegmentedRadixSort::SortPairsDescending(nullptr, cub_bytes, no_keys, no_keys, no_ids, no_ids,
                                                       static_cast<int>(entries), static_cast<int>(rows), no_ids,
                                                       no_ids);
    l.bytes = l.cub + align256(cub_bytes);
    return l;
}

bool valid_shape(int64_t n_rows, int64_t n_cols) {
    return n_rows > 0 && n_rows <= INT32_MAX && n_cols > 0 && group_rows(n_rows, n_cols) * n_cols <= INT32_MAX;
}

}  // namespace

size_t top_p_draw_workspace_bytes(int64_t n_rows, int64_t n_cols) {
    return valid_shape(n_rows, n_cols) ? layout(n_rows, n_cols).bytes : 0;
}

cudaError_t top_p_draw_rows(const float* x, const int32_t* rows, int64_t n_rows, int64_t n_cols, const float* params,
                            const double* uniforms, TopPDrawn* out, void* workspace, size_t workspace_bytes,
                            cudaStream_t s) {
    if (n_rows == 0) return cudaSuccess;
    if (!valid_shape(n_rows, n_cols) || !x || !rows || !params || !uniforms || !out || !workspace ||
        workspace_bytes < top_p_draw_workspace_bytes(n_rows, n_cols))
        return cudaErrorInvalidValue;
    const Layout l = layout(n_rows, n_cols);
    auto* base = static_cast<char*>(workspace);
    auto* keys_in = reinterpret_cast<float*>(base + l.keys_in);
    auto* ids_in = reinterpret_cast<int32_t*>(base + l.ids_in);
    auto* keys_out = reinterpret_cast<float*>(base + l.keys_out);
    auto* ids_out = reinterpret_cast<int32_t*>(base + l.ids_out);
    auto* sums = reinterpret_cast<double*>(base + l.sums);
    auto* offsets = reinterpret_cast<int32_t*>(base + l.offsets);
    const int64_t per_group = group_rows(n_rows, n_cols);
    for (int64_t g = 0; g < n_rows; g += per_group) {
        const int group = static_cast<int>(n_rows - g < per_group ? n_rows - g : per_group);
        const int entries = group * static_cast<int>(n_cols);
        const int64_t col_blocks = (n_cols + kPrepThreads - 1) / kPrepThreads;
        const dim3 prep_grid(static_cast<unsigned>(col_blocks < 64 ? col_blocks : 64), static_cast<unsigned>(group));
        top_p_keys_kernel<<<prep_grid, kPrepThreads, 0, s>>>(x, rows + g, n_cols, group, keys_in, ids_in, offsets);
        size_t cub_bytes = l.bytes - l.cub;
        const cudaError_t sorted = cub::DeviceSegmentedRadixSort::SortPairsDescending(
            base + l.cub, cub_bytes, keys_in, keys_out, ids_in, ids_out, entries, group, offsets, offsets + 1, 0,
            static_cast<int>(sizeof(float) * 8), s);
        if (sorted != cudaSuccess) return sorted;
        top_p_draw_kernel<<<static_cast<unsigned>(group), kDrawThreads, 0, s>>>(
            x, rows + g, n_cols, keys_out, ids_out, keys_in, ids_in, params + 3 * g, uniforms + g, sums, out + g);
        if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

}  // namespace folio::kernels
