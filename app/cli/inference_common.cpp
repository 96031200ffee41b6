#include "inference_common.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace folio::cli {

std::vector<FlagSpec> model_flags() {
    return {
        {"-m", "--model", "PATH", "GGUF file or Hugging Face folder"},
        {"-t", "--threads", "N", "CPU threads (default: physical cores)"},
        {"-c", "--ctx-size", "N", "context length in tokens (capped at the model's trained context)"},
    };
}

std::vector<FlagSpec> sampling_flags() {
    return {
        {"", "--temp", "T", "temperature, 0 = greedy (default 0.8)"},
        {"-s", "--seed", "N", "random seed (default: random)"},
        {"", "--top-k", "N", "top-k, 0 = off (default 40)"},
        {"", "--top-p", "P", "top-p, 1 = off (default 0.95)"},
        {"", "--min-p", "P", "min-p, 0 = off (default 0.05)"},
        {"", "--repeat-penalty", "X", "repetition penalty, 1 = off (default 1.0)"},
        {"", "--repeat-last-n", "N", "tokens the penalty looks back over (default 64, -1 = all)"},
    };
}

Result<float> get_float(const Args& args, const std::string& long_name, float fallback, float min, float max) {
    auto text = args.get(long_name);
    if (!text) return fallback;
    char* end = nullptr;
    const double value = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0' || !std::isfinite(value) || value < min || value > max)
    {
        char range[64];
        std::snprintf(range, sizeof range, "%g and %g", static_cast<double>(min), static_cast<double>(max));
        return make_error(long_name + " wants a number between " + range + ", got '" + *text + "'");
    }
    return static_cast<float>(value);
}

Status read_sampling_flags(const Args& args, SamplingParams& params) {
    auto temp = get_float(args, "--temp", params.temperature, 0.0f, 100.0f);
    if (!temp) return temp.error();
    params.temperature = *temp;
    auto top_p = get_float(args, "--top-p", params.top_p, 0.0f, 1.0f);
    if (!top_p) return top_p.error();
    params.top_p = *top_p;
    auto min_p = get_float(args, "--min-p", params.min_p, 0.0f, 1.0f);
    if (!min_p) return min_p.error();
    params.min_p = *min_p;
    auto repeat = get_float(args, "--repeat-penalty", params.repetition_penalty, 0.0f, 100.0f);
    if (!repeat) return repeat.error();
    params.repetition_penalty = *repeat;
    auto top_k = args.get_int("--top-k", params.top_k, 0, std::numeric_limits<int32_t>::max());
    if (!top_k) return top_k.error();
    params.top_k = static_cast<int32_t>(*top_k);
    auto last_n = args.get_int("--repeat-last-n", params.penalty_last_n, -1, std::numeric_limits<int32_t>::max());
    if (!last_n) return last_n.error();
    params.penalty_last_n = static_cast<int32_t>(*last_n);
    if (args.has("--seed")) {
        auto seed = args.get_int("--seed", 0, 0, std::numeric_limits<int64_t>::max());
        if (!seed) return seed.error();
        params.seed = static_cast<uint64_t>(*seed);
    }
    return params.validate();
}

Result<std::unique_ptr<LoadedModel>> load_for_inference(const Args& args, uint32_t default_context) {
    auto path = args.get("--model");
    if (!path) return make_error("no model given (-m PATH)");
    auto threads = args.get_int("--threads", 0, 0, 1024);
    if (!threads) return threads.error();
    auto ctx = args.get_int("--ctx-size", default_context, 1, 1 << 24);
    if (!ctx) return ctx.error();

    auto model = load_model_description(*path);
    if (!model) return model.error();
    auto tokenizer = Tokenizer::create(model->tokenizer);
    if (!tokenizer) return tokenizer.error();
    auto loaded = std::make_unique<LoadedModel>(LoadedModel{std::move(*model), std::move(*tokenizer), nullptr});
    BackendOptions options;
    options.n_threads = static_cast<int>(*threads);
    options.max_context = static_cast<uint32_t>(*ctx);
    // The backend keeps a reference to the description: it lives in `loaded`, which does not move.
    auto backend = create_cpu_backend(loaded->model, options);
    if (!backend) return backend.error();
    loaded->backend = std::move(*backend);
    std::fprintf(stderr, "folio: %s (%s), %s, context %u\n", loaded->model.name.c_str(),
                 loaded->model.hparams.architecture.c_str(), loaded->backend->name().c_str(),
                 loaded->backend->max_context());
    return loaded;
}

}  // namespace folio::cli
