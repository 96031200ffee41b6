// Histogram and the bucket layouts of EngineMetrics.
#include "folio/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace folio {

Histogram::Histogram(std::vector<double> upper_bounds) {
    std::erase_if(upper_bounds, [](double bound) { return !std::isfinite(bound); });
    std::sort(upper_bounds.begin(), upper_bounds.end());
    upper_bounds.erase(std::unique(upper_bounds.begin(), upper_bounds.end()), upper_bounds.end());
    upper_bounds_ = std::move(upper_bounds);
    bucket_counts_.assign(upper_bounds_.size() + 1, 0);
}

void Histogram::observe(double value) {
    if (std::isnan(value)) return;
    // The first bound >= value: "le" buckets include their upper bound.
    const auto bucket = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
    ++bucket_counts_[static_cast<size_t>(bucket)];
    ++count_;
    sum_ += value;
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
    std::vector<uint64_t> cumulative(bucket_counts_.size());
    uint64_t running = 0;
    for (size_t i = 0; i < bucket_counts_.size(); ++i) {
        running += bucket_counts_[i];
        cumulative[i] = running;
    }
    return cumulative;
}

double Histogram::quantile(double q) const {
    if (std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
    if (q < 0) return -std::numeric_limits<double>::infinity();
    if (q > 1) return std::numeric_limits<double>::infinity();
    if (count_ == 0 || upper_bounds_.empty()) return std::numeric_limits<double>::quiet_NaN();

    const std::vector<uint64_t> cumulative = cumulative_counts();
    const double rank = q * static_cast<double>(count_);
    // The first bucket whose cumulative count reaches the rank; requiring a
    // non-zero count makes q = 0 land in the first non-empty bucket.
    size_t b = 0;
    while (b + 1 < cumulative.size() &&
           !(static_cast<double>(cumulative[b]) >= rank && cumulative[b] > 0)) {
        ++b;
    }
    if (b == upper_bounds_.size()) return upper_bounds_.back();  // in +Inf
    if (b == 0 && upper_bounds_[0] <= 0) return upper_bounds_[0];

    const double bucket_end = upper_bounds_[b];
    double bucket_start = 0.0;
    double in_bucket = static_cast<double>(cumulative[b]);
    double rank_in_bucket = rank;
    if (b > 0) {
        bucket_start = upper_bounds_[b - 1];
        in_bucket -= static_cast<double>(cumulative[b - 1]);
        rank_in_bucket -= static_cast<double>(cumulative[b - 1]);
    }
    return bucket_start + (bucket_end - bucket_start) * (rank_in_bucket / in_bucket);
}

std::vector<double> time_to_first_token_buckets() {
    return {0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
            0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> inter_token_latency_buckets() {
    return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
            0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}

std::vector<double> request_latency_buckets() {
    return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0,
            15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

std::vector<double> token_count_buckets(uint64_t max_value) {
    std::vector<double> buckets;
    // 2e19 is past every uint64_t: the decade 1e19 always ends the loop.
    for (double decade = 1.0; decade <= 1e19; decade *= 10.0) {
        for (const double mantissa : {1.0, 2.0, 5.0}) {
            const double bound = mantissa * decade;
            buckets.push_back(bound);
            if (bound >= static_cast<double>(max_value)) return buckets;
        }
    }
    return buckets;
}

EngineMetrics::EngineMetrics(uint64_t max_model_len)
    : time_to_first_token_seconds(time_to_first_token_buckets()),
      inter_token_latency_seconds(inter_token_latency_buckets()),
      e2e_request_latency_seconds(request_latency_buckets()),
      request_queue_time_seconds(request_latency_buckets()),
      request_prompt_tokens(token_count_buckets(max_model_len)),
      request_generation_tokens(token_count_buckets(max_model_len)) {
    for (const std::string_view reason : kFinishedReasons) request_success_total.emplace(reason, 0);
}

void EngineMetrics::count_request_success(std::string_view finished_reason) {
    if (const auto it = request_success_total.find(finished_reason); it != request_success_total.end()) {
        ++it->second;
    } else {
        request_success_total.emplace(finished_reason, 1);
    }
}

}  // namespace folio
