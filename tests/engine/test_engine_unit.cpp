// The Engine thread on a FakeBackend (see fake_backend.h): requests run
// together give what they give alone in every scheduling mode, the prefix
// cache supplies repeated prompts, aborts at any point and 10,000 short
// requests leave every block free, bad requests end with clear errors.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <random>
#include <string>
#include <vector>

#include "../tokenizer/tiny_vocab.h"
#include "engine_collector.h"
#include "fake_backend.h"
#include "fake_workload.h"
#include "folio/engine.h"
#include "folio_test.h"

using namespace fake_workload;

class EngineUnitTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        auto tok = folio::Tokenizer::create(tiny_vocab::byte_level());
        QVERIFY(tok);
        tokenizer_ = std::make_unique<folio::Tokenizer>(std::move(*tok));
        model_.name = "fake";
        model_.hparams.architecture = "fake";
    }

    void concurrentRequestsGenerateWhatTheyGenerateAlone() {
        const auto prompts = make_prompts(24, 5);
        std::vector<std::vector<int32_t>> alone;
        {
            FakeBackend backend(267, kEos, 256);
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
            QVERIFY(engine);
            for (size_t i = 0; i < prompts.size(); ++i) {
                EngineCollector c;
                (*engine)->submit(greedy(prompts[i], 24), c.callback(0));
                (*engine)->wait_idle();
                alone.push_back(c.get(0).tokens);
                QCOMPARE(c.get(0).n_finished, 1);
            }
        }
        struct Mode {
            const char* name;
            folio::EngineConfig config;
            uint32_t n_blocks;
            uint32_t swap_slots = 0;
            bool cannot_pin = false;  // the swap space cannot be taken: preemption falls back to recomputing
        };
        std::vector<Mode> modes;
        modes.push_back({"continuous, prefix cache", folio::EngineConfig{}, 256});
        folio::EngineConfig no_prefix;
        no_prefix.enable_prefix_caching = false;
        modes.push_back({"no prefix cache", no_prefix, 256});
        folio::EngineConfig chunked;
        chunked.scheduler.max_num_batched_tokens = 7;
        modes.push_back({"7-token steps (chunked prefill)", chunked, 256});
        modes.push_back({"tiny pool (preemption)", folio::EngineConfig{}, 26});
        modes.push_back({"tiny pool, swapping to host slots", folio::EngineConfig{}, 26, 64});
        modes.push_back({"tiny pool, 5 host slots (swap or recompute)", folio::EngineConfig{}, 26, 5});
        modes.push_back({"tiny pool, swap space that cannot be pinned", folio::EngineConfig{}, 26, 64, true});
        folio::EngineConfig statik;
        statik.scheduler.batching = folio::BatchingMode::Static;
        statik.scheduler.max_num_seqs = 5;
        modes.push_back({"static batching", statik, 256});
        folio::EngineConfig reserve;
        reserve.scheduler.reserve_full_length = true;
        modes.push_back({"contiguous reservation", reserve, 256});
        for (const Mode& mode : modes) {
            FakeBackend backend(267, kEos, mode.n_blocks);
            backend.swap_slots = mode.swap_slots;
            backend.cannot_pin = mode.cannot_pin;
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, mode.config);
            QVERIFY(engine);
            StepRecorder steps;
            (*engine)->subscribe(steps.callback());
            EngineCollector c;
            std::vector<folio::Submission> batch;
            for (size_t i = 0; i < prompts.size(); ++i)
                batch.push_back({greedy(prompts[i], 24), c.callback(static_cast<int>(i))});
            (*engine)->submit(std::move(batch));
            (*engine)->wait_idle();
            for (size_t i = 0; i < prompts.size(); ++i) {
                const CollectedRequest r = c.get(static_cast<int>(i));
                const std::string what = std::string(mode.name) + ": request " + std::to_string(i);
                QVERIFY2(r.n_finished == 1, what.c_str());
                QVERIFY2(r.tokens == alone[i], (what + " differs from its run alone").c_str());
            }
            QVERIFY2(steps.max_running() > 1, mode.name);
            if (mode.n_blocks < 100) QVERIFY2(steps.preempted() > 0, "the tiny pool never preempted");
            if (mode.cannot_pin) {
                const folio::EngineMetrics m = (*engine)->metrics();
                QCOMPARE(backend.n_swap_blocks(), 0u);
                QCOMPARE(m.kv_swapped_out_blocks_total, uint64_t{0});
                QCOMPARE(backend.swapped_out, uint64_t{0});
                QCOMPARE(steps.max_swapped(), 0);
            } else if (mode.swap_slots > 0) {
                // Every block swapped out came back in or was found in the prefix cache.
                const folio::EngineMetrics m = (*engine)->metrics();
                QVERIFY2(backend.swapped_out > 0 && backend.swapped_in > 0, mode.name);
                QCOMPARE(m.kv_swapped_out_blocks_total, backend.swapped_out);
                QCOMPARE(m.kv_swapped_in_blocks_total, backend.swapped_in);
                QCOMPARE(m.num_requests_swapped, uint64_t{0});
                QVERIFY2(steps.max_swapped() > 0, "no step event showed a swapped request");
                QCOMPARE(steps.last()->swapped, 0);
                std::printf("%s: %llu blocks swapped out, %llu in, %llu preemptions\n", mode.name,
                            static_cast<unsigned long long>(backend.swapped_out),
                            static_cast<unsigned long long>(backend.swapped_in),
                            static_cast<unsigned long long>(m.num_preemptions_total));
            }
            QVERIFY(all_free(*steps.last()));
        }
    }

    // Greedy steps on a backend that chooses tokens itself (a GPU's argmax)
    // give what the engine's Sampler gives; a step with a sampled, penalized
    // or logprob-reporting request goes through the Sampler.
    void greedyStepsChosenByTheBackendMatchTheSampler() {
        // Counts steps by who chose their tokens, not by how many steps
        // there were: how the six requests share steps depends on when the
        // engine thread takes them.
        struct Steps {
            uint64_t backend = 0, sampler = 0;
        };
        auto run = [&](bool backend_chooses, float temperature, int32_t n_logprobs, Steps& steps) {
            FakeBackend backend(267, kEos, 64);
            backend.chooses_tokens = backend_chooses;
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
            EngineCollector c;
            for (int i = 0; i < 6; ++i) {
                folio::GenerationRequest r;
                r.prompt = "prompt number " + std::to_string(i);
                r.sampling.temperature = i == 5 ? temperature : 0.0f;
                r.sampling.n_logprobs = i == 5 ? n_logprobs : 0;
                r.sampling.seed = 7;
                r.max_tokens = 12;
                (*engine)->submit(r, c.callback(i));
            }
            (*engine)->wait_idle();
            steps = {backend.argmax_steps, backend.steps - backend.argmax_steps};
            std::vector<std::vector<int32_t>> out;
            for (int i = 0; i < 6; ++i) out.push_back(c.get(i).tokens);
            return out;
        };
        Steps host, greedy, mixed, logprobs;
        const auto want = run(false, 0.0f, 0, host);
        QVERIFY(host.backend == 0 && host.sampler > 0);
        QCOMPARE(run(true, 0.0f, 0, greedy), want);
        QVERIFY2(greedy.backend > 0 && greedy.sampler == 0, "every step of greedy requests should be chosen by the backend");
        const auto sampled = run(true, 0.9f, 0, mixed);
        for (int i = 0; i < 5; ++i) QCOMPARE(sampled[static_cast<size_t>(i)], want[static_cast<size_t>(i)]);
        QVERIFY2(mixed.sampler > 0, "steps with a sampled request must go through the Sampler");
        const auto reported = run(true, 0.0f, 3, logprobs);
        QCOMPARE(reported, want);
        QVERIFY2(logprobs.sampler > 0, "steps reporting logprobs must go through the Sampler");
    }

    // Draws at a plain temperature on a backend that draws itself (a GPU's
    // draw_rows) give the tokens the Sampler draws from whole rows: seeded
    // requests at several temperatures, greedy ones in the same steps, some
    // with penalties (lowering and raising: the backend applies them from
    // the window's counts); a step with any other request (top-k, n = 2
    // forking at its first token) goes through the Sampler, and the uniform
    // values stay in step.
    void temperatureDrawsByTheBackendMatchTheSampler() {
        uint64_t penalized_rows = 0, top_p_rows = 0;
        auto run = [&](bool backend_draws, bool with_top_k, uint64_t& draw_steps, uint64_t& whole_rows,
                       bool with_top_p = false) {
            FakeBackend backend(267, kEos, 96);
            backend.draws_tokens = backend_draws;
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
            EngineCollector c;
            std::vector<folio::Submission> batch;
            for (int i = 0; i < 8; ++i) {
                folio::GenerationRequest r;
                r.prompt = "drawn prompt " + std::to_string(i);
                r.sampling.temperature = i == 2 ? 0.0f : 0.4f + 0.3f * static_cast<float>(i);
                r.sampling.top_k = with_top_k && i == 7 ? 5 : 0;
                r.sampling.top_p = 1.0f;
                r.sampling.min_p = 0.0f;
                r.sampling.seed = 300 + static_cast<uint64_t>(i);
                r.n = i == 4 ? 2 : 1;
                r.max_tokens = 10 + 2 * i;  // ends apart: later steps have fewer rows
                if (i == 1 || i == 2) {  // a sampled and a greedy request with lowering penalties
                    r.sampling.repetition_penalty = 1.5f;
                    r.sampling.frequency_penalty = 0.4f;
                    r.sampling.penalty_last_n = 6;
                }
                if (i == 6) r.sampling.presence_penalty = -0.5f;  // raising
                if (with_top_p && (i == 1 || i == 3 || i == 5 || i == 6)) {  // top-p, min-p, penalized or not
                    r.sampling.top_p = i == 3 ? 0.6f : i == 5 ? 1.0f : 0.85f;  // 5: min-p alone
                    r.sampling.min_p = i == 6 ? 0.05f : i == 5 ? 0.1f : 0.0f;
                }
                batch.push_back({r, c.callback(i)});
            }
            (*engine)->submit(std::move(batch));
            (*engine)->wait_idle();
            draw_steps = backend.draw_steps;
            if (backend_draws) penalized_rows = backend.penalized_draw_rows, top_p_rows = backend.top_p_draw_rows;
            whole_rows = (*engine)->metrics().sampled_whole_rows_total;
            std::vector<std::vector<int32_t>> out;
            for (int i = 0; i < 8; ++i) out.push_back(c.get(i).tokens);
            out.push_back(c.get(4 + 1000).tokens);
            return out;
        };
        uint64_t host_steps = 0, host_rows = 0, device_steps = 0, device_rows = 0;
        const auto want = run(false, false, host_steps, host_rows);
        QCOMPARE(run(true, false, device_steps, device_rows), want);
        QVERIFY2(host_steps == 0 && device_steps > 0, "temperature draws should be made by the backend");
        QVERIFY2(penalized_rows > 0, "the penalized requests' rows should be penalized by the backend");
        QVERIFY2(device_rows < host_rows, "only the n = 2 fork's first step should need whole rows");
        bool sampled = false;  // the draws are really random
        for (int i = 0; i < 8; ++i) sampled |= i != 2 && want[static_cast<size_t>(i)] != want[2];
        QVERIFY(sampled);
        uint64_t mixed_steps = 0, mixed_rows = 0;
        const auto mixed_want = run(false, true, host_steps, host_rows);
        QCOMPARE(run(true, true, mixed_steps, mixed_rows), mixed_want);
        QVERIFY2(mixed_steps < device_steps, "steps with a top-k request must go through the Sampler");
        // Top-p or min-p without top-k, with penalties (lowering and raising)
        // or not: drawn by the backend too, from the penalized rows.
        uint64_t top_p_steps = 0, top_p_whole = 0;
        const auto top_p_want = run(false, false, host_steps, host_rows, true);
        QCOMPARE(run(true, false, top_p_steps, top_p_whole, true), top_p_want);
        QVERIFY2(top_p_steps > 0 && top_p_rows > 0, "top-p rows should be drawn by the backend");
        QVERIFY2(top_p_whole < host_rows, "only the n = 2 fork's first step should need whole rows");
    }

    // Sampling on a backend that selects each row's best entries itself (a
    // GPU) draws exactly the tokens the Sampler draws from whole rows: seeds,
    // mixed top_k / top_p / min_p, a greedy request in the same steps, n = 3
    // forks, and penalties (the window's tokens come along); a request the
    // best entries cannot serve (raising penalties) makes its steps fetch
    // whole rows; one they cannot decide (a wide top-p set, temperature
    // alone) fetches its row after the step, or has it drawn by a backend
    // that can (draw_last_rows).
    void topKStepsSelectedByTheBackendMatchTheSampler() {
        enum class Extra {
            None, Penalties, RaisingPenalty, TemperatureOnly, TemperatureLogprobs, Logprobs, MinPOnly, TopP, FlatTopP
        };
        FakeBackend::Counters counters;
        auto run = [&](bool backend_selects, Extra extra, uint64_t& top_k_steps, bool backend_draws = false) {
            FakeBackend backend(267, kEos, 96);
            backend.selects_top_k = backend_selects;
            backend.draws_last_rows = backend_draws;
            backend.max_k = 1024;
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
            EngineCollector c;
            std::vector<folio::Submission> batch;
            for (int i = 0; i < 7; ++i) {
                folio::GenerationRequest r;
                r.prompt = "sampled prompt " + std::to_string(i);
                r.sampling.temperature = i == 0 ? 0.0f : 0.5f + 0.2f * static_cast<float>(i);
                r.sampling.top_k = i == 3 ? 64 : 2 + 3 * i;
                r.sampling.top_p = i % 2 ? 0.9f : 1.0f;
                r.sampling.min_p = i == 4 || i == 5 ? 0.0f : 0.05f;
                r.sampling.seed = 100 + static_cast<uint64_t>(i);
                r.n = i == 5 ? 3 : 1;
                r.max_tokens = 16;
                if (extra == Extra::Penalties && (i == 0 || i == 6)) {  // a greedy one and a sampled one
                    r.sampling.repetition_penalty = 10.0f;
                    r.sampling.frequency_penalty = 0.5f;
                    r.sampling.presence_penalty = 0.25f;
                    r.sampling.penalty_last_n = 8;
                }
                if (i == 6) {
                    if (extra == Extra::RaisingPenalty) r.sampling.frequency_penalty = -0.5f;
                    if (extra == Extra::Logprobs) r.sampling.n_logprobs = 2;
                    if (extra >= Extra::TemperatureOnly && extra != Extra::Logprobs) r.sampling.top_k = 0;
                    if (extra == Extra::TemperatureOnly || extra == Extra::TemperatureLogprobs) r.sampling.min_p = 0.0f;
                    if (extra == Extra::TemperatureLogprobs) r.sampling.n_logprobs = 2;
                    if (extra == Extra::MinPOnly) r.sampling.min_p = 0.1f;  // 0.05 would keep all 267
                    // The fake's rows: one logit of 5 over 266 of 0. At this
                    // temperature top-p 0.9 ends at the ~240th entry, within
                    // the 256 a step selects; 0.99 needs the row.
                    if (extra == Extra::TopP) r.sampling.top_p = 0.9f;
                    if (extra == Extra::FlatTopP) r.sampling.top_p = 0.99f;
                }
                if (i == 0 && extra == Extra::Logprobs) r.sampling.n_logprobs = 3;  // greedy with logprobs
                batch.push_back({r, c.callback(i)});
            }
            (*engine)->submit(std::move(batch));
            (*engine)->wait_idle();
            top_k_steps = backend.top_k_steps;
            counters = backend.counters();
            std::vector<std::vector<int32_t>> out;
            std::vector<std::vector<float>> logprobs;
            for (int i = 0; i < 7; ++i)
                for (int s = 0; s < (i == 5 ? 3 : 1); ++s) {
                    out.push_back(c.get(i + 1000 * s).tokens);
                    logprobs.push_back(c.get(i + 1000 * s).logprobs);
                }
            return std::make_pair(out, logprobs);
        };
        uint64_t host = 0, device = 0;
        const auto want = run(false, Extra::None, host).first;
        QCOMPARE(run(true, Extra::None, device).first, want);
        QVERIFY2(device > 0 && host == 0, "top-k steps should be selected by the backend");
        bool differ = false;  // the draws are really random: forks part
        for (size_t s = 1; s < 3; ++s) differ |= want[5] != want[5 + s];
        QVERIFY2(differ, "n = 3 samples with their own seeds all drew the same tokens");

        uint64_t penalized_steps = 0;
        const auto penalized = run(false, Extra::Penalties, host).first;
        QCOMPARE(run(true, Extra::Penalties, penalized_steps).first, penalized);
        QVERIFY2(penalized_steps == device, "penalties that only lower logits should still take the best entries");
        QVERIFY2(penalized[0] != want[0] && penalized.back() != want.back(), "the penalties changed nothing");

        uint64_t raising_steps = 0;
        const auto raising = run(false, Extra::RaisingPenalty, host);
        QCOMPARE(run(true, Extra::RaisingPenalty, raising_steps), raising);
        QVERIFY2(raising_steps < device, "a request the best entries cannot serve must take whole rows");
        // Logprobs, min-p and top-p without top-k: the best entries and the
        // row sums decide, the same tokens and logprobs as whole rows; a
        // top-p set past the entries, or a draw by temperature alone, fetches
        // its row after the step.
        const std::initializer_list<Extra> undecided = {Extra::TemperatureOnly, Extra::TemperatureLogprobs,
                                                        Extra::FlatTopP};
        for (Extra e : {Extra::Logprobs, Extra::MinPOnly, Extra::TopP, Extra::FlatTopP, Extra::TemperatureOnly,
                        Extra::TemperatureLogprobs}) {
            uint64_t steps = 0;
            const auto whole = run(false, e, host);
            const auto selected = run(true, e, steps);
            QCOMPARE(selected.first, whole.first);
            QCOMPARE(selected.second, whole.second);
            QVERIFY2(steps == device, "every step should select its best entries");
            const bool sums = e != Extra::MinPOnly && e != Extra::TemperatureOnly;
            QVERIFY2((counters.sums_steps > 0) == sums, "row sums asked for where not needed, or missing");
            const bool fetched = std::find(undecided.begin(), undecided.end(), e) != undecided.end();
            QVERIFY2((counters.whole_rows_fetched > 0) == fetched,
                     ("extra " + std::to_string(static_cast<int>(e)) + ": " +
                      std::to_string(counters.whole_rows_fetched) +
                      " rows fetched whole; want some exactly where the entries cannot decide")
                         .c_str());
        }
        // A backend that draws those rows where the logits are: the same
        // tokens and logprobs (from the best entries, the sums and the drawn
        // token's logit: Sampler::report_drawn), no row fetched whole.
        for (Extra e : undecided) {
            uint64_t steps = 0;
            const auto whole = run(false, e, host);
            const auto drawn = run(true, e, steps, true);
            QCOMPARE(drawn.first, whole.first);
            QCOMPARE(drawn.second, whole.second);
            QVERIFY2(counters.whole_rows_fetched == 0 && counters.last_rows_drawn > 0,
                     ("extra " + std::to_string(static_cast<int>(e)) + ": " +
                      std::to_string(counters.last_rows_drawn) + " rows drawn by the backend, " +
                      std::to_string(counters.whole_rows_fetched) + " fetched whole")
                         .c_str());
        }
        const auto [tokens, logprobs] = run(true, Extra::Logprobs, host);  // [8]: request 6 (5 has 3 samples)
        QVERIFY2(!tokens[0].empty() && logprobs[0].size() == tokens[0].size() * (1 + 2 * 3) && !tokens[8].empty() &&
                     logprobs[8].size() == tokens[8].size() * (1 + 2 * 2) && logprobs[1].empty(),
                 ("logprobs reported wrongly: " + std::to_string(tokens[0].size()) + " tokens, " +
                  std::to_string(logprobs[0].size()) + " logprob entries").c_str());
    }

    void prefixCacheComputesOnlyTheLastPartialBlock() {
        FakeBackend backend(267, kEos, 64);
        auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
        QVERIFY(engine);
        std::vector<int32_t> prompt(30);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>('a' + i % 26);
        EngineCollector c;
        (*engine)->submit(greedy(prompt, 1), c.callback(0));
        (*engine)->wait_idle();
        const uint64_t rows_first = backend.rows;
        (*engine)->submit(greedy(prompt, 1), c.callback(1));
        (*engine)->wait_idle();
        QCOMPARE(rows_first, uint64_t{30});
        QCOMPARE(backend.rows - rows_first, uint64_t{2});  // 28 of 30 tokens from 7 cached blocks of 4
        QCOMPARE(c.get(1).timings.cached_prompt_tokens, 28);
        QCOMPARE(c.get(1).tokens, c.get(0).tokens);
        const folio::EngineMetrics m = (*engine)->metrics();
        QCOMPARE(m.prefix_cache_queries_total, uint64_t{60});
        QCOMPARE(m.prefix_cache_hits_total, uint64_t{28});
    }

    // Each step event says how much of the step was the backend's forward
    // (on a GPU: the device's work), so a bench can tell it from the host's.
    void stepEventsTellTheForwardFromTheHost() {
        FakeBackend backend(267, kEos, 64);
        backend.forward_delay = std::chrono::milliseconds(3);
        auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
        QVERIFY(engine);
        std::mutex mutex;
        int forward_steps = 0;
        double min_forward = 1e9;
        bool within = true;
        (*engine)->subscribe([&](std::shared_ptr<const folio::StepEvent> e) {
            if (e->prefill_tokens + e->decode_tokens == 0) return;
            std::lock_guard lock(mutex);
            ++forward_steps;
            min_forward = std::min(min_forward, e->forward_s);
            within = within && e->forward_s <= e->duration_s;
        });
        EngineCollector c;
        (*engine)->submit(greedy(std::vector<int32_t>(9, 'q'), 4), c.callback(0));
        (*engine)->wait_idle();
        std::lock_guard lock(mutex);
        QCOMPARE(c.get(0).n_finished, 1);
        QVERIFY(forward_steps >= 2);
        QVERIFY2(min_forward >= 0.003, std::to_string(min_forward).c_str());
        QVERIFY(within);
    }

    void nSamplesForkAndCopyOnWrite() {
        FakeBackend backend(267, kEos, 64);
        auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
        QVERIFY(engine);
        StepRecorder steps;
        int max_shared = 0;
        (*engine)->subscribe(steps.callback());
        std::atomic<folio::RequestId> foreign_owner{-1};
        (*engine)->subscribe([&max_shared, &foreign_owner](std::shared_ptr<const folio::StepEvent> e) {
            for (const folio::BlockCell& c : e->blocks) {
                max_shared = std::max<int>(max_shared, c.ref_count);
                if (c.owner >= 0 && c.owner != 1) foreign_owner = c.owner;  // the samples' blocks belong to request 1
            }
        });
        std::vector<int32_t> prompt(22);  // 5 full blocks of 4 and a partial one: the forks write into it
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>('a' + (i * 7) % 26);
        EngineCollector c;
        folio::GenerationRequest r = greedy(prompt, 12);
        r.sampling.temperature = 1.0f;
        r.sampling.top_k = 0;
        r.sampling.top_p = 1.0f;
        r.sampling.min_p = 0.0f;
        r.sampling.seed = 77;
        r.ignore_eos = true;
        r.n = 3;
        (*engine)->submit(r, c.callback(0));
        (*engine)->wait_idle();
        QCOMPARE(max_shared, 3);  // the prompt's blocks were shared by the three samples
        QCOMPARE(foreign_owner.load(), folio::RequestId{-1});
        // Each sample k is what a lone request seeded 77 + k draws: the
        // shared blocks and the copied partial block held the right K/V.
        for (int k = 0; k < 3; ++k) {
            folio::GenerationRequest alone = r;
            alone.n = 1;
            alone.sampling.seed = 77 + static_cast<uint64_t>(k);
            (*engine)->submit(alone, c.callback(10 + k));
            (*engine)->wait_idle();
            const CollectedRequest sample = c.get(1000 * k);
            QCOMPARE(sample.n_finished, 1);
            QCOMPARE(sample.tokens.size(), size_t{12});
            QVERIFY2(sample.tokens == c.get(10 + k).tokens, ("sample " + std::to_string(k)).c_str());
        }
        QVERIFY(c.get(0).tokens != c.get(1000).tokens);
        QVERIFY(all_free(*steps.last()));
        folio::GenerationRequest bad = r;
        bad.n = 0;
        (*engine)->submit(bad, c.callback(50));
        (*engine)->wait_idle();
        QVERIFY(c.get(50).reason == folio::FinishReason::Error);
    }

    void abortMidPrefillAndMidDecodeFreesEverything() {
        for (int when : {1, 3, 12}) {  // after 1 and 3 steps the prompt is still prefilling; 12 is mid-decode
            FakeBackend backend(267, kEos, 64);
            folio::EngineConfig config;
            config.scheduler.max_num_batched_tokens = 8;
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, config);
            QVERIFY(engine);
            folio::Engine* e = engine->get();
            StepRecorder steps;
            EngineCollector c;
            folio::GenerationRequest r = greedy(std::vector<int32_t>(40, 'x'), 200);
            r.ignore_eos = true;
            std::atomic<folio::RequestId> id{-1};
            e->subscribe([&id, e, when](std::shared_ptr<const folio::StepEvent> ev) {
                if (ev->step != static_cast<uint64_t>(when)) return;
                while (id.load() < 0) std::this_thread::yield();
                e->abort(id.load());
            });
            e->subscribe(steps.callback());
            id = e->submit(r, c.callback(0));
            e->wait_idle();
            const CollectedRequest got = c.get(0);
            QCOMPARE(got.n_finished, 1);
            QVERIFY(got.reason == folio::FinishReason::Abort);
            QCOMPARE(got.tokens.empty(), when < 6);
            QVERIFY(all_free(*steps.last()));
            QCOMPARE(steps.last()->running, 0);
        }
    }

    void tenThousandShortRequestsLeaveNothingBehind() {
        FakeBackend backend(267, kEos, 32);
        folio::EngineConfig config;
        config.scheduler.max_num_seqs = 16;
        auto engine = folio::Engine::start(model_, *tokenizer_, backend, config);
        QVERIFY(engine);
        StepRecorder steps;
        (*engine)->subscribe(steps.callback());
        EngineCollector c;
        std::mt19937_64 rng(3);
        for (int i = 0; i < 10000; ++i) {
            std::vector<int32_t> p(1 + rng() % 6);
            for (auto& t : p) t = static_cast<int32_t>('a' + rng() % 26);
            (*engine)->submit(greedy(p, 1 + static_cast<int32_t>(rng() % 4)), c.callback(i));
            if (i % 97 == 0) (*engine)->abort(i);  // some aborts, of requests done or not
        }
        (*engine)->wait_idle();
        QCOMPARE(c.size(), size_t{10000});
        for (int i = 0; i < 10000; ++i) QCOMPARE(c.get(i).n_finished, 1);
        QVERIFY(all_free(*steps.last()));
        const folio::EngineMetrics m = (*engine)->metrics();
        uint64_t finished = 0;
        for (const auto& [reason, n] : m.request_success_total) finished += n;
        QCOMPARE(finished, uint64_t{10000});
        QCOMPARE(m.num_requests_running, uint64_t{0});
        QCOMPARE(m.num_requests_waiting, uint64_t{0});
    }

    void badRequestsEndWithClearErrors() {
        FakeBackend backend(267, kEos, 16, 4, 32);
        auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
        QVERIFY(engine);
        EngineCollector c;
        (*engine)->submit(greedy({}, 4), c.callback(0));
        (*engine)->submit(greedy(std::vector<int32_t>(40, 'a'), 4), c.callback(1));
        folio::GenerationRequest bad = greedy({'a'}, 4);
        bad.sampling.top_p = 2;
        (*engine)->submit(bad, c.callback(2));
        (*engine)->submit(greedy({'a', 9999}, 4), c.callback(3));
        folio::GenerationRequest zero = greedy({'a'}, 0);
        (*engine)->submit(zero, c.callback(4));
        folio::GenerationRequest truncated = greedy(std::vector<int32_t>(40, 'a'), 4);
        truncated.overflow = folio::OverflowPolicy::TruncateMiddle;
        (*engine)->submit(truncated, c.callback(5));
        (*engine)->wait_idle();
        for (int i = 0; i < 5; ++i) {
            const CollectedRequest r = c.get(i);
            QCOMPARE(r.n_finished, 1);
            QVERIFY2(r.reason == folio::FinishReason::Error, std::to_string(i).c_str());
            QVERIFY(!r.error.empty());
        }
        QVERIFY2(c.get(0).error.find("empty") != std::string::npos, c.get(0).error.c_str());
        QVERIFY2(c.get(1).error.find("context holds 32") != std::string::npos, c.get(1).error.c_str());
        QVERIFY2(c.get(2).error.find("top_p") != std::string::npos, c.get(2).error.c_str());
        QVERIFY2(c.get(3).error.find("9999") != std::string::npos, c.get(3).error.c_str());
        QVERIFY(c.get(5).reason != folio::FinishReason::Error);
        QVERIFY(!c.get(5).tokens.empty());
    }

    void contextFullStopsOrSlides() {
        for (auto policy : {folio::OverflowPolicy::Stop, folio::OverflowPolicy::RollingWindow}) {
            FakeBackend backend(267, kEos, 16, 4, 32);
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
            QVERIFY(engine);
            EngineCollector c;
            folio::GenerationRequest r = greedy(std::vector<int32_t>(20, 'a'), 100);
            r.ignore_eos = true;
            r.overflow = policy;
            (*engine)->submit(r, c.callback(0));
            (*engine)->wait_idle();
            const CollectedRequest got = c.get(0);
            QVERIFY(got.reason == folio::FinishReason::Length);
            if (policy == folio::OverflowPolicy::Stop) QCOMPARE(got.tokens.size(), size_t{12});  // 20 + 12 = 32
            else QCOMPARE(got.tokens.size(), size_t{100});
        }
    }

    void destroyingTheEngineAbortsWhatIsLeft() {
        FakeBackend backend(267, kEos, 64);
        EngineCollector c;
        {
            auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
            QVERIFY(engine);
            folio::GenerationRequest r = greedy({'a', 'b'}, 1000000);
            r.ignore_eos = true;
            (*engine)->submit(r, c.callback(0));
        }
        QCOMPARE(c.get(0).n_finished, 1);
        QVERIFY(c.get(0).reason == folio::FinishReason::Abort);
    }

    void prometheusTextCarriesTheCounts() {
        FakeBackend backend(267, kEos, 64);
        auto engine = folio::Engine::start(model_, *tokenizer_, backend, folio::EngineConfig{});
        QVERIFY(engine);
        EngineCollector c;
        (*engine)->submit(greedy({'a', 'b', 'c'}, 5), c.callback(0));
        (*engine)->wait_idle();
        const std::string text = (*engine)->prometheus_text();
        QVERIFY2(text.find("folio:prompt_tokens_total{model_name=\"fake\"} 3") != std::string::npos, text.c_str());
        QVERIFY(text.find("folio:time_to_first_token_seconds_count{model_name=\"fake\"} 1") != std::string::npos);
    }

private:
    std::unique_ptr<folio::Tokenizer> tokenizer_;
    folio::ModelDescription model_;
};

FOLIO_TEST_MAIN(EngineUnitTest)
#include "test_engine_unit.moc"
