// What the inference verbs (run, chat, perplexity, bench) share: loading a
// model onto the CPU backend with a tokenizer, and the sampling flags.
#pragma once

#include <optional>

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "folio/backend.h"
#include "folio/chat_template.h"
#include "folio/engine.h"
#include "folio/model.h"
#include "folio/sampling.h"
#include "folio/spec.h"
#include "folio/tokenizer.h"

namespace folio::cli {

struct LoadedModel {
    ModelDescription model;
    Tokenizer tokenizer;
    std::unique_ptr<Backend> backend;
    // Speculative decoding by a model (--spec draft | layer-skip): the draft's
    // description and backend (spec_flags.cpp: load_draft).
    std::unique_ptr<ModelDescription> draft_model;
    std::unique_ptr<InMemoryModel> draft_weights;  // int4-self: the quantized copy the draft_model points into
    std::unique_ptr<Backend> draft_backend;
    std::unique_ptr<Engine> engine;  // last: stops before the backends go
};

// The model -m names: a GGUF file or Hugging Face folder, or with
// --load-format dummy a shape (--dummy-type), generated on the host unless
// `on_gpu`.
Result<ModelDescription> load_model(const Args& args, const std::string& path, bool on_gpu);

// --device (default cpu); a GPU asked for where none is usable falls back to
// the CPU, saying why on stderr.
std::string chosen_device(const Args& args);

// -m, -t, -c, --device, --block-size, --kv-budget, --kv-type from `args`; `default_context` when
// -c is absent. Without --kv-budget the KV cache holds `kv_sequences` full contexts.
// `kv_type`, where given, replaces --kv-type (folio bench runs each of a list).
Result<std::unique_ptr<LoadedModel>> load_for_inference(const Args& args, uint32_t default_context,
                                                        uint32_t kv_sequences = 1,
                                                        std::optional<KvType> kv_type = std::nullopt);
// --kv-type: one type, or with `list` a comma-separated list (f16 when absent).
Result<std::vector<KvType>> read_kv_types(const Args& args, bool list = false);

// -b, --max-seqs, --no-prefix-cache into an EngineConfig.
Result<EngineConfig> read_engine_flags(const Args& args);
// Loads (as load_for_inference) and starts the engine on the model.
Result<std::unique_ptr<LoadedModel>> start_engine(const Args& args, uint32_t default_context,
                                                  uint32_t kv_sequences = 1);

// What one request produced, when it finished.
struct Completion {
    std::string text;
    std::vector<int32_t> tokens;
    RequestOutput last;  // finish reason, error, timings
};
// What a caller watches while one reply runs (the interactive verbs).
struct ReplyWatch {
    bool prefill_progress = false;   // a long prompt's prefill shown on stderr (prefill_progress.h)
    bool (*interrupted)() = nullptr; // polled: true aborts the reply (Ctrl+C in folio chat)
};
// Runs one request to the end, writing its text to stdout as it streams when `stream`.
Completion complete(Engine& engine, GenerationRequest request, bool stream, const ReplyWatch& watch = {});

// A float flag within [min, max]; the error names the flag.
Result<float> get_float(const Args& args, const std::string& long_name, float fallback, float min, float max);

// --temp --seed --top-k --top-p --min-p --repeat-penalty --repeat-last-n into params.
Status read_sampling_flags(const Args& args, SamplingParams& params);

// The conversation as the model's prompt tokens (folio/chat_prompt.h),
// through its chat template or the built-in fallback, announced on stderr
// when `announce`.
Result<std::vector<int32_t>> chat_tokens(const LoadedModel& m, const std::vector<ChatMessage>& messages,
                                         bool announce);

// The flags above, for a verb's flag table.
std::vector<FlagSpec> model_flags();
std::vector<FlagSpec> sampling_flags();
std::vector<FlagSpec> engine_flags();
// --spec, --draft-max, --draft-min, --ngram-min, --ngram-max (spec_flags.cpp;
// part of engine_flags()) into `spec`.
std::vector<FlagSpec> spec_flags();
Status read_spec_flags(const Args& args, SpecConfig& spec);
// For --spec draft (-md PATH) or layer-skip (--draft-layers N): the draft
// model and its backend (same device, context and KV blocks as the
// target's), its vocabulary checked against the target's; spec.draft_backend
// points at it.
Status load_draft(const Args& args, LoadedModel& m, SpecConfig& spec);
// The draft model's KV bytes per token relative to the target's (0 without
// one), so that --kv-budget / --kv-fraction hold both: the target gets
// 1 / (1 + share) of it, the draft as many blocks of its own size.
Result<double> draft_kv_share(const Args& args, const ModelDescription& target);

// folio bench --workload (cmd_bench_workload.cpp): its flags and the run.
std::vector<FlagSpec> workload_flags();
int run_bench_workload(const Args& args);
// folio bench --spec (cmd_bench_spec.cpp): with and without speculation, alternated.
int run_bench_spec(const Args& args);

}  // namespace folio::cli
