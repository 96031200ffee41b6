// Matrix products of the CUDA backend: y = x · Wᵀ for every weight type a
// GGUF file holds, plus the helpers around them (device layout, random
// weights, embedding lookup). Pointers, shapes and a stream in; no engine
// types. Quantized weights compute like the CPU backend: each activation row
// is quantized to the CPU's partner format (Q8_0 / Q8_1 / Q8_K, rounded the
// same way), then integer dot products with one float scale per block, so the
// only difference from the CPU is the order of the float sums.
//
// Batch invariance: for quantized weights a row's y does not depend on n (the
// kernels walk the activation rows in tiles of up to 8 and every row takes
// the same path in any tile). F32 / F16 / BF16 weights go through cuBLAS when
// n > kFloatMatvecMaxRows (with x rounded to F16 / BF16 for those weights) and
// are not batch-invariant.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "folio_kernels/elementwise.h"  // SplitParts

namespace folio::kernels {

// GGML's type ids (the GGUF tensor type field).
enum class WeightType : int32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    BF16 = 30
};

// Activation rows the quantized kernels read per pass over the weights.
inline constexpr int kMatmulTileRows = 8;
// Up to this many activation rows, float weights use the F32 matvec kernel.
inline constexpr int kFloatMatvecMaxRows = 1;

bool matmul_supported(WeightType t);  // all of the above

// Elements per block of the type (1, 32 or 256): cols must be a multiple.
int64_t weight_block_elems(WeightType t);

// Bytes of a rows x cols matrix in the device layout (after prepare_matrix).
// rows = out features, cols = in features. 0 when the shape is invalid.
size_t device_matrix_bytes(WeightType t, int64_t rows, int64_t cols);

// GGUF bytes of the matrix, already in device memory at `src` (rows * GGUF
// row bytes), into the device layout at `dst` (src and dst must not overlap).
// Q4_0 .. Q8_0 and Q6_K are repacked (quants apart from the scales, so that
// loads are 16 bytes wide and aligned); the others are copied.
cudaError_t prepare_matrix(WeightType t, const void* src, int64_t rows, int64_t cols, void* dst, cudaStream_t s);

// Deterministic pseudo-random weights written straight into the device layout
// (for `--load-format dummy`): values of magnitude ~scale, finite, every byte
// written (quantized types: random quants with block scales giving weights of
// magnitude ~scale).
cudaError_t fill_random_matrix(WeightType t, void* dst, int64_t rows, int64_t cols, uint64_t seed, float scale,
                               cudaStream_t s);

struct DeviceMatrix {
    WeightType type = WeightType::F32;
    const void* data = nullptr;  // device layout, 256-byte aligned (cudaMalloc gives that)
    int64_t rows = 0, cols = 0;
};

// Scratch for one stream: activation quantization / F16 conversion / cuBLAS
// workspace (32 MiB of it for float weights with n > kFloatMatvecMaxRows).
// data must be 256-byte aligned; cublas is needed for float weights only.
struct MatmulWorkspace {
    void* data = nullptr;
    size_t bytes = 0;
    cublasHandle_t cublas = nullptr;
    // data already holds x in fused_activation_format(w.type), written by the
    // kernel that produced x (elementwise.h, ActivationQuant): the matmul
    // skips its own quantize / convert launch.
    bool x_in_workspace = false;
};

// The form matmul() puts x in before the product with weights of type t,
// which the kernel producing x may write instead (ActivationQuant): Q8_0
// blocks for Q4_0 / Q5_0 / Q8_0, Q8_1 for Q4_1 / Q5_1, F16 / BF16 for those
// weights' cuBLAS products (more than kFloatMatvecMaxRows rows; the matvec
// reads x as it is); None for F32 and the K-quants (their Q8_K super-blocks
// are quantized by the matmul itself).
ActivationFormat fused_activation_format(WeightType t);
// Workspace bytes `count` activations take in format f (the layout
// elementwise.h's ActivationQuant describes; 0 for None).
size_t activation_workspace_bytes(ActivationFormat f, int64_t count);

// Workspace bytes a matmul of n activation rows with this matrix needs (the
// backend allocates the max over its matrices and batch sizes).
size_t matmul_workspace_bytes(WeightType t, int64_t n, int64_t rows, int64_t cols);

// y[n][rows] = x[n][cols] · Wᵀ ; x and y are F32, row-major, device memory,
// x 16-byte aligned.
// No allocation, no host sync: capturable in a CUDA graph (the cublas
// handle's stream and workspace are set on ws.cublas per call).
// The kernels use programmatic dependent launch: they start loading weights
// while the previous kernel in the stream finishes, and read x / write y only
// after it has (FOLIO_CUDA_PDL=0 turns this off). So the kernel right before a
// matmul must not write its weights: sync after prepare_matrix /
// fill_random_matrix before the first product.
cudaError_t matmul(const DeviceMatrix& w, const float* x, int64_t n, float* y, const MatmulWorkspace& ws,
                   cudaStream_t s);

// The product of matrices stacked as one (their rows in order, sharing x:
// Q, K, V; gate, up) straight into each member's own output: part i gets rows
// [offset_i, offset_i + parts.width[i]) of y, offset_i the sum of the widths
// before it, as a row-major [n][width_i] matrix at parts.dst[i]. The widths
// sum to w.rows. The same bits as matmul() and then split_columns(), with
// the same batch invariance: the kernels write each element of y once, to
// its part, so no split kernel runs, except where the product goes through
// cuBLAS (float weights, n > kFloatMatvecMaxRows), which computes y in the
// workspace and splits it from there. matmul() is the one-part case.
cudaError_t matmul_parts(const DeviceMatrix& w, const float* x, int64_t n, const SplitParts& parts,
                         const MatmulWorkspace& ws, cudaStream_t s);
// Whether matmul_parts splits a y it computed whole (a cuBLAS product): then
// a consumer of all the parts does better to read matmul()'s y as it is
// (elementwise.h: silu_mul_rows reads a stacked gate/up product).
bool matmul_parts_split(WeightType t, int64_t n);
// Workspace bytes of matmul_parts with more than one part:
// matmul_workspace_bytes plus, for cuBLAS products, the whole y.
size_t matmul_parts_workspace_bytes(WeightType t, int64_t n, int64_t rows, int64_t cols);

// out[i][cols] = row ids[i] of w as F32 (embedding lookup), exactly as the
// engine's dequantizer computes it; ids is device memory, each in [0, rows).
cudaError_t gather_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, cudaStream_t s);

}  // namespace folio::kernels
