// SamplingParams: llama.cpp's defaults, range checks with messages that name
// the field, the penalties' arithmetic on hand-computed logits, and the
// finish reasons' names.
#include <folio_test.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "folio/sampling.h"

using folio::SamplingParams;

namespace {

// Tokens 0 once, 1 twice, 3 three times; 7 and -2 are outside the 5 logits.
const std::vector<int32_t> kRecent{0, 1, 1, 3, 3, 3, 7, -2};
const std::vector<float> kLogits{2.0f, -1.0f, 0.5f, 3.0f, 1.0f};

std::vector<float> penalized(const SamplingParams& params, const std::vector<int32_t>& recent = kRecent) {
    std::vector<float> logits = kLogits;
    std::vector<int32_t> scratch;
    folio::apply_penalties(logits, recent, params, scratch);
    return logits;
}

}  // namespace

class SamplingParamsTest : public QObject {
    Q_OBJECT

private slots:
    void defaultsAreLlamaCpps() {
        const SamplingParams params;
        QCOMPARE(params.temperature, 0.8f);
        QCOMPARE(params.top_k, int32_t(40));
        QCOMPARE(params.top_p, 0.95f);
        QCOMPARE(params.min_p, 0.05f);
        QCOMPARE(params.repetition_penalty, 1.0f);
        QCOMPARE(params.penalty_last_n, int32_t(64));
        QCOMPARE(params.seed, folio::kRandomSeed);
        QVERIFY(params.validate().ok());
        QVERIFY(!params.has_penalties());
    }

    void outOfRangeValuesAreErrorsNamingTheField() {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float inf = std::numeric_limits<float>::infinity();
        struct Case {
            std::function<void(SamplingParams&)> change;
            std::string field;
        };
        const std::vector<Case> cases{
            {[](SamplingParams& p) { p.temperature = -0.5f; }, "temperature is -0.5"},
            {[&](SamplingParams& p) { p.temperature = nan; }, "temperature"},
            {[&](SamplingParams& p) { p.temperature = inf; }, "temperature"},
            {[](SamplingParams& p) { p.top_k = -1; }, "top_k is -1"},
            {[](SamplingParams& p) { p.top_p = 0.0f; }, "top_p is 0; it must be in (0, 1]"},
            {[](SamplingParams& p) { p.top_p = 1.5f; }, "top_p is 1.5"},
            {[&](SamplingParams& p) { p.top_p = nan; }, "top_p"},
            {[](SamplingParams& p) { p.min_p = -0.1f; }, "min_p"},
            {[](SamplingParams& p) { p.min_p = 1.1f; }, "min_p"},
            {[](SamplingParams& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty is 0"},
            {[](SamplingParams& p) { p.frequency_penalty = 2.5f; }, "frequency_penalty is 2.5"},
            {[](SamplingParams& p) { p.presence_penalty = -3.0f; }, "presence_penalty is -3"},
            {[](SamplingParams& p) { p.penalty_last_n = -2; }, "penalty_last_n is -2"},
            {[](SamplingParams& p) { p.n_logprobs = -1; }, "n_logprobs is -1"},
        };
        for (const auto& c : cases) {
            SamplingParams params;
            c.change(params);
            const auto status = params.validate();
            QVERIFY2(!status.ok(), c.field.c_str());
            QVERIFY2(status.error().message.find(c.field) != std::string::npos, status.error().message.c_str());
            QVERIFY(!folio::Sampler::create(params).ok());
        }
        SamplingParams edge;
        edge.temperature = 0.0f;
        edge.top_p = 1.0f;
        edge.min_p = 1.0f;
        edge.frequency_penalty = -2.0f;
        edge.presence_penalty = 2.0f;
        edge.penalty_last_n = -1;
        QVERIFY(edge.validate().ok());
    }

    void repetitionDividesPositiveAndMultipliesNegativeLogits() {
        SamplingParams params;
        params.repetition_penalty = 2.0f;
        QCOMPARE(penalized(params), (std::vector<float>{1.0f, -2.0f, 0.5f, 1.5f, 1.0f}));
    }

    void frequencyScalesWithTheCount() {
        SamplingParams params;
        params.frequency_penalty = 0.5f;
        QCOMPARE(penalized(params), (std::vector<float>{1.5f, -2.0f, 0.5f, 1.5f, 1.0f}));
    }

    void presenceIsPaidOnce() {
        SamplingParams params;
        params.presence_penalty = 0.25f;
        QCOMPARE(penalized(params), (std::vector<float>{1.75f, -1.25f, 0.5f, 2.75f, 1.0f}));
    }

    void allThreeInLlamaCppsOrder() {
        SamplingParams params;
        params.repetition_penalty = 2.0f;
        params.frequency_penalty = 0.5f;
        params.presence_penalty = 0.25f;
        // 2/2 - 0.5 - 0.25; -1*2 - 1 - 0.25; 3/2 - 1.5 - 0.25
        QCOMPARE(penalized(params), (std::vector<float>{0.25f, -3.25f, 0.5f, -0.25f, 1.0f}));
    }

    void theWindowIsTheLastNTokens() {
        SamplingParams params;
        params.repetition_penalty = 2.0f;
        params.penalty_last_n = 4;  // 3, 3, 7, -2: only token 3
        QCOMPARE(penalized(params), (std::vector<float>{2.0f, -1.0f, 0.5f, 1.5f, 1.0f}));
        params.penalty_last_n = 0;
        QCOMPARE(penalized(params), kLogits);
        params.penalty_last_n = -1;
        QCOMPARE(penalized(params), (std::vector<float>{1.0f, -2.0f, 0.5f, 1.5f, 1.0f}));
        params.penalty_last_n = 1000;  // longer than the context: all of it
        QCOMPARE(penalized(params), (std::vector<float>{1.0f, -2.0f, 0.5f, 1.5f, 1.0f}));
    }

    void finishReasonsHaveStableNames() {
        QCOMPARE(std::string(to_string(folio::FinishReason::Stop)), std::string("stop"));
        QCOMPARE(std::string(to_string(folio::FinishReason::StopString)), std::string("stop_string"));
        QCOMPARE(std::string(to_string(folio::FinishReason::Length)), std::string("length"));
        QCOMPARE(std::string(to_string(folio::FinishReason::Abort)), std::string("abort"));
        QCOMPARE(std::string(to_string(folio::FinishReason::Error)), std::string("error"));
    }
};

FOLIO_TEST_MAIN(SamplingParamsTest)
#include "sampling_params_test.moc"
