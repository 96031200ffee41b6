// OverflowPolicy::SinkWindow (StreamingLLM) on the real CPU backend, on
// random-weight models of the tiny shapes: a 20,000-token generation at a
// 2,048-token KV budget never errors, slides its window in place (no
// preemption, no recomputation), frees and reuses blocks as it goes and
// leaves the pool empty; the same on Gemma 3's alternating sliding-window
// layers (each turned by its own RoPE base) and over a Q8_0 cache.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <vector>

#include "engine_collector.h"
#include "folio/backend.h"
#include "folio/engine.h"
#include "folio/model.h"
#include "folio/tokenizer.h"
#include "folio_test.h"

namespace {

struct Run {
    CollectedRequest request;
    folio::EngineMetrics metrics;
    int usage_drops = 0;        // steps whose KV usage fell below the step before's
    double max_usage = 0;
    uint64_t steps = 0;
    int32_t prompt_tokens = 0;
};

}  // namespace

class SinkWindowTest : public QObject {
    Q_OBJECT
private slots:
    void twentyThousandTokensAtATwoThousandTokenBudget() {
        const Run r = run("tiny-llama", folio::KvType::F16, 2048, 20000);
        check(r, 2048, 20000);
    }

    void gemmaSlidingLayersAndAQ8_0CacheSlideToo() {
        check(run("tiny-gemma3", folio::KvType::F16, 512, 3000), 512, 3000);
        check(run("tiny-llama", folio::KvType::Q8_0, 512, 3000), 512, 3000);
    }

private:
    static Run run(const char* shape, folio::KvType kv_type, uint32_t budget, int32_t n_generate) {
        Run out;
        auto model = folio::make_dummy_model({shape, folio::TensorType::F16, true, 5});
        if (!model) qFatal("%s", model.error().message.c_str());
        auto tokenizer = folio::Tokenizer::create(model->tokenizer);
        if (!tokenizer) qFatal("%s", tokenizer.error().message.c_str());
        folio::BackendOptions options;
        options.n_threads = 2;
        options.max_context = budget;
        options.n_blocks = budget / options.block_size;  // the pool holds one window exactly
        options.kv_type = kv_type;
        auto backend = folio::create_backend(*model, options);
        if (!backend) qFatal("%s", backend.error().message.c_str());
        if (!(*backend)->can_shift_keys()) qFatal("the CPU backend should shift keys");
        auto engine = folio::Engine::start(*model, *tokenizer, **backend, folio::EngineConfig{});
        if (!engine) qFatal("%s", engine.error().message.c_str());

        std::atomic<double> last_usage{0}, max_usage{0};
        std::atomic<int> drops{0};
        std::atomic<uint64_t> steps{0};
        const int handle = (*engine)->subscribe([&](std::shared_ptr<const folio::StepEvent> e) {
            if (e->kv_usage < last_usage.load()) ++drops;
            last_usage = e->kv_usage;
            max_usage = std::max(max_usage.load(), e->kv_usage);
            ++steps;
        });
        folio::GenerationRequest request;
        for (int i = 0; i < 100; ++i) request.prompt_tokens.push_back(3 + (i * 37) % 256);
        out.prompt_tokens = static_cast<int32_t>(request.prompt_tokens.size());
        request.sampling.temperature = 0.0f;
        request.max_tokens = n_generate;
        request.ignore_eos = true;
        request.overflow = folio::OverflowPolicy::SinkWindow;
        EngineCollector collector;
        (*engine)->submit(std::move(request), collector.callback(0));
        (*engine)->wait_idle();
        (*engine)->unsubscribe(handle);
        out.request = collector.get(0);
        out.metrics = (*engine)->metrics();
        out.usage_drops = drops;
        out.max_usage = max_usage;
        out.steps = steps;
        return out;
    }

    static void check(const Run& r, int32_t budget, int32_t n_generate) {
        QVERIFY2(r.request.error.empty(), r.request.error.c_str());
        QCOMPARE(r.request.n_finished, 1);
        QCOMPARE(r.request.reason, folio::FinishReason::Length);
        QCOMPARE(static_cast<int32_t>(r.request.tokens.size()), n_generate);
        // Everything past one window was dropped from the middle, a quarter of
        // the window at a time, each drop freeing its blocks for reuse.
        const int32_t total = r.prompt_tokens + n_generate;
        QVERIFY2(r.request.timings.truncated_tokens >= total - budget,
                 qPrintable(QString("%1 truncated of %2").arg(r.request.timings.truncated_tokens).arg(total)));
        const int slides_at_least = (total - budget) / (budget / 4);
        QVERIFY2(r.usage_drops >= slides_at_least,
                 qPrintable(QString("KV usage fell %1 times, want >= %2").arg(r.usage_drops).arg(slides_at_least)));
        QVERIFY(r.max_usage <= 1.0);
        // Slid in place: nothing was preempted or recomputed (one prefill, then decode steps).
        QCOMPARE(r.metrics.num_preemptions_total, uint64_t{0});
        QCOMPARE(r.metrics.prompt_tokens_total, static_cast<uint64_t>(r.prompt_tokens));
        QCOMPARE(r.metrics.kv_cache_usage_perc, 0.0);
        std::printf("%d tokens at a %d-token budget: %d dropped, %d slides, %llu steps, %.1f tok/s\n", n_generate,
                    budget, r.request.timings.truncated_tokens, r.usage_drops,
                    static_cast<unsigned long long>(r.steps), r.request.timings.decode_tokens_per_s());
    }
};

FOLIO_TEST_MAIN(SinkWindowTest)
#include "test_sink_window.moc"
