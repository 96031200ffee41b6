// EngineMetrics as Prometheus text exposition format 0.0.4.
// https://prometheus.io/docs/instrumenting/exposition_formats/
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>

#include "folio/metrics.h"

namespace folio {

namespace {

// Shortest text that reads back as the same double. Fixed notation in the
// range people write bucket bounds in (so le="0.0001", not "1e-04"), and a
// ".0" on whole numbers as Python's prometheus_client writes them.
std::string format_double(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    const double magnitude = std::fabs(value);
    const bool fixed = magnitude == 0.0 || (magnitude >= 1e-6 && magnitude < 1e15);
    char buffer[64];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value,
                                         fixed ? std::chars_format::fixed : std::chars_format::scientific);
    if (ec != std::errc()) return "NaN";  // cannot happen: 64 bytes hold any double
    std::string text(buffer, end);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
}

// HELP text escaping: backslash and newline (quotes stay as they are).
std::string escape_help(std::string_view text) {
    std::string escaped;
    escaped.reserve(text.size());
    for (const char c : text) {
        if (c == '\\') {
            escaped += "\\\\";
        } else if (c == '\n') {
            escaped += "\\n";
        } else {
            escaped += c;
        }
    }
    return escaped;
}

class Exposition {
public:
    explicit Exposition(std::string_view model_name)
        : model_label_("model_name=\"" + escape_label_value(model_name) + "\"") {}

    void family(std::string_view name, std::string_view type, std::string_view help) {
        text_ += "# HELP ";
        text_ += name;
        text_ += ' ';
        text_ += escape_help(help);
        text_ += "\n# TYPE ";
        text_ += name;
        text_ += ' ';
        text_ += type;
        text_ += '\n';
    }

    // One sample; extra_label is "" or a preformatted `key="escaped value"`.
    void sample(std::string_view name, std::string_view extra_label, std::string_view value) {
        text_ += name;
        text_ += '{';
        if (!extra_label.empty()) {
            text_ += extra_label;
            text_ += ',';
        }
        text_ += model_label_;
        text_ += "} ";
        text_ += value;
        text_ += '\n';
    }

    void counter(std::string_view name, std::string_view help, uint64_t value) {
        family(name, "counter", help);
        sample(name, "", std::to_string(value));
    }

    void gauge(std::string_view name, std::string_view help, double value) {
        family(name, "gauge", help);
        sample(name, "", format_double(value));
    }

    void histogram(std::string_view name, std::string_view help, const Histogram& histogram) {
        family(name, "histogram", help);
        const std::string bucket_name = std::string(name) + "_bucket";
        const std::vector<uint64_t> cumulative = histogram.cumulative_counts();
        const std::vector<double>& bounds = histogram.upper_bounds();
        for (size_t i = 0; i < cumulative.size(); ++i) {
            const std::string le = i < bounds.size() ? format_double(bounds[i]) : std::string("+Inf");
            sample(bucket_name, "le=\"" + le + "\"", std::to_string(cumulative[i]));
        }
        sample(std::string(name) + "_sum", "", format_double(histogram.sum()));
        sample(std::string(name) + "_count", "", std::to_string(histogram.count()));
    }

    std::string take() { return std::move(text_); }

private:
    std::string model_label_;
    std::string text_;
};

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string escaped;
    escaped.reserve(value.size());
    for (const char c : value) {
        if (c == '\\') {
            escaped += "\\\\";
        } else if (c == '"') {
            escaped += "\\\"";
        } else if (c == '\n') {
            escaped += "\\n";
        } else {
            escaped += c;
        }
    }
    return escaped;
}

std::string prometheus_text(const EngineMetrics& m, std::string_view model_name) {
    Exposition out(model_name);

    out.gauge("folio:num_requests_running", "Number of requests in model execution batches.",
              static_cast<double>(m.num_requests_running));
    out.gauge("folio:num_requests_waiting", "Number of requests waiting to be processed.",
              static_cast<double>(m.num_requests_waiting));
    out.gauge("folio:num_requests_swapped", "Number of requests swapped to host memory.",
              static_cast<double>(m.num_requests_swapped));
    out.gauge("folio:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", m.kv_cache_usage_perc);
    if (m.cache_config.num_blocks > 0) {
        const EngineMetrics::CacheConfig& c = m.cache_config;
        out.family("folio:cache_config_info", "gauge", "Information of the KV cache: its blocks and their type.");
        out.sample("folio:cache_config_info",
                   "block_size=\"" + std::to_string(c.block_size) + "\",num_gpu_blocks=\"" + std::to_string(c.num_blocks) +
                       "\",bytes_per_block=\"" + std::to_string(c.bytes_per_block) + "\",cache_dtype=\"" +
                       escape_label_value(c.cache_dtype) + "\"",
                   "1");
    }

    out.counter("folio:num_preemptions_total", "Cumulative number of preemptions from the engine.",
                m.num_preemptions_total);
    out.counter("folio:kv_swapped_out_blocks_total", "KV-cache blocks of preempted requests copied to host memory.",
                m.kv_swapped_out_blocks_total);
    out.counter("folio:kv_swapped_in_blocks_total", "KV-cache blocks copied back from host memory.",
                m.kv_swapped_in_blocks_total);
    out.counter("folio:prefix_cache_queries_total",
                "Prefix cache queries, in terms of number of queried tokens.", m.prefix_cache_queries_total);
    out.counter("folio:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
                m.prefix_cache_hits_total);
    out.counter("folio:prompt_tokens_total", "Number of prefill tokens processed.", m.prompt_tokens_total);
    out.counter("folio:sampled_whole_rows_total",
                "Tokens sampled on the host from a whole logits row (not from entries selected on the GPU).",
                m.sampled_whole_rows_total);
    out.counter("folio:sampled_device_top_p_total",
                "Tokens drawn by top-p or min-p on the GPU from a whole logits row.",
                m.sampled_device_top_p_total);
    out.counter("folio:generation_tokens_total", "Number of generation tokens processed.",
                m.generation_tokens_total);

    out.counter("folio:spec_decode_num_drafts_total", "Number of spec decoding drafts.",
                m.spec_decode_num_drafts_total);
    out.counter("folio:spec_decode_num_draft_tokens_total", "Number of draft tokens.",
                m.spec_decode_num_draft_tokens_total);
    out.counter("folio:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.",
                m.spec_decode_num_accepted_tokens_total);
    // Per draft position: a family only once a draft has been verified (its positions exist then).
    if (!m.spec_decode_num_accepted_tokens_per_pos.empty())
        out.family("folio:spec_decode_num_accepted_tokens_per_pos_total", "counter",
                   "Accepted tokens per draft position.");
    for (size_t pos = 0; pos < m.spec_decode_num_accepted_tokens_per_pos.size(); ++pos)
        out.sample("folio:spec_decode_num_accepted_tokens_per_pos_total", "position=\"" + std::to_string(pos) + "\"",
                   std::to_string(m.spec_decode_num_accepted_tokens_per_pos[pos]));

    out.family("folio:request_success_total", "counter", "Count of successfully processed requests.");
    for (const auto& [reason, count] : m.request_success_total) {
        out.sample("folio:request_success_total", "finished_reason=\"" + escape_label_value(reason) + "\"",
                   std::to_string(count));
    }

    out.histogram("folio:request_prompt_tokens", "Prompt length of finished requests, in tokens.", m.request_prompt_tokens);
    out.histogram("folio:request_generation_tokens", "Tokens generated by finished requests.",
                  m.request_generation_tokens);
    out.histogram("folio:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                  m.time_to_first_token_seconds);
    out.histogram("folio:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                  m.inter_token_latency_seconds);
    out.histogram("folio:e2e_request_latency_seconds", "Time from arrival to finish of requests, in seconds.",
                  m.e2e_request_latency_seconds);
    out.histogram("folio:request_queue_time_seconds", "Time requests spent waiting before first scheduled, in seconds.",
                  m.request_queue_time_seconds);
    return out.take();
}

}  // namespace folio
