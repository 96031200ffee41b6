// Synthetic workloads: a seed gives one trace, arrivals form a Poisson
// process of the asked rate, lengths cover their inclusive ranges; and the
// exact percentiles the bench reports.
#include <folio_test.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "folio/workload.h"

using folio::SyntheticWorkload;
using folio::WorkloadRequest;

namespace {

bool same(const std::vector<WorkloadRequest>& a, const std::vector<WorkloadRequest>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].arrival_s != b[i].arrival_s || a[i].prompt_tokens != b[i].prompt_tokens ||
            a[i].output_tokens != b[i].output_tokens || a[i].prompt != b[i].prompt) {
            return false;
        }
    }
    return true;
}

// Mean inter-arrival gap of a workload's trace, and how many gaps it averages.
double mean_gap(const std::vector<WorkloadRequest>& trace) {
    return trace.back().arrival_s / static_cast<double>(trace.size() - 1);
}

}  // namespace

class WorkloadTest : public QObject {
    Q_OBJECT

private slots:
    void sameSeedGivesSameTrace() {
        SyntheticWorkload workload;
        workload.seed = 1234;
        const auto first = folio::generate_workload(workload);
        const auto second = folio::generate_workload(workload);
        QCOMPARE(first.size(), size_t{64});
        QVERIFY(same(first, second));
    }

    void differentSeedGivesDifferentTrace() {
        SyntheticWorkload a;
        a.seed = 1;
        SyntheticWorkload b = a;
        b.seed = 2;
        QVERIFY(!same(folio::generate_workload(a), folio::generate_workload(b)));
    }

    void pinnedTraceDoesNotDrift() {
        // Published benchmark traces are identified by their seed: a change in
        // the draws (order, bit use, rejection rule) must show up here.
        // The values come from an independent implementation:
        // python3 tests/metrics/pinned_workload.py
        SyntheticWorkload workload;
        workload.seed = 42;
        workload.n_requests = 3;
        const auto trace = folio::generate_workload(workload);
        QCOMPARE(trace.size(), size_t{3});
        QCOMPARE(trace[0].arrival_s, 0.0);
        const int32_t expected_prompt[] = {188, 119, 243};
        const int32_t expected_output[] = {106, 18, 81};
        const double expected_arrival[] = {0.0, 0.34872804779218414, 0.37342589156182343};
        for (size_t i = 0; i < 3; ++i) {
            QCOMPARE(trace[i].prompt_tokens, expected_prompt[i]);
            QCOMPARE(trace[i].output_tokens, expected_output[i]);
            QVERIFY2(std::fabs(trace[i].arrival_s - expected_arrival[i]) < 1e-12,
                     ("arrival " + std::to_string(i) + " is " + std::to_string(trace[i].arrival_s)).c_str());
        }
    }

    void arrivalsStartAtZeroAndNeverGoBack() {
        SyntheticWorkload workload;
        workload.n_requests = 500;
        const auto trace = folio::generate_workload(workload);
        QCOMPARE(trace.front().arrival_s, 0.0);
        for (size_t i = 1; i < trace.size(); ++i) QVERIFY(trace[i].arrival_s >= trace[i - 1].arrival_s);
        for (const auto& request : trace) QVERIFY(request.prompt.empty());
    }

    void meanInterArrivalIsOneOverRate() {
        // Exponential gaps with mean 1/rate have standard deviation 1/rate;
        // the mean of n gaps is off by 1/(rate sqrt(n)) typically. Five of
        // those is the tolerance.
        for (const double rate : {0.5, 4.0, 250.0}) {
            SyntheticWorkload workload;
            workload.seed = 7;
            workload.n_requests = 20001;
            workload.request_rate = rate;
            const auto trace = folio::generate_workload(workload);
            const double gaps = static_cast<double>(trace.size() - 1);
            const double tolerance = 5.0 / (rate * std::sqrt(gaps));
            const double mean = mean_gap(trace);
            QVERIFY2(std::fabs(mean - 1.0 / rate) < tolerance,
                     ("rate " + std::to_string(rate) + ": mean gap " + std::to_string(mean) + ", expected " +
                      std::to_string(1.0 / rate) + " +- " + std::to_string(tolerance))
                         .c_str());
        }
    }

    void gapsLookExponential() {
        // P(gap > mean) = e^-1 for an exponential; a uniform or constant gap
        // would give 0.5 or 0.
        SyntheticWorkload workload;
        workload.seed = 11;
        workload.n_requests = 20001;
        const auto trace = folio::generate_workload(workload);
        const double mean = 1.0 / workload.request_rate;
        size_t longer = 0;
        for (size_t i = 1; i < trace.size(); ++i) longer += trace[i].arrival_s - trace[i - 1].arrival_s > mean ? 1 : 0;
        const double fraction = static_cast<double>(longer) / 20000.0;
        const double expected = std::exp(-1.0);
        const double tolerance = 5.0 * std::sqrt(expected * (1 - expected) / 20000.0);
        QVERIFY2(std::fabs(fraction - expected) < tolerance, std::to_string(fraction).c_str());
    }

    void infiniteRateSendsEverythingAtZero() {
        SyntheticWorkload workload;
        workload.request_rate = std::numeric_limits<double>::infinity();
        for (const auto& request : folio::generate_workload(workload)) QCOMPARE(request.arrival_s, 0.0);
        QVERIFY(folio::validate(workload).ok());
    }

    void lengthsCoverTheirInclusiveRanges() {
        SyntheticWorkload workload;
        workload.n_requests = 4000;
        workload.prompt_min = 3;
        workload.prompt_max = 6;
        workload.output_min = 10;
        workload.output_max = 10;
        std::vector<int> seen(7, 0);
        double prompt_sum = 0;
        for (const auto& request : folio::generate_workload(workload)) {
            QVERIFY(request.prompt_tokens >= 3 && request.prompt_tokens <= 6);
            QCOMPARE(request.output_tokens, 10);
            ++seen[static_cast<size_t>(request.prompt_tokens)];
            prompt_sum += request.prompt_tokens;
        }
        // Each of 4 values is expected 1000 times (sd ~27).
        for (int length = 3; length <= 6; ++length) {
            QVERIFY2(std::abs(seen[static_cast<size_t>(length)] - 1000) < 150, std::to_string(length).c_str());
        }
        QVERIFY(std::fabs(prompt_sum / 4000.0 - 4.5) < 0.1);
    }

    void defaultsAreSane() {
        const SyntheticWorkload workload;
        QVERIFY(folio::validate(workload).ok());
        for (const auto& request : folio::generate_workload(workload)) {
            QVERIFY(request.prompt_tokens >= 32 && request.prompt_tokens <= 256);
            QVERIFY(request.output_tokens >= 16 && request.output_tokens <= 128);
        }
    }

    void invalidWorkloadsAreReportedAndRepaired() {
        SyntheticWorkload none;
        none.n_requests = 0;
        QVERIFY(!folio::validate(none).ok());
        QVERIFY(folio::generate_workload(none).empty());

        SyntheticWorkload no_rate;
        no_rate.request_rate = 0.0;
        QVERIFY(!folio::validate(no_rate).ok());
        QVERIFY2(folio::validate(no_rate).error().message.find("request_rate") != std::string::npos,
                 folio::validate(no_rate).error().message.c_str());
        for (const auto& request : folio::generate_workload(no_rate)) QCOMPARE(request.arrival_s, 0.0);
        no_rate.request_rate = std::numeric_limits<double>::quiet_NaN();
        QVERIFY(!folio::validate(no_rate).ok());

        SyntheticWorkload backwards;
        backwards.prompt_min = 100;
        backwards.prompt_max = 10;
        backwards.output_min = -5;
        const auto status = folio::validate(backwards);
        QVERIFY(!status.ok());
        QVERIFY2(status.error().message.find("prompt_min 100 is above prompt_max 10") != std::string::npos,
                 status.error().message.c_str());
        for (const auto& request : folio::generate_workload(backwards)) {
            QCOMPARE(request.prompt_tokens, 100);
            QVERIFY(request.output_tokens >= 1 && request.output_tokens <= 128);
        }
    }

    void percentilesOfKnownData() {
        std::vector<double> samples;
        for (int i = 100; i >= 1; --i) samples.push_back(i);  // unsorted on purpose
        const auto summary = folio::summarize(samples);
        QCOMPARE(summary.n, size_t{100});
        // Position q (n - 1): 0.5 * 99 = 49.5 -> between 50 and 51; 0.99 * 99 = 98.01 -> 99.01.
        QVERIFY2(std::fabs(summary.p50 - 50.5) < 1e-12, std::to_string(summary.p50).c_str());
        QVERIFY2(std::fabs(summary.p99 - 99.01) < 1e-9, std::to_string(summary.p99).c_str());
        QVERIFY2(std::fabs(summary.mean - 50.5) < 1e-12, std::to_string(summary.mean).c_str());
    }

    void percentilesOfOddCountHitASample() {
        const auto summary = folio::summarize({0.3, 0.1, 0.2});
        QCOMPARE(summary.p50, 0.2);
        QVERIFY(std::fabs(summary.p99 - 0.298) < 1e-12);  // 0.2 + 0.98 * 0.1
    }

    void percentileEdgeCases() {
        const auto empty = folio::summarize({});
        QCOMPARE(empty.n, size_t{0});
        QVERIFY(std::isnan(empty.p50) && std::isnan(empty.p99) && std::isnan(empty.mean));

        const auto one = folio::summarize({0.042});
        QCOMPARE(one.n, size_t{1});
        QCOMPARE(one.p50, 0.042);
        QCOMPARE(one.p99, 0.042);
        QCOMPARE(one.mean, 0.042);

        const auto with_nan = folio::summarize({1.0, std::numeric_limits<double>::quiet_NaN(), 3.0});
        QCOMPARE(with_nan.n, size_t{2});
        QCOMPARE(with_nan.p50, 2.0);

        const std::vector<double> sorted = {1.0, 2.0, 4.0};
        QCOMPARE(folio::percentile_of_sorted(sorted, 0.0), 1.0);
        QCOMPARE(folio::percentile_of_sorted(sorted, 1.0), 4.0);
        QCOMPARE(folio::percentile_of_sorted(sorted, 0.75), 3.0);
        QCOMPARE(folio::percentile_of_sorted(sorted, 7.0), 4.0);
        QVERIFY(std::isnan(folio::percentile_of_sorted({}, 0.5)));
    }
};

FOLIO_TEST_MAIN(WorkloadTest)
#include "workload_test.moc"
