// Sampler::sample_top_k, the draw a GPU step makes from each row's best
// entries (selected where the logits are) and the row's RowSum, against
// sample() on the whole row: the same token from the same seed, and the same
// logprobs, for top-k, top-p and min-p without top-k, greedy, penalties and
// logprobs. Where the entries cannot decide (top-p's set reaches past them)
// it must say so before drawing, and the whole-row draw that follows must
// give what sample() alone gives.
#include <folio_test.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "folio/sampling.h"

using folio::RowSum;
using folio::SampleInfo;
using folio::Sampler;
using folio::SamplingParams;

namespace {

Sampler make(const SamplingParams& params) { return std::move(Sampler::create(params).value()); }

// A row like a language model's: a few likely tokens over a long tail whose
// spread sets how flat it is (large spread: peaked).
std::vector<float> model_row(size_t vocab, float spread, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(vocab);
    for (float& x : row) x = spread * normal(rng);
    for (int i = 0; i < 5; ++i) row[rng() % vocab] += 3.0f * spread;
    row[rng() % vocab] = -INFINITY;
    row[rng() % vocab] = NAN;
    return row;
}

struct Counts {
    int from_entries = 0, whole_rows = 0;
};

// One request's draws both ways over `steps` rows; the history grows with
// the reference's tokens (penalties see the same window). params.seed must
// be fixed: both samplers draw the same numbers.
void compare(const SamplingParams& params, size_t vocab, float spread, int steps, Counts& counts) {
    const std::string what = "temperature " + std::to_string(params.temperature) + " top_k " +
                             std::to_string(params.top_k) + " top_p " + std::to_string(params.top_p) + " min_p " +
                             std::to_string(params.min_p) + " logprobs " + std::to_string(params.n_logprobs) +
                             " spread " + std::to_string(spread);
    Sampler reference = make(params), split = make(params);
    std::mt19937 rng(static_cast<uint32_t>(params.seed));
    std::vector<int32_t> history = {3, 7, 7, 11};
    std::vector<folio::sampling_detail::Candidate> best;
    SampleInfo want, got;
    for (int step = 0; step < steps; ++step) {
        const std::vector<float> row = model_row(vocab, spread, rng);
        const int32_t expected = reference.sample(row, history, &want);
        const int32_t k = split.candidates_needed(history.size());
        QVERIFY2(k > 0, what.c_str());
        folio::select_top_k(row, static_cast<size_t>(k), best);
        std::vector<float> values;
        std::vector<int32_t> ids;
        for (int32_t j = 0; j < k; ++j) values.push_back(best[static_cast<size_t>(j)].logit), ids.push_back(best[static_cast<size_t>(j)].id);
        const RowSum sum = folio::row_sums(row, params.temperature > 0 ? params.temperature : 1.0f);
        SampleInfo* info = params.n_logprobs > 0 ? &got : nullptr;
        int32_t token = split.sample_top_k(values, ids, history, split.needs_row_sums() ? &sum : nullptr, info);
        if (token == Sampler::kNeedsWholeRow) {
            ++counts.whole_rows;
            token = split.sample(row, history, info);
        } else {
            ++counts.from_entries;
        }
        QVERIFY2(token == expected, (what + ", step " + std::to_string(step) + ": " + std::to_string(token) +
                                     " instead of " + std::to_string(expected)).c_str());
        if (info) {
            QCOMPARE(got.logprob, want.logprob);
            QCOMPARE(got.n_candidates, want.n_candidates);
            QCOMPARE(got.top.size(), want.top.size());
            for (size_t j = 0; j < want.top.size(); ++j) {
                QCOMPARE(got.top[j].id, want.top[j].id);
                QCOMPARE(got.top[j].logprob, want.top[j].logprob);
            }
        }
        history.push_back(expected);
    }
}

}  // namespace

class SamplerBestEntriesTest : public QObject {
    Q_OBJECT

private slots:
    void topPAndMinPWithoutTopKDrawAsTheWholeRow() {
        Counts counts;
        for (const float temperature : {0.3f, 0.8f, 1.5f})
            for (const float top_p : {0.5f, 0.9f, 0.95f, 1.0f})
                for (const float min_p : {0.0f, 0.05f}) {
                    if (top_p >= 1.0f && min_p <= 0.0f) continue;  // temperature alone: whole rows
                    SamplingParams params;
                    params.temperature = temperature;
                    params.top_k = 0;
                    params.top_p = top_p;
                    params.min_p = min_p;
                    params.seed = 17 + static_cast<uint64_t>(temperature * 10 + top_p * 100 + min_p * 1000);
                    for (const float spread : {0.5f, 2.0f, 4.0f}) compare(params, 4000, spread, 40, counts);
                }
        // Both ways were taken: peaked rows from the entries, flat ones whole.
        QVERIFY2(counts.from_entries > 500 && counts.whole_rows > 100,
                 (std::to_string(counts.from_entries) + " from entries, " + std::to_string(counts.whole_rows) +
                  " whole rows").c_str());
    }

    void logprobsComeFromTheEntriesAndTheNormalizer() {
        Counts counts;
        for (const int32_t top_k : {0, 1, 40}) {
            SamplingParams params;
            params.temperature = 0.8f;
            params.top_k = top_k;
            params.top_p = 0.9f;
            params.n_logprobs = 5;
            params.seed = 99 + static_cast<uint64_t>(top_k);
            for (const float spread : {1.0f, 4.0f}) compare(params, 3000, spread, 40, counts);
        }
        SamplingParams greedy;
        greedy.temperature = 0.0f;
        greedy.n_logprobs = 20;
        greedy.repetition_penalty = 1.3f;  // the choice is penalized, the logprobs are not
        compare(greedy, 3000, 2.0f, 40, counts);
        QVERIFY(counts.from_entries > 0);
    }

    void penaltiesKeepTopKOnTheEntriesAndSendTopPToTheRow() {
        Counts counts;
        SamplingParams params;
        params.temperature = 0.7f;
        params.top_k = 40;
        params.presence_penalty = 0.5f;
        params.frequency_penalty = 0.3f;
        params.seed = 5;
        compare(params, 2000, 2.0f, 60, counts);
        QCOMPARE(counts.whole_rows, 0);
        params.top_k = 0;  // top-p's mass is over the penalized row: only the host has it
        Sampler sampler = make(params);
        QCOMPARE(sampler.candidates_needed(10), 0);
        params.presence_penalty = -0.5f;  // raised logits may come from anywhere
        params.top_k = 40;
        QCOMPARE(make(params).candidates_needed(10), 0);
        SamplingParams temperature_only;
        temperature_only.top_k = 0;
        temperature_only.top_p = 1.0f;
        temperature_only.min_p = 0.0f;
        // By temperature alone the draw needs the whole row (made where the
        // logits are); the best entries serve the logprobs.
        QCOMPARE(make(temperature_only).candidates_needed(0), 1);
        temperature_only.n_logprobs = 5;
        QCOMPARE(make(temperature_only).candidates_needed(0), 5);
        const std::vector<float> best = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f};
        const std::vector<int32_t> ids = {4, 0, 3, 1, 2};
        const RowSum sums{1.0, 3.0f};
        SampleInfo info;
        QCOMPARE(make(temperature_only).sample_top_k(best, ids, {}, &sums, &info), Sampler::kNeedsWholeRow);
    }

    void entriesWithoutSumsAskForTheRowWhenTheyNeedThem() {
        SamplingParams params;
        params.top_k = 0;
        params.top_p = 0.9f;
        Sampler sampler = make(params);
        QVERIFY(sampler.needs_row_sums());
        const std::vector<float> values = {2.0f, 1.0f};
        const std::vector<int32_t> ids = {4, 9};
        QCOMPARE(sampler.sample_top_k(values, ids, {}, nullptr, nullptr), Sampler::kNeedsWholeRow);
        params.top_k = 40;
        params.top_p = 0.9f;
        QVERIFY(!make(params).needs_row_sums());
    }
};

FOLIO_TEST_MAIN(SamplerBestEntriesTest)
#include "sampler_best_entries_test.moc"
