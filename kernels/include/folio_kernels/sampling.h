// Token selection on the GPU, so that a step's logits need not leave the
// device: the id of each row's largest logit (greedy), each row's k best
// logits with their ids (the host samples among those few), or the token a
// draw by temperature alone picks.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// out[r] = the first column of row r of x ([n_rows][n_cols] F32) holding its
// largest value: ties go to the lowest id, NaN never wins, a row of only NaN
// gives 0 (as the engine's Sampler decides).
cudaError_t argmax_rows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* out, cudaStream_t s);

// The k best entries of each row of x ([n_rows][n_cols] F32), best first:
// out_logits[r * k + j], out_ids[r * k + j]. Order: larger value first, ties
// to the lower id (a total order, as the engine's Sampler uses). Values are
// "cleaned" as the Sampler does before comparing and in the output: NaN
// becomes -inf, +inf becomes the largest finite float (FLT_MAX); -0.0 and +0.0
// are equal (tie -> lower id) and each is written as it was. 1 <= k <=
// kMaxTopK (1024) and k <= n_cols, else cudaErrorInvalidValue (also for
// n_cols or n_rows above INT32_MAX, or n_rows < 0); n_rows == 0 does nothing.
// One block per row (a radix select of the k-th key, then a bitonic sort of
// the k candidates in shared memory); with a workspace of
// top_k_workspace_bytes(), few long rows are split over several blocks each
// (each segment's k best, then the k best of those: the same result).
inline constexpr int32_t kMaxTopK = 1024;
cudaError_t top_k_rows(const float* x, int64_t n_rows, int64_t n_cols, int32_t k, float* out_logits,
                       int32_t* out_ids, cudaStream_t s, void* workspace = nullptr, size_t workspace_bytes = 0);
// The workspace that lets top_k_rows split rows (0: it would not).
size_t top_k_workspace_bytes(int64_t n_rows, int64_t n_cols, int32_t k);

// What the host needs besides a row's k best to draw as if it had the whole
// row (top-p's share of the mass, logprobs). With m = row_max[r * max_stride]
// (the row's largest cleaned value: top_k_rows' first value) and w the
// engine Sampler's weight (sampling_math::weight: e^((v - m) / t) through its
// own exp, bit for bit): softmax_sums[r] = sum of w(v, m, temperatures[r])
// over row r, and log_normalizers[r] = m + log(sum of w(v, m, 1)), as float.
// A row whose m is -inf gives 0 and -inf. temperatures[r] > 0. Sums are in
// double, in another order than the host's (a last-bit difference).
cudaError_t softmax_sums(const float* x, int64_t n_rows, int64_t n_cols, const float* row_max, int64_t max_stride,
                         const float* temperatures, double* softmax_sums, float* log_normalizers, cudaStream_t s);

// The engine Sampler's draw from a whole row by temperature alone
// (Sampler::sample_full), made where the logits are: out[r] = the token the
// host would draw from row r of x at temperatures[r] with uniforms[r] (its
// uniform() value, in [0, 1)), bit for bit: the same weights and the same
// double sums in the same order. temperatures[r] == 0 (a greedy row) gives
// argmax_rows' id, as does a row without a number above -inf. With
// penalties (ids not null), row r's logits first get the Sampler's
// penalized_logit for each of its distinct window tokens ids[k] seen
// counts[k] times, k in [offsets[r], offsets[r + 1]), with the repetition,
// frequency and presence penalties params[3r ..] (ids outside the row are
// skipped): x is changed in place. With `rows` (device memory, may be null)
// draw r is made from row rows[r] of x instead of row r; with `out_logits`
// (may be null) out_logits[r] is the drawn column's value after the
// penalties, NaN as -inf and +inf as the largest float (top_p_draw_rows'
// TopPDrawn::logit). One block per row; each draw is chains of
// ~n_cols / 8 dependent double adds. The workspace holds
// draw_rows_workspace_bytes() (a double per 8 columns).
struct DrawPenalties {
    const int32_t* offsets = nullptr;  // [n_rows + 1]
    const int32_t* ids = nullptr;
    const float* counts = nullptr;
    const float* params = nullptr;     // [n_rows][3]
};
cudaError_t draw_rows(float* x, int64_t n_rows, int64_t n_cols, const float* temperatures, const double* uniforms,
                      const DrawPenalties& penalties, int32_t* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t s, const int32_t* rows = nullptr, float* out_logits = nullptr);
size_t draw_rows_workspace_bytes(int64_t n_rows, int64_t n_cols);

// The engine Sampler's draw from whole rows with top-p and/or min-p, no
// top-k and no penalties (Sampler::sample_truncated), made where the logits
// are: out[i] = the token the host would draw from row rows[i] of x
// ([..][n_cols] F32) at temperature params[3i] (> 0), top_p params[3i + 1]
// (1 = off) and min_p params[3i + 2] (top_p under 1 or min_p above 0: else
// the Sampler draws by temperature alone, draw_rows' draw) with uniforms[i]
// as its uniform value,
// bit for bit, with the size of the set it was drawn from and its cleaned
// logit (what the Sampler's SampleInfo says). With top-p each row is sorted
// best first (ties to the lower id), and its kept entries' weights are added
// in that order as the host adds them; with min-p alone they are added in id
// order. For the rows whose set reaches past the best entries top_k_rows
// gives. rows, params, uniforms and out are device memory; the workspace
// holds top_p_draw_workspace_bytes(): 24 bytes an entry of the rows done at
// once (up to 8 Mi entries: 65 rows of 128256), plus the sort's own. The rows
// run in parallel; each row's walk is one chain of dependent double adds
// (~17 ns an entry): ~3.4 ms for rows of 128256 whose sets hold 95 % of them.
struct TopPDrawn {
    int32_t id;
    int32_t n_candidates;  // entries left after the cuts
    float logit;           // x at the token, NaN as -inf and +inf as the largest float
};
size_t top_p_draw_workspace_bytes(int64_t n_rows, int64_t n_cols);
cudaError_t top_p_draw_rows(const float* x, const int32_t* rows, int64_t n_rows, int64_t n_cols, const float* params,
                            const double* uniforms, TopPDrawn* out, void* workspace, size_t workspace_bytes,
                            cudaStream_t s);

}  // namespace folio::kernels
