// SpecConfig: the method names and the ranges of the knobs.
#include "folio/spec.h"

namespace folio {

std::string_view to_string(SpecMethod method) {
    switch (method) {
        case SpecMethod::Off: return "off";
        case SpecMethod::Ngram: return "ngram";
        case SpecMethod::Draft: return "draft";
        case SpecMethod::LayerSkip: return "layer-skip";
        case SpecMethod::Int4Self: return "int4-self";
    }
    return "off";
}

Result<SpecMethod> parse_spec_method(std::string_view name) {
    if (name == "off" || name == "none") return SpecMethod::Off;
    if (name == "ngram") return SpecMethod::Ngram;
    if (name == "draft") return SpecMethod::Draft;
    if (name == "layer-skip") return SpecMethod::LayerSkip;
    if (name == "int4-self") return SpecMethod::Int4Self;
    return make_error("unknown speculative decoding method '" + std::string(name) +
                      "' (known: ngram, draft, layer-skip, int4-self, off)");
}

Status SpecConfig::validate() const {
    auto range = [](const char* name, int32_t v, int32_t lo, int32_t hi) -> Status {
        if (v >= lo && v <= hi) return {};
        return make_error(std::string(name) + " must be between " + std::to_string(lo) + " and " +
                          std::to_string(hi) + ", not " + std::to_string(v));
    };
    if (Status s = range("--draft-max", draft_max, 1, 64); !s) return s;
    if (Status s = range("--draft-min", draft_min, 0, draft_max); !s) return s;
    if (Status s = range("--ngram-min", ngram_min, 1, 64); !s) return s;
    if (Status s = range("--ngram-max", ngram_max, ngram_min, 64); !s) return s;
    if (Status s = range("--draft-layers", draft_layers, 0, 4096); !s) return s;
    if (!(draft_p_min >= 0 && draft_p_min <= 1))
        return make_error("--draft-p-min must be between 0 and 1, not " + std::to_string(draft_p_min));
    return {};
}

}  // namespace folio
