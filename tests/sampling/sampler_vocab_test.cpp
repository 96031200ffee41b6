// The Sampler on Gemma 3's vocabulary size (262144): after one warm-up call
// per configuration no call allocates (counted by replacing the global
// operator new in this test program), and the results stay sane. Prints the
// time per call for a rough feel; nothing is asserted on time.
#include <folio_test.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "folio/sampling.h"

namespace {
size_t g_allocations = 0;
}

void* operator new(size_t size) {
    ++g_allocations;
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

using folio::SampleInfo;
using folio::Sampler;
using folio::SamplingParams;

namespace {

constexpr size_t kVocab = 262144;

struct Config {
    const char* name;
    SamplingParams params;
};

std::vector<Config> configs() {
    std::vector<Config> all;
    SamplingParams p;
    p.seed = 5;
    all.push_back({"llama.cpp defaults (top-k 40, top-p 0.95, min-p 0.05)", p});
    p.repetition_penalty = 1.1f;
    p.frequency_penalty = 0.2f;
    p.presence_penalty = 0.1f;
    p.n_logprobs = 5;
    all.push_back({"defaults + penalties + 5 logprobs", p});
    p = SamplingParams{};
    p.seed = 5;
    p.top_k = 0;
    p.min_p = 0.0f;
    p.top_p = 0.9f;
    all.push_back({"top-p 0.9 alone", p});
    p.top_p = 1.0f;
    all.push_back({"temperature alone", p});
    p.temperature = 0.0f;
    all.push_back({"greedy", p});
    return all;
}

}  // namespace

class SamplerVocabTest : public QObject {
    Q_OBJECT

private slots:
    void noAllocationAfterWarmUp() {
        // Logits shaped like a language model's: a broad low mass and a few
        // clear favourites.
        std::mt19937 random(123);
        std::normal_distribution<float> noise(0.0f, 2.0f);
        std::vector<float> logits(kVocab);
        for (auto& l : logits) l = noise(random);
        for (int i = 0; i < 8; ++i) logits[static_cast<size_t>(random() % kVocab)] = 18.0f - static_cast<float>(i);
        std::vector<int32_t> context;
        for (int i = 0; i < 512; ++i) context.push_back(static_cast<int32_t>(random() % kVocab));

        for (const auto& config : configs()) {
            Sampler sampler = std::move(Sampler::create(config.params).value());
            SampleInfo info;
            info.top.reserve(16);
            sampler.sample(logits, context, &info);  // warm-up grows the buffers
            const size_t before = g_allocations;
            const auto start = std::chrono::steady_clock::now();
            const int calls = 20;
            for (int i = 0; i < calls; ++i) {
                const int32_t id = sampler.sample(logits, context, &info);
                QVERIFY(id >= 0 && static_cast<size_t>(id) < kVocab);
                QVERIFY(info.logprob <= 0.0f);
                QCOMPARE(info.top.size(), static_cast<size_t>(config.params.n_logprobs));
            }
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            const size_t allocated = g_allocations - before;
            std::printf("  %-58s %7.3f ms/call, %zu candidates\n", config.name, ms / calls,
                        static_cast<size_t>(info.n_candidates));
            QVERIFY2(allocated == 0, (std::string(config.name) + ": " + std::to_string(allocated) + " allocations").c_str());
        }
    }
};

FOLIO_TEST_MAIN(SamplerVocabTest)
#include "sampler_vocab_test.moc"
