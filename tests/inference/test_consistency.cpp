// The paged KV cache and the flat batch, checked through the models
// themselves: a prompt run as one batch, in chunks of 7 and of 3 (chunks
// straddle 16-token blocks and every register-tile remainder) and one token
// at a time must give bit-identical logits at every position, and greedy
// generation must continue the same way after a prefix was cached in an
// earlier step. For SmolLM2 (GGUF and HF folder) and Gemma 3.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
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
        // Every op computes a row the same way whatever else is in the
        // batch (the matmul's register tiles reduce each output in one fixed
        // order), so any chunking gives the same floats: no tolerance.
        const std::vector<int32_t> prompt = tokenizer->encode(kText, true);
        QVERIFY(prompt.size() > 32);
        const int32_t n_vocab = (*backend)->n_vocab();

        auto prefill = [&](int32_t chunk) {
            std::vector<float> logits;
            folio::SequenceRunner seq(**backend, chunk);
            if (!seq.append(prompt, logits, true)) logits.clear();
            return logits;
        };
        const std::vector<float> whole = prefill(512);
        QCOMPARE(whole.size(), prompt.size() * static_cast<size_t>(n_vocab));
        for (int32_t chunk : {7, 3, 1}) {
            const std::vector<float> chunked = prefill(chunk);
            QCOMPARE(chunked.size(), whole.size());
            size_t differ = 0;
            float max_diff = 0;
            for (size_t i = 0; i < whole.size(); ++i)
                if (std::memcmp(&whole[i], &chunked[i], sizeof(float)) != 0) {
                    ++differ;
                    max_diff = std::max(max_diff, std::fabs(whole[i] - chunked[i]));
                }
            std::fprintf(stderr, "%s: chunks of %d: %zu of %zu logits differ from one batch (max |diff| %g)\n",
                         path.c_str(), chunk, differ, whole.size(), double(max_diff));
            QVERIFY2(differ == 0, ("prefill in chunks of " + std::to_string(chunk) + " changes the logits").c_str());
        }

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
