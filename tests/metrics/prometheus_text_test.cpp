// prometheus_text(): the output is read back line by line with the rules of
// the text exposition format 0.0.4: every family has # HELP and # TYPE before
// its samples and its samples are together; names and label names are legal;
// label values unescape to what went in; histogram buckets are cumulative,
// ascending in le, and end in +Inf equal to _count; counters end in _total.
#include <folio_test.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "folio/metrics.h"

using folio::EngineMetrics;

namespace {

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0.0;
};

struct Family {
    std::string type;
    std::string help;
    std::vector<Sample> samples;
};

struct Exposition {
    std::map<std::string, Family> families;
    std::vector<std::string> order;  // family names as they appeared
};

bool is_name(const std::string& name, bool allow_colon) {
    if (name.empty()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':') ||
                        (i > 0 && c >= '0' && c <= '9');
        if (!ok) return false;
    }
    return true;
}

double parse_value(const std::string& text, std::string& error) {
    if (text == "+Inf") return INFINITY;
    if (text == "-Inf") return -INFINITY;
    if (text == "NaN") return NAN;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0') error = "bad value '" + text + "'";
    return value;
}

// The family a sample belongs to: its own name, or for a histogram the name
// without _bucket / _sum / _count.
std::string family_of(const std::string& sample_name, const Exposition& exposition) {
    if (exposition.families.count(sample_name)) return sample_name;
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
        if (sample_name.size() > suffix.size() && sample_name.ends_with(suffix)) {
            const std::string base = sample_name.substr(0, sample_name.size() - suffix.size());
            const auto it = exposition.families.find(base);
            if (it != exposition.families.end() && it->second.type == "histogram") return base;
        }
    }
    return "";
}

// Reads the whole text; "" on success, else what is wrong and on which line.
std::string parse(const std::string& text, Exposition& out) {
    if (text.empty() || text.back() != '\n') return "text does not end in a newline";
    std::string current_family;
    std::set<std::string> finished;  // families whose samples are over
    size_t line_number = 0;
    size_t start = 0;
    while (start < text.size()) {
        const size_t end = text.find('\n', start);
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        const std::string where = "line " + std::to_string(line_number) + " '" + line + "': ";
        if (line.empty()) return where + "empty line";

        if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
            const std::string rest = line.substr(7);
            const size_t space = rest.find(' ');
            if (space == std::string::npos) return where + "no text after the name";
            const std::string name = rest.substr(0, space);
            if (!is_name(name, true)) return where + "bad metric name";
            if (name != current_family) {
                if (!current_family.empty()) finished.insert(current_family);
                if (finished.count(name)) return where + "family appears twice";
                current_family = name;
            }
            Family& family = out.families[name];
            if (!family.samples.empty()) return where + "HELP/TYPE after samples";
            if (line.starts_with("# HELP ")) {
                if (!family.help.empty()) return where + "second HELP";
                family.help = rest.substr(space + 1);
                out.order.push_back(name);
            } else {
                if (!family.type.empty()) return where + "second TYPE";
                family.type = rest.substr(space + 1);
                if (family.type != "counter" && family.type != "gauge" && family.type != "histogram") {
                    return where + "unknown type";
                }
            }
            continue;
        }
        if (line.starts_with("#")) return where + "unexpected comment";

        Sample sample;
        size_t i = 0;
        while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
        sample.name = line.substr(0, i);
        if (!is_name(sample.name, true)) return where + "bad sample name";
        if (i < line.size() && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                const size_t eq = line.find('=', i);
                if (eq == std::string::npos) return where + "label without '='";
                const std::string key = line.substr(i, eq - i);
                if (!is_name(key, false)) return where + "bad label name '" + key + "'";
                i = eq + 1;
                if (i >= line.size() || line[i] != '"') return where + "label value not quoted";
                ++i;
                std::string value;
                while (i < line.size() && line[i] != '"') {
                    if (line[i] == '\\') {
                        ++i;
                        if (i >= line.size()) return where + "escape at end of line";
                        if (line[i] == 'n') {
                            value += '\n';
                        } else if (line[i] == '\\' || line[i] == '"') {
                            value += line[i];
                        } else {
                            return where + "unknown escape";
                        }
                    } else {
                        value += line[i];
                    }
                    ++i;
                }
                if (i >= line.size()) return where + "unterminated label value";
                ++i;  // closing quote
                if (sample.labels.count(key)) return where + "label twice";
                sample.labels[key] = value;
                if (i < line.size() && line[i] == ',') ++i;
            }
            if (i >= line.size()) return where + "unterminated labels";
            ++i;  // '}'
        }
        if (i >= line.size() || line[i] != ' ') return where + "no space before the value";
        std::string error;
        sample.value = parse_value(line.substr(i + 1), error);
        if (!error.empty()) return where + error;

        const std::string family_name = family_of(sample.name, out);
        if (family_name.empty() || out.families[family_name].type.empty()) return where + "sample before its TYPE";
        if (family_name != current_family) return where + "sample outside its family's group";
        out.families[family_name].samples.push_back(sample);
    }
    return "";
}

EngineMetrics busy_metrics() {
    EngineMetrics m(2048);
    m.prompt_tokens_total = 123;
    m.generation_tokens_total = 456;
    m.num_preemptions_total = 3;
    m.prefix_cache_queries_total = 1000;
    m.prefix_cache_hits_total = 250;
    m.count_request_success("stop");
    m.count_request_success("stop");
    m.count_request_success("length");
    m.num_requests_running = 4;
    m.num_requests_waiting = 9;
    m.num_requests_swapped = 2;
    m.kv_swapped_out_blocks_total = 40;
    m.kv_swapped_in_blocks_total = 31;
    m.sampled_whole_rows_total = 17;
    m.sampled_device_top_p_total = 5;
    m.kv_cache_usage_perc = 0.25;
    m.cache_config = {16, 256, 195840, "q8_0"};
    for (int i = 0; i < 50; ++i) {
        m.time_to_first_token_seconds.observe(0.001 * i);
        m.inter_token_latency_seconds.observe(0.0002 * i);
        m.e2e_request_latency_seconds.observe(0.1 * i);
        m.request_queue_time_seconds.observe(0.0);
        m.request_prompt_tokens.observe(10.0 * i);
        m.request_generation_tokens.observe(3.0 * i);
    }
    m.inter_token_latency_seconds.observe(1e6);  // one in +Inf
    return m;
}

const Sample* find_sample(const Family& family, const std::string& name, const std::string& label = "",
                          const std::string& label_value = "") {
    for (const Sample& sample : family.samples) {
        if (sample.name != name) continue;
        if (!label.empty() && (!sample.labels.count(label) || sample.labels.at(label) != label_value)) continue;
        return &sample;
    }
    return nullptr;
}

}  // namespace

class PrometheusTextTest : public QObject {
    Q_OBJECT

private slots:
    void readsBackUnderTheFormatRules() {
        const std::string text = folio::prometheus_text(busy_metrics(), "SmolLM2-135M");
        Exposition exposition;
        const std::string error = parse(text, exposition);
        QVERIFY2(error.empty(), error.c_str());
        for (const auto& [name, family] : exposition.families) {
            QVERIFY2(!family.help.empty() && !family.type.empty(), name.c_str());
            QVERIFY2(!family.samples.empty(), name.c_str());
            QVERIFY2(name.starts_with("folio:"), name.c_str());
            if (family.type == "counter") QVERIFY2(name.ends_with("_total"), name.c_str());
            for (const Sample& sample : family.samples) {
                QVERIFY2(sample.labels.count("model_name") && sample.labels.at("model_name") == "SmolLM2-135M",
                         sample.name.c_str());
            }
        }
    }

    void hasVllmFamilies() {
        const std::string text = folio::prometheus_text(EngineMetrics(), "m");
        Exposition exposition;
        const std::string error = parse(text, exposition);
        QVERIFY2(error.empty(), error.c_str());
        const std::map<std::string, std::string> expected = {
            {"folio:num_requests_running", "gauge"},
            {"folio:num_requests_waiting", "gauge"},
            {"folio:num_requests_swapped", "gauge"},
            {"folio:kv_cache_usage_perc", "gauge"},
            {"folio:kv_swapped_out_blocks_total", "counter"},
            {"folio:kv_swapped_in_blocks_total", "counter"},
            {"folio:sampled_whole_rows_total", "counter"},
            {"folio:sampled_device_top_p_total", "counter"},
            {"folio:prompt_tokens_total", "counter"},
            {"folio:generation_tokens_total", "counter"},
            {"folio:num_preemptions_total", "counter"},
            {"folio:prefix_cache_queries_total", "counter"},
            {"folio:prefix_cache_hits_total", "counter"},
            {"folio:request_success_total", "counter"},
            {"folio:time_to_first_token_seconds", "histogram"},
            {"folio:inter_token_latency_seconds", "histogram"},
            {"folio:e2e_request_latency_seconds", "histogram"},
            {"folio:request_queue_time_seconds", "histogram"},
            {"folio:request_prompt_tokens", "histogram"},
            {"folio:request_generation_tokens", "histogram"},
        };
        for (const auto& [name, type] : expected) {
            QVERIFY2(exposition.families.count(name), name.c_str());
            QVERIFY2(exposition.families.at(name).type == type, (name + " is " + exposition.families.at(name).type).c_str());
        }
        // Every finish reason has a series from the start.
        for (const std::string_view reason : folio::kFinishedReasons) {
            QVERIFY(find_sample(exposition.families.at("folio:request_success_total"), "folio:request_success_total",
                                "finished_reason", std::string(reason)));
        }
    }

    void valuesComeThrough() {
        const std::string text = folio::prometheus_text(busy_metrics(), "m");
        Exposition exposition;
        const std::string error = parse(text, exposition);
        QVERIFY2(error.empty(), error.c_str());
        const auto value = [&](const std::string& name) {
            return exposition.families.at(name).samples.at(0).value;
        };
        QCOMPARE(value("folio:prompt_tokens_total"), 123.0);
        QCOMPARE(value("folio:generation_tokens_total"), 456.0);
        QCOMPARE(value("folio:num_preemptions_total"), 3.0);
        QCOMPARE(value("folio:prefix_cache_queries_total"), 1000.0);
        QCOMPARE(value("folio:prefix_cache_hits_total"), 250.0);
        QCOMPARE(value("folio:num_requests_running"), 4.0);
        QCOMPARE(value("folio:num_requests_waiting"), 9.0);
        QCOMPARE(value("folio:num_requests_swapped"), 2.0);
        QCOMPARE(value("folio:kv_swapped_out_blocks_total"), 40.0);
        QCOMPARE(value("folio:kv_swapped_in_blocks_total"), 31.0);
        QCOMPARE(value("folio:sampled_whole_rows_total"), 17.0);
        QCOMPARE(value("folio:sampled_device_top_p_total"), 5.0);
        QCOMPARE(value("folio:kv_cache_usage_perc"), 0.25);
        // The cache's shape in the labels of one sample of 1 (vLLM's cache_config_info).
        const Family& cache = exposition.families.at("folio:cache_config_info");
        QCOMPARE(cache.type, std::string("gauge"));
        const Sample* config = find_sample(cache, "folio:cache_config_info", "cache_dtype", "q8_0");
        QVERIFY(config);
        QCOMPARE(config->value, 1.0);
        QCOMPARE(config->labels.at("block_size"), std::string("16"));
        QCOMPARE(config->labels.at("num_gpu_blocks"), std::string("256"));
        QCOMPARE(config->labels.at("bytes_per_block"), std::string("195840"));
        // An engine not yet started has no cache to describe.
        QVERIFY(folio::prometheus_text(EngineMetrics(), "m").find("cache_config_info") == std::string::npos);
        const Family& success = exposition.families.at("folio:request_success_total");
        QCOMPARE(find_sample(success, "folio:request_success_total", "finished_reason", "stop")->value, 2.0);
        QCOMPARE(find_sample(success, "folio:request_success_total", "finished_reason", "length")->value, 1.0);
        QCOMPARE(find_sample(success, "folio:request_success_total", "finished_reason", "abort")->value, 0.0);
    }

    void histogramsAreCumulativeAndEndInInf() {
        const EngineMetrics metrics = busy_metrics();
        const std::string text = folio::prometheus_text(metrics, "m");
        Exposition exposition;
        const std::string error = parse(text, exposition);
        QVERIFY2(error.empty(), error.c_str());
        int histograms = 0;
        for (const auto& [name, family] : exposition.families) {
            if (family.type != "histogram") continue;
            ++histograms;
            double previous_le = -INFINITY;
            double previous_count = 0.0;
            const Sample* inf = nullptr;
            for (const Sample& sample : family.samples) {
                if (sample.name != name + "_bucket") continue;
                QVERIFY2(!inf, (name + ": a bucket after +Inf").c_str());
                QVERIFY2(sample.labels.count("le"), name.c_str());
                std::string le_error;
                const double le = parse_value(sample.labels.at("le"), le_error);
                QVERIFY2(le_error.empty(), le_error.c_str());
                QVERIFY2(le > previous_le, (name + ": le not ascending at " + sample.labels.at("le")).c_str());
                QVERIFY2(sample.value >= previous_count, (name + ": not cumulative at " + sample.labels.at("le")).c_str());
                previous_le = le;
                previous_count = sample.value;
                if (sample.labels.at("le") == "+Inf") inf = &sample;
            }
            QVERIFY2(inf, (name + ": no +Inf bucket").c_str());
            const Sample* count = find_sample(family, name + "_count");
            const Sample* sum = find_sample(family, name + "_sum");
            QVERIFY2(count && sum, (name + ": _count or _sum missing").c_str());
            QCOMPARE(inf->value, count->value);
        }
        QCOMPARE(histograms, 6);

        const Family& itl = exposition.families.at("folio:inter_token_latency_seconds");
        QCOMPARE(find_sample(itl, "folio:inter_token_latency_seconds_count")->value, 51.0);
        QCOMPARE(find_sample(itl, "folio:inter_token_latency_seconds_sum")->value,
                 metrics.inter_token_latency_seconds.sum());
        // Sub-millisecond bounds in plain decimals, whole ones as "1.0".
        QVERIFY(find_sample(itl, "folio:inter_token_latency_seconds_bucket", "le", "0.0001"));
        QVERIFY(find_sample(itl, "folio:inter_token_latency_seconds_bucket", "le", "0.00025"));
        QVERIFY(find_sample(itl, "folio:inter_token_latency_seconds_bucket", "le", "1.0"));
        // 0.0002 * i for i < 50: i = 0 and 1 are <= 0.0002, so le="0.00025" holds 2.
        QCOMPARE(find_sample(itl, "folio:inter_token_latency_seconds_bucket", "le", "0.00025")->value, 2.0);
        QCOMPARE(find_sample(itl, "folio:inter_token_latency_seconds_bucket", "le", "80.0")->value, 50.0);
    }

    void bucketLineLooksLikeVllms() {
        const std::string text = folio::prometheus_text(EngineMetrics(), "m");
        QVERIFY(text.find("folio:time_to_first_token_seconds_bucket{le=\"0.001\",model_name=\"m\"} 0\n") !=
                std::string::npos);
        QVERIFY(text.find("folio:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 0\n") !=
                std::string::npos);
        QVERIFY(text.find("# TYPE folio:prompt_tokens_total counter\n") != std::string::npos);
    }

    void labelValuesAreEscaped() {
        QCOMPARE(folio::escape_label_value("plain"), std::string("plain"));
        QCOMPARE(folio::escape_label_value("a\\b\"c\nd"), std::string("a\\\\b\\\"c\\nd"));

        const std::string model = "dir\\model \"q4\"\nline two";
        const std::string text = folio::prometheus_text(busy_metrics(), model);
        QVERIFY(text.find("model_name=\"dir\\\\model \\\"q4\\\"\\nline two\"") != std::string::npos);
        Exposition exposition;
        const std::string error = parse(text, exposition);
        QVERIFY2(error.empty(), error.c_str());
        for (const auto& [name, family] : exposition.families) {
            for (const Sample& sample : family.samples) {
                QVERIFY2(sample.labels.at("model_name") == model, sample.name.c_str());
            }
        }
    }

    void oddFinishReasonIsEscapedToo() {
        EngineMetrics metrics;
        metrics.count_request_success("weird\"reason");
        Exposition exposition;
        const std::string error = parse(folio::prometheus_text(metrics, "m"), exposition);
        QVERIFY2(error.empty(), error.c_str());
        QVERIFY(find_sample(exposition.families.at("folio:request_success_total"), "folio:request_success_total",
                            "finished_reason", "weird\"reason"));
    }
};

FOLIO_TEST_MAIN(PrometheusTextTest)
#include "prometheus_text_test.moc"
