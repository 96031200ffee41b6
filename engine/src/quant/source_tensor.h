// One source tensor as float32 values in GGUF conventions: dequantized from
// whatever type it is stored in, and, for a Hugging Face folder, converted as
// convert_hf_to_gguf.py converts it (llama's Q/K rows from rotate-half into
// interleaved-pair order; Gemma's norm weights w - 1 back to w).
#pragma once

#include <vector>

#include "folio/model.h"

namespace folio::quant {

// True when read_source_tensor() changes the values of `t`, not only their type.
// Gives back the resident pages of a mapped file's range (whole pages inside
// it only; MADV_DONTNEED): a tensor read once stays out of the peak RSS.
void release_pages(const std::byte* data, uint64_t nbytes);

bool source_tensor_is_converted(const ModelDescription& model, const TensorView& t);

// Reads tensor `t` of `model` into `out` (resized to its element count),
// then lets the kernel drop the pages of the source it read, so streaming a
// model larger than memory keeps only the current tensor resident.
Status read_source_tensor(const ModelDescription& model, const TensorView& t, std::vector<float>& out);

}  // namespace folio::quant
