// Request traces for `folio bench --workload`, in the spirit of vLLM's
// benchmark_serving: when each request arrives, how long its prompt is, how
// many tokens it asks for. A trace is either synthetic (Poisson arrivals,
// uniform lengths, reproducible from a seed) or read from a JSONL file. And
// the latency summary the bench prints for TTFT, ITL and e2e latency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "folio/error.h"

namespace folio {

struct WorkloadRequest {
    double arrival_s = 0.0;     // seconds after the bench starts
    int32_t prompt_tokens = 0;  // prompt length; 0 when only `prompt` text was given (tokenize it)
    int32_t output_tokens = 0;  // tokens to generate (max_tokens, ignore EOS)
    std::string prompt;         // optional text; empty => synthetic token ids
};

struct SyntheticWorkload {
    uint64_t seed = 0;
    int32_t n_requests = 64;
    // Requests per second of a Poisson process; +infinity sends all at t = 0.
    double request_rate = 4.0;
    // Inclusive ranges, drawn uniformly.
    int32_t prompt_min = 32;
    int32_t prompt_max = 256;
    int32_t output_min = 16;
    int32_t output_max = 128;
};

// What is wrong with a SyntheticWorkload, for the CLI to print: a count below
// 1, a rate that is not > 0 (NaN included), a range with min < 1 or min > max.
Status validate(const SyntheticWorkload& workload);

// The trace for a workload: the first request arrives at 0, each next one an
// exponential gap (mean 1 / request_rate) later. The same seed gives the same
// trace with every standard library: std::mt19937_64 is fully specified and
// the uniform and exponential draws are made here from 53-bit fractions and
// rejection sampling, not with std:: distributions. Per request the draws
// are, in order: gap (skipped for the first request and an infinite rate),
// prompt length, output length. An invalid workload (see validate()) is
// made valid first: n < 1 gives no requests, a rate <= 0 or NaN is taken
// as infinite, mins are raised to 1 and maxes to their min.
std::vector<WorkloadRequest> generate_workload(const SyntheticWorkload& workload);

// Reads a trace: one JSON object per line with
//   "arrival_s" (or "timestamp"): seconds, >= 0; optional, default 0
//   "prompt": text, or "prompt_tokens": integer >= 1 (one of them; both may be given)
//   "output_tokens" (or "max_tokens"): integer >= 1
// Other fields are ignored; blank lines are skipped. Requests come back
// sorted by arrival (stable: equal arrivals keep file order). Errors read
// "workload: FILE:LINE: what is wrong"; a file with no request is an error.
Result<std::vector<WorkloadRequest>> read_workload_jsonl(const std::string& path);

struct LatencySummary {
    double p50 = std::numeric_limits<double>::quiet_NaN();
    double p99 = std::numeric_limits<double>::quiet_NaN();
    double mean = std::numeric_limits<double>::quiet_NaN();
    size_t n = 0;  // samples summarized (NaN samples are dropped)
};

// Exact percentiles from the samples, linear interpolation between the two
// nearest ranks (numpy.percentile's default, which benchmark_serving uses):
// the q-quantile of n sorted samples is at position q * (n - 1). NaN
// samples are dropped; no samples gives n = 0 and NaN statistics.
LatencySummary summarize(std::vector<double> samples);

// The q-quantile (q in [0, 1], clamped) of samples already sorted ascending,
// by the same rule; NaN when empty. For the bench's other percentiles.
double percentile_of_sorted(const std::vector<double>& sorted, double q);

}  // namespace folio
