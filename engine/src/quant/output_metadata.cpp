// output_metadata(): a GGUF source's keys are copied in their order; a
// Hugging Face folder's are written from its description (hf_metadata.cpp).
#include "quant/output_metadata.h"

#include <filesystem>

#include "quant/hf_metadata.h"

namespace folio::quant {

namespace {

// Keys the quantized file states afresh.
bool is_restated(const std::string& key) {
    return key == "general.file_type" || key == "general.quantization_version" || key == "general.alignment" ||
           key.rfind("folio.quantize.", 0) == 0 || key.rfind("quantize.imatrix.", 0) == 0;
}

// GGML_QNT_VERSION: the block layouts written here are version 2's.
constexpr uint32_t kQuantizationVersion = 2;

}  // namespace

Result<std::vector<GgufKeyValue>> output_metadata(const ModelDescription& model, const QuantizeSettings& settings) {
    std::vector<GgufKeyValue> out;
    if (model.format == SourceFormat::Gguf) {
        auto file = GgufFile::open(model.path);
        if (!file) return file.error();
        for (const GgufKeyValue& kv : file->metadata())
            if (!is_restated(kv.key)) out.push_back(kv);
    } else {
        auto keys = hf_model_metadata(model);
        if (!keys) return keys.error();
        out = std::move(*keys);
    }
    const QuantPresetInfo& preset = preset_info(settings.preset);
    auto set = [&](std::string key, GgufValue value) {
        for (GgufKeyValue& kv : out)
            if (kv.key == key) {
                kv.value = std::move(value);
                return;
            }
        out.push_back({std::move(key), std::move(value)});
    };
    set("general.quantization_version", GgufValue::u32(kQuantizationVersion));
    set("general.file_type", GgufValue::u32(preset.file_type));
    set("general.quantized_by", GgufValue::string("Folio"));
    set("folio.quantize.preset", GgufValue::string(std::string(preset.name)));
    // Where it came from, so that a model library can list the result under its source.
    std::error_code absolute_error;
    const std::filesystem::path source = std::filesystem::absolute(model.path, absolute_error);
    set("folio.quantize.source", GgufValue::string(absolute_error ? model.path : source.lexically_normal().string()));
    if (!settings.awq.empty()) set("folio.quantize.awq", GgufValue::string(settings.awq));
    if (settings.has_imatrix) {
        set("quantize.imatrix.file", GgufValue::string(settings.imatrix_file));
        if (!settings.imatrix_datasets.empty())
            set("quantize.imatrix.dataset", GgufValue::string(settings.imatrix_datasets.front()));
        set("quantize.imatrix.entries_count", GgufValue::u32(settings.imatrix_entries));
        set("quantize.imatrix.chunks_count", GgufValue::u32(settings.imatrix_chunks));
    }
    return out;
}

}  // namespace folio::quant
