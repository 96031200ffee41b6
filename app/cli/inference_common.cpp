#include "inference_common.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>

#include "prefill_progress.h"

namespace folio::cli {

std::vector<FlagSpec> model_flags() {
    return {
        {"-m", "--model", "PATH", "GGUF file or Hugging Face folder"},
        {"-t", "--threads", "N", "CPU threads (default: physical cores)"},
        {"-c", "--ctx-size", "N", "context length in tokens (capped at the model's trained context)"},
        {"", "--kv-type", "T", "KV cache storage: f16 (default), q8_0 (34 bytes per 32 values) or fp8 (E4M3 "
                               "with a scale per 32 values: 33 bytes); bench takes a list, f16,q8_0,fp8"},
        {"", "--device", "DEV", "cpu, cuda or cuda:N (default cpu; cuda without a usable GPU falls back to cpu)"},
        {"", "--load-format", "F", "auto (a file or folder) or dummy: -m names a shape, weights are random"},
        {"", "--dummy-type", "T", "weight type of a dummy model: f16, bf16, f32, q4_0, q8_0, q4_k, ... (default f16)"},
        {"", "--f32-activations", "", "CPU: quantized weights meet F32 activations (each block dequantized), as in an "
                                      "F32 copy of the model, not 8-bit ones; slower, the reference precision"},
    };
}

std::vector<FlagSpec> sampling_flags() {
    // The engine's defaults, which the studio's chats start from too.
    char temp[96];
    std::snprintf(temp, sizeof temp, "temperature, 0 = greedy (default %g, as in the studio)",
                  static_cast<double>(SamplingParams{}.temperature));
    return {
        {"", "--temp", "T", temp},
        {"-s", "--seed", "N", "random seed (default: random)"},
        {"", "--top-k", "N", "top-k, 0 = off (default 40)"},
        {"", "--top-p", "P", "top-p, 1 = off (default 0.95)"},
        {"", "--min-p", "P", "min-p, 0 = off (default 0.05)"},
        {"", "--repeat-penalty", "X", "repetition penalty, 1 = off (default 1.0)"},
        {"", "--repeat-last-n", "N", "tokens the penalties look back over (default 64, -1 = all)"},
        {"", "--frequency-penalty", "X", "subtracted once per occurrence in that window, 0 = off (default 0)"},
        {"", "--presence-penalty", "X", "subtracted once for any occurrence in that window, 0 = off (default 0)"},
    };
}

std::vector<FlagSpec> engine_flags() {
    std::vector<FlagSpec> flags = {
        {"-b", "--batch-size", "N", "most tokens per engine step, prefill chunks included (default 256)"},
        {"", "--max-seqs", "N", "most sequences per step (default 64)"},
        {"", "--sampling-threads", "N", "host threads drawing tokens from whole logits rows (default: -t, or up to 8 beside a GPU)"},
        {"", "--block-size", "N", "tokens per KV block (default 16)"},
        {"", "--kv-budget", "MIB", "KV cache memory in MiB (default: the context times the parallel sequences)"},
        {"", "--kv-fraction", "F", "KV cache memory as a share of the memory available now, e.g. 0.5"},
        {"", "--swap-space", "GIB", "GPU: host memory preempted requests' KV blocks are swapped to (default: min(4, the "
                                    "KV cache); 0 = recompute them)"},
        {"", "--no-prefix-cache", "", "do not reuse the KV blocks of earlier identical prefixes"},
        {"", "--no-cuda-graphs", "", "CUDA: launch every decode step's kernels instead of replaying a graph"},
    };
    for (FlagSpec& f : spec_flags()) flags.push_back(std::move(f));
    return flags;
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
        return make_error(args.display_name(long_name) + " wants a number between " + range + ", got '" + *text + "'");
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
    auto frequency = get_float(args, "--frequency-penalty", params.frequency_penalty, -2.0f, 2.0f);
    if (!frequency) return frequency.error();
    params.frequency_penalty = *frequency;
    auto presence = get_float(args, "--presence-penalty", params.presence_penalty, -2.0f, 2.0f);
    if (!presence) return presence.error();
    params.presence_penalty = *presence;
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

Result<ModelDescription> load_model(const Args& args, const std::string& path, bool on_gpu) {
    const std::string format = args.get("--load-format").value_or("auto");
    if (format == "auto") return load_model_description(path);
    if (format != "dummy") return make_error("--load-format wants auto or dummy, got '" + format + "'");
    DummyModelOptions dummy;
    dummy.shape = path;
    dummy.on_host = !on_gpu;  // a GPU generates its own
    std::string type = args.get("--dummy-type").value_or("f16");
    std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::toupper(c); });
    for (uint32_t id = 0; id < 64; ++id)
        if (auto t = tensor_type_traits(id); t && t->name == type) dummy.type = t->type;
    if (traits(dummy.type).name != type) return make_error("--dummy-type: unknown weight type '" + type + "'");
    return make_dummy_model(dummy);
}

std::string chosen_device(const Args& args) {
    const std::string device = args.get("--device").value_or("cpu");
    if ((device == "cuda" || device.starts_with("cuda:")) && cuda_device_count() == 0) {
        std::fprintf(stderr, "folio: %s; running on the CPU\n", describe_cuda_devices().c_str());
        return "cpu";
    }
    return device;
}

Result<std::vector<KvType>> read_kv_types(const Args& args, bool list) {
    const std::string text = args.get("--kv-type").value_or("f16");
    std::vector<KvType> types;
    for (size_t begin = 0; begin <= text.size();) {
        const size_t end = std::min(text.find(',', begin), text.size());
        const auto type = parse_kv_type(std::string_view(text).substr(begin, end - begin));
        if (!type) return make_error("--kv-type wants f16, q8_0 or fp8" + std::string(list ? " (or a list: f16,fp8)" : "") +
                                     ", got '" + text + "'");
        types.push_back(*type);
        begin = end + 1;
    }
    if (!list && types.size() != 1) return make_error("--kv-type takes one type here, got '" + text + "'");
    return types;
}

Result<std::unique_ptr<LoadedModel>> load_for_inference(const Args& args, uint32_t default_context,
                                                        uint32_t kv_sequences, std::optional<KvType> kv_type) {
    auto path = args.get("--model");
    if (!path) return make_error("no model given (-m PATH)");
    auto threads = args.get_int("--threads", 0, 0, 1024);
    if (!threads) return threads.error();
    auto ctx = args.get_int("--ctx-size", default_context, 1, 1 << 24);
    if (!ctx) return ctx.error();
    auto block_size = args.get_int("--block-size", kDefaultBlockSize, 1, 1024);
    if (!block_size) return block_size.error();
    auto kv_budget = args.get_int("--kv-budget", 0, 1, int64_t{1} << 30);
    if (!kv_budget) return kv_budget.error();
    // Every value is checked before the model loads (seconds, for a large one).
    auto swap_gib = get_float(args, "--swap-space", 0.0f, 0.0f, 1024.0f);
    if (!swap_gib) return swap_gib.error();
    auto fraction = get_float(args, "--kv-fraction", 0.5f, 0.001f, 0.95f);
    if (!fraction) return fraction.error();
    if (!kv_type) {
        auto types = read_kv_types(args);
        if (!types) return types.error();
        kv_type = types->front();
    }

    BackendOptions options;
    options.device = chosen_device(args);
    auto model = load_model(args, *path, options.device != "cpu");
    if (!model) return model.error();
    auto tokenizer = Tokenizer::create(model->tokenizer);
    if (!tokenizer) return tokenizer.error();
    auto loaded = std::make_unique<LoadedModel>(LoadedModel{std::move(*model), std::move(*tokenizer), nullptr, nullptr, nullptr, nullptr, nullptr});
    options.n_threads = static_cast<int>(*threads);
    options.cuda_graphs = !args.has("--no-cuda-graphs");
    options.f32_activations = args.has("--f32-activations");
    options.kv_type = *kv_type;
    if (args.has("--swap-space")) {
        options.swap_space_bytes = static_cast<int64_t>(static_cast<double>(*swap_gib) * double(uint64_t{1} << 30));
    }
    options.max_context = static_cast<uint32_t>(*ctx);
    options.block_size = static_cast<uint32_t>(*block_size);
    // A draft model's KV (speculative decoding) comes out of the same
    // memory: as many blocks as the target's, of the draft's own size.
    auto draft_share = draft_kv_share(args, loaded->model);
    if (!draft_share) return draft_share.error();
    const double target_share = 1.0 / (1.0 + *draft_share);
    if (args.has("--kv-budget")) {
        options.kv_budget_bytes = static_cast<uint64_t>(static_cast<double>(static_cast<uint64_t>(*kv_budget) << 20) * target_share);
    } else if (args.has("--kv-fraction")) {
        options.kv_memory_fraction = *fraction * target_share;
    } else {
        const uint64_t context = std::min<uint64_t>(options.max_context, loaded->model.hparams.n_ctx_train
                                                                             ? loaded->model.hparams.n_ctx_train
                                                                             : options.max_context);
        options.n_blocks = static_cast<uint32_t>((context + options.block_size - 1) / options.block_size *
                                                 std::max<uint32_t>(1, kv_sequences));
    }
    // The backend keeps a reference to the description: it lives in `loaded`, which does not move.
    auto backend = create_backend(loaded->model, options);
    if (!backend) return backend.error();
    loaded->backend = std::move(*backend);
    const Backend& b = *loaded->backend;
    std::string swap;
    if (b.n_swap_blocks() > 0)
        swap = ", swap space " + std::to_string(b.n_swap_blocks()) + " blocks (" +
               std::to_string(b.n_swap_blocks() * b.kv_bytes_per_block() >> 20) + " MiB, pinned as it is used)";
    std::fprintf(stderr, "folio: %s (%s), %s, context %u, KV cache %u blocks of %u tokens (%.1f MiB)%s\n",
                 loaded->model.name.c_str(), loaded->model.hparams.architecture.c_str(), b.name().c_str(),
                 b.max_context(), b.n_blocks(), b.block_size(), static_cast<double>(b.kv_cache_bytes()) / (1 << 20),
                 swap.c_str());
    return loaded;
}

Result<EngineConfig> read_engine_flags(const Args& args) {
    EngineConfig config;
    auto batch = args.get_int("--batch-size", config.scheduler.max_num_batched_tokens, 1, 1 << 20);
    if (!batch) return batch.error();
    auto seqs = args.get_int("--max-seqs", config.scheduler.max_num_seqs, 1, 1 << 16);
    if (!seqs) return seqs.error();
    config.scheduler.max_num_batched_tokens = static_cast<uint32_t>(*batch);
    config.scheduler.max_num_seqs = static_cast<uint32_t>(*seqs);
    config.enable_prefix_caching = !args.has("--no-prefix-cache");
    auto sampling_threads = args.get_int("--sampling-threads", 0, 1, 256);
    if (!sampling_threads) return sampling_threads.error();
    config.sampling_threads = static_cast<int>(*sampling_threads);
    if (Status s = read_spec_flags(args, config.spec); !s) return s.error();
    return config;
}

Result<std::unique_ptr<LoadedModel>> start_engine(const Args& args, uint32_t default_context, uint32_t kv_sequences) {
    auto config = read_engine_flags(args);
    if (!config) return config.error();
    auto loaded = load_for_inference(args, default_context, kv_sequences);
    if (!loaded) return loaded.error();
    LoadedModel& m = **loaded;
    if (Status s = load_draft(args, m, config->spec); !s) return s.error();
    auto engine = Engine::start(m.model, m.tokenizer, *m.backend, *config);
    if (!engine) return engine.error();
    m.engine = std::move(*engine);
    return loaded;
}

Completion complete(Engine& engine, GenerationRequest request, bool stream, const ReplyWatch& watch) {
    Completion result;
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false, first_output = false;
    std::optional<PrefillProgress> progress;
    if (watch.prefill_progress) progress.emplace(engine, static_cast<int64_t>(request.prompt_tokens.size()));
    const RequestId id = engine.submit(std::move(request), [&](const RequestOutput& out) {
        std::lock_guard lock(mutex);
        // The progress line ends before the reply's first text.
        if (progress && !first_output) progress->finish(out.timings);
        first_output = true;
        if (stream && !out.text.empty()) {
            std::fwrite(out.text.data(), 1, out.text.size(), stdout);
            std::fflush(stdout);
        }
        result.text += out.text;
        result.tokens.insert(result.tokens.end(), out.token_ids.begin(), out.token_ids.end());
        if (out.finished) {
            result.last = out;
            done = true;
            done_cv.notify_one();
        }
    });
    std::unique_lock lock(mutex);
    if (!progress && !watch.interrupted) {
        done_cv.wait(lock, [&] { return done; });
        return result;
    }
    bool aborted = false;
    while (!done_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
        if (!aborted && watch.interrupted && watch.interrupted()) {
            engine.abort(id);  // the callback still gets its finished output
            aborted = true;
        }
        // Under the lock, so that the callback's finish() cannot interleave;
        // metrics() takes the engine's lock, which no callback runs under.
        if (progress && !first_output) progress->update();
    }
    return result;
}

}  // namespace folio::cli
