// Quantization recipes: which GGUF type each tensor of a model gets under a
// preset (Q4_K_M, Q4_K_S, Q4_0, Q5_K_M, Q6_K, Q8_0), chosen tensor for tensor
// as llama-quantize chooses (llama_tensor_get_type in llama.cpp's
// src/llama-quant.cpp), and the order the output file lists them in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "folio/error.h"
#include "folio/model.h"
#include "folio/tensor_type.h"

namespace folio {

enum class QuantPreset { Q4_K_M, Q4_K_S, Q4_0, Q5_K_M, Q6_K, Q8_0 };

struct QuantPresetInfo {
    QuantPreset preset;
    std::string_view name;       // "Q4_K_M"
    TensorType base_type;        // the type most matrices get
    uint32_t file_type;          // general.file_type (llama_ftype: Q4_K_M = 15)
};

const QuantPresetInfo& preset_info(QuantPreset preset);
// "Q4_K_M" (any case); nullopt for a name that is not a preset.
std::optional<QuantPreset> parse_preset(std::string_view name);
// "Q4_K_M, Q4_K_S, Q4_0, Q5_K_M, Q6_K, Q8_0" for messages.
std::string preset_names();

// One tensor of the output: where it comes from and what it becomes.
struct TensorPlan {
    size_t source_index = 0;     // into ModelDescription::tensors
    std::string name;
    std::vector<int64_t> shape;  // GGML order
    TensorType source_type = TensorType::F32;
    TensorType type = TensorType::F32;  // in the output
    bool quantized = false;      // false: copied as it is (norms, biases, 1-D tensors)
    std::string fallback;        // why the preset's type did not fit ("576 columns: Q4_K -> Q5_0"), or empty
};

struct QuantPlanOptions {
    bool has_imatrix = false;    // Q4_0: the first eighth of ffn_down becomes Q4_1, as llama-quantize does
};

// The output's tensors, in llama-quantize's order (tensors outside a layer
// first, then layer by layer; by name within each). A source tensor whose
// type is neither a float type nor one Folio dequantizes is an error.
Result<std::vector<TensorPlan>> plan_quantization(const ModelDescription& model, QuantPreset preset,
                                                  const QuantPlanOptions& options = {});

}  // namespace folio
