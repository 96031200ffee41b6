// Serving metrics with vLLM's names and meanings (vllm/v1/metrics/loggers.py,
// PrometheusStatLogger), exported as Prometheus text under the "folio:" prefix
// where vLLM writes "vllm:".
//
// EngineMetrics is plain data: the engine thread updates it as requests move
// and copies it out under its own mutex for whoever asks (the HTTP /metrics
// endpoint, the studio, `folio bench`). Nothing in here locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

// A Prometheus histogram: fixed finite upper bounds ("le", value <= bound)
// plus the implicit +Inf bucket, a count and a sum. observe() is O(log buckets).
class Histogram {
public:
    Histogram() = default;
    // Bounds are sorted, duplicates and non-finite values dropped (+Inf is
    // always there). No bounds at all leaves only +Inf.
    explicit Histogram(std::vector<double> upper_bounds);

    // Counts one observation (seconds, tokens, ...). NaN is ignored: it has
    // no bucket and would poison the sum.
    void observe(double value);

    // The finite upper bounds, ascending.
    const std::vector<double>& upper_bounds() const { return upper_bounds_; }
    // Cumulative counts as exported: element i counts observations <=
    // upper_bounds()[i]; the last element (index upper_bounds().size()) is
    // the +Inf bucket and equals count().
    std::vector<uint64_t> cumulative_counts() const;
    uint64_t count() const { return count_; }
    double sum() const { return sum_; }

    // The q-quantile (q in [0, 1]) estimated from the buckets like
    // Prometheus' histogram_quantile(): find the bucket holding rank q*count,
    // interpolate linearly inside it (the first bucket starts at 0 unless its
    // bound is <= 0, then the bound is the answer); a rank in the +Inf bucket
    // gives the highest finite bound. One difference: q = 0 answers from the
    // first non-empty bucket rather than the first bucket.
    // NaN when nothing was observed or there is no finite bound; q < 0 gives
    // -Inf and q > 1 gives +Inf, as Prometheus does.
    double quantile(double q) const;

private:
    std::vector<double> upper_bounds_;
    std::vector<uint64_t> bucket_counts_ = std::vector<uint64_t>(1, 0);  // not cumulative; last = +Inf
    uint64_t count_ = 0;
    double sum_ = 0.0;
};

// Bucket layouts. Latencies follow vLLM's, with sub-millisecond buckets in
// front because a desktop GPU decodes a small model in a few milliseconds.
std::vector<double> time_to_first_token_buckets();
std::vector<double> inter_token_latency_buckets();
std::vector<double> request_latency_buckets();  // e2e latency and queue time
// 1, 2, 5, 10, 20, 50, ... up to and including the first value >= max_value
// (vLLM's build_1_2_5_buckets stops at <= max_model_len; one more bucket
// keeps a request of exactly max_model_len tokens out of +Inf).
std::vector<double> token_count_buckets(uint64_t max_value);

// The finish reasons request_success_total is labelled with, as
// to_string(FinishReason) writes them. They are exported even when zero, so
// a dashboard's series exist from the start.
inline constexpr std::string_view kFinishedReasons[] = {"stop", "stop_string", "length", "abort", "error"};

struct EngineMetrics {
    static constexpr uint64_t kDefaultMaxModelLen = 131072;

    EngineMetrics() : EngineMetrics(kDefaultMaxModelLen) {}
    // max_model_len sizes the token-count histograms' buckets.
    explicit EngineMetrics(uint64_t max_model_len);

    // ---- counters (monotonic) ----
    uint64_t prompt_tokens_total = 0;      // prefill tokens computed (prefix-cache hits excluded)
    uint64_t generation_tokens_total = 0;  // tokens sampled
    uint64_t sampled_whole_rows_total = 0; // of those, drawn from a whole logits row on the host (on a GPU:
                                           // steps that could not keep the logits there, and rows whose
                                           // best entries could not decide)
    uint64_t sampled_device_top_p_total = 0;  // of those, top-p / min-p draws made on the GPU from the
                                              // whole row (rows whose best entries could not decide, and
                                              // such rows of steps drawn in the step)
    uint64_t num_preemptions_total = 0;    // running requests pushed back to waiting (or swapped out)
    uint64_t kv_swapped_out_blocks_total = 0;  // KV blocks of preempted requests copied to host swap space
    uint64_t kv_swapped_in_blocks_total = 0;   // and copied back
    uint64_t prefix_cache_queries_total = 0;  // prompt tokens looked up in the prefix cache
    uint64_t prefix_cache_hits_total = 0;     // of those, tokens found cached
    // Finished requests by finish reason ("stop", "length", ...; see
    // kFinishedReasons, all present from construction). Other keys are
    // exported too. Count one with count_request_success(to_string(reason)).
    std::map<std::string, uint64_t, std::less<>> request_success_total;
    // Speculative decoding (vLLM's spec_decode_* counters): a draft is one
    // sequence's drafts verified in one step; acceptance rate =
    // accepted / draft tokens, mean acceptance length = 1 + accepted / drafts.
    uint64_t spec_decode_num_drafts_total = 0;
    uint64_t spec_decode_num_draft_tokens_total = 0;
    uint64_t spec_decode_num_accepted_tokens_total = 0;
    std::vector<uint64_t> spec_decode_num_accepted_tokens_per_pos;  // [position]: drafts accepted there

    // ---- gauges ----
    uint64_t num_requests_running = 0;
    uint64_t num_requests_waiting = 0;
    uint64_t num_requests_swapped = 0;  // preempted, their KV in host swap space
    double kv_cache_usage_perc = 0.0;  // fraction of KV blocks in use, 0..1 (not percent, as vLLM)
    // The KV cache's shape (vLLM's cache_config_info: one sample of value 1
    // whose labels say it), once the engine has a backend.
    struct CacheConfig {
        uint32_t block_size = 0;
        uint32_t num_blocks = 0;
        uint64_t bytes_per_block = 0;  // every layer's K and V, in the cache's type
        std::string cache_dtype;       // "f16", "q8_0", "fp8" (kv_type_name)
    } cache_config;

    // ---- histograms, one observation per request (inter-token: per token) ----
    Histogram time_to_first_token_seconds;  // arrival -> first token out
    Histogram inter_token_latency_seconds;  // between consecutive output tokens
    Histogram e2e_request_latency_seconds;  // arrival -> finished
    Histogram request_queue_time_seconds;   // arrival -> first scheduled
    Histogram request_prompt_tokens;        // prompt length
    Histogram request_generation_tokens;    // tokens generated

    void count_request_success(std::string_view finished_reason);
};

// The Prometheus text exposition format 0.0.4 (Content-Type:
// "text/plain; version=0.0.4; charset=utf-8"): for every family a # HELP and
// a # TYPE line, then its samples, each labelled model_name="<model_name>"
// (escaped). Names are vLLM's with the "folio:" prefix, e.g.
// folio:kv_cache_usage_perc, folio:prompt_tokens_total,
// folio:request_success_total{finished_reason="stop",...},
// folio:time_to_first_token_seconds_bucket{le="0.001",...}, _sum, _count.
std::string prometheus_text(const EngineMetrics& metrics, std::string_view model_name);

// A label value escaped for the text format: \ -> \\, " -> \", newline -> \n.
std::string escape_label_value(std::string_view value);

}  // namespace folio
