// A GGUF file read into a ModelDescription: hyper-parameters from the
// `<arch>.*` keys, tensors as views into the mapped file, the tokenizer from
// `tokenizer.ggml.*` and the chat template. load_model_description() calls
// this for files.
#pragma once

#include <string>

#include "folio/error.h"
#include "folio/gguf.h"
#include "folio/model.h"

namespace folio {

Result<ModelDescription> load_gguf_model(const std::string& path);

// The parts, for callers that already hold a parsed file.
Result<HParams> hparams_from_gguf(const GgufFile& file);
Result<TokenizerSpec> tokenizer_spec_from_gguf(const GgufFile& file);

}  // namespace folio
