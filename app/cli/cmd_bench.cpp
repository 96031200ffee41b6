// folio bench: throughput like llama-bench, through the engine. pp: one
// prompt of -p random tokens as one step from an empty cache (first
// scheduled -> first token); tg: -n tokens generated one at a time after a
// one-token prompt (first token -> last). Each is run once to warm up, then
// -r times; reported as mean ± sd tokens/s. --workload replays a trace of
// many requests instead (cmd_bench_workload.cpp).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "commands.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> bench_flags() {
    std::vector<FlagSpec> flags = model_flags();
    flags.push_back({"-p", "--n-prompt", "N", "prompt tokens (default 512, 0 = skip)"});
    flags.push_back({"-n", "--n-gen", "N", "generated tokens (default 128, 0 = skip)"});
    flags.push_back({"-d", "--n-depth", "N", "tokens already in the context when generation is timed (default 0)"});
    flags.push_back({"-r", "--repetitions", "N", "timed runs of each test (default 5; --workload: runs of each mode, in rotating order, default 1)"});
    flags.push_back({"", "--json", "", "print the result as JSON"});
    flags.push_back({"", "--spec-prompt", "TEXT", "--spec: the prompt (a chat message) both runs continue"});
    flags.push_back({"", "--spec-prompt-file", "FILE", "--spec: prompts, one per line, run at once"});
    flags.push_back({"", "--spec-trace", "FILE", "--spec: every step of every run (warm-up = run 0) as CSV: rows, K, draft / forward / step time"});
    for (const FlagSpec& f : workload_flags()) flags.push_back(f);
    for (const FlagSpec& f : engine_flags()) flags.push_back(f);
    flags.push_back({"-h", "--help", "", "this help"});
    return flags;
}

struct Throughput {
    int64_t n_tokens = 0;
    double mean = 0.0, sd = 0.0;
};

Throughput summarize(int64_t n_tokens, const std::vector<double>& seconds) {
    Throughput t;
    t.n_tokens = n_tokens;
    if (seconds.empty()) return t;
    std::vector<double> tps;
    for (double s : seconds) tps.push_back(static_cast<double>(n_tokens) / s);
    for (double x : tps) t.mean += x;
    t.mean /= static_cast<double>(tps.size());
    if (tps.size() > 1) {
        double var = 0.0;
        for (double x : tps) var += (x - t.mean) * (x - t.mean);
        t.sd = std::sqrt(var / static_cast<double>(tps.size() - 1));
    }
    return t;
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) continue;
        out += c;
    }
    return out;
}

}  // namespace

int run_bench(int argc, char** argv) {
    const std::vector<FlagSpec> flags = bench_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("bench", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("bench", "-m MODEL [-p 512] [-n 128] [-d 0] [-r 5] [-t THREADS] [--device cuda] [--json] | --workload ...",
                                flags).c_str());
        return 0;
    }
    if (args->has("--workload")) return run_bench_workload(*args);
    if (args->has("--spec")) return run_bench_spec(*args);
    auto n_prompt = args->get_int("--n-prompt", 512, 0, 1 << 20);
    auto n_gen = args->get_int("--n-gen", 128, 0, 1 << 20);
    auto reps = args->get_int("--repetitions", 5, 1, 1000);
    auto depth = args->get_int("--n-depth", 0, 0, 1 << 20);
    if (!n_prompt || !n_gen || !reps || !depth)
        return fail("bench", (!n_prompt ? n_prompt.error() : !n_gen ? n_gen.error() : !reps ? reps.error() : depth.error()).message);
    const int64_t context = std::max<int64_t>(*n_prompt, *depth + *n_gen) + 2;
    // Without -c, the context run and chat use (4096), or the next power of two the test fits in: the
    // load line then names a context a user would choose, not the test's own 514 tokens.
    int64_t default_context = 4096;
    while (default_context < context) default_context *= 2;
    // --kv-type f16,q8_0: each KV type in turn, one model load each, the rows side by side.
    auto kv_types = read_kv_types(*args, /*list=*/true);
    if (!kv_types) return fail("bench", kv_types.error().message);
    struct Row {
        KvType kv_type = KvType::F16;
        uint64_t kv_bytes_per_token = 0;
        std::string model, backend;
        int threads = 0;
        Throughput pp, tg;
    };
    std::vector<Row> rows;
    for (const KvType kv_type : *kv_types) {
        auto loaded = load_for_inference(*args, static_cast<uint32_t>(std::min<int64_t>(default_context, 1 << 24)), 1, kv_type);
        if (!loaded) return fail("bench", loaded.error().message);
        LoadedModel& m = **loaded;
        if (context > m.backend->max_context())
            return fail("bench", "the test needs a context of " + std::to_string(context) + " tokens; the model allows " +
                                     std::to_string(m.backend->max_context()));
        EngineConfig config;
        // The pp test runs as one batch; the -d context fills in batches of up to 2048 tokens (llama-bench's
        // default), not one token a step as a batch sized by -p 0 would make it.
        config.scheduler.max_num_batched_tokens =
            static_cast<uint32_t>(std::max<int64_t>({*n_prompt, std::min<int64_t>(*depth, 2048), 1}));
        config.enable_prefix_caching = false;
        auto engine = Engine::start(m.model, m.tokenizer, *m.backend, config);
        if (!engine) return fail("bench", engine.error().message);
        m.engine = std::move(*engine);

        std::mt19937 rng(1234);
        std::uniform_int_distribution<int32_t> any_token(0, m.backend->n_vocab() - 1);
        const int32_t bos = m.tokenizer.bos_id() >= 0 && m.tokenizer.add_bos() ? m.tokenizer.bos_id() : -1;
        auto run = [&](std::vector<int32_t> prompt, int32_t max_tokens) -> Result<RequestTimings> {
            GenerationRequest r;
            r.prompt_tokens = std::move(prompt);
            r.sampling.temperature = 0;
            r.max_tokens = max_tokens;
            r.ignore_eos = true;
            const Completion c = complete(*m.engine, std::move(r), /*stream=*/false);
            if (c.last.reason == FinishReason::Error) return make_error(c.last.error);
            return c.last.timings;
        };

        std::vector<double> pp_seconds, tg_seconds;
        auto random_prompt = [&](int64_t n) {
            std::vector<int32_t> prompt(static_cast<size_t>(std::max<int64_t>(n, 1)));
            for (auto& t : prompt) t = any_token(rng);
            if (bos >= 0) prompt[0] = bos;
            return prompt;
        };
        for (int64_t rep = 0; rep <= *reps && *n_prompt > 0; ++rep) {
            auto t = run(random_prompt(*n_prompt), 1);
            if (!t) return fail("bench", t.error().message);
            if (rep > 0) pp_seconds.push_back(t->ttft_s - t->queue_s);  // rep 0 warms up
        }
        for (int64_t rep = 0; rep <= *reps && *n_gen > 0; ++rep) {
            auto t = run(random_prompt(*depth), static_cast<int32_t>(*n_gen) + 1);
            if (!t) return fail("bench", t.error().message);
            if (rep > 0) tg_seconds.push_back(t->e2e_s - t->ttft_s);
        }
        rows.push_back({kv_type, m.backend->kv_bytes_per_block() / m.backend->block_size(), m.model.name,
                        m.backend->name(), m.backend->n_threads(), summarize(*n_prompt, pp_seconds),
                        summarize(*n_gen, tg_seconds)});
    }
    const bool kv_column = kv_types->size() > 1 || args->has("--kv-type");
    if (args->has("--json")) {
        for (const Row& r : rows)
            std::printf("{\"model\": \"%s\", \"threads\": %d, \"backend\": \"%s\", \"kv_type\": \"%s\", "
                        "\"kv_bytes_per_token\": %llu, "
                        "\"pp\": {\"n_tokens\": %lld, \"mean_tps\": %.3f, \"sd_tps\": %.3f}, "
                        "\"tg\": {\"n_tokens\": %lld, \"depth\": %lld, \"mean_tps\": %.3f, \"sd_tps\": %.3f}}\n",
                        json_escape(*args->get("--model")).c_str(), r.threads, json_escape(r.backend).c_str(),
                        std::string(kv_type_name(r.kv_type)).c_str(), static_cast<unsigned long long>(r.kv_bytes_per_token),
                        static_cast<long long>(r.pp.n_tokens), r.pp.mean, r.pp.sd, static_cast<long long>(r.tg.n_tokens),
                        static_cast<long long>(*depth), r.tg.mean, r.tg.sd);
    } else {
        if (kv_column)
            std::printf("| model | threads | kv type | KV/token | test | t/s |\n|---|---|---|---|---|---|\n");
        else
            std::printf("| model | threads | test | t/s |\n|---|---|---|---|\n");
        for (const Row& r : rows) {
            const std::string kv = kv_column ? std::string(kv_type_name(r.kv_type)) + " | " +
                                                   std::to_string(r.kv_bytes_per_token) + " B | "
                                             : std::string();
            if (*n_prompt > 0)
                std::printf("| %s | %d | %spp%lld | %.2f ± %.2f |\n", r.model.c_str(), r.threads, kv.c_str(),
                            static_cast<long long>(r.pp.n_tokens), r.pp.mean, r.pp.sd);
            if (*n_gen > 0)
                std::printf("| %s | %d | %stg%lld%s | %.2f ± %.2f |\n", r.model.c_str(), r.threads, kv.c_str(),
                            static_cast<long long>(r.tg.n_tokens),
                            *depth ? (" @ d" + std::to_string(*depth)).c_str() : "", r.tg.mean, r.tg.sd);
        }
    }
    return 0;
}

}  // namespace folio::cli
