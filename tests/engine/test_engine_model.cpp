// The Engine on the real CPU backend with SmolLM2: greedy continuations of
// eight chat prompts run together equal each one run alone — with and
// without the prefix cache, in 16-token steps (chunked prefill, prefill and
// decode rows mixed) and in a pool small enough to force preemption — and a
// chat's second turn reuses the blocks of the first.
#include <cstdio>
#include <string>
#include <vector>

#include "engine_collector.h"
#include "folio/backend.h"
#include "folio/chat_template.h"
#include "folio/engine.h"
#include "folio/model.h"
#include "folio/spec.h"
#include "folio/tokenizer.h"
#include "folio_test.h"

namespace {

const char* kQuestions[] = {
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain photosynthesis in one sentence.",
    "List three prime numbers.",
    "Who wrote Hamlet?",
    "What does a compiler do?",
    "Give me a synonym for happy.",
    "How many legs does a spider have?",
};

}  // namespace

class EngineModelTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto model = folio::load_model_description(path);
        QVERIFY2(model, model ? "" : model.error().message.c_str());
        model_ = std::make_unique<folio::ModelDescription>(std::move(*model));
        auto tok = folio::Tokenizer::create(model_->tokenizer);
        QVERIFY(tok);
        tokenizer_ = std::make_unique<folio::Tokenizer>(std::move(*tok));
        for (const char* q : kQuestions) prompts_.push_back(chat({{"system", "You are a concise assistant.", ""}, {"user", q, ""}}));
    }

    void concurrentGreedyEqualsAlone() {
        if (!model_) QSKIP("no model");
        std::vector<std::vector<int32_t>> alone;
        {
            auto backend = make_backend(0);
            auto engine = folio::Engine::start(*model_, *tokenizer_, *backend, folio::EngineConfig{});
            QVERIFY(engine);
            for (const auto& p : prompts_) {
                EngineCollector c;
                (*engine)->submit(greedy_to_the_end(p), c.callback(0));
                (*engine)->wait_idle();
                QCOMPARE(c.get(0).n_finished, 1);
                alone.push_back(c.get(0).tokens);
            }
        }
        struct Mode {
            const char* name;
            folio::EngineConfig config;
            uint32_t n_blocks;
        };
        folio::EngineConfig no_prefix;
        no_prefix.enable_prefix_caching = false;
        folio::EngineConfig small_steps;
        small_steps.scheduler.max_num_batched_tokens = 16;
        const Mode modes[] = {
            {"prefix cache on", folio::EngineConfig{}, 0},
            {"prefix cache off", no_prefix, 0},
            {"16-token steps", small_steps, 0},
            {"tiny pool", folio::EngineConfig{}, 20},
        };
        for (const Mode& mode : modes) {
            auto backend = make_backend(mode.n_blocks);
            auto engine = folio::Engine::start(*model_, *tokenizer_, *backend, mode.config);
            QVERIFY(engine);
            StepRecorder steps;
            (*engine)->subscribe(steps.callback());
            EngineCollector c;
            std::vector<folio::Submission> batch;
            for (size_t i = 0; i < prompts_.size(); ++i) batch.push_back({greedy_to_the_end(prompts_[i]), c.callback(int(i))});
            (*engine)->submit(std::move(batch));
            (*engine)->wait_idle();
            for (size_t i = 0; i < prompts_.size(); ++i) {
                const CollectedRequest r = c.get(int(i));
                const std::string what = std::string(mode.name) + ", prompt " + std::to_string(i) + ": " +
                                         tokenizer_->decode(r.tokens) + " | alone: " + tokenizer_->decode(alone[i]);
                QVERIFY2(r.n_finished == 1 && r.error.empty(), (what + " " + r.error).c_str());
                QVERIFY2(r.tokens == alone[i], what.c_str());
            }
            QVERIFY2(steps.max_running() > 1, mode.name);
            if (mode.n_blocks) QVERIFY2(steps.preempted() > 0, "the tiny pool never preempted");
        }
    }

    // Speculative decoding (n-gram drafts, K = 4) leaves greedy output token
    // for token what it is without, on SmolLM2: 16 requests at once (eight
    // chats and eight asking to repeat a text, where drafts are accepted)
    // with the prefix cache, and with preemption forced by a tiny pool.
    void speculationKeepsGreedyOutput() {
        if (!model_) QSKIP("no model");
        std::vector<std::vector<int32_t>> prompts = prompts_;
        for (const char* q : kQuestions)
            prompts.push_back(chat({{"user", std::string("Repeat exactly, twice: \"") + q + " " + q + "\"", ""}}));
        std::vector<std::vector<int32_t>> want;
        {
            auto backend = make_backend(0);
            auto engine = folio::Engine::start(*model_, *tokenizer_, *backend, folio::EngineConfig{});
            QVERIFY(engine);
            EngineCollector c;
            std::vector<folio::Submission> batch;
            for (size_t i = 0; i < prompts.size(); ++i) batch.push_back({greedy_to_the_end(prompts[i]), c.callback(int(i))});
            (*engine)->submit(std::move(batch));
            (*engine)->wait_idle();
            for (size_t i = 0; i < prompts.size(); ++i) want.push_back(c.get(int(i)).tokens);
        }
        folio::EngineConfig spec;
        spec.spec.method = folio::SpecMethod::Ngram;
        spec.spec.draft_max = 4;
        spec.spec.adaptive = false;  // every step verifies drafts (adaptive K would back off on the CPU)
        for (uint32_t n_blocks : {0u, 24u}) {
            auto backend = make_backend(n_blocks);
            auto engine = folio::Engine::start(*model_, *tokenizer_, *backend, spec);
            QVERIFY(engine);
            StepRecorder steps;
            (*engine)->subscribe(steps.callback());
            EngineCollector c;
            std::vector<folio::Submission> batch;
            for (size_t i = 0; i < prompts.size(); ++i) batch.push_back({greedy_to_the_end(prompts[i]), c.callback(int(i))});
            (*engine)->submit(std::move(batch));
            (*engine)->wait_idle();
            for (size_t i = 0; i < prompts.size(); ++i) {
                const CollectedRequest r = c.get(int(i));
                const std::string what = std::string(n_blocks ? "tiny pool" : "prefix cache") + ", prompt " +
                                         std::to_string(i) + ": " + tokenizer_->decode(r.tokens) +
                                         " | without drafts: " + tokenizer_->decode(want[i]);
                QVERIFY2(r.tokens == want[i], what.c_str());
            }
            const folio::EngineMetrics m = (*engine)->metrics();
            std::printf("SmolLM2, %s: %llu of %llu draft tokens accepted\n", n_blocks ? "tiny pool" : "prefix cache",
                        static_cast<unsigned long long>(m.spec_decode_num_accepted_tokens_total),
                        static_cast<unsigned long long>(m.spec_decode_num_draft_tokens_total));
            QVERIFY(m.spec_decode_num_accepted_tokens_total > 0);
            if (n_blocks) QVERIFY2(steps.preempted() > 0, "the tiny pool never preempted");
        }
    }

    // The same on Gemma 3 (262144-entry vocabulary, sliding-window layers),
    // requests alone.
    void speculationKeepsGreedyOutputOnGemma() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        auto model = folio::load_model_description(path);
        QVERIFY(model);
        auto tok = folio::Tokenizer::create(model->tokenizer);
        QVERIFY(tok);
        folio::BackendOptions options;
        options.n_threads = 2;
        options.max_context = 512;
        options.n_blocks = 64;
        auto backend = folio::create_cpu_backend(*model, options);
        QVERIFY(backend);
        const char* texts[] = {"Repeat exactly: the quick brown fox jumps over the lazy dog. the quick brown fox",
                               "Count: one, two, three, four, five, six,"};
        folio::EngineConfig spec;
        spec.spec.method = folio::SpecMethod::Ngram;
        spec.spec.adaptive = false;
        std::vector<std::vector<int32_t>> got[2];
        uint64_t accepted = 0;
        for (int on = 0; on < 2; ++on) {
            auto engine = folio::Engine::start(*model, *tok, **backend, on ? spec : folio::EngineConfig{});
            QVERIFY(engine);
            for (const char* t : texts) {
                EngineCollector c;
                folio::GenerationRequest r;
                r.prompt = t;
                r.sampling.temperature = 0;
                r.max_tokens = 20;
                r.ignore_eos = true;
                (*engine)->submit(r, c.callback(0));
                (*engine)->wait_idle();
                got[on].push_back(c.get(0).tokens);
            }
            if (on) accepted = (*engine)->metrics().spec_decode_num_accepted_tokens_total;
        }
        for (size_t i = 0; i < got[0].size(); ++i)
            QVERIFY2(got[1][i] == got[0][i], (tok->decode(got[1][i]) + " | without drafts: " + tok->decode(got[0][i])).c_str());
        std::printf("Gemma 3: %llu draft tokens accepted\n", static_cast<unsigned long long>(accepted));
        QVERIFY(accepted > 0);
    }

    // A draft model (the Q4_1 file drafting for the full-precision HF
    // folder of the same model, its own CPU backend), layer skip (the
    // target's first 8 layers) and int4-self (its weights as Q4_1 in memory): greedy output token for token what the
    // target gives alone, 4 requests at once; a Gemma 3 draft for SmolLM2 is
    // refused with the first difference named.
    void draftModelsKeepGreedyOutput() {
        FOLIO_REQUIRE_MODEL(folder, folio_test::kSmolLM2Folder);
        if (!model_) QSKIP("no model");
        auto target = folio::load_model_description(folder);
        QVERIFY2(target, target ? "" : target.error().message.c_str());
        auto target_tok = folio::Tokenizer::create(target->tokenizer);
        QVERIFY(target_tok);
        QVERIFY2(folio::check_draft_vocabulary(*target_tok, *tokenizer_), "the Q4_1 file's vocabulary should match");
        auto layer_skip = folio::layer_skip_model(*target, 8);
        QVERIFY(layer_skip);
        auto int4 = folio::quantize_to_4_bits(*target);
        QVERIFY2(int4, int4 ? "" : int4.error().message.c_str());
        folio::BackendOptions options;
        options.n_threads = 2;
        options.max_context = 512;
        options.n_blocks = 128;
        auto target_backend = folio::create_cpu_backend(*target, options);
        auto draft_backend = folio::create_cpu_backend(*model_, options);
        auto skip_backend = folio::create_cpu_backend(*layer_skip, options);
        auto int4_backend = folio::create_cpu_backend((*int4)->model, options);
        QVERIFY(target_backend && draft_backend && skip_backend && int4_backend);
        std::vector<std::vector<int32_t>> prompts(prompts_.begin(), prompts_.begin() + 2);
        for (const char* q : {kQuestions[0], kQuestions[3]})
            prompts.push_back(chat({{"user", std::string("Repeat exactly: \"") + q + " " + q + "\"", ""}}));
        auto run = [&](folio::SpecMethod method, folio::Backend* draft, uint64_t* accepted) {
            folio::EngineConfig config;
            config.spec.method = method;
            config.spec.adaptive = false;
            config.spec.draft_backend = draft;
            auto engine = folio::Engine::start(*target, *target_tok, **target_backend, config);
            EngineCollector c;
            std::vector<folio::Submission> batch;
            for (size_t i = 0; i < prompts.size(); ++i) {
                folio::GenerationRequest r = greedy_to_the_end(prompts[i]);
                r.max_tokens = 16;
                batch.push_back({r, c.callback(int(i))});
            }
            (*engine)->submit(std::move(batch));
            (*engine)->wait_idle();
            if (accepted) *accepted = (*engine)->metrics().spec_decode_num_accepted_tokens_total;
            std::vector<std::vector<int32_t>> out;
            for (size_t i = 0; i < prompts.size(); ++i) out.push_back(c.get(int(i)).tokens);
            return out;
        };
        const auto want = run(folio::SpecMethod::Off, nullptr, nullptr);
        uint64_t by_draft = 0, by_skip = 0;
        QCOMPARE(run(folio::SpecMethod::Draft, draft_backend->get(), &by_draft), want);
        QCOMPARE(run(folio::SpecMethod::LayerSkip, skip_backend->get(), &by_skip), want);
        uint64_t by_int4 = 0;
        QCOMPARE(run(folio::SpecMethod::Int4Self, int4_backend->get(), &by_int4), want);
        std::printf("draft model: %llu draft tokens accepted; layer skip (8 of 30 layers): %llu; int4-self: %llu\n",
                    static_cast<unsigned long long>(by_draft), static_cast<unsigned long long>(by_skip),
                    static_cast<unsigned long long>(by_int4));
        QVERIFY(by_draft > 0 && by_int4 > 0);

        FOLIO_REQUIRE_MODEL(gemma_path, folio_test::kGemma3);
        auto gemma = folio::load_model_description(gemma_path);
        QVERIFY(gemma);
        auto gemma_tok = folio::Tokenizer::create(gemma->tokenizer);
        QVERIFY(gemma_tok);
        const folio::Status mismatch = folio::check_draft_vocabulary(*tokenizer_, *gemma_tok);
        QVERIFY(!mismatch);
        QVERIFY2(mismatch.error().message.find("262144") != std::string::npos, mismatch.error().message.c_str());
    }

    void repeatedPromptAndNextChatTurnReuseBlocks() {
        if (!model_) QSKIP("no model");
        auto backend = make_backend(0);
        auto engine = folio::Engine::start(*model_, *tokenizer_, *backend, folio::EngineConfig{});
        QVERIFY(engine);
        EngineCollector c;
        const std::vector<int32_t>& first = prompts_[0];
        (*engine)->submit(greedy(first), c.callback(0));
        (*engine)->wait_idle();
        (*engine)->submit(greedy(first), c.callback(1));
        (*engine)->wait_idle();
        const int32_t full_blocks = static_cast<int32_t>((first.size() - 1) / 16 * 16);
        QCOMPARE(c.get(1).timings.cached_prompt_tokens, full_blocks);
        QCOMPARE(c.get(1).tokens, c.get(0).tokens);

        const std::string reply = c.get(0).text;
        const std::vector<int32_t> second = chat({{"system", "You are a concise assistant.", ""},
                                                  {"user", kQuestions[0], ""},
                                                  {"assistant", reply, ""},
                                                  {"user", "And of Italy?", ""}});
        (*engine)->submit(greedy(second), c.callback(2));
        (*engine)->wait_idle();
        const int32_t cached = c.get(2).timings.cached_prompt_tokens;
        const std::string msg = "second turn reused " + std::to_string(cached) + " of " +
                                std::to_string(second.size()) + " tokens; first turn prompt " +
                                std::to_string(first.size());
        QVERIFY2(cached >= full_blocks, msg.c_str());
        QVERIFY(!c.get(2).tokens.empty());
    }

private:
    std::vector<int32_t> chat(const std::vector<folio::ChatMessage>& messages) {
        folio::ChatTemplateChoice choice = folio::ChatTemplate::for_model(model_->chat_template, "llama");
        folio::ChatTemplateInputs inputs;
        inputs.messages = messages;
        inputs.add_generation_prompt = true;
        auto text = choice.chat_template.render(inputs);
        if (!text) return {};
        return tokenizer_->encode(*text, /*add_special=*/false, /*parse_special=*/true);
    }
    std::unique_ptr<folio::Backend> make_backend(uint32_t n_blocks) {
        folio::BackendOptions options;
        options.n_threads = 2;
        options.max_context = 512;
        options.n_blocks = n_blocks ? n_blocks : 256;
        auto backend = folio::create_cpu_backend(*model_, options);
        return backend ? std::move(*backend) : nullptr;
    }
    // Every request grows by the same 24 tokens, whatever it answers, and
    // all arrive in one batch: the tiny pool's preemption then does not hang
    // on which answers end early or on the engine thread's timing.
    static folio::GenerationRequest greedy_to_the_end(const std::vector<int32_t>& prompt) {
        folio::GenerationRequest r = greedy(prompt);
        r.ignore_eos = true;
        return r;
    }
    static folio::GenerationRequest greedy(const std::vector<int32_t>& prompt) {
        folio::GenerationRequest r;
        r.prompt_tokens = prompt;
        r.sampling.temperature = 0;
        r.max_tokens = 24;
        return r;
    }

    std::unique_ptr<folio::ModelDescription> model_;
    std::unique_ptr<folio::Tokenizer> tokenizer_;
    std::vector<std::vector<int32_t>> prompts_;
};

FOLIO_TEST_MAIN(EngineModelTest)
#include "test_engine_model.moc"
