// The paged KV cache and the flat batch, checked through the models
// themselves: a prompt run as one batch, in chunks of 12 (chunks straddle
// 16-token blocks) and one token at a time must give the same logits at every
// position, and greedy generation must continue the same way after a prefix
// was cached in an earlier step. For SmolLM2 (GGUF and HF folder) and Gemma 3.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "folio/backend.h"
#include "folio/generate.h"
#include "folio/model.h"
#include "folio/tokenizer.h"
#include "folio_test.h"

namespace {

const char* kText =
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
    "movable metal type, oil-based inks and a wooden screw press adapted from those used to make wine.";

int32_t argmax(const float* row, int32_t n) { return static_cast<int32_t>(std::max_element(row, row + n) - row); }

}  // namespace

class InferenceConsistencyTest : public QObject {
    Q_OBJECT
private slots:
    void smollm2() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        check(path);
    }
    void smollm2Folder() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2Folder);
        check(path);
    }
    void gemma3() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        check(path);
    }

private:
    void check(const std::string& path) {
        auto model = folio::load_model_description(path);
        QVERIFY2(model, model ? "" : model.error().message.c_str());
        auto tokenizer = folio::Tokenizer::create(model->tokenizer);
        QVERIFY(tokenizer);
        folio::BackendOptions options;
        options.n_threads = 2;
        options.max_context = 256;
        auto backend = folio::create_cpu_backend(*model, options);
        QVERIFY2(backend, backend ? "" : backend.error().message.c_str());
        // The matmul's register tiles take 4, 3, 2 or 1 activation rows; the
        // 3-row tile sums in another order (last-ulp differences), which the
        // next layer's 8-bit activation quantization can amplify into logit
        // differences of ~1. Whole multiples of 4 rows keep every batch
        // size here on bit-identical tiles, so any difference left is the
        // batching's own fault.
        std::vector<int32_t> prompt = tokenizer->encode(kText, true);
        QVERIFY(prompt.size() > 32);
        prompt.resize(prompt.size() / 4 * 4);
        const int32_t n_vocab = (*backend)->n_vocab();

        std::vector<float> whole, chunked, single;
        {
            folio::SequenceRunner seq(**backend, 512);
            QVERIFY(seq.append(prompt, whole, true));
        }
        {
            folio::SequenceRunner seq(**backend, 12);
            QVERIFY(seq.append(prompt, chunked, true));
        }
        {
            folio::SequenceRunner seq(**backend, 1);
            QVERIFY(seq.append(prompt, single, true));
        }
        // Quantized weights: bit-identical. F32 weights (HF folder): the 4-row
        // and 1-row tiles add in different orders, so allow 1e-3 of the range.
        const bool exact = model->format == folio::SourceFormat::Gguf;
        float lo = *std::min_element(whole.begin(), whole.end()), hi = *std::max_element(whole.begin(), whole.end());
        const float tolerance = exact ? 1e-6f * (hi - lo) : 1e-3f * (hi - lo);
        float diff_chunked = 0, diff_single = 0;
        for (size_t i = 0; i < whole.size(); ++i) {
            diff_chunked = std::max(diff_chunked, std::fabs(whole[i] - chunked[i]));
            diff_single = std::max(diff_single, std::fabs(whole[i] - single[i]));
        }
        std::fprintf(stderr, "%s: logit range %.2f, max |diff| chunked %.5f, token by token %.5f (tolerance %.5f)\n",
              path.c_str(), double(hi - lo), double(diff_chunked), double(diff_single), double(tolerance));
        QVERIFY2(diff_chunked <= tolerance, "chunked prefill changes the logits");
        QVERIFY2(diff_single <= tolerance, "token-by-token prefill changes the logits");
        for (size_t r = 0; r < prompt.size(); ++r)
            QCOMPARE(argmax(chunked.data() + r * n_vocab, n_vocab), argmax(whole.data() + r * n_vocab, n_vocab));

        // Greedy: 16 tokens straight, then again with the prompt and the
        // first 8 tokens cached in earlier steps.
        auto greedy = [&](folio::SequenceRunner& seq, std::vector<int32_t> start, int n) {
            std::vector<float> logits;
            std::vector<int32_t> out;
            if (!seq.append(start, logits)) return out;
            for (int i = 0; i < n; ++i) {
                out.push_back(argmax(logits.data(), n_vocab));
                const int32_t one[1] = {out.back()};
                if (!seq.append(one, logits)) break;
            }
            return out;
        };
        folio::SequenceRunner seq(**backend, 512);
        const std::vector<int32_t> straight = greedy(seq, prompt, 16);
        QCOMPARE(straight.size(), size_t{16});
        seq.reset();
        std::vector<int32_t> prefix = prompt;
        prefix.insert(prefix.end(), straight.begin(), straight.begin() + 8);
        std::vector<float> logits;
        QVERIFY(seq.append(std::vector<int32_t>(prefix.begin(), prefix.begin() + 20), logits));
        const std::vector<int32_t> resumed =
            greedy(seq, std::vector<int32_t>(prefix.begin() + 20, prefix.end()), 8);
        QVERIFY(std::equal(resumed.begin(), resumed.end(), straight.begin() + 8));
        QCOMPARE(seq.length(), static_cast<int32_t>(prefix.size() + 8));
    }
};

FOLIO_TEST_MAIN(InferenceConsistencyTest)
#include "test_consistency.moc"
