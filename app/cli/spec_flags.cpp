// The speculative-decoding flags every engine verb takes (run, chat, bench):
// --spec METHOD, --draft-max, --draft-min, --ngram-min, --ngram-max.
#include "inference_common.h"

namespace folio::cli {

std::vector<FlagSpec> spec_flags() {
    return {
        {"", "--spec", "METHOD", "speculative decoding: ngram (prompt lookup) or off (default)"},
        {"", "--draft-max", "N", "draft tokens per sequence per step at most (default 4)"},
        {"", "--draft-min", "N", "speculate only when at least N drafts are proposed (default 1)"},
        {"", "--ngram-min", "N", "ngram: shortest suffix matched in the prompt and output (default 2)"},
        {"", "--ngram-max", "N", "ngram: longest suffix matched (default 4)"},
    };
}

Status read_spec_flags(const Args& args, SpecConfig& spec) {
    if (auto method = args.get("--spec")) {
        auto parsed = parse_spec_method(*method);
        if (!parsed) return make_error("option --spec: " + parsed.error().message);
        spec.method = *parsed;
    }
    const std::pair<const char*, int32_t*> ints[] = {{"--draft-max", &spec.draft_max},
                                                     {"--draft-min", &spec.draft_min},
                                                     {"--ngram-min", &spec.ngram_min},
                                                     {"--ngram-max", &spec.ngram_max}};
    for (const auto& [name, field] : ints) {
        auto v = args.get_int(name, *field, 0, 64);
        if (!v) return v.error();
        *field = static_cast<int32_t>(*v);
    }
    // Values that only make sense together (draft-min <= draft-max, ...).
    if (Status s = spec.validate(); !s) return make_error("speculative decoding: " + s.error().message);
    if (spec.method == SpecMethod::Off)
        for (const auto& [name, field] : ints)
            if (args.has(name)) return make_error(std::string("option ") + name + " needs --spec METHOD");
    return {};
}

}  // namespace folio::cli
