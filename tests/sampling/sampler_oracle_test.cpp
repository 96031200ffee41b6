// The Sampler's truncation against a plain reference written from the
// documented pipeline (sort everything, in double): on random vocabularies
// and many parameter mixes the number of candidates left is the same and
// every draw comes from the reference's set. Also: bad logits (NaN, +inf,
// -inf) never crash, never win, never poison the logprobs.
#include <folio_test.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "folio/sampling.h"
#include "sampling_test_util.h"

using folio::SampleInfo;
using folio::Sampler;
using folio::SamplingParams;

namespace {

// The ids left after top-k, temperature, top-p and min-p, straight from the
// definitions.
std::set<int32_t> reference_kept(const std::vector<float>& logits, const SamplingParams& params) {
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const auto la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
        return la > lb || (la == lb && a < b);
    });
    if (params.top_k > 0 && static_cast<size_t>(params.top_k) < order.size()) order.resize(static_cast<size_t>(params.top_k));
    const double max = logits[static_cast<size_t>(order[0])];
    std::vector<double> p;
    double sum = 0.0;
    for (const int32_t id : order) {
        p.push_back(std::exp((logits[static_cast<size_t>(id)] - max) / params.temperature));
        sum += p.back();
    }
    size_t keep = order.size();
    double cumulative = 0.0;
    for (size_t i = 0; i < order.size() && params.top_p < 1.0f; ++i) {
        cumulative += p[i] / sum;
        if (cumulative >= params.top_p) {
            keep = i + 1;
            break;
        }
    }
    std::set<int32_t> kept;
    for (size_t i = 0; i < keep; ++i) {
        if (p[i] >= params.min_p * p[0]) kept.insert(order[i]);
    }
    return kept;
}

}  // namespace

class SamplerOracleTest : public QObject {
    Q_OBJECT

private slots:
    void truncationMatchesTheReference() {
        std::mt19937 random(99);
        int checked = 0;
        for (const size_t vocab : {size_t(7), size_t(300), size_t(5000)}) {
            for (const float spread : {0.5f, 2.0f, 6.0f}) {
                std::normal_distribution<float> noise(0.0f, spread);
                std::vector<float> logits(vocab);
                for (auto& l : logits) l = noise(random);
                for (const int32_t top_k : {0, 1, 5, 100}) {
                    for (const float top_p : {1.0f, 0.9f, 0.5f, 0.995f}) {
                        for (const float min_p : {0.0f, 0.05f, 0.3f}) {
                            for (const float temperature : {0.4f, 1.0f, 1.7f}) {
                                SamplingParams params = sampling_test::plain(temperature, 1000 + checked);
                                params.top_k = top_k;
                                params.top_p = top_p;
                                params.min_p = min_p;
                                const auto kept = reference_kept(logits, params);
                                Sampler sampler = std::move(Sampler::create(params).value());
                                SampleInfo info;
                                for (int draw = 0; draw < 20; ++draw) {
                                    const int32_t id = sampler.sample(logits, {}, &info);
                                    const std::string where = "vocab " + std::to_string(vocab) + " spread " +
                                                              std::to_string(spread) + " k " + std::to_string(top_k) +
                                                              " p " + std::to_string(top_p) + " min_p " +
                                                              std::to_string(min_p) + " t " + std::to_string(temperature);
                                    QVERIFY2(kept.count(id) == 1, (where + ": drew " + std::to_string(id)).c_str());
                                    QVERIFY2(static_cast<size_t>(info.n_candidates) == kept.size(),
                                             (where + ": " + std::to_string(info.n_candidates) + " candidates, reference " +
                                              std::to_string(kept.size())).c_str());
                                }
                                ++checked;
                            }
                        }
                    }
                }
            }
        }
        QCOMPARE(checked, 3 * 3 * 4 * 4 * 3 * 3);
    }

    void badLogitsNeverWin() {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float inf = std::numeric_limits<float>::infinity();
        const std::vector<float> logits{nan, 1.0f, -inf, 2.0f, nan};
        for (const int32_t top_k : {0, 3}) {
            for (const float top_p : {1.0f, 0.99f}) {
                SamplingParams params = sampling_test::plain(1.0f, 17);
                params.top_k = top_k;
                params.top_p = top_p;
                params.n_logprobs = 5;
                Sampler sampler = std::move(Sampler::create(params).value());
                SampleInfo info;
                for (int i = 0; i < 200; ++i) {
                    const int32_t id = sampler.sample(logits, {}, &info);
                    QVERIFY2(id == 1 || id == 3, std::to_string(id).c_str());
                    QVERIFY(std::isfinite(info.logprob));
                }
                QCOMPARE(info.top[0].id, int32_t(3));
                QCOMPARE(info.top[1].id, int32_t(1));
                QVERIFY(std::abs(std::exp(info.top[0].logprob) + std::exp(info.top[1].logprob) - 1.0) < 1e-5);
                QVERIFY(info.top[4].logprob == -inf);  // NaN reports as -inf
            }
        }
        // +inf dominates: always drawn, at any temperature.
        Sampler hot = std::move(Sampler::create(sampling_test::plain(5.0f, 3)).value());
        for (int i = 0; i < 50; ++i) QCOMPARE(hot.sample(std::vector<float>{1.0f, inf, 2.0f}, {}), int32_t(1));
        // Nothing possible: the lowest id, as greedy would.
        QCOMPARE(hot.sample(std::vector<float>{-inf, nan, -inf}, {}), int32_t(0));
    }
};

FOLIO_TEST_MAIN(SamplerOracleTest)
#include "sampler_oracle_test.moc"
