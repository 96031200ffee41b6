// Element-wise and row-wise CUDA kernels of the forward pass (norms, gated
// activations, residual adds). All pointers are device memory; activations are
// F32, row-major. Every function only enqueues work on `s` (no allocation, no
// host synchronisation), so all of them can be captured in a CUDA graph, and
// returns the launch's error.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// A matmul's input written by the kernel that produces it in the form the
// next matmul's weights read it (matmul.h: fused_activation_format), into
// that matmul's workspace exactly as the matmul would write it (then it is
// told so: MatmulWorkspace::x_in_workspace), saving the matmul a launch.
// Q8_0 / Q8_1: per block of 32 consecutive values of the output, the int8
// quants at workspace[i] and a float2 {d, s} at workspace + align256(count) +
// 8 * (i / 32). F16 / BF16: the values rounded to 16 bits at
// workspace + 2 * i (what a cuBLAS product reads). None: nothing extra is
// written. The output's length (norms: dim) must be a multiple of 32.
enum class ActivationFormat : int32_t { None = 0, Q8_0 = 1, Q8_1 = 2, F16 = 3, BF16 = 4 };
struct ActivationQuant {
    ActivationFormat format = ActivationFormat::None;
    void* workspace = nullptr;  // 256-byte aligned
};

// Each of n_rows rows of `dim`: out = x / rms(x) * w. out may be x.
cudaError_t rms_norm(const float* x, const float* w, float eps, int64_t n_rows, int64_t dim, float* out,
                     cudaStream_t s, const ActivationQuant& q = {});
// rms_norm of a's a_rows rows and of b's b_rows rows, each in place, in one
// launch (Q's and K's per-head norms); each row's bits as rms_norm gives them.
cudaError_t rms_norm_pair(float* a, const float* wa, int64_t a_rows, float* b, const float* wb, int64_t b_rows,
                          float eps, int64_t dim, cudaStream_t s);
// Residual add fused with the next norm: x += y; out = rms_norm(x) * w.  (out != x)
cudaError_t add_rms_norm(float* x, const float* y, const float* w, float eps, int64_t n_rows, int64_t dim,
                         float* out, cudaStream_t s, const ActivationQuant& q = {});
// gate = silu(gate) * up   (SwiGLU)
cudaError_t silu_mul(float* gate, const float* up, int64_t n, cudaStream_t s, const ActivationQuant& q = {});
// gate = gelu_tanh(gate) * up   (GeGLU)
cudaError_t gelu_mul(float* gate, const float* up, int64_t n, cudaStream_t s, const ActivationQuant& q = {});
// The same from a stacked gate/up product: each of n_rows rows of `stacked`
// holds `width` gate values, then `width` up values; out [n_rows][width] =
// silu (gelu_tanh) of the gate half times the up half, bit for bit what
// splitting the halves and silu_mul (gelu_mul) give. width % 4 == 0 and
// 16-byte aligned pointers, else cudaErrorInvalidValue.
cudaError_t silu_mul_rows(const float* stacked, int64_t n_rows, int64_t width, float* out, cudaStream_t s,
                          const ActivationQuant& q = {});
cudaError_t gelu_mul_rows(const float* stacked, int64_t n_rows, int64_t width, float* out, cudaStream_t s,
                          const ActivationQuant& q = {});
// x += y
cudaError_t add(float* x, const float* y, int64_t n, cudaStream_t s);
// x[r][c] += bias[c]
cudaError_t add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim, cudaStream_t s);
// x *= v
cudaError_t scale(float* x, float v, int64_t n, cudaStream_t s);
// x = cap * tanh(x / cap)
cudaError_t softcap(float* x, float cap, int64_t n, cudaStream_t s);
// out[i] = x[rows[i]] for i < n_rows (rows of `dim` floats): the rows whose logits a step returns.
cudaError_t gather_rows_f32(const float* x, const int32_t* rows, int64_t n_rows, int64_t dim, float* out,
                            cudaStream_t s);

// Column statistics of n_rows rows of `dim` (the importance matrix's and
// AWQ's sums): out[j] = sum over r of x[r][j]^2, out[dim + j] = sum of
// |x[r][j]|. Summed in a fixed order (each slice of kColumnStatsRows rows in
// turn, then the slices in turn), so the same rows give the same bits.
// `workspace` holds column_stats_workspace_floats(n_rows, dim) floats.
constexpr int64_t kColumnStatsRows = 32;
int64_t column_stats_workspace_floats(int64_t n_rows, int64_t dim);
cudaError_t column_stats(const float* x, int64_t n_rows, int64_t dim, float* out, float* workspace, cudaStream_t s);

}  // namespace folio::kernels

namespace folio::kernels {

// The columns of src ([n_rows][sum of widths]) into parts[i] ([n_rows][widths[i]]),
// left to right: the outputs of matrices multiplied as one stacked matrix.
inline constexpr int kMaxSplitParts = 4;
struct SplitParts {
    float* dst[kMaxSplitParts] = {};
    int64_t width[kMaxSplitParts] = {};
    int count = 0;
};
cudaError_t split_columns(const float* src, int64_t n_rows, const SplitParts& parts, cudaStream_t s);

}  // namespace folio::kernels
