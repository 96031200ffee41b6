// Block quantizers: float32 rows into the GGUF block types (the inverse of
// folio/dequant.h). Without an importance vector they follow GGML's
// reference quantizers, so a row quantized here is what llama-quantize (and,
// for the legacy types, gguf-py) writes for it; with one, the K-quant scale
// search minimises the error weighted by it (llama.cpp's imatrix path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "folio/error.h"
#include "folio/tensor_type.h"

namespace folio {

// True for the types quantize_row can produce (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0
// Q4_K Q5_K Q6_K, and F32 / F16 / BF16 as plain conversions).
bool can_quantize_to(TensorType type);

// Bytes that `n_elements` values take in `type` (a whole number of blocks).
uint64_t quantized_size(TensorType type, int64_t n_elements);

// Quantizes one row of `row.size()` values into `out` (exactly
// quantized_size(type, row.size()) bytes). `importance`, when not empty,
// holds one non-negative weight per value (an imatrix column sum of squared
// activations); the scale search of the K-quants, Q4_0 and Q5_0 weighs each
// value's error by it (Q4_1, Q5_1 and Q8_0 ignore it; llama.cpp's Q8_0 does too). Values must be
// finite: a NaN or infinity is an error naming its index.
Status quantize_row(TensorType type, std::span<const float> row, std::span<std::byte> out,
                    std::span<const float> importance = {});

}  // namespace folio
