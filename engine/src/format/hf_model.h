// A Hugging Face model folder (config.json, model.safetensors or a sharded
// set with model.safetensors.index.json, tokenizer.json,
// tokenizer_config.json) read into a ModelDescription. Weights keep their
// Hugging Face layout (rotate-half Q/K rows, hence RopeStyle::SplitHalf) and
// are renamed to GGUF's tensor names with GGML's dimension order.
#pragma once

#include <string>

#include "folio/error.h"
#include "folio/model.h"

namespace folio {

Result<ModelDescription> load_hf_folder_model(const std::string& dir);

}  // namespace folio
