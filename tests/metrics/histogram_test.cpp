// Histogram: "le" buckets include their bound, counts come out cumulative
// with +Inf equal to the count, quantiles interpolate inside a bucket as
// Prometheus' histogram_quantile does; EngineMetrics' bucket layouts.
#include <folio_test.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "folio/metrics.h"

using folio::EngineMetrics;
using folio::Histogram;

namespace {

bool near(double actual, double expected, double tolerance) { return std::fabs(actual - expected) <= tolerance; }

std::string show(double actual, double expected) {
    return "got " + std::to_string(actual) + ", expected " + std::to_string(expected);
}

bool contains(const std::vector<double>& values, double value) {
    for (const double v : values) {
        if (v == value) return true;
    }
    return false;
}

}  // namespace

class HistogramTest : public QObject {
    Q_OBJECT

private slots:
    void bucketIncludesItsUpperBound() {
        Histogram histogram({1.0, 2.0, 5.0});
        histogram.observe(1.0);   // le="1"
        histogram.observe(1.5);   // le="2"
        histogram.observe(10.0);  // +Inf only
        histogram.observe(-3.0);  // below everything: le="1"
        const std::vector<uint64_t> expected = {2, 3, 3, 4};
        QVERIFY(histogram.cumulative_counts() == expected);
        QCOMPARE(histogram.count(), uint64_t{4});
        QCOMPARE(histogram.sum(), 9.5);
    }

    void plusInfBucketEqualsCount() {
        Histogram histogram(folio::inter_token_latency_buckets());
        for (int i = 0; i < 1000; ++i) histogram.observe(0.00001 * i * i);
        const auto cumulative = histogram.cumulative_counts();
        QCOMPARE(cumulative.size(), histogram.upper_bounds().size() + 1);
        QCOMPARE(cumulative.back(), histogram.count());
        for (size_t i = 1; i < cumulative.size(); ++i) QVERIFY(cumulative[i - 1] <= cumulative[i]);
    }

    void boundsAreSortedDeduplicatedAndFinite() {
        const Histogram histogram({5.0, 1.0, 2.0, 2.0, std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN()});
        const std::vector<double> expected = {1.0, 2.0, 5.0};
        QVERIFY(histogram.upper_bounds() == expected);
        QCOMPARE(histogram.cumulative_counts().size(), size_t{4});
    }

    void nanIsNotCounted() {
        Histogram histogram({1.0});
        histogram.observe(std::numeric_limits<double>::quiet_NaN());
        QCOMPARE(histogram.count(), uint64_t{0});
        QCOMPARE(histogram.sum(), 0.0);
    }

    void quantileInterpolatesInsideTheBucket() {
        // 4 in (0,1], 4 in (1,2], 2 in (2,4].
        Histogram histogram({1.0, 2.0, 4.0});
        for (const double x : {0.1, 0.2, 0.3, 0.9, 1.1, 1.2, 1.3, 1.9, 2.5, 3.5}) histogram.observe(x);
        // rank 5 of 10: 1 into the 4 of (1,2] -> 1.25.
        QVERIFY2(near(histogram.quantile(0.5), 1.25, 1e-12), show(histogram.quantile(0.5), 1.25).c_str());
        // rank 9: 1 into the 2 of (2,4] -> 3.
        QVERIFY2(near(histogram.quantile(0.9), 3.0, 1e-12), show(histogram.quantile(0.9), 3.0).c_str());
        // rank 2: the first bucket starts at 0 -> 0.5.
        QVERIFY2(near(histogram.quantile(0.2), 0.5, 1e-12), show(histogram.quantile(0.2), 0.5).c_str());
        QCOMPARE(histogram.quantile(1.0), 4.0);
    }

    void quantileInPlusInfGivesHighestFiniteBound() {
        Histogram histogram({1.0, 2.0});
        histogram.observe(0.5);
        histogram.observe(100.0);
        QCOMPARE(histogram.quantile(0.99), 2.0);
    }

    void quantileZeroStartsAtFirstNonEmptyBucket() {
        Histogram histogram({1.0, 2.0});
        histogram.observe(1.5);
        QCOMPARE(histogram.quantile(0.0), 1.0);
    }

    void quantileWithNonPositiveFirstBoundIsThatBound() {
        Histogram histogram({-1.0, 0.0, 1.0});
        histogram.observe(-5.0);
        histogram.observe(-4.0);
        QCOMPARE(histogram.quantile(0.5), -1.0);
    }

    void quantileEdgeCases() {
        Histogram empty({1.0});
        QVERIFY(std::isnan(empty.quantile(0.5)));
        Histogram only_inf;
        only_inf.observe(3.0);
        QVERIFY(std::isnan(only_inf.quantile(0.5)));
        Histogram histogram({1.0});
        histogram.observe(0.5);
        QVERIFY(std::isinf(histogram.quantile(-0.1)) && histogram.quantile(-0.1) < 0);
        QVERIFY(std::isinf(histogram.quantile(1.1)) && histogram.quantile(1.1) > 0);
        QVERIFY(std::isnan(histogram.quantile(std::numeric_limits<double>::quiet_NaN())));
    }

    void quantileOfUniformSamplesIsWithinABucket() {
        // 1000 samples uniform on (0, 1]: the estimate can be off by at most
        // the width of the bucket the quantile falls in (0.1 around 0.5 and 0.15 around 0.9).
        Histogram histogram(folio::inter_token_latency_buckets());
        for (int i = 1; i <= 1000; ++i) histogram.observe(0.001 * i);
        QVERIFY2(near(histogram.quantile(0.5), 0.5, 0.1), show(histogram.quantile(0.5), 0.5).c_str());
        QVERIFY2(near(histogram.quantile(0.9), 0.9, 0.25), show(histogram.quantile(0.9), 0.9).c_str());
        QVERIFY2(near(histogram.sum(), 500.5, 1e-9), show(histogram.sum(), 500.5).c_str());
    }

    void latencyBucketsResolveDesktopDecodeTimes() {
        const auto itl = folio::inter_token_latency_buckets();
        for (const double bound : {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                   0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}) {
            QVERIFY2(contains(itl, bound), std::to_string(bound).c_str());
        }
        QVERIFY(contains(folio::time_to_first_token_buckets(), 0.001));
        QVERIFY(folio::time_to_first_token_buckets().front() < 0.001);
        QVERIFY(folio::request_latency_buckets().front() <= 0.01);
    }

    void tokenCountBucketsGoOneTwoFive() {
        const std::vector<double> expected = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000};
        QVERIFY(folio::token_count_buckets(2048) == expected);
        const std::vector<double> exact = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
        QVERIFY(folio::token_count_buckets(1000) == exact);
        QVERIFY(folio::token_count_buckets(0) == std::vector<double>{1});
        QVERIFY(folio::token_count_buckets(std::numeric_limits<uint64_t>::max()).back() >= 1.8e19);
    }

    void engineMetricsStartWithEveryFinishReason() {
        EngineMetrics metrics;
        QCOMPARE(metrics.request_success_total.size(), size_t{5});
        for (const std::string_view reason : folio::kFinishedReasons) {
            const auto it = metrics.request_success_total.find(reason);
            QVERIFY(it != metrics.request_success_total.end());
            QCOMPARE(it->second, uint64_t{0});
        }
        metrics.count_request_success("stop");
        metrics.count_request_success("stop");
        metrics.count_request_success("timeout");
        QCOMPARE(metrics.request_success_total.at("stop"), uint64_t{2});
        QCOMPARE(metrics.request_success_total.at("timeout"), uint64_t{1});
        QCOMPARE(metrics.request_success_total.size(), size_t{6});
    }

    void engineMetricsAreSizedByMaxModelLen() {
        const EngineMetrics metrics(4096);
        QCOMPARE(metrics.request_prompt_tokens.upper_bounds().back(), 5000.0);
        QCOMPARE(metrics.request_generation_tokens.upper_bounds().back(), 5000.0);
        QVERIFY(metrics.inter_token_latency_seconds.upper_bounds() == folio::inter_token_latency_buckets());
    }

    void copyIsASnapshot() {
        EngineMetrics live;
        live.generation_tokens_total = 7;
        live.time_to_first_token_seconds.observe(0.02);
        const EngineMetrics snapshot = live;
        live.generation_tokens_total = 8;
        live.time_to_first_token_seconds.observe(0.03);
        QCOMPARE(snapshot.generation_tokens_total, uint64_t{7});
        QCOMPARE(snapshot.time_to_first_token_seconds.count(), uint64_t{1});
    }
};

FOLIO_TEST_MAIN(HistogramTest)
#include "histogram_test.moc"
