// Hyper-parameters of a Hugging Face model folder, read from its config.json
// and expressed as Folio's HParams (GGUF vocabulary: "llama", n_embd, ...).
// Only model types whose weights Folio knows how to name are accepted.
#pragma once

#include <string>

#include "folio/error.h"
#include "folio/model.h"

namespace folio::hf {

struct ModelConfig {
    HParams hparams;
    std::string model_type;         // config.json "model_type": "llama", "qwen2", "gemma3_text", ...
    bool tie_word_embeddings = false;  // as configured (or the model type's default)
};

// Parses the text of a config.json; `source` names it in messages.
Result<ModelConfig> parse_config(const std::string& json_text, const std::string& source);

}  // namespace folio::hf
