// GGUF metadata for a model read from a Hugging Face folder: the keys
// llama.cpp reads for the architecture (hyper-parameters under
// "<arch>.") and the tokenizer (tokenizer.ggml.*), written from the
// ModelDescription, so a folder quantizes to a file any GGUF runtime loads.
// The weights' own conversions (Q/K row order, Gemma's norm offset) are in
// source_tensor.h.
#pragma once

#include <vector>

#include "folio/gguf.h"
#include "folio/model.h"

namespace folio::quant {

Result<std::vector<GgufKeyValue>> hf_model_metadata(const ModelDescription& model);

}  // namespace folio::quant
