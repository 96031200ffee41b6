// folio bench --spec METHOD: the same greedy work with and without
// speculative decoding, alternated in one run (off, on, off, on, ... after a
// warm-up of each), on one prompt (--spec-prompt TEXT, in the chat template)
// or the prompts of a file (--spec-prompt-file, one per line, run at once:
// a batch). Reports decode tok/s both ways, spec_speedup (the ratio of the
// means), acceptance rate, mean acceptance length, accepted per position,
// and whether the outputs were identical (greedy: they must be). Also the
// cost model from the runs' step events: a plain decode step's forward time,
// and per K the draft time, the verify pass (K + 1 rows) and the whole step,
// so that c (a draft token's cost) and r(K) (the verify pass against a 1-row
// step) are measured where they are spent, with the formula's speedup from
// them beside the measured one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "commands.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

// Sums over the decode steps of the timed runs (prefill steps left out).
struct StepCost {
    int64_t steps = 0;
    double step_s = 0, forward_s = 0, draft_s = 0;
    int64_t rows = 0, accepted = 0;
    void add(const StepEvent& e) {
        ++steps;
        step_s += e.duration_s;
        forward_s += e.forward_s;
        draft_s += e.draft_s;
        rows += e.decode_tokens;
        accepted += e.accepted_tokens;
    }
    void add(const StepCost& o) {
        steps += o.steps, step_s += o.step_s, forward_s += o.forward_s, draft_s += o.draft_s;
        rows += o.rows, accepted += o.accepted;
    }
};

struct StepCosts {
    StepCost plain;                      // one row, no drafts
    std::map<int32_t, StepCost> by_k;    // speculating steps by the K verified
    StepCost probe;                      // steps that drafted but verified nothing (K = 0 after drafting)
    void add(const StepCosts& o) {
        plain.add(o.plain);
        probe.add(o.probe);
        for (const auto& [k, c] : o.by_k) by_k[k].add(c);
    }
};

struct SpecRun {
    double decode_tps = 0;  // generated tokens after the first / the time after the first token
    std::vector<std::vector<int32_t>> tokens;
    EngineMetrics metrics;
    StepCosts costs;
    std::string trace;  // one CSV line per step (--spec-trace)
};

Result<SpecRun> run_once(LoadedModel& m, const EngineConfig& config, const std::vector<std::vector<int32_t>>& prompts,
                         int32_t n_gen) {
    auto engine = Engine::start(m.model, m.tokenizer, *m.backend, config);
    if (!engine) return engine.error();
    SpecRun run;
    std::mutex step_mutex;
    const int handle = (*engine)->subscribe([&](std::shared_ptr<const StepEvent> e) {
        {
            char line[160];
            std::snprintf(line, sizeof line, "%llu,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f\n", static_cast<unsigned long long>(e->step),
                          e->prefill_tokens, e->decode_tokens, e->draft_k, e->draft_tokens, e->accepted_tokens,
                          e->draft_s, e->forward_s, e->duration_s);
            std::lock_guard lock(step_mutex);
            run.trace += line;
        }
        if (e->prefill_tokens > 0 || e->decode_tokens == 0) return;  // prefill (and the first token) or idle
        std::lock_guard lock(step_mutex);
        if (e->draft_k > 0) run.costs.by_k[e->draft_k].add(*e);
        else if (e->draft_s > 0) run.costs.probe.add(*e);
        else run.costs.plain.add(*e);
    });
    std::vector<Completion> done(prompts.size());
    std::mutex mutex;
    std::vector<Submission> batch;
    for (size_t i = 0; i < prompts.size(); ++i) {
        GenerationRequest r;
        r.prompt_tokens = prompts[i];
        r.sampling.temperature = 0;
        r.max_tokens = n_gen;
        r.ignore_eos = true;
        batch.push_back({std::move(r), [&, i](const RequestOutput& out) {
                             std::lock_guard lock(mutex);
                             done[i].tokens.insert(done[i].tokens.end(), out.token_ids.begin(), out.token_ids.end());
                             if (out.finished) done[i].last = out;
                         }});
    }
    (*engine)->submit(std::move(batch));
    (*engine)->wait_idle();
    (*engine)->unsubscribe(handle);
    run.metrics = (*engine)->metrics();
    double first = 1e300, last = 0;
    int64_t generated = 0;
    for (const Completion& c : done) {
        if (c.last.reason == FinishReason::Error) return make_error(c.last.error);
        first = std::min(first, c.last.timings.ttft_s);
        last = std::max(last, c.last.timings.e2e_s);
        generated += c.last.timings.generated_tokens - 1;
        run.tokens.push_back(c.tokens);
    }
    run.decode_tps = last > first ? static_cast<double>(generated) / (last - first) : 0.0;
    return run;
}

Result<std::vector<std::string>> spec_prompts(const Args& args) {
    if (auto text = args.get("--spec-prompt")) return std::vector<std::string>{*text};
    auto path = args.get("--spec-prompt-file");
    if (!path) return make_error("folio bench --spec needs --spec-prompt TEXT or --spec-prompt-file FILE");
    std::ifstream in(*path);
    if (!in) return make_error("cannot open " + *path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(line);
    if (lines.empty()) return make_error(*path + " has no prompts (one per line)");
    return lines;
}

double mean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double sd(const std::vector<double>& v) {
    if (v.size() < 2) return 0;
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// The cost model of the speedup, from the step events: t1 = a plain decode
// step's forward (1 row); per K verified, d = the draft time per step, v = the
// verify forward (K + 1 rows), o = the rest of the step (plan, choose,
// commit); c = d / (K t1), r(K) = v / t1, and the formula's speedup
// E(alpha, K) / (K c + r(K)) with E = (1 - alpha^(K+1)) / (1 - alpha), and
// with the tokens per step measured instead of E (E assumes every position
// accepts independently at alpha; real text accepts in runs). "steps" is the
// same from whole steps: tokens per spec step / its time over 1 / a plain
// step's time, which leaves out only the time between steps.
std::string cost_model_text(const StepCost& plain, const StepCosts& spec, double alpha, bool json) {
    std::string out;
    char line[512];
    if (plain.steps == 0) return json ? "null" : "";
    const double t1 = plain.forward_s / static_cast<double>(plain.steps);
    const double s1 = plain.step_s / static_cast<double>(plain.steps);
    if (json) {
        std::snprintf(line, sizeof line, "{\"plain_steps\": %lld, \"plain_forward_s\": %.6f, \"plain_step_s\": %.6f, \"by_k\": [",
                      static_cast<long long>(plain.steps), t1, s1);
    } else {
        std::snprintf(line, sizeof line,
                      "cost model (decode steps of the timed runs): plain: %lld steps, forward t1 %.2f ms, whole step %.2f ms\n"
                      "| K | steps | draft ms | c = draft/(K t1) | verify ms | r(K) = verify/t1 | rest of step ms | "
                      "step ms | E(alpha, K) | tokens/step | formula speedup: E | : tokens/step | steps speedup |\n"
                      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
                      static_cast<long long>(plain.steps), 1e3 * t1, 1e3 * s1);
    }
    out += line;
    bool first = true;
    for (const auto& [k, c] : spec.by_k) {
        if (c.steps == 0) continue;
        const double n = static_cast<double>(c.steps);
        const double d = c.draft_s / n, v = c.forward_s / n, step = c.step_s / n;
        const double cc = d / (k * t1), r = v / t1;
        const double e = alpha < 1 ? (1 - std::pow(alpha, k + 1)) / (1 - alpha) : k + 1.0;
        const double formula = e / (k * cc + r);
        const double tokens = (static_cast<double>(c.accepted) + n) / n;
        const double measured = tokens / (k * cc + r);
        const double by_steps = (tokens / step) / (1.0 / s1);
        if (json)
            std::snprintf(line, sizeof line,
                          "%s{\"k\": %d, \"steps\": %lld, \"draft_s\": %.6f, \"c\": %.4f, \"verify_s\": %.6f, "
                          "\"r\": %.4f, \"rest_s\": %.6f, \"step_s\": %.6f, \"expected_tokens\": %.4f, "
                          "\"tokens_per_step\": %.4f, \"formula_speedup\": %.4f, \"formula_speedup_measured_tokens\": %.4f, "
                          "\"steps_speedup\": %.4f}",
                          first ? "" : ", ", k, static_cast<long long>(c.steps), d, cc, v, r, step - d - v, step, e,
                          tokens, formula, measured, by_steps);
        else
            std::snprintf(line, sizeof line,
                          "| %d | %lld | %.2f | %.3f | %.2f | %.3f | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f |\n", k,
                          static_cast<long long>(c.steps), 1e3 * d, cc, 1e3 * v, r, 1e3 * (step - d - v), 1e3 * step, e,
                          tokens, formula, measured, by_steps);
        out += line;
        first = false;
    }
    if (spec.probe.steps > 0 && !json) {
        std::snprintf(line, sizeof line, "(and %lld steps that drafted but verified nothing: %.2f ms of drafting each)\n",
                      static_cast<long long>(spec.probe.steps), 1e3 * spec.probe.draft_s / static_cast<double>(spec.probe.steps));
        out += line;
    }
    if (json) out += "]}";
    return out;
}

}  // namespace

int run_bench_spec(const Args& args) {
    auto n_gen = args.get_int("--n-gen", 128, 1, 1 << 20);
    auto reps = args.get_int("--repetitions", 3, 1, 1000);
    if (!n_gen || !reps) return fail("bench", (!n_gen ? n_gen.error() : reps.error()).message);
    auto texts = spec_prompts(args);
    if (!texts) return fail("bench", texts.error().message);
    auto spec_config = read_engine_flags(args);
    if (!spec_config) return fail("bench", spec_config.error().message);
    if (spec_config->spec.method == SpecMethod::Off) return fail("bench", "--spec off: nothing to compare");
    auto loaded = load_for_inference(args, 4096, static_cast<uint32_t>(std::min<size_t>(texts->size(), 64)));
    if (!loaded) return fail("bench", loaded.error().message);
    LoadedModel& m = **loaded;
    if (Status s = load_draft(args, m, spec_config->spec); !s) return fail("bench", s.error().message);
    EngineConfig off = *spec_config;
    off.spec = SpecConfig{};
    std::vector<std::vector<int32_t>> prompts;
    for (const std::string& t : *texts) {
        auto ids = chat_tokens(m, {ChatMessage{"user", t, ""}}, prompts.empty());
        if (!ids) return fail("bench", ids.error().message);
        prompts.push_back(std::move(*ids));
    }
    std::vector<double> tps_off, tps_on;
    EngineMetrics spec_metrics;  // summed over the timed runs
    StepCosts off_costs, spec_costs;  // summed over the timed runs
    bool identical = true;
    std::string trace = "run,mode,step,prefill_tokens,decode_tokens,draft_k,draft_tokens,accepted_tokens,draft_s,forward_s,step_s\n";
    auto add_trace = [&trace](int64_t rep, const char* mode, const std::string& lines) {
        for (size_t at = 0; at < lines.size();) {
            const size_t end = lines.find('\n', at);
            trace += std::to_string(rep) + "," + mode + "," + lines.substr(at, end - at + 1);
            at = end + 1;
        }
    };
    for (int64_t rep = 0; rep <= *reps; ++rep) {  // rep 0 warms both up
        auto a = run_once(m, off, prompts, static_cast<int32_t>(*n_gen));
        if (!a) return fail("bench", a.error().message);
        auto b = run_once(m, *spec_config, prompts, static_cast<int32_t>(*n_gen));
        if (!b) return fail("bench", b.error().message);
        identical = identical && a->tokens == b->tokens;
        add_trace(rep, "off", a->trace);
        add_trace(rep, "spec", b->trace);
        if (rep == 0) continue;
        tps_off.push_back(a->decode_tps);
        tps_on.push_back(b->decode_tps);
        off_costs.add(a->costs);
        spec_costs.add(b->costs);
        EngineMetrics& s = spec_metrics;
        s.spec_decode_num_drafts_total += b->metrics.spec_decode_num_drafts_total;
        s.spec_decode_num_draft_tokens_total += b->metrics.spec_decode_num_draft_tokens_total;
        s.spec_decode_num_accepted_tokens_total += b->metrics.spec_decode_num_accepted_tokens_total;
        const auto& per_pos = b->metrics.spec_decode_num_accepted_tokens_per_pos;
        if (s.spec_decode_num_accepted_tokens_per_pos.size() < per_pos.size())
            s.spec_decode_num_accepted_tokens_per_pos.resize(per_pos.size(), 0);
        for (size_t k = 0; k < per_pos.size(); ++k) s.spec_decode_num_accepted_tokens_per_pos[k] += per_pos[k];
    }
    const EngineMetrics& s = spec_metrics;
    const double drafts = static_cast<double>(s.spec_decode_num_drafts_total);
    const double draft_tokens = static_cast<double>(s.spec_decode_num_draft_tokens_total);
    const double accepted = static_cast<double>(s.spec_decode_num_accepted_tokens_total);
    const double rate = draft_tokens > 0 ? accepted / draft_tokens : 0.0;
    const double length = drafts > 0 ? 1.0 + accepted / drafts : 0.0;
    const double speedup = mean(tps_off) > 0 ? mean(tps_on) / mean(tps_off) : 0.0;
    std::string per_pos;
    for (size_t k = 0; k < s.spec_decode_num_accepted_tokens_per_pos.size(); ++k)
        per_pos += (k ? ", " : "") + std::to_string(drafts > 0 ? double(s.spec_decode_num_accepted_tokens_per_pos[k]) / drafts : 0.0);
    if (auto path = args.get("--spec-trace")) {
        std::ofstream out(*path);
        out << trace;
        if (!out) return fail("bench", "cannot write " + *path);
    }
    const std::string method(to_string(spec_config->spec.method));
    const std::string cost_model = cost_model_text(off_costs.plain, spec_costs, rate, args.has("--json"));
    if (args.has("--json")) {
        std::printf("{\"model\": \"%s\", \"backend\": \"%s\", \"spec\": \"%s\", \"draft_max\": %d, \"sequences\": %zu, "
                    "\"n_gen\": %lld, \"repetitions\": %lld, \"tps_off\": %.3f, \"tps_off_sd\": %.3f, \"tps_spec\": %.3f, "
                    "\"tps_spec_sd\": %.3f, \"spec_speedup\": %.4f, \"acceptance_rate\": %.4f, "
                    "\"mean_acceptance_length\": %.4f, \"accepted_per_position\": [%s], \"identical\": %s, "
                    "\"cost_model\": %s}\n",
                    m.model.name.c_str(), m.backend->name().c_str(), method.c_str(), spec_config->spec.draft_max,
                    prompts.size(), static_cast<long long>(*n_gen), static_cast<long long>(*reps), mean(tps_off),
                    sd(tps_off), mean(tps_on), sd(tps_on), speedup, rate, length, per_pos.c_str(),
                    identical ? "true" : "false", cost_model.c_str());
    } else {
        std::printf("| model | spec | K | seqs | tok/s off | tok/s spec | spec_speedup | acceptance | mean length |\n"
                    "|---|---|---|---|---|---|---|---|---|\n"
                    "| %s | %s | %d | %zu | %.2f ± %.2f | %.2f ± %.2f | %.3f | %.3f | %.2f |\n"
                    "accepted per position (per draft): %s; outputs identical: %s\n",
                    m.model.name.c_str(), method.c_str(), spec_config->spec.draft_max, prompts.size(), mean(tps_off),
                    sd(tps_off), mean(tps_on), sd(tps_on), speedup, rate, length, per_pos.c_str(),
                    identical ? "yes" : "NO");
        std::fputs(cost_model.c_str(), stdout);
    }
    return identical ? 0 : 1;
}

}  // namespace folio::cli
