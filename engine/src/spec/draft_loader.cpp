// load_draft_model(): the draft model of speculative decoding by a model,
// beside a loaded target (the CLI's --spec and the studio's settings alike).
#include <algorithm>

#include "folio/spec.h"

namespace folio {

namespace {

double kv_per_token(const HParams& h, uint32_t layers) {
    return static_cast<double>(layers) * h.n_head_kv * h.head_dim;
}

bool has_draft_model(SpecMethod m) {
    return m == SpecMethod::Draft || m == SpecMethod::LayerSkip || m == SpecMethod::Int4Self;
}

}  // namespace

uint32_t layer_skip_layers(int32_t layers, const HParams& target) {
    return layers > 0 ? static_cast<uint32_t>(layers) : std::max<uint32_t>(1, target.n_layer / 4);
}

Result<double> draft_kv_share(SpecMethod method, const ModelDescription& target, const DraftOptions& options) {
    const double t = kv_per_token(target.hparams, target.hparams.n_layer);
    if (!(t > 0)) return 0.0;
    switch (method) {
        case SpecMethod::Int4Self: return 1.0;  // every layer, the target's shapes
        case SpecMethod::LayerSkip: {
            const uint32_t n = std::min(layer_skip_layers(options.layers, target.hparams), target.hparams.n_layer);
            return kv_per_token(target.hparams, n) / t;
        }
        case SpecMethod::Draft: {
            auto draft = load_model_description(options.path);
            if (!draft) return make_error("the draft model: " + draft.error().message);
            return kv_per_token(draft->hparams, draft->hparams.n_layer) / t;
        }
        default: return 0.0;
    }
}

Result<DraftModel> load_draft_model(SpecMethod method, const ModelDescription& target, const Tokenizer& target_tokenizer,
                                    const Backend& target_backend, const DraftOptions& options) {
    DraftModel d;
    if (!has_draft_model(method)) return d;
    if (method == SpecMethod::Draft) {
        if (options.path.empty()) return make_error("speculative decoding by a draft model needs the draft model's path");
        auto draft = load_model_description(options.path);
        if (!draft) return make_error("the draft model: " + draft.error().message);
        auto tokenizer = Tokenizer::create(draft->tokenizer);
        if (!tokenizer) return make_error("the draft model " + options.path + ": " + tokenizer.error().message);
        if (Status s = check_draft_vocabulary(target_tokenizer, *tokenizer); !s)
            return make_error(options.path + ": " + s.error().message);
        d.model = std::make_unique<ModelDescription>(std::move(*draft));
    } else if (method == SpecMethod::Int4Self) {
        auto quantized = quantize_to_4_bits(target);
        if (!quantized) return quantized.error();
        d.weights = std::move(*quantized);
        d.model = std::make_unique<ModelDescription>(d.weights->model);
    } else {
        auto draft = layer_skip_model(target, layer_skip_layers(options.layers, target.hparams));
        if (!draft) return draft.error();
        d.model = std::make_unique<ModelDescription>(std::move(*draft));
    }
    BackendOptions b;
    const bool cpu_target = target_backend.name().rfind("cpu", 0) == 0;
    b.device = cpu_target ? "cpu" : options.device.empty() ? "cuda" : options.device;
    b.n_threads = options.n_threads;
    b.block_size = target_backend.block_size();
    b.n_blocks = target_backend.n_blocks();  // as many blocks as the target's, each of the draft's own size
    b.max_context = target_backend.max_context();
    b.cuda_graphs = options.cuda_graphs;
    auto backend = create_backend(*d.model, b);
    if (!backend) return make_error("the draft model: " + backend.error().message);
    d.backend = std::move(*backend);
    return d;
}

}  // namespace folio
