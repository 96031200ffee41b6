// JSON values quoted in error messages about Hugging Face files
// (safetensors headers, config.json, index files).
#pragma once

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

namespace folio::hf {

// A value's text when it is a scalar or a short flat array, else its kind.
// nlohmann::json prints recursively and a hostile file can nest arrays
// millions deep, so nested values are never printed; long text is cut.
inline std::string describe_json(const nlohmann::json& v) {
    using nlohmann::json;
    if (v.is_structured()) {
        const bool flat = v.is_array() && v.size() <= 16 &&
                          std::none_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); });
        if (!flat) return v.is_array() ? "(an array)" : "(an object)";
    }
    std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 120) text = text.substr(0, 117) + "...";
    return text;
}

}  // namespace folio::hf
