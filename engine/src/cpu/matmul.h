// y = x · Wᵀ on the CPU with the weights left in their GGUF block format:
// the workhorse of the CPU forward pass (projections, FFN, output head).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cpu/kernels.h"
#include "cpu/scratch_buffer.h"
#include "cpu/thread_pool.h"
#include "folio/error.h"
#include "folio/tensor_type.h"

namespace folio::cpu {

// A weight tensor as stored: out_features rows of in_features elements, each
// row a run of blocks of `type`.
struct WeightMatrix {
    TensorType type = TensorType::F32;
    const std::byte* data = nullptr;
    int64_t in_features = 0;   // columns
    int64_t out_features = 0;  // rows
};

// Bytes of one weight row; 0 when in_features is not a whole number of blocks.
size_t weight_row_bytes(TensorType type, int64_t in_features);

// x: [n_rows_x, in_features] row-major; y: [n_rows_x, out_features].
// The activation rows are quantized once into `scratch`, then output rows are
// shared out over `pool`. An Error (nothing computed) for an unsupported
// type or shape.
Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows_x, float* y, ThreadPool& pool,
              ScratchBuffer& scratch);

// Same with an explicit instruction set (tests, benchmarks).
Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows_x, float* y, ThreadPool& pool,
              ScratchBuffer& scratch, Isa isa);

// ys[i] = x · ws[i]ᵀ for up to kMaxFused weights of the same input (Q, K and V;
// gate and up): x is quantized once and all the weights' tasks share one
// round of the pool, which counts in decode (~a hundred rounds per token).
// Each y is bit-identical to its own matmul().
inline constexpr size_t kMaxFused = 4;
Status matmul_many(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows_x, std::span<float* const> ys,
                   ThreadPool& pool, ScratchBuffer& scratch);
Status matmul_many(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows_x, std::span<float* const> ys,
                   ThreadPool& pool, ScratchBuffer& scratch, Isa isa);

// matmul_many() in F32: every weight block dequantized (dequantize(), as
// gguf-py does it) and multiplied by the F32 activations with the F32
// weights' tile, so each y is bit-identical to what an F32 copy of the
// weights gives, where matmul_many() quantizes the activations (Q8_0 / Q8_1 /
// Q8_K) for the integer kernels. The reference precision of a quantized
// model (--f32-activations); an order of magnitude slower in decode
// (2 cores: SmolLM2 Q4_1 14 against 143 tok/s, Gemma 6.3 against 89;
// bench/results/cpu-f32-activations-2026-11-30.txt).
Status matmul_many_f32(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows_x,
                       std::span<float* const> ys, ThreadPool& pool, ScratchBuffer& scratch, Isa isa);

}  // namespace folio::cpu
