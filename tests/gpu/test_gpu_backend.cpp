// The CUDA backend against the CPU backend: the same batches through both
// give the same logits (within a stated tolerance) for random-weight models
// of several shapes and weight types and for the test models; the engine on
// the GPU with 64 concurrent requests, prefix caching and preemption gives
// each request the tokens it gets alone, and on the test model the tokens
// the CPU gives. Skips without a usable GPU.
//
// Tolerances. Float weights: cuBLAS multiplies F16-rounded activations for
// batches over 8 rows (the CPU keeps F32): ~1e-3. Quantized weights: the GPU
// quantizes activations to Q8 exactly as the CPU does and its integer dot
// products equal the CPU's bit for bit on equal inputs (FOLIO_TRACE_OPS
// shows the first layer's Q, K, V identical), but attention sums in another
// order (~5e-6 relative), and from the next matmul on, that flips the Q8
// rounding of a few activations: ~1e-4 per layer, a few percent on the
// random 2-layer models, whose logits have no clear winner. So random models
// are held to 5 %; the trained test models, whose top tokens stand out, to
// equal argmax and greedy tokens.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../engine/engine_collector.h"
#include "folio/backend.h"
#include "folio/engine.h"
#include "folio/model.h"
#include "folio/tokenizer.h"
#include "folio_test.h"

namespace {

#define REQUIRE_GPU()                                                          \
    do {                                                                       \
        if (folio::cuda_device_count() == 0) QSKIP(folio::describe_cuda_devices().c_str()); \
    } while (0)

folio::BackendOptions options_for(const std::string& device, uint32_t n_blocks = 96) {
    folio::BackendOptions o;
    o.device = device;
    o.n_threads = 0;
    o.max_context = 1024;
    o.n_blocks = n_blocks;
    return o;
}

// Two sequences prefilled in one batch (37 and 21 tokens, block tables
// shuffled), then both decode a token; logits for every row.
std::vector<folio::Batch> two_steps(int32_t n_vocab) {
    std::vector<folio::Batch> steps(2);
    const int32_t lens[2] = {37, 21};
    const std::vector<int32_t> tables[2] = {{9, 2, 5}, {7, 0}};
    uint64_t r = 12345;
    auto token = [&] {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<int32_t>((r >> 33) % static_cast<uint64_t>(n_vocab));
    };
    for (int s = 0; s < 2; ++s) {
        folio::BatchSequence prefill{steps[0].n_tokens(), lens[s], lens[s], tables[s]};
        for (int32_t j = 0; j < lens[s]; ++j) {
            steps[0].logits_rows.push_back(steps[0].n_tokens());
            steps[0].token_ids.push_back(token());
            steps[0].positions.push_back(j);
            steps[0].slot_mapping.push_back(int64_t{tables[s][static_cast<size_t>(j / 16)]} * 16 + j % 16);
        }
        steps[0].sequences.push_back(prefill);
        folio::BatchSequence decode{steps[1].n_tokens(), 1, lens[s] + 1, tables[s]};
        steps[1].logits_rows.push_back(steps[1].n_tokens());
        steps[1].token_ids.push_back(token());
        steps[1].positions.push_back(lens[s]);
        steps[1].slot_mapping.push_back(int64_t{tables[s][static_cast<size_t>(lens[s] / 16)]} * 16 + lens[s] % 16);
        steps[1].sequences.push_back(decode);
    }
    return steps;
}

// Largest relative error of a row, ||gpu - cpu|| / ||cpu||, over all rows,
// and how many rows' argmax differ where the CPU's top two are not a near-tie.
struct Agreement {
    double max_rel = 0;
    int argmax_diffs = 0;
};

Agreement compare_logits(const std::vector<float>& cpu, const std::vector<float>& gpu, int32_t n_vocab) {
    Agreement a;
    const size_t rows = cpu.size() / static_cast<size_t>(n_vocab);
    for (size_t r = 0; r < rows; ++r) {
        const float* c = cpu.data() + r * n_vocab;
        const float* g = gpu.data() + r * n_vocab;
        double diff = 0, norm = 0;
        for (int32_t i = 0; i < n_vocab; ++i) {
            diff += (double{g[i]} - c[i]) * (double{g[i]} - c[i]);
            norm += double{c[i]} * c[i];
        }
        a.max_rel = std::max(a.max_rel, std::isfinite(diff) ? std::sqrt(diff / std::max(norm, 1e-30)) : 1e30);
        const auto cb = std::max_element(c, c + n_vocab) - c, gb = std::max_element(g, g + n_vocab) - g;
        if (cb != gb && c[cb] - c[gb] > 1e-3f * std::fabs(c[cb])) ++a.argmax_diffs;
    }
    return a;
}

}  // namespace

class GpuBackendTest : public QObject {
    Q_OBJECT
private slots:
    void badDevicesAreClearErrors() {
        auto model = folio::make_dummy_model({"tiny-llama", folio::TensorType::Q8_0, true, 1});
        QVERIFY(model);
        for (const char* device : {"cuda:x", "gpu", "cuda:999"}) {
            auto b = folio::create_backend(*model, options_for(device));
            QVERIFY2(!b, device);
            QVERIFY2(!b.error().message.empty(), device);
        }
        // Dummy weights left to the GPU cannot run on the CPU.
        auto device_only = folio::make_dummy_model({"tiny-llama", folio::TensorType::Q8_0, false, 1});
        QVERIFY(device_only);
        QVERIFY(!folio::create_backend(*device_only, options_for("cpu")));
    }

    void randomModelsMatchTheCpu() {
        REQUIRE_GPU();
        struct Case {
            const char* shape;
            folio::TensorType type;
            double tolerance;  // relative, per logits row
        };
        using T = folio::TensorType;
        // Quantized weights: activations quantized as on the CPU, only the
        // float sums' order differs. Float weights: F16 activations in cuBLAS.
        const Case cases[] = {
            {"tiny-llama", T::Q4_0, 5e-2},  {"tiny-llama", T::Q4_1, 5e-2},   {"tiny-llama", T::Q5_0, 5e-2},
            {"tiny-llama", T::Q5_1, 5e-2},  {"tiny-llama", T::Q8_0, 5e-2},   {"tiny-llama", T::Q4_K, 5e-2},
            {"tiny-llama", T::Q5_K, 5e-2},  {"tiny-llama", T::Q6_K, 5e-2},   {"tiny-llama", T::F16, 2e-3},
            {"tiny-llama", T::F32, 2e-3},   {"tiny-gemma3", T::Q8_0, 5e-2},  {"tiny-gemma3", T::Q4_K, 5e-2},
            {"tiny-gemma3", T::F16, 2e-3},  {"smollm2-135m", T::Q4_1, 5e-2}, {"gemma-3-270m", T::Q8_0, 5e-2},
            {"llama-3.2-1b", T::Q4_0, 5e-2},
        };
        std::string failures;
        for (const Case& c : cases) {
            const std::string what = std::string(c.shape) + " " + std::string(folio::traits(c.type).name);
            auto model = folio::make_dummy_model({c.shape, c.type, true, 7});
            QVERIFY2(model, (what + ": " + (model ? "" : model.error().message)).c_str());
            auto cpu = folio::create_backend(*model, options_for("cpu"));
            auto gpu = folio::create_backend(*model, options_for("cuda"));
            QVERIFY2(cpu && gpu, (what + ": " + (!cpu ? cpu.error().message : !gpu ? gpu.error().message : "")).c_str());
            const int32_t n_vocab = (*cpu)->n_vocab();
            for (const folio::Batch& step : two_steps(n_vocab)) {
                std::vector<float> want(step.logits_rows.size() * static_cast<size_t>(n_vocab));
                std::vector<float> got(want.size(), std::nanf(""));
                QVERIFY2((*cpu)->forward(step, want), what.c_str());
                auto s = (*gpu)->forward(step, got);
                QVERIFY2(s, (what + ": " + (s ? "" : s.error().message)).c_str());
                const Agreement a = compare_logits(want, got, n_vocab);
                const std::string msg = what + ": " + std::to_string(step.n_tokens()) + " rows, relative error " +
                                        std::to_string(a.max_rel) + ", argmax differs in " +
                                        std::to_string(a.argmax_diffs) + " rows";
                std::fprintf(stderr, "%s\n", msg.c_str());
                if (!(a.max_rel < c.tolerance)) failures += msg + "; ";
            }
        }
        QVERIFY2(failures.empty(), failures.c_str());
    }

    void realModelsMatchTheCpu() {
        REQUIRE_GPU();
        for (const char* file : {folio_test::kSmolLM2, folio_test::kGemma3}) {
            const std::string path = folio_test::model_path(file);
            if (path.empty()) {
                std::fprintf(stderr, "%s not present (FOLIO_MODELS_DIR): skipped\n", file);
                continue;
            }
            auto model = folio::load_model_description(path);
            QVERIFY(model);
            auto cpu = folio::create_backend(*model, options_for("cpu"));
            auto gpu = folio::create_backend(*model, options_for("cuda"));
            QVERIFY(cpu && gpu);
            const int32_t n_vocab = (*cpu)->n_vocab();
            for (const folio::Batch& step : two_steps(n_vocab)) {
                std::vector<float> want(step.logits_rows.size() * static_cast<size_t>(n_vocab)), got(want.size());
                QVERIFY((*cpu)->forward(step, want));
                QVERIFY((*gpu)->forward(step, got));
                const Agreement a = compare_logits(want, got, n_vocab);
                const std::string msg = std::string(file) + ": relative error " + std::to_string(a.max_rel) +
                                        ", argmax differs in " + std::to_string(a.argmax_diffs) + " rows";
                std::fprintf(stderr, "%s\n", msg.c_str());
                QVERIFY2(a.max_rel < 1e-4 && a.argmax_diffs == 0, msg.c_str());
            }
        }
    }

    // 64 requests at once on the GPU with the prefix cache on and a pool
    // small enough to preempt: every greedy continuation equals the one the
    // request gets alone on the GPU (the kernels are batch-invariant), and
    // with the test model the one the CPU gives.
    void engineOnTheGpuGivesTheTokensOfALoneRun() {
        REQUIRE_GPU();
        const std::string path = folio_test::model_path(folio_test::kSmolLM2);
        auto model = path.empty() ? folio::make_dummy_model({"smollm2-135m", folio::TensorType::Q4_1, true, 3})
                                  : folio::load_model_description(path);
        QVERIFY(model);
        auto tokenizer = folio::Tokenizer::create(model->tokenizer);
        QVERIFY(tokenizer);
        std::vector<std::vector<int32_t>> prompts;
        const char* openings[] = {"The capital of France is", "Once upon a time", "def fibonacci(n):",
                                  "The three primary colors are", "In 1969, astronauts", "A haiku about rain:",
                                  "Photosynthesis is", "The quick brown fox"};
        for (int i = 0; i < 64; ++i)  // 8 openings x 8 tails: shared prefixes
            prompts.push_back(tokenizer->encode(std::string(openings[i % 8]) + std::string(static_cast<size_t>(i / 8), ' ') +
                                                    std::to_string(i),
                                                true, false));
        // Greedy continuations of `which` prompts, submitted together (or one
        // at a time when `alone`).
        auto run = [&](const std::string& device, uint32_t n_blocks, bool alone, int& preempted) {
            std::vector<std::vector<int32_t>> out(prompts.size());
            auto backend = folio::create_backend(*model, options_for(device, n_blocks));
            if (!backend) return out;
            auto engine = folio::Engine::start(*model, *tokenizer, **backend, folio::EngineConfig{});
            if (!engine) return out;
            StepRecorder steps;
            (*engine)->subscribe(steps.callback());
            EngineCollector c;
            for (size_t i = 0; i < prompts.size(); ++i) {
                folio::GenerationRequest r;
                r.prompt_tokens = prompts[i];
                r.sampling.temperature = 0;
                r.max_tokens = 24;
                r.ignore_eos = true;
                (*engine)->submit(r, c.callback(static_cast<int>(i)));
                if (alone) (*engine)->wait_idle();
            }
            (*engine)->wait_idle();
            for (size_t i = 0; i < prompts.size(); ++i) out[i] = c.get(static_cast<int>(i)).tokens;
            preempted = steps.preempted();
            return out;
        };
        int preempted = 0, unused = 0;
        const auto alone = run("cuda", 512, true, unused);
        const auto together = run("cuda", 48, false, preempted);  // 48 blocks: fewer than 64 sequences need
        int differ = 0;
        for (size_t i = 0; i < alone.size(); ++i) differ += alone[i].empty() || together[i] != alone[i];
        std::string msg = std::to_string(differ) + " of 64 batched continuations differ from their lone runs; " +
                          std::to_string(preempted) + " preemptions";
        std::fprintf(stderr, "%s\n", msg.c_str());
        QVERIFY2(differ == 0, msg.c_str());
        QVERIFY2(preempted > 0, msg.c_str());
        if (path.empty()) return;  // random weights: no clear winners to compare with the CPU
        const auto cpu = run("cpu", 512, false, unused);
        differ = 0;
        for (size_t i = 0; i < cpu.size(); ++i) differ += cpu[i] != together[i];
        msg = std::to_string(differ) + " of 64 continuations differ between the CPU and the GPU";
        std::fprintf(stderr, "%s\n", msg.c_str());
        QVERIFY2(differ == 0, msg.c_str());
    }
};

FOLIO_TEST_MAIN(GpuBackendTest)
#include "test_gpu_backend.moc"
