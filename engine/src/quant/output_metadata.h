// The metadata of a quantized file: the source's keys carried over
// (architecture, hyper-parameters, tokenizer, chat template), with
// general.file_type and general.quantization_version set for the preset and
// the settings recorded under folio.quantize.*.
#pragma once

#include <string>
#include <vector>

#include "folio/gguf.h"
#include "folio/model.h"
#include "folio/quant_recipe.h"

namespace folio::quant {

struct QuantizeSettings {
    QuantPreset preset = QuantPreset::Q4_K_M;
    // With an importance matrix: llama-quantize's quantize.imatrix.* keys.
    bool has_imatrix = false;
    std::string imatrix_file;
    std::vector<std::string> imatrix_datasets;
    uint32_t imatrix_entries = 0;
    uint32_t imatrix_chunks = 0;
    std::string awq;  // AWQ's settings and outcome in words; empty without AWQ
};

Result<std::vector<GgufKeyValue>> output_metadata(const ModelDescription& model, const QuantizeSettings& settings);

}  // namespace folio::quant
