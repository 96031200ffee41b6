// The speculative-decoding flags every engine verb takes (run, chat, bench):
// --spec METHOD, --draft-max, --draft-min, --ngram-min, --ngram-max.
#include <algorithm>
#include <cstdio>
#include <string_view>

#include "inference_common.h"

namespace folio::cli {

std::vector<FlagSpec> spec_flags() {
    return {
        {"", "--spec", "METHOD", "speculative decoding: ngram (prompt lookup), draft (-md), layer-skip, int4-self, or off (default)"},
        {"-md", "--model-draft", "PATH", "draft: the draft model (GGUF or HF folder) of the target's vocabulary"},
        {"", "--draft-layers", "N", "layer-skip: the target's first N layers draft (default: a quarter of them)"},
        {"", "--draft-max", "N", "draft tokens per sequence per step at most (default 4)"},
        {"", "--draft-fixed", "", "always draft --draft-max tokens (default: adaptive K, chosen per sequence per step)"},
        {"", "--draft-min", "N", "speculate only when at least N drafts are proposed (default 1)"},
        {"", "--draft-p-min", "P", "draft models: stop drafting where the draft's best token is less likely than P (default 0: never)"},
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
                                                     {"--ngram-max", &spec.ngram_max},
                                                     {"--draft-layers", &spec.draft_layers}};
    for (const auto& [name, field] : ints) {
        auto v = args.get_int(name, *field, 0, std::string_view(name) == "--draft-layers" ? 4096 : 64);
        if (!v) return v.error();
        *field = static_cast<int32_t>(*v);
    }
    spec.adaptive = !args.has("--draft-fixed");
    auto p_min = get_float(args, "--draft-p-min", spec.draft_p_min, 0.0f, 1.0f);
    if (!p_min) return p_min.error();
    spec.draft_p_min = *p_min;
    // Values that only make sense together (draft-min <= draft-max, ...).
    if (Status s = spec.validate(); !s) return make_error("speculative decoding: " + s.error().message);
    if (spec.method == SpecMethod::Off)
        for (const auto& [name, field] : ints)
            if (args.has(name)) return make_error(std::string("option ") + name + " needs --spec METHOD");
    if (args.has("--draft-p-min") && (spec.method == SpecMethod::Off || spec.method == SpecMethod::Ngram))
        return make_error("option --draft-p-min needs a draft model (--spec draft, layer-skip or int4-self)");
    if (args.has("--model-draft") && spec.method != SpecMethod::Draft)
        return make_error("option --model-draft needs --spec draft");
    if (spec.method == SpecMethod::Draft && !args.has("--model-draft"))
        return make_error("--spec draft needs the draft model (-md PATH)");
    if (args.has("--draft-layers") && spec.method != SpecMethod::LayerSkip)
        return make_error("option --draft-layers needs --spec layer-skip");
    return {};
}

namespace {

// The draft options the flags give (--model-draft, --draft-layers, --device, -t, --no-cuda-graphs).
Result<DraftOptions> draft_options(const Args& args, const SpecConfig& spec) {
    DraftOptions o;
    o.path = args.get_or("--model-draft", "");
    o.layers = spec.draft_layers;
    o.device = args.get_or("--device", "");
    auto threads = args.get_int("--threads", 0, 0, 1024);
    if (!threads) return threads.error();
    o.n_threads = static_cast<int>(*threads);
    o.cuda_graphs = !args.has("--no-cuda-graphs");
    return o;
}

}  // namespace

Result<double> draft_kv_share(const Args& args, const ModelDescription& target) {
    SpecConfig spec;
    if (Status s = read_spec_flags(args, spec); !s) return s.error();
    auto options = draft_options(args, spec);
    if (!options) return options.error();
    return folio::draft_kv_share(spec.method, target, *options);
}

Status load_draft(const Args& args, LoadedModel& m, SpecConfig& spec) {
    auto options = draft_options(args, spec);
    if (!options) return options.error();
    auto draft = load_draft_model(spec.method, m.model, m.tokenizer, *m.backend, *options);
    if (!draft) return draft.error();
    if (!draft->backend) return {};  // no draft model (off, ngram)
    m.draft_weights = std::move(draft->weights);
    m.draft_model = std::move(draft->model);
    m.draft_backend = std::move(draft->backend);
    spec.draft_backend = m.draft_backend.get();
    std::fprintf(stderr, "folio: draft %s, %u layers, %s, KV cache %u blocks (%.1f MiB)\n", m.draft_model->name.c_str(),
                 m.draft_model->hparams.n_layer, m.draft_backend->name().c_str(), m.draft_backend->n_blocks(),
                 static_cast<double>(m.draft_backend->kv_cache_bytes()) / (1 << 20));
    return {};
}

}  // namespace folio::cli
