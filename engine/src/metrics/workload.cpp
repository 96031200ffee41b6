// Synthetic and JSONL request traces for the serving benchmark, and exact
// latency percentiles.
#include "folio/workload.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <string_view>
#include <system_error>
#include <utility>

namespace folio {

namespace {

using json = nlohmann::json;

// Draws made from the raw 64-bit stream of std::mt19937_64, whose output the
// standard fixes, so a seed means the same trace everywhere.
class TraceRandom {
public:
    explicit TraceRandom(uint64_t seed) : engine_(seed) {}

    // Uniform in [0, 1): the top 53 bits as a fraction.
    double uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

    // Exponential with the given rate; 1 - u is in (0, 1], so the log is finite.
    double exponential(double rate) { return -std::log1p(-uniform01()) / rate; }

    // Uniform in [lo, hi] without modulo bias: values below 2^64 mod range
    // are rejected so that every residue is equally likely.
    int32_t uniform_int(int32_t lo, int32_t hi) {
        const uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo) + 1;
        const uint64_t reject_below = (0 - range) % range;
        uint64_t r = engine_();
        while (r < reject_below) r = engine_();
        return static_cast<int32_t>(lo + static_cast<int64_t>(r % range));
    }

private:
    std::mt19937_64 engine_;
};

Status check_range(const char* what, int32_t min, int32_t max) {
    if (min < 1) {
        return make_error(std::string("workload: ") + what + "_min is " + std::to_string(min) +
                          "; lengths start at 1");
    }
    if (min > max) {
        return make_error(std::string("workload: ") + what + "_min " + std::to_string(min) + " is above " + what +
                          "_max " + std::to_string(max));
    }
    return {};
}

// A JSON value in an error message, cut short.
std::string show(const json& value) {
    std::string text = value.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return text;
}

// The field called name, else the one called alias (when given), else null.
const json* field(const json& object, const char* name, const char* alias = nullptr) {
    if (const auto it = object.find(name); it != object.end()) return &*it;
    if (alias == nullptr) return nullptr;
    if (const auto it = object.find(alias); it != object.end()) return &*it;
    return nullptr;
}

const char* field_name(const json& object, const char* name, const char* alias) {
    return object.contains(name) ? name : alias;
}

// A token count: an integer (or a whole float like 128.0) in [1, INT32_MAX].
std::optional<int32_t> as_count(const json& value) {
    double number = 0.0;
    if (value.is_number_unsigned()) {
        const auto u = value.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) return std::nullopt;
        number = static_cast<double>(u);
    } else if (value.is_number()) {
        number = value.get<double>();
    } else {
        return std::nullopt;
    }
    if (!(number >= 1.0) || number > std::numeric_limits<int32_t>::max() || number != std::floor(number)) {
        return std::nullopt;
    }
    return static_cast<int32_t>(number);
}

bool is_blank(std::string_view line) {
    return line.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos;
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 9: ..."
// without the exception id and the line (the line is ours, not the parser's).
std::string parse_error_text(const char* what) {
    std::string text = what;
    if (const auto bracket = text.find("] "); text.starts_with("[json.exception") && bracket != std::string::npos) {
        text.erase(0, bracket + 2);
    }
    for (const std::string_view prefix : {"parse error at line 1, ", "parse error at "}) {
        if (text.starts_with(prefix)) {
            text.erase(0, prefix.size());
            break;
        }
    }
    return text;
}

// One line of a trace; an error message (without the FILE:LINE: prefix) when malformed.
Result<WorkloadRequest> parse_line(const std::string& line) {
    json object;
    try {
        object = json::parse(line);
    } catch (const json::exception& e) {
        return make_error("not valid JSON: " + parse_error_text(e.what()));
    }
    if (!object.is_object()) {
        return make_error(std::string("expected a JSON object like {\"prompt_tokens\": 128, \"output_tokens\": 64}, "
                                      "got ") + object.type_name());
    }

    WorkloadRequest request;
    if (const json* arrival = field(object, "arrival_s", "timestamp")) {
        const char* name = field_name(object, "arrival_s", "timestamp");
        if (!arrival->is_number() || !std::isfinite(arrival->get<double>()) || arrival->get<double>() < 0) {
            return make_error(std::string("\"") + name + "\" must be a number of seconds >= 0, got " + show(*arrival));
        }
        request.arrival_s = arrival->get<double>();
    }

    const json* prompt = field(object, "prompt");
    const json* prompt_tokens = field(object, "prompt_tokens");
    if (prompt == nullptr && prompt_tokens == nullptr) {
        return make_error("needs \"prompt\" (text) or \"prompt_tokens\" (a count)");
    }
    if (prompt != nullptr) {
        if (!prompt->is_string()) return make_error("\"prompt\" must be a string, got " + show(*prompt));
        request.prompt = prompt->get<std::string>();
        if (request.prompt.empty() && prompt_tokens == nullptr) {
            return make_error("\"prompt\" is empty; give text or \"prompt_tokens\"");
        }
    }
    if (prompt_tokens != nullptr) {
        const auto count = as_count(*prompt_tokens);
        if (!count) return make_error("\"prompt_tokens\" must be an integer >= 1, got " + show(*prompt_tokens));
        request.prompt_tokens = *count;
    }

    const json* output = field(object, "output_tokens", "max_tokens");
    if (output == nullptr) return make_error("needs \"output_tokens\" (or \"max_tokens\"): how many tokens to generate");
    const auto output_count = as_count(*output);
    if (!output_count) {
        return make_error(std::string("\"") + field_name(object, "output_tokens", "max_tokens") +
                          "\" must be an integer >= 1, got " + show(*output));
    }
    request.output_tokens = *output_count;
    return request;
}

}  // namespace

Status validate(const SyntheticWorkload& workload) {
    if (workload.n_requests < 1) {
        return make_error("workload: n_requests is " + std::to_string(workload.n_requests) + "; ask for at least 1");
    }
    if (!(workload.request_rate > 0)) {
        return make_error("workload: request_rate must be > 0 requests per second (inf sends all at once), got " +
                          std::to_string(workload.request_rate));
    }
    if (Status status = check_range("prompt", workload.prompt_min, workload.prompt_max); !status) return status;
    return check_range("output", workload.output_min, workload.output_max);
}

std::vector<WorkloadRequest> generate_workload(const SyntheticWorkload& workload) {
    std::vector<WorkloadRequest> requests;
    if (workload.n_requests < 1) return requests;
    const bool all_at_once = !(workload.request_rate > 0) || std::isinf(workload.request_rate);
    const int32_t prompt_min = std::max(workload.prompt_min, 1);
    const int32_t prompt_max = std::max(workload.prompt_max, prompt_min);
    const int32_t output_min = std::max(workload.output_min, 1);
    const int32_t output_max = std::max(workload.output_max, output_min);

    TraceRandom random(workload.seed);
    requests.reserve(static_cast<size_t>(workload.n_requests));
    double arrival_s = 0.0;
    for (int32_t i = 0; i < workload.n_requests; ++i) {
        if (i > 0 && !all_at_once) arrival_s += random.exponential(workload.request_rate);
        WorkloadRequest request;
        request.arrival_s = arrival_s;
        request.prompt_tokens = random.uniform_int(prompt_min, prompt_max);
        request.output_tokens = random.uniform_int(output_min, output_max);
        requests.push_back(std::move(request));
    }
    return requests;
}

Result<std::vector<WorkloadRequest>> read_workload_jsonl(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        return make_error("workload: " + path + ": is a folder; give a .jsonl file with one request per line");
    }
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        return make_error("workload: " + path + ": cannot open (" + std::strerror(errno) + ")");
    }
    std::vector<WorkloadRequest> requests;
    std::string line;
    size_t line_number = 0;
    while (std::getline(file, line)) {
        ++line_number;
        if (is_blank(line)) continue;
        Result<WorkloadRequest> request = parse_line(line);
        if (!request) {
            return make_error("workload: " + path + ":" + std::to_string(line_number) + ": " +
                              request.error().message);
        }
        requests.push_back(std::move(request).value());
    }
    if (file.bad()) return make_error("workload: " + path + ": read failed after line " + std::to_string(line_number));
    if (requests.empty()) {
        return make_error("workload: " + path + ": no requests (expected one JSON object per line)");
    }
    std::stable_sort(requests.begin(), requests.end(),
                     [](const WorkloadRequest& a, const WorkloadRequest& b) { return a.arrival_s < b.arrival_s; });
    return requests;
}

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
    q = std::isnan(q) ? 0.0 : std::clamp(q, 0.0, 1.0);
    const double position = q * static_cast<double>(sorted.size() - 1);
    const auto below = static_cast<size_t>(std::floor(position));
    const size_t above = std::min(below + 1, sorted.size() - 1);
    const double fraction = position - static_cast<double>(below);
    if (fraction == 0.0) return sorted[below];  // exact rank; also keeps inf - inf out
    return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

LatencySummary summarize(std::vector<double> samples) {
    std::erase_if(samples, [](double x) { return std::isnan(x); });
    LatencySummary summary;
    summary.n = samples.size();
    if (samples.empty()) return summary;
    std::sort(samples.begin(), samples.end());
    summary.p50 = percentile_of_sorted(samples, 0.50);
    summary.p99 = percentile_of_sorted(samples, 0.99);
    summary.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    return summary;
}

}  // namespace folio
