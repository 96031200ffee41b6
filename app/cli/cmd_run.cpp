// folio run: generate from a prompt through the engine, streaming only the
// generated text to stdout; logs and timings go to stderr. --parallel N or
// -f FILE runs several prompts at once (continuous batching, from the terminal).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>

#include "commands.h"
#include "folio/chat_prompt.h"
#include "folio/chat_template.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> run_flags() {
    std::vector<FlagSpec> flags = model_flags();
    const std::vector<FlagSpec> own = {
        {"-p", "--prompt", "TEXT", "the prompt"},
        {"-f", "--file", "FILE", "prompts, one per line, run at once (continuous batching)"},
        {"", "--parallel", "N", "run N copies of the prompt at once (default 1)"},
        {"-n", "--n-predict", "N", "tokens to generate (default 128; -1: until the context is full, or without end "
                                   "under an --overflow other than stop)"},
        {"", "--ignore-eos", "", "keep generating past end-of-generation tokens"},
        {"", "--overflow", "MODE", "when a sequence reaches the context: stop (default), truncate, rolling (recompute "
                                    "the latest tokens), sink-window (keep the first --sinks tokens and the latest, "
                                    "slid in place: StreamingLLM, for generations of any length)"},
        {"", "--sinks", "N", "tokens sink-window keeps at the start (default 4)"},
        {"", "--chat", "", "wrap the prompt in the model's chat template as one user message"},
        {"-h", "--help", "", "this help"},
    };
    flags.insert(flags.end(), own.begin(), own.end());
    for (const FlagSpec& f : sampling_flags()) flags.push_back(f);
    for (const FlagSpec& f : engine_flags()) flags.push_back(f);
    return flags;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Result<std::vector<int32_t>> chat_tokens(const LoadedModel& m, const std::vector<ChatMessage>& messages,
                                         bool announce) {
    ChatTemplateChoice choice = ChatTemplate::for_model(m.model.chat_template, m.model.hparams.architecture);
    if (announce && choice.is_fallback) std::fprintf(stderr, "folio: %s\n", choice.notice.c_str());
    return chat_prompt_tokens(choice.chat_template, m.tokenizer, messages);
}

// One prompt per line of a file (blank lines skipped).
static Result<std::vector<std::string>> read_prompt_lines(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return make_error("cannot open " + path);
    std::vector<std::string> lines;
    std::string line;
    for (int c; (c = std::fgetc(f)) != EOF;) {
        if (c == '\n') {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) lines.push_back(line);
            line.clear();
        } else {
            line += static_cast<char>(c);
        }
    }
    std::fclose(f);
    if (!line.empty()) lines.push_back(line);
    if (lines.empty()) return make_error(path + " has no prompts (one per line)");
    return lines;
}

int run_run(int argc, char** argv) {
    const std::vector<FlagSpec> flags = run_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("run", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("run", "-m MODEL (-p PROMPT | -f FILE) [-n N] [--temp T] [--chat] [--parallel N]", flags).c_str());
        return 0;
    }
    std::vector<std::string> prompts;
    if (auto file = args->get("--file")) {
        auto lines = read_prompt_lines(*file);
        if (!lines) return fail("run", lines.error().message);
        prompts = std::move(*lines);
    } else {
        auto prompt = args->get("--prompt");
        if (!prompt) return fail("run", "no prompt given (-p TEXT or -f FILE)");
        if (prompt->empty()) return fail("run", "the prompt is empty");
        auto parallel = args->get_int("--parallel", 1, 1, 4096);
        if (!parallel) return fail("run", parallel.error().message);
        prompts.assign(static_cast<size_t>(*parallel), *prompt);
    }
    auto n_predict = args->get_int("--n-predict", 128, -1, 1 << 24);
    if (!n_predict) return fail("run", n_predict.error().message);
    if (*n_predict == 0)
        return fail("run", "option " + args->display_name("--n-predict") + " must be at least 1 (or -1: no limit but the context), got 0");
    const std::string overflow_name = args->get_or("--overflow", "stop");
    const auto overflow = chat_overflow_from_string(overflow_name);
    if (!overflow || *overflow == ChatOverflow::DropOldestTurns)
        return fail("run", "option --overflow wants stop, truncate, rolling or sink-window, got '" + overflow_name + "'");
    auto sinks = args->get_int("--sinks", 4, 0, 1 << 20);
    if (!sinks) return fail("run", sinks.error().message);
    SamplingParams params;
    if (Status s = read_sampling_flags(*args, params); !s) return fail("run", s.error().message);

    auto loaded = start_engine(*args, 4096, static_cast<uint32_t>(std::min<size_t>(prompts.size(), 64)));
    if (!loaded) return fail("run", loaded.error().message);
    LoadedModel& m = **loaded;

    std::vector<GenerationRequest> requests;
    for (size_t i = 0; i < prompts.size(); ++i) {
        GenerationRequest r;
        if (args->has("--chat")) {
            auto ids = chat_tokens(m, {ChatMessage{"user", prompts[i], ""}}, i == 0);
            if (!ids) return fail("run", ids.error().message);
            r.prompt_tokens = std::move(*ids);
        } else {
            r.prompt_tokens = m.tokenizer.encode(prompts[i], /*add_special=*/true, /*parse_special=*/true);
        }
        if (r.prompt_tokens.empty()) return fail("run", "the prompt has no tokens");
        r.overflow = engine_overflow(*overflow);
        r.sink_tokens = static_cast<int32_t>(*sinks);
        if (r.overflow == OverflowPolicy::Stop && static_cast<int64_t>(r.prompt_tokens.size()) >= m.backend->max_context())
            return fail("run", "the prompt is " + std::to_string(r.prompt_tokens.size()) +
                                   " tokens; the context holds " + std::to_string(m.backend->max_context()) +
                                   " (raise -c)");
        r.sampling = params;
        // Parallel copies of one prompt draw different samples: seed, seed + 1, ...
        if (params.seed != kRandomSeed) r.sampling.seed = params.seed + i;
        r.max_tokens = *n_predict >= 0 ? static_cast<int32_t>(*n_predict)
                       : r.overflow == OverflowPolicy::Stop ? static_cast<int32_t>(m.backend->max_context())
                                                            : std::numeric_limits<int32_t>::max();
        r.ignore_eos = args->has("--ignore-eos");
        requests.push_back(std::move(r));
    }

    const auto t0 = std::chrono::steady_clock::now();
    if (requests.size() == 1) {
        const Completion c = complete(*m.engine, std::move(requests[0]), /*stream=*/true, {.prefill_progress = true});
        std::fputc('\n', stdout);
        std::fflush(stdout);
        if (c.last.reason == FinishReason::Error) return fail("run", c.last.error);
        const RequestTimings& t = c.last.timings;
        std::fprintf(stderr,
                     "folio: prompt %d tokens (%d from the prefix cache), %.1f tok/s; generated %d tokens, %.1f tok/s; "
                     "time to first token %.3f s; stop: %s\n",
                     t.prompt_tokens, t.cached_prompt_tokens, t.prefill_tokens_per_s(), t.generated_tokens,
                     t.decode_tokens_per_s(), t.ttft_s, std::string(to_string(c.last.reason)).c_str());
        if (t.n_drafts > 0)
            std::fprintf(stderr,
                         "folio: speculative decoding: %d of %d draft tokens accepted (acceptance rate %.3f), "
                         "mean acceptance length %.2f\n",
                         t.accepted_tokens, t.draft_tokens, t.acceptance_rate(), t.mean_acceptance_length());
        return 0;
    }

    // Several at once: continuous batching. Results print in order as each is complete.
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<Completion> results(requests.size());
    std::vector<bool> done(requests.size(), false);
    std::vector<Submission> batch;
    for (size_t i = 0; i < requests.size(); ++i)
        batch.push_back({std::move(requests[i]), [&, i](const RequestOutput& out) {
                             std::lock_guard lock(mutex);
                             results[i].text += out.text;
                             if (out.finished) {
                                 results[i].last = out;
                                 done[i] = true;
                                 changed.notify_one();
                             }
                         }});
    m.engine->submit(std::move(batch));
    int failures = 0;
    int64_t generated = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return done[i]; });
        const Completion& c = results[i];
        std::printf("--- [%zu] %s\n%s\n", i + 1, std::string(to_string(c.last.reason)).c_str(), c.text.c_str());
        std::fflush(stdout);
        if (c.last.reason == FinishReason::Error) {
            ++failures;
            std::fprintf(stderr, "folio run: [%zu] %s\n", i + 1, c.last.error.c_str());
        }
        generated += c.last.timings.generated_tokens;
    }
    const double seconds = seconds_since(t0);
    const EngineMetrics metrics = m.engine->metrics();
    std::fprintf(stderr,
                 "folio: %zu sequences, %lld tokens generated in %.2f s (%.1f tok/s overall); "
                 "time to first token p50 %.3f s; %llu preemption%s; prefix cache %llu of %llu prompt tokens\n",
                 requests.size(), static_cast<long long>(generated), seconds, static_cast<double>(generated) / seconds,
                 metrics.time_to_first_token_seconds.quantile(0.5),
                 static_cast<unsigned long long>(metrics.num_preemptions_total),
                 metrics.num_preemptions_total == 1 ? "" : "s",
                 static_cast<unsigned long long>(metrics.prefix_cache_hits_total),
                 static_cast<unsigned long long>(metrics.prefix_cache_queries_total));
    if (const uint64_t drafts = metrics.spec_decode_num_drafts_total; drafts > 0) {
        const auto draft_tokens = static_cast<double>(metrics.spec_decode_num_draft_tokens_total);
        const auto accepted = static_cast<double>(metrics.spec_decode_num_accepted_tokens_total);
        std::fprintf(stderr, "folio: speculative decoding: acceptance rate %.3f, mean acceptance length %.2f\n",
                     accepted / draft_tokens, 1.0 + accepted / static_cast<double>(drafts));
    }
    return failures ? 1 : 0;
}

}  // namespace folio::cli
