// Reference dequantization: turns the blocks of any supported tensor type
// into float32, element by element in GGML order. It is the scalar ground
// truth the fast kernels are checked against, and it matches gguf-py's
// gguf.quants.dequantize bit for bit (the file is built without FMA
// contraction so every product and sum is rounded as numpy rounds it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "folio/error.h"
#include "folio/tensor_type.h"

namespace folio {

// Dequantizes `n_elements` values from `src` (`src_bytes` long) into `dst`.
// n_elements must be a whole number of blocks and src_bytes exactly their size.
Status dequantize(TensorType type, const std::byte* src, size_t src_bytes, float* dst, int64_t n_elements);

// IEEE half and bfloat16 to float, exactly.
float fp16_to_fp32(uint16_t bits);
float bf16_to_fp32(uint16_t bits);
// Float to IEEE half, rounded to nearest even (subnormals, inf and NaN kept).
uint16_t fp32_to_fp16(float f);

}  // namespace folio
