// The metadata of a quantized file: the source's keys carried over
// (architecture, hyper-parameters, tokenizer, chat template), with
// general.file_type and general.quantization_version set for the preset and
// the settings recorded under folio.quantize.*.
#pragma once

#include <vector>

#include "folio/gguf.h"
#include "folio/model.h"
#include "folio/quant_recipe.h"

namespace folio::quant {

struct QuantizeSettings {
    QuantPreset preset = QuantPreset::Q4_K_M;
};

Result<std::vector<GgufKeyValue>> output_metadata(const ModelDescription& model, const QuantizeSettings& settings);

}  // namespace folio::quant
