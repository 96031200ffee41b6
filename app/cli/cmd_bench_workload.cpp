// folio bench --workload: replays a trace of requests (seeded synthetic
// Poisson arrivals, or a JSONL file) against the engine in several modes, one
// after the other on the same model and KV budget, and compares them:
//   paged     continuous batching over paged KV blocks (the engine as built)
//   static    static batching: a batch runs until all its sequences finish
//   reserve   continuous batching, but each request reserves KV for its whole
//             context up front (contiguous reservation)
// For each: output throughput, TTFT / inter-token latency / end-to-end p50 and
// p99, and the share of reserved KV memory that holds tokens (averaged over
// the run, weighted by step time). Requests ignore EOS and generate exactly
// their output length, as vLLM's benchmark_serving does. With --spec METHOD
// every mode runs twice, without and with speculative decoding, alternated,
// and the table gives the speed-up and the acceptance.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "folio/workload.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_per_step(double total_s, uint64_t steps) {
    return steps ? 1e3 * total_s / static_cast<double>(steps) : 0.0;
}

// One mode over all repetitions: samples are pooled, times and tokens summed.
struct ModeResult {
    std::string mode;
    bool spec = false;  // with --spec's speculative decoding
    double seconds = 0;
    int64_t output_tokens = 0;
    std::vector<double> ttft_samples, itl_samples, e2e_samples;
    LatencySummary ttft, itl, e2e;
    double kv_weighted = 0, kv_time = 0;  // tokens held / (blocks in use * block size), step-time weighted
    uint64_t preemptions = 0;
    uint64_t swapped_out_blocks = 0;  // of preempted sequences, to host swap space (a GPU's)
    uint64_t whole_rows = 0;          // tokens sampled from whole logits rows on the host
    // Steps that only decode: how many, and their summed time in step(), in
    // the backend's forward, and between the end of one step and the next.
    uint64_t decode_steps = 0;
    double decode_step_s = 0, decode_forward_s = 0, decode_gap_s = 0;
    uint64_t draft_tokens = 0, accepted_tokens = 0, drafts = 0;
    int failures = 0;
    std::string name() const { return spec ? mode + " + spec" : mode; }
    double acceptance() const { return draft_tokens ? double(accepted_tokens) / double(draft_tokens) : 0.0; }
    double mean_length() const { return drafts ? 1.0 + double(accepted_tokens) / double(drafts) : 1.0; }
    double throughput() const { return seconds > 0 ? static_cast<double>(output_tokens) / seconds : 0.0; }
    double kv_holding() const { return kv_time > 0 ? kv_weighted / kv_time : 0.0; }
};

// Per-request clock readings, filled from the engine thread.
struct Tracker {
    std::mutex mutex;
    std::condition_variable all_done;
    size_t remaining = 0;
    std::vector<Clock::time_point> submitted;
    std::vector<std::vector<Clock::time_point>> token_times;
    std::vector<Clock::time_point> finished;
    int failures = 0;
    std::string first_error;
    // KV holding: sum of (holding * step duration) and of durations.
    double kv_weighted = 0, kv_time = 0;
    double last_step_end = -1;  // engine time of the last step's end
    uint64_t decode_steps = 0;
    double decode_step_s = 0, decode_forward_s = 0, decode_gap_s = 0;
};

Result<std::pair<int32_t, int32_t>> get_range(const Args& args, const std::string& name, int32_t lo, int32_t hi) {
    auto text = args.get(name);
    if (!text) return std::make_pair(lo, hi);
    const size_t colon = text->find(':');
    try {
        const int a = std::stoi(text->substr(0, colon));
        const int b = colon == std::string::npos ? a : std::stoi(text->substr(colon + 1));
        if (a < 1 || b < a) throw std::invalid_argument("range");
        return std::make_pair(a, b);
    } catch (const std::exception&) {
        return make_error(name + " wants MIN:MAX (or N) with 1 <= MIN <= MAX, got '" + *text + "'");
    }
}

Status run_mode(LoadedModel& m, const EngineConfig& base, const SamplingParams& sampling,
                const std::vector<WorkloadRequest>& trace, const std::vector<std::vector<int32_t>>& prompts,
                ModeResult& result) {
    const std::string& mode = result.mode;
    EngineConfig config = base;
    if (mode == "static") config.scheduler.batching = BatchingMode::Static;
    if (mode == "reserve") config.scheduler.reserve_full_length = true;
    if (mode != "paged") config.enable_prefix_caching = false;
    if (!result.spec) config.spec.method = SpecMethod::Off;
    auto started = Engine::start(m.model, m.tokenizer, *m.backend, config);
    if (!started) return started.error();
    std::unique_ptr<Engine> engine = std::move(*started);

    Tracker t;
    const size_t n = trace.size();
    t.remaining = n;
    t.submitted.resize(n);
    t.token_times.resize(n);
    t.finished.resize(n);
    const double block = m.backend->block_size();
    engine->subscribe([&t, block](std::shared_ptr<const StepEvent> e) {
        uint64_t used = 0, held = 0;
        for (const BlockCell& c : e->blocks) {
            used += c.ref_count > 0;
            if (c.owner >= 0) held += c.tokens;
        }
        std::lock_guard lock(t.mutex);
        if (e->prefill_tokens == 0 && e->decode_tokens > 0 && t.last_step_end >= 0) {
            ++t.decode_steps;
            t.decode_step_s += e->duration_s;
            t.decode_forward_s += e->forward_s;
            t.decode_gap_s += std::max(0.0, e->time_s - e->duration_s - t.last_step_end);
        }
        if (e->duration_s > 0) t.last_step_end = e->time_s;
        if (used == 0 || e->duration_s <= 0) return;
        t.kv_weighted += e->duration_s * static_cast<double>(held) / (static_cast<double>(used) * block);
        t.kv_time += e->duration_s;
    });

    const Clock::time_point start = Clock::now();
    for (size_t i = 0; i < n; ++i) {
        std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(trace[i].arrival_s)));
        GenerationRequest r;
        r.prompt_tokens = prompts[i];
        r.sampling = sampling;
        r.sampling.seed = sampling.seed + i;  // each request its own draws, the same in every mode
        r.max_tokens = trace[i].output_tokens;
        r.ignore_eos = true;
        {
            std::lock_guard lock(t.mutex);
            t.submitted[i] = Clock::now();
        }
        engine->submit(std::move(r), [&t, i](const RequestOutput& out) {
            const Clock::time_point now = Clock::now();
            std::lock_guard lock(t.mutex);
            for (size_t k = 0; k < out.token_ids.size(); ++k) t.token_times[i].push_back(now);
            if (!out.finished) return;
            t.finished[i] = now;
            if (out.reason == FinishReason::Error && t.failures++ == 0) t.first_error = out.error;
            if (--t.remaining == 0) t.all_done.notify_one();
        });
    }
    std::unique_lock lock(t.mutex);
    t.all_done.wait(lock, [&t] { return t.remaining == 0; });

    Clock::time_point last = start;
    for (size_t i = 0; i < n; ++i) {
        last = std::max(last, t.finished[i]);
        const auto& times = t.token_times[i];
        result.output_tokens += static_cast<int64_t>(times.size());
        result.e2e_samples.push_back(std::chrono::duration<double>(t.finished[i] - t.submitted[i]).count());
        if (times.empty()) continue;
        result.ttft_samples.push_back(std::chrono::duration<double>(times[0] - t.submitted[i]).count());
        for (size_t k = 1; k < times.size(); ++k)
            result.itl_samples.push_back(std::chrono::duration<double>(times[k] - times[k - 1]).count());
    }
    const double seconds = std::chrono::duration<double>(last - start).count();
    result.seconds += seconds;
    result.kv_weighted += t.kv_weighted;
    result.kv_time += t.kv_time;
    result.decode_steps += t.decode_steps;
    result.decode_step_s += t.decode_step_s;
    result.decode_forward_s += t.decode_forward_s;
    result.decode_gap_s += t.decode_gap_s;
    result.failures += t.failures;
    const std::string first_error = t.first_error;
    const int failures = t.failures;
    lock.unlock();
    const EngineMetrics metrics = engine->metrics();
    result.preemptions += metrics.num_preemptions_total;
    result.swapped_out_blocks += metrics.kv_swapped_out_blocks_total;
    result.whole_rows += metrics.sampled_whole_rows_total;
    result.drafts += metrics.spec_decode_num_drafts_total;
    result.draft_tokens += metrics.spec_decode_num_draft_tokens_total;
    result.accepted_tokens += metrics.spec_decode_num_accepted_tokens_total;
    const std::string name = result.name();
    if (failures) std::fprintf(stderr, "folio bench: %s: %d requests failed: %s\n", name.c_str(), failures,
                               first_error.c_str());
    std::fprintf(stderr, "folio bench: %s: %.1f s\n", name.c_str(), seconds);
    if (t.decode_steps)
        std::fprintf(stderr,
                     "folio bench: %s: %llu decode-only steps, %.3f ms each: %.3f in the backend's forward, %.3f "
                     "on the host around it, then %.3f until the next step\n",
                     name.c_str(), static_cast<unsigned long long>(t.decode_steps),
                     ms_per_step(t.decode_step_s, t.decode_steps), ms_per_step(t.decode_forward_s, t.decode_steps),
                     ms_per_step(t.decode_step_s - t.decode_forward_s, t.decode_steps),
                     ms_per_step(t.decode_gap_s, t.decode_steps));
    return {};
}

}  // namespace

std::vector<FlagSpec> workload_flags() {
    return {
        {"", "--workload", "SPEC", "replay a trace instead: 'synthetic' or a JSONL file"},
        {"", "--requests", "N", "synthetic: requests (default 48)"},
        {"", "--seed", "N", "synthetic: the trace's seed, and the sampler's (default 0)"},
        {"", "--rate", "R", "synthetic: arrivals per second, Poisson; 'inf' = all at once (default 4)"},
        {"", "--prompt-len", "MIN:MAX", "synthetic: prompt tokens, uniform (default 32:256)"},
        {"", "--output-len", "MIN:MAX", "synthetic: output tokens, uniform (default 16:128)"},
        {"", "--modes", "LIST", "compare these of paged,static,reserve (default all three)"},
        {"", "--warmup", "N", "untimed runs of the trace in each mode first (default 1)"},
        {"", "--temp", "T", "sample at this temperature (default 0: greedy); with --top-k, --top-p, --min-p"},
        {"", "--top-k", "N", "top-k, 0 = off (default 40)"},
        {"", "--top-p", "P", "top-p, 1 = off (default 0.95)"},
        {"", "--min-p", "P", "min-p, 0 = off (default 0.05)"},
        {"", "--logprobs", "N", "report the top-N logprobs of every token (default 0)"},
        {"", "--repeat-penalty", "X", "repetition penalty, 1 = off (default 1.0)"},
        {"", "--repeat-last-n", "N", "tokens the penalties look back over (default 64, -1 = all)"},
        {"", "--frequency-penalty", "X", "frequency penalty, 0 = off (default 0)"},
        {"", "--presence-penalty", "X", "presence penalty, 0 = off (default 0)"},
    };
}

int run_bench_workload(const Args& args) {
    const std::string source = *args.get("--workload");
    std::vector<WorkloadRequest> trace;
    SyntheticWorkload synthetic;
    synthetic.n_requests = 48;
    if (source == "synthetic") {
        auto requests = args.get_int("--requests", synthetic.n_requests, 1, 1 << 20);
        if (!requests) return fail("bench", requests.error().message);
        synthetic.n_requests = static_cast<int32_t>(*requests);
        const std::string rate = args.get_or("--rate", "4");
        synthetic.request_rate = rate == "inf" ? std::numeric_limits<double>::infinity() : std::atof(rate.c_str());
        auto seed = args.get_int("--seed", 0, 0, std::numeric_limits<int64_t>::max());
        auto prompt_len = get_range(args, "--prompt-len", synthetic.prompt_min, synthetic.prompt_max);
        auto output_len = get_range(args, "--output-len", synthetic.output_min, synthetic.output_max);
        if (!seed || !prompt_len || !output_len)
            return fail("bench", (!seed ? seed.error() : !prompt_len ? prompt_len.error() : output_len.error()).message);
        synthetic.seed = static_cast<uint64_t>(*seed);
        std::tie(synthetic.prompt_min, synthetic.prompt_max) = *prompt_len;
        std::tie(synthetic.output_min, synthetic.output_max) = *output_len;
        if (Status s = validate(synthetic); !s) return fail("bench", s.error().message);
        trace = generate_workload(synthetic);
    } else {
        auto read = read_workload_jsonl(source);
        if (!read) return fail("bench", read.error().message);
        trace = std::move(*read);
    }
    std::vector<std::string> modes;
    {
        const std::string list = args.get_or("--modes", "paged,static,reserve");
        size_t pos = 0;
        while (pos <= list.size()) {
            const size_t comma = std::min(list.find(',', pos), list.size());
            const std::string mode = list.substr(pos, comma - pos);
            if (mode != "paged" && mode != "static" && mode != "reserve")
                return fail("bench", "--modes: unknown mode '" + mode + "' (paged, static, reserve)");
            modes.push_back(mode);
            pos = comma + 1;
        }
    }
    auto config = read_engine_flags(args);
    if (!config) return fail("bench", config.error().message);
    SamplingParams sampling;
    sampling.temperature = 0.0f;
    sampling.seed = 0;
    if (Status s = read_sampling_flags(args, sampling); !s) return fail("bench", s.error().message);
    auto logprobs = args.get_int("--logprobs", 0, 0, 100);
    if (!logprobs) return fail("bench", logprobs.error().message);
    sampling.n_logprobs = static_cast<int32_t>(*logprobs);

    // The context: the longest request, so that every one fits in every mode.
    int64_t longest = 0;
    for (const WorkloadRequest& r : trace) longest = std::max<int64_t>(longest, r.prompt_tokens + r.output_tokens);
    auto loaded = load_for_inference(args, static_cast<uint32_t>(std::max<int64_t>(longest, 512)), 8);
    if (!loaded) return fail("bench", loaded.error().message);
    LoadedModel& m = **loaded;
    if (Status s = load_draft(args, m, config->spec); !s) return fail("bench", s.error().message);  // --spec draft | layer-skip

    // Prompts: the trace's text tokenized, or seeded random ids of its length.
    std::mt19937_64 rng(synthetic.seed ^ 0x5eed);
    std::vector<std::vector<int32_t>> prompts;
    for (WorkloadRequest& r : trace) {
        std::vector<int32_t> ids;
        if (!r.prompt.empty()) ids = m.tokenizer.encode(r.prompt, /*add_special=*/true);
        else
            for (int32_t k = 0; k < r.prompt_tokens; ++k)
                ids.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(m.backend->n_vocab())));
        if (ids.empty() || r.output_tokens < 1) return fail("bench", "the trace has a request without prompt or output");
        if (static_cast<int64_t>(ids.size()) + r.output_tokens > m.backend->max_context())
            return fail("bench", "a request of " + std::to_string(ids.size() + static_cast<size_t>(r.output_tokens)) +
                                     " tokens does not fit the context (" + std::to_string(m.backend->max_context()) +
                                     "; raise -c)");
        r.prompt_tokens = static_cast<int32_t>(ids.size());
        prompts.push_back(std::move(ids));
    }
    int64_t prompt_total = 0, output_total = 0;
    for (const WorkloadRequest& r : trace) {
        prompt_total += r.prompt_tokens;
        output_total += r.output_tokens;
    }
    std::fprintf(stderr, "folio bench: %zu requests, %lld prompt and %lld output tokens, over %.1f s of arrivals\n",
                 trace.size(), static_cast<long long>(prompt_total), static_cast<long long>(output_total),
                 trace.back().arrival_s);

    auto reps = args.get_int("--repetitions", 1, 1, 100);
    if (!reps) return fail("bench", reps.error().message);
    // With --spec, each mode without and with speculation, side by side.
    const bool with_spec = config->spec.method != SpecMethod::Off;
    std::vector<ModeResult> results;
    for (const std::string& mode : modes)
        for (int on = 0; on <= int{with_spec}; ++on) {
            results.emplace_back().mode = mode;
            results.back().spec = on;
        }
    // Untimed first: one-time costs (the first touch of the weights, a GPU's
    // CUDA graphs for each batch shape, a draft model's) would otherwise
    // fall on whichever run comes first.
    auto warmup = args.get_int("--warmup", 1, 0, 100);
    if (!warmup) return fail("bench", warmup.error().message);
    for (int64_t w = 0; w < *warmup; ++w)
        for (const ModeResult& entry : results) {
            ModeResult scratch;
            scratch.mode = entry.mode;
            scratch.spec = entry.spec;
            std::fprintf(stderr, "folio bench: warming up %s ...\n", scratch.name().c_str());
            if (Status s = run_mode(m, *config, sampling, trace, prompts, scratch); !s) return fail("bench", s.error().message);
        }
    // Rotating the order spreads drifts in the machine's load over every mode.
    for (int64_t rep = 0; rep < *reps; ++rep)
        for (size_t k = 0; k < results.size(); ++k) {
            ModeResult& r = results[(k + static_cast<size_t>(rep)) % results.size()];
            std::fprintf(stderr, "folio bench: running %s (repetition %lld) ...\n", r.name().c_str(),
                         static_cast<long long>(rep + 1));
            if (Status s = run_mode(m, *config, sampling, trace, prompts, r); !s) return fail("bench", s.error().message);
        }
    for (ModeResult& r : results) {
        r.ttft = summarize(r.ttft_samples);
        r.itl = summarize(r.itl_samples);
        r.e2e = summarize(r.e2e_samples);
    }

    // A spec run's throughput over its mode's run without.
    auto spec_speedup = [&results](const ModeResult& r) {
        if (!r.spec) return 1.0;
        for (const ModeResult& o : results)
            if (o.mode == r.mode && !o.spec && o.throughput() > 0) return r.throughput() / o.throughput();
        return 0.0;
    };
    const bool json = args.has("--json");
    if (json) {
        std::printf("{\"model\": \"%s\", \"requests\": %zu, \"kv_blocks\": %u, \"block_size\": %u, \"modes\": [",
                    m.model.name.c_str(), trace.size(), m.backend->n_blocks(), m.backend->block_size());
        for (size_t i = 0; i < results.size(); ++i) {
            const ModeResult& r = results[i];
            std::printf("%s{\"mode\": \"%s\", \"seconds\": %.3f, \"output_tokens\": %lld, \"output_tps\": %.2f, "
                        "\"ttft_p50\": %.4f, \"ttft_p99\": %.4f, \"itl_p50\": %.5f, \"itl_p99\": %.5f, "
                        "\"e2e_p50\": %.3f, \"e2e_p99\": %.3f, \"kv_holding\": %.4f, \"preemptions\": %llu, "
                        "\"swapped_out_blocks\": %llu, \"sampled_whole_rows\": %llu, \"decode_steps\": %llu, "
                        "\"decode_step_ms\": %.3f, \"decode_forward_ms\": %.3f, \"decode_gap_ms\": %.3f, "
                        "\"spec\": \"%s\", \"draft_tokens\": %llu, \"accepted_tokens\": %llu, "
                        "\"acceptance_rate\": %.4f, \"mean_acceptance_length\": %.3f, \"spec_speedup\": %.4f, "
                        "\"failures\": %d}",
                        i ? ", " : "", r.mode.c_str(), r.seconds, static_cast<long long>(r.output_tokens),
                        r.throughput(), r.ttft.p50, r.ttft.p99, r.itl.p50, r.itl.p99, r.e2e.p50, r.e2e.p99,
                        r.kv_holding(), static_cast<unsigned long long>(r.preemptions),
                        static_cast<unsigned long long>(r.swapped_out_blocks),
                        static_cast<unsigned long long>(r.whole_rows),
                        static_cast<unsigned long long>(r.decode_steps), ms_per_step(r.decode_step_s, r.decode_steps),
                        ms_per_step(r.decode_forward_s, r.decode_steps), ms_per_step(r.decode_gap_s, r.decode_steps),
                        r.spec ? std::string(to_string(config->spec.method)).c_str() : "off",
                        static_cast<unsigned long long>(r.draft_tokens), static_cast<unsigned long long>(r.accepted_tokens),
                        r.acceptance(), r.mean_length(), spec_speedup(r), r.failures);
        }
        std::printf("]}\n");
    } else {
        std::printf("| mode | output tok/s | TTFT p50 / p99 s | ITL p50 / p99 ms | e2e p50 / p99 s | KV holding tokens | preemptions |\n");
        std::printf("|---|---|---|---|---|---|---|\n");
        for (const ModeResult& r : results)
            std::printf("| %s | %.1f | %.2f / %.2f | %.1f / %.1f | %.2f / %.2f | %.1f %% | %llu |\n", r.name().c_str(),
                        r.throughput(), r.ttft.p50, r.ttft.p99, r.itl.p50 * 1e3, r.itl.p99 * 1e3, r.e2e.p50,
                        r.e2e.p99, r.kv_holding() * 100, static_cast<unsigned long long>(r.preemptions));
        if (sampling.temperature > 0.0f || sampling.n_logprobs > 0)
            for (const ModeResult& r : results)
                std::printf("%s: %llu of %lld tokens sampled from whole logits rows on the host\n", r.name().c_str(),
                            static_cast<unsigned long long>(r.whole_rows), static_cast<long long>(r.output_tokens));
        for (const ModeResult& r : results)
            if (r.spec)
                std::printf("%s: %s %.3fx the output throughput without; acceptance %.3f, mean acceptance length %.2f\n",
                            r.mode.c_str(), std::string(to_string(config->spec.method)).c_str(), spec_speedup(r),
                            r.acceptance(), r.mean_length());
        const auto paged = std::find_if(results.begin(), results.end(),
                                        [](const ModeResult& r) { return r.mode == "paged" && !r.spec; });
        if (paged != results.end())
            for (const ModeResult& r : results)
                if (r.mode != "paged" && !r.spec && r.throughput() > 0)
                    std::printf("paged / %s: output throughput %.2fx, TTFT p50 %.2fx, KV holding %.1f %% vs %.1f %%\n",
                                r.mode.c_str(), paged->throughput() / r.throughput(),
                                r.ttft.p50 > 0 ? paged->ttft.p50 / r.ttft.p50 : 0.0, paged->kv_holding() * 100,
                                r.kv_holding() * 100);
    }
    int failures = 0;
    for (const ModeResult& r : results) failures += r.failures;
    return failures ? 1 : 0;
}

}  // namespace folio::cli
