// Folio against llama.cpp (goldens from tools/make_inference_goldens.py and
// tools/make_perplexity_reference.py, format in tests/data/inference/README.md):
// the same prompt ids give the same greedy 64-token continuation and logits
// within tolerance at every position; perplexity within 0.5 %.
//
// The reference continuation is fed back (teacher forcing) so every row is
// compared even after a disagreement. Logits: the reference's top-16 ids at
// each row are compared with ours as log-probabilities (logit - logsumexp),
// so a constant shift, which changes no probability, is not counted.
//
// Why not "identical greedy tokens, tiny tolerance": with 8-bit activation
// quantization between layers, a last-ulp difference anywhere flips a
// rounded activation and moves logits by up to ~1. llama.cpp shows it against
// itself: the goldens record `one_batch_deviation`, the same ids re-run as
// one batch, up to 1.15 in a top logit, and a changed argmax in 8 of 10
// SmolLM2 prompts. Near-ties (greedy margins down to 0.001) then decide
// differently. So the test holds Folio to llama.cpp's own noise:
//   - every top-16 log-probability within 1.3x the largest self-deviation of
//     the golden file (at least 0.05): 1.5 for the quantized files, where
//     Folio measured 1.18 (SmolLM2) and 1.34 (Gemma) worst; and the mean
//     |difference| within 1/7.5 of that (0.2; measured 0.11 and 0.14): a
//     systematic error, a wrong RoPE base or norm, moves the mean, not only
//     the tails. The F32 HF-folder file has no activation quantization, so
//     llama.cpp's self-deviation there is ~0.01 and the bounds are tight;
//   - greedy tokens equal at >= 90 % of steps, and a differing step only
//     where llama.cpp's own margin there is below twice its self-deviation
//     on that prompt (a real near-tie).
// Token identity itself is held where neither side quantizes activations:
// the HF folder (F32) and the quantized files run with F32 activations
// (BackendOptions::f32_activations, each weight block dequantized), against
// llama.cpp on the files' dequantized F32 copies (tools/dequantize_gguf.py;
// SmolLM2's is the HF folder's file). There at least 8 of the 10 greedy
// continuations must be identical throughout, besides the bounds above.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch_files.h"
#include "folio/backend.h"
#include "folio/generate.h"
#include "folio/gguf.h"
#include "folio/model.h"
#include "folio/quantize_job.h"
#include "folio/tokenizer.h"
#include "folio_test.h"

namespace {

constexpr double kSelfDeviationFactor = 1.3;
constexpr double kMinLogprobTolerance = 0.05;
constexpr double kMeanFraction = 1.0 / 7.5;
constexpr double kMinGreedyAgreement = 0.9;
constexpr double kPerplexityTolerance = 0.005;  // relative
constexpr int kMinIdenticalPrompts = 8;  // F32 activations: continuations identical token for token

enum class Activations { Quantized, F32 };
// GreedyOnly: the log-probabilities measured and printed, greedy agreement held.
enum class Bounds { All, GreedyOnly };

double logsumexp(const float* row, int32_t n) {
    const float max = *std::max_element(row, row + n);
    double sum = 0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
    return max + std::log(sum);
}

int32_t argmax(const float* row, int32_t n) { return static_cast<int32_t>(std::max_element(row, row + n) - row); }

bool read_json(const std::string& path, nlohmann::json& out) {
    std::ifstream in(path);
    if (!in) return false;
    try {
        out = nlohmann::json::parse(in);
    } catch (const std::exception&) {
        return false;
    }
    return true;
}

}  // namespace

class InferenceGoldenTest : public QObject {
    Q_OBJECT
private slots:
    void smollm2() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        check_golden(path, "inference/smollm2_q4_1.json");
    }
    void smollm2Folder() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2Folder);
        check_golden(path, "inference/smollm2_hf_f32.json", Activations::F32);  // F32 weights: a no-op
    }
    void gemma3() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        check_golden(path, "inference/gemma3_q4_k_m.json");
    }
    void smollm2F32Activations() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        check_golden(path, "inference/smollm2_hf_f32.json", Activations::F32);
    }
    void gemma3F32Activations() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        check_golden(path, "inference/gemma3_q4_k_m_f32.json", Activations::F32);
    }
    // The architecture families' files (test_arch_golden's) quantized to
    // Q4_K_M by Folio's quantizer (llama-quantize's bytes, docs/quantization.md;
    // these 64-wide files take the preset's fallbacks, Q5_0 / Q8_0). Held as
    // the Gemma 3 file is held with F32 activations: each weight block
    // dequantized, against llama.cpp on the file's dequantized F32 copy
    // (tight bounds, >= 8 of 10 continuations identical). The run with 8-bit
    // activations against llama.cpp on the quantized file is held to >= 90 %
    // greedy agreement; its log-probabilities are printed, not bounded:
    // llama.cpp's one-batch deviation, which sets the bounds above, is 0 on
    // most prompts of these tiny random files, while a rounded activation
    // flipped by a last-ulp difference moves a logit here as in any 8-bit run
    // (measured: greedy 631-640 of 640 steps equal, mean |logprob diff|
    // 0.006-0.092, worst 0.05-3.7, the worst a qwen3moe routing flip).
    void llama31Q4KM() { check_arch_q4_k_m("llama31"); }
    void qwen3Q4KM() { check_arch_q4_k_m("qwen3"); }
    void gemma2Q4KM() { check_arch_q4_k_m("gemma2"); }
    void phi3Q4KM() { check_arch_q4_k_m("phi3"); }
    void qwen3moeQ4KM() { check_arch_q4_k_m("qwen3moe"); }
    void mixtralQ4KM() { check_arch_q4_k_m("mixtral"); }
    void perplexitySmollm2() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        check_perplexity(path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    }
    void perplexitySmollm2Folder() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2Folder);
        check_perplexity(path, "SmolLM2-135M-Instruct-hf.F32.gguf");
    }
    void perplexityGemma3() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        check_perplexity(path, "gemma-3-270m-q4_k_m.gguf");
    }

private:
    void check_arch_q4_k_m(const std::string& family) {
        const std::string golden_file = "inference/arch_" + family + "_q4_k_m.json";
        nlohmann::json golden;
        if (!read_json(folio_test::data_path(golden_file), golden)) QSKIP("golden file not there yet");
        const std::string f32 = gguf_fixture::temp_path("arch-" + family + ".gguf");
        const std::string q4 = gguf_fixture::temp_path("arch-" + family + ".Q4_K_M.gguf");
        std::string message;
        if (!arch_files::make(family, f32, message)) {
            std::filesystem::remove(f32);
            if (folio_test::models_required() || message.rfind("make_arch", 0) == 0) QFAIL(message.c_str());
            QSKIP(message.c_str());
        }
        folio::QuantizeOptions options;
        options.source = f32;
        options.output = q4;
        options.preset = folio::QuantPreset::Q4_K_M;
        options.threads = 2;
        auto report = folio::QuantizeJob(options).run();
        std::filesystem::remove(f32);
        QVERIFY2(report, report ? "" : report.error().message.c_str());
        if (!report->report_path.empty()) std::filesystem::remove(report->report_path);
        // The tensors' bytes: the metadata records the source's (temporary) path.
        auto file = folio::GgufFile::open(q4);
        QVERIFY2(file, file ? "" : file.error().message.c_str());
        const std::string sha = arch_files::sha256_from(q4, file->data_offset());
        QVERIFY2(sha == golden.at("tensor_data_sha256").get<std::string>(),
                 ("Folio's Q4_K_M of tools/make_arch_gguf.py " + family + " holds other tensors than the goldens' (sha256 " +
                  sha + "): regenerate them (tests/data/inference/README.md)")
                     .c_str());
        check_golden(q4, "inference/arch_" + family + "_q4_k_m_f32.json", Activations::F32);
        check_golden(q4, golden_file, Activations::Quantized, Bounds::GreedyOnly);
        std::filesystem::remove(q4);
    }

    // model_path run with the given activations against golden_file.
    void check_golden(const std::string& model_path, const std::string& golden_file,
                      Activations activations = Activations::Quantized, Bounds bounds = Bounds::All) {
        nlohmann::json golden;
        if (!read_json(folio_test::data_path(golden_file), golden)) QSKIP("golden file not there yet");
        auto model = folio::load_model_description(model_path);
        QVERIFY2(model, model ? "" : model.error().message.c_str());
        folio::BackendOptions options;
        options.n_threads = 2;
        options.max_context = golden.value("n_ctx", 512u);
        options.f32_activations = activations == Activations::F32;
        auto backend = folio::create_cpu_backend(*model, options);
        QVERIFY2(backend, backend ? "" : backend.error().message.c_str());
        const int32_t n_vocab = (*backend)->n_vocab();
        QCOMPARE(n_vocab, golden.at("n_vocab").get<int32_t>());

        double file_self_deviation = 0;
        for (const auto& p : golden.at("prompts"))
            if (p.contains("one_batch_deviation"))
                file_self_deviation = std::max(file_self_deviation,
                                               p.at("one_batch_deviation").at("max_abs_top_logit").get<double>());
        const double kLogprobTolerance = std::max(kMinLogprobTolerance, kSelfDeviationFactor * file_self_deviation);
        const double kMeanLogprobTolerance = kMeanFraction * kLogprobTolerance;
        double worst = 0, sum_diff = 0;
        int64_t n_diff = 0, steps = 0;
        int mismatches = 0, unexplained = 0, identical_prompts = 0;
        std::string report;
        for (const auto& p : golden.at("prompts")) {
            const auto prompt = p.at("prompt_ids").get<std::vector<int32_t>>();
            const auto reference = p.at("continuation_ids").get<std::vector<int32_t>>();
            const auto top_ids = p.at("top_ids").get<std::vector<std::vector<int32_t>>>();
            const auto top_logits = p.at("top_logits").get<std::vector<std::vector<double>>>();
            const auto ref_lse = p.at("logsumexp").get<std::vector<double>>();
            const auto margins = p.at("greedy_margins").get<std::vector<double>>();
            const double self_deviation = p.contains("one_batch_deviation")
                                              ? p.at("one_batch_deviation").at("max_abs_top_logit").get<double>()
                                              : 0.0;
            folio::SequenceRunner seq(**backend, 512);
            std::vector<float> rows, logits;
            QVERIFY(seq.append(prompt, rows, true));
            const int mismatches_before = mismatches;
            for (size_t i = 0; i < reference.size(); ++i) {
                const int32_t ours = argmax(rows.data() + rows.size() - static_cast<size_t>(n_vocab), n_vocab);
                ++steps;
                if (ours != reference[i]) {
                    ++mismatches;
                    const bool near_tie = margins[i] < 2 * self_deviation;
                    if (!near_tie) ++unexplained;
                    report += p.at("name").get<std::string>() + " step " + std::to_string(i) + ": ours " +
                              std::to_string(ours) + ", llama.cpp " + std::to_string(reference[i]) + " (margin " +
                              std::to_string(margins[i]) + (near_tie ? ")" : ", NOT a near-tie)") + "; ";
                }
                const int32_t one[1] = {reference[i]};
                QVERIFY(seq.append(one, logits));
                rows.insert(rows.end(), logits.begin(), logits.end());
            }
            if (mismatches == mismatches_before) ++identical_prompts;
            QCOMPARE(rows.size(), top_ids.size() * static_cast<size_t>(n_vocab));
            double prompt_worst = 0;
            for (size_t r = 0; r < top_ids.size(); ++r) {
                const float* row = rows.data() + r * static_cast<size_t>(n_vocab);
                const double lse = logsumexp(row, n_vocab);
                for (size_t j = 0; j < top_ids[r].size(); ++j) {
                    const double ours = row[top_ids[r][j]] - lse, theirs = top_logits[r][j] - ref_lse[r];
                    prompt_worst = std::max(prompt_worst, std::fabs(ours - theirs));
                    sum_diff += std::fabs(ours - theirs);
                    ++n_diff;
                }
            }
            std::fprintf(stderr, "  %-12s max |logprob diff| over top-16 of %zu rows: %.4f\n",
                         p.at("name").get<std::string>().c_str(), top_ids.size(), prompt_worst);
            worst = std::max(worst, prompt_worst);
        }
        const double mean = sum_diff / static_cast<double>(std::max<int64_t>(1, n_diff));
        const size_t n_prompts = golden.at("prompts").size();
        std::fprintf(stderr,
                     "%s%s: |logprob diff| worst %.4f (tolerance %.3f), mean %.4f (tolerance %.3f); greedy %lld/%lld "
                     "steps equal, %d/%zu continuations identical\n  %s\n",
                     golden_file.c_str(), activations == Activations::F32 ? " (F32 activations)" : "", worst,
                     kLogprobTolerance, mean, kMeanLogprobTolerance, static_cast<long long>(steps - mismatches),
                     static_cast<long long>(steps), identical_prompts, n_prompts, report.c_str());
        QVERIFY2(static_cast<double>(steps - mismatches) >= kMinGreedyAgreement * static_cast<double>(steps),
                 ("greedy continuation differs too often: " + report).c_str());
        if (bounds == Bounds::GreedyOnly) return;
        QVERIFY2(worst <= kLogprobTolerance, "logits differ from llama.cpp beyond the tolerance");
        QVERIFY2(mean <= kMeanLogprobTolerance, "logits differ from llama.cpp on average: a systematic error");
        QVERIFY2(unexplained == 0, ("greedy token differs where llama.cpp is not near a tie: " + report).c_str());
        if (activations == Activations::F32)
            QVERIFY2(identical_prompts >= kMinIdenticalPrompts,
                     ("fewer than 8 greedy continuations identical to llama.cpp's: " + report).c_str());
    }

    void check_perplexity(const std::string& model_path, const std::string& reference_file) {
        nlohmann::json golden;
        if (!read_json(folio_test::data_path("inference/perplexity.json"), golden))
            QSKIP("perplexity reference not there yet");
        const nlohmann::json* ref = nullptr;
        for (const auto& m : golden.at("models"))
            if (m.at("model_file") == reference_file) ref = &m;
        if (!ref) QSKIP("no perplexity reference for this model");
        const std::string text_path = golden.at("text").get<std::string>();
        std::ifstream in(text_path, std::ios::binary);
        if (!in) QSKIP("the reference text is not on this machine");
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

        auto model = folio::load_model_description(model_path);
        QVERIFY(model);
        auto tokenizer = folio::Tokenizer::create(model->tokenizer);
        QVERIFY(tokenizer);
        const int32_t n_ctx = golden.at("n_ctx").get<int32_t>();
        folio::BackendOptions options;
        options.n_threads = 2;
        options.max_context = static_cast<uint32_t>(n_ctx);
        auto backend = folio::create_cpu_backend(*model, options);
        QVERIFY(backend);
        const std::vector<int32_t> tokens = tokenizer->encode(text, true, false);
        QCOMPARE(static_cast<int64_t>(tokens.size()), ref->at("n_tokens").get<int64_t>());
        const bool add_bos = ref->at("add_bos").get<bool>();
        const int32_t n_vocab = (*backend)->n_vocab();
        const int64_t n_chunks = ref->at("n_chunks").get<int64_t>();
        folio::SequenceRunner seq(**backend, n_ctx);
        std::vector<float> logits;
        double nll = 0;
        int64_t count = 0;
        for (int64_t c = 0; c < n_chunks; ++c) {
            std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
            if (add_bos) chunk[0] = tokenizer->bos_id();
            seq.reset();
            QVERIFY(seq.append_from(chunk, n_ctx / 2, logits));
            for (int32_t j = n_ctx / 2; j < n_ctx - 1; ++j) {
                const float* row = logits.data() + static_cast<size_t>(j - n_ctx / 2) * n_vocab;
                nll += logsumexp(row, n_vocab) - row[tokens[static_cast<size_t>(c * n_ctx + j + 1)]];
                ++count;
            }
        }
        const double ppl = std::exp(nll / static_cast<double>(count)), want = ref->at("ppl").get<double>();
        std::fprintf(stderr, "%s: PPL %.4f, llama.cpp %.4f (%+.3f %%)\n", reference_file.c_str(), ppl, want,
                     100 * (ppl / want - 1));
        QVERIFY2(std::fabs(ppl / want - 1) <= kPerplexityTolerance, "perplexity differs from llama.cpp by more than 0.5 %");
    }
};

FOLIO_TEST_MAIN(InferenceGoldenTest)
#include "test_golden.moc"
