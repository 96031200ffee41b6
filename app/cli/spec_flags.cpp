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

double kv_per_token(const HParams& h, uint32_t layers) {
    return static_cast<double>(layers) * h.n_head_kv * h.head_dim;
}

// layer-skip's draft: --draft-layers, or a quarter of the target's layers.
uint32_t layer_skip_layers(int32_t draft_layers, const HParams& target) {
    return draft_layers > 0 ? static_cast<uint32_t>(draft_layers) : std::max<uint32_t>(1, target.n_layer / 4);
}

}  // namespace

Result<double> draft_kv_share(const Args& args, const ModelDescription& target) {
    const double t = kv_per_token(target.hparams, target.hparams.n_layer);
    if (!(t > 0)) return 0.0;
    SpecConfig spec;
    if (Status s = read_spec_flags(args, spec); !s) return s.error();
    if (spec.method == SpecMethod::Int4Self) return 1.0;  // every layer, the target's shapes
    if (spec.method == SpecMethod::LayerSkip) {
        const uint32_t n = std::min(layer_skip_layers(spec.draft_layers, target.hparams), target.hparams.n_layer);
        return kv_per_token(target.hparams, n) / t;
    }
    if (spec.method == SpecMethod::Draft) {
        auto draft = load_model_description(args.get_or("--model-draft", ""));
        if (!draft) return make_error("the draft model: " + draft.error().message);
        return kv_per_token(draft->hparams, draft->hparams.n_layer) / t;
    }
    return 0.0;
}

Status load_draft(const Args& args, LoadedModel& m, SpecConfig& spec) {
    if (spec.method != SpecMethod::Draft && spec.method != SpecMethod::LayerSkip && spec.method != SpecMethod::Int4Self)
        return {};
    if (spec.method == SpecMethod::Draft) {
        const std::string path = args.get_or("--model-draft", "");
        auto draft = load_model_description(path);
        if (!draft) return make_error("the draft model: " + draft.error().message);
        auto tokenizer = Tokenizer::create(draft->tokenizer);
        if (!tokenizer) return make_error("the draft model " + path + ": " + tokenizer.error().message);
        if (Status s = check_draft_vocabulary(m.tokenizer, *tokenizer); !s)
            return make_error(path + ": " + s.error().message);
        m.draft_model = std::make_unique<ModelDescription>(std::move(*draft));
    } else if (spec.method == SpecMethod::Int4Self) {
        auto quantized = quantize_to_4_bits(m.model);
        if (!quantized) return quantized.error();
        m.draft_weights = std::move(*quantized);
        m.draft_model = std::make_unique<ModelDescription>(m.draft_weights->model);
    } else {
        const uint32_t layers = layer_skip_layers(spec.draft_layers, m.model.hparams);
        auto draft = layer_skip_model(m.model, layers);
        if (!draft) return draft.error();
        m.draft_model = std::make_unique<ModelDescription>(std::move(*draft));
    }
    BackendOptions options;
    options.device = m.backend->name().rfind("cpu", 0) == 0 ? "cpu" : args.get_or("--device", "cpu");
    auto threads = args.get_int("--threads", 0, 0, 1024);
    if (!threads) return threads.error();
    options.n_threads = static_cast<int>(*threads);
    options.block_size = m.backend->block_size();
    options.n_blocks = m.backend->n_blocks();
    options.max_context = m.backend->max_context();
    options.cuda_graphs = !args.has("--no-cuda-graphs");
    auto backend = create_backend(*m.draft_model, options);
    if (!backend) return make_error("the draft model: " + backend.error().message);
    m.draft_backend = std::move(*backend);
    spec.draft_backend = m.draft_backend.get();
    // Its KV: as many blocks as the target's, each of the draft's own size.
    std::fprintf(stderr, "folio: draft %s, %u layers, %s, KV cache %u blocks (%.1f MiB)\n", m.draft_model->name.c_str(),
                 m.draft_model->hparams.n_layer, m.draft_backend->name().c_str(), m.draft_backend->n_blocks(),
                 static_cast<double>(m.draft_backend->kv_cache_bytes()) / (1 << 20));
    return {};
}

}  // namespace folio::cli
