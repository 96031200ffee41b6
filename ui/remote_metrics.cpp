#include "ui/remote_metrics.h"

#include <QStringView>

#include <algorithm>

#include <initializer_list>

namespace folio::ui {

namespace {

// The name of a sample line and where its value starts (after the labels,
// whose quoted values may hold '}' or spaces); -1 when the line is not a sample.
qsizetype split_sample(QStringView line, QStringView& name) {
    qsizetype i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
    name = line.left(i);
    if (name.isEmpty()) return -1;
    if (i < line.size() && line[i] == '{') {
        bool quoted = false;
        for (++i; i < line.size(); ++i) {
            const QChar c = line[i];
            if (quoted && c == '\\') ++i;
            else if (c == '"') quoted = !quoted;
            else if (!quoted && c == '}') break;
        }
        if (i >= line.size()) return -1;
        ++i;
    }
    return i;
}

bool parse_value(QStringView text, double& value) {
    text = text.trimmed();
    const qsizetype space = text.indexOf(' ');  // an optional timestamp follows
    if (space >= 0) text = text.left(space);
    if (text == u"+Inf" || text == u"Inf") value = INFINITY;
    else if (text == u"-Inf") value = -INFINITY;
    else {
        bool ok = false;
        value = text.toDouble(&ok);
        if (!ok) return false;
    }
    return std::isfinite(value);  // NaN and infinities say nothing a plot can draw
}

struct Names {
    MetricsDialect dialect;
    QString prefix;
    // Each quantity under its names, first found wins (a dialect's versions differ).
    std::initializer_list<const char*> prompt, generation, running, waiting, kv_usage, preemptions, ttft, itl;
};

const Names& names_of(MetricsDialect d) {
    static const Names folio{MetricsDialect::Folio, "folio:",
                             {"prompt_tokens_total"}, {"generation_tokens_total"}, {"num_requests_running"},
                             {"num_requests_waiting"}, {"kv_cache_usage_perc"}, {"num_preemptions_total"},
                             {"time_to_first_token_seconds"}, {"inter_token_latency_seconds"}};
    // vLLM v1 and v0 (gpu_cache_usage_perc, time_per_output_token_seconds).
    static const Names vllm{MetricsDialect::Vllm, "vllm:",
                            {"prompt_tokens_total"}, {"generation_tokens_total"}, {"num_requests_running"},
                            {"num_requests_waiting"}, {"kv_cache_usage_perc", "gpu_cache_usage_perc"},
                            {"num_preemptions_total", "num_preemptions"},
                            {"time_to_first_token_seconds"},
                            {"inter_token_latency_seconds", "time_per_output_token_seconds"}};
    static const Names sglang{MetricsDialect::Sglang, "sglang:",
                              {"prompt_tokens_total"}, {"generation_tokens_total"}, {"num_running_reqs"},
                              {"num_queue_reqs"}, {"token_usage"}, {},
                              {"time_to_first_token_seconds"},
                              {"inter_token_latency_seconds", "time_per_output_token_seconds"}};
    static const Names llamacpp{MetricsDialect::LlamaCpp, "llamacpp:",
                                {"prompt_tokens_total"}, {"tokens_predicted_total"}, {"requests_processing"},
                                {"requests_deferred"}, {"kv_cache_usage_ratio"}, {}, {}, {}};
    switch (d) {
        case MetricsDialect::Vllm: return vllm;
        case MetricsDialect::Sglang: return sglang;
        case MetricsDialect::LlamaCpp: return llamacpp;
        case MetricsDialect::Folio:
        case MetricsDialect::None: break;
    }
    return folio;
}

}  // namespace

QHash<QString, double> parse_prometheus_text(const QString& text) {
    QHash<QString, double> values;
    for (QStringView line : QStringView(text).split(u'\n')) {
        line = line.trimmed();
        if (line.isEmpty() || line.startsWith(u'#')) continue;
        QStringView name;
        const qsizetype at = split_sample(line, name);
        double value = 0;
        if (at < 0 || !parse_value(line.mid(at), value)) continue;
        values[name.toString()] += value;
    }
    return values;
}

QString dialect_name(MetricsDialect dialect) {
    switch (dialect) {
        case MetricsDialect::Folio: return "Folio";
        case MetricsDialect::Vllm: return "vLLM";
        case MetricsDialect::Sglang: return "SGLang";
        case MetricsDialect::LlamaCpp: return "llama.cpp";
        case MetricsDialect::None: break;
    }
    return "none";
}

MetricsReading read_metrics(const QHash<QString, double>& values, double time_s) {
    MetricsReading r;
    r.time_s = time_s;
    for (const MetricsDialect d : {MetricsDialect::Folio, MetricsDialect::Vllm, MetricsDialect::Sglang,
                                   MetricsDialect::LlamaCpp}) {
        const Names& n = names_of(d);
        auto find = [&](std::initializer_list<const char*> candidates, const char* suffix = "") {
            for (const char* c : candidates) {
                const auto it = values.constFind(n.prefix + c + suffix);
                if (it != values.cend()) return it.value();
            }
            return double(NAN);
        };
        r.prompt_tokens = find(n.prompt);
        r.generation_tokens = find(n.generation);
        if (std::isnan(r.prompt_tokens) && std::isnan(r.generation_tokens)) continue;  // not this one
        r.dialect = d;
        r.running = find(n.running);
        r.waiting = find(n.waiting);
        r.kv_usage = find(n.kv_usage);
        r.preemptions = find(n.preemptions);
        r.ttft_sum = find(n.ttft, "_sum");
        r.ttft_count = find(n.ttft, "_count");
        r.itl_sum = find(n.itl, "_sum");
        r.itl_count = find(n.itl, "_count");
        if (d == MetricsDialect::LlamaCpp) {
            r.itl_sum = find({"tokens_predicted_seconds_total"});
            r.itl_count = r.generation_tokens;
        }
        return r;
    }
    return r;
}

EngineSample sample_between(const MetricsReading& then, const MetricsReading& now) {
    EngineSample s;
    s.time_s = now.time_s;
    const double dt = now.time_s - then.time_s;
    auto rate = [&](double a, double b) {
        // A counter that went back: the server restarted; no rate for this interval.
        return dt > 0 && std::isfinite(a) && std::isfinite(b) && b >= a ? (b - a) / dt : 0.0;
    };
    auto mean = [](double sum0, double count0, double sum1, double count1) {
        if (!std::isfinite(sum0) || !std::isfinite(count0) || !std::isfinite(sum1) || !std::isfinite(count1) ||
            count1 <= count0 || sum1 < sum0)
            return double(NAN);
        return (sum1 - sum0) / (count1 - count0);
    };
    s.prompt_tokens_per_s = rate(then.prompt_tokens, now.prompt_tokens);
    s.generation_tokens_per_s = rate(then.generation_tokens, now.generation_tokens);
    s.kv_usage = std::isfinite(now.kv_usage) ? std::clamp(now.kv_usage, 0.0, 1.0) : NAN;  // a gap in the plot
    s.running = std::isfinite(now.running) ? static_cast<int>(now.running) : 0;
    s.waiting = std::isfinite(now.waiting) ? static_cast<int>(now.waiting) : 0;
    s.preemptions_total = std::isfinite(now.preemptions) ? static_cast<uint64_t>(now.preemptions) : 0;
    s.ttft_s = mean(then.ttft_sum, then.ttft_count, now.ttft_sum, now.ttft_count);
    s.inter_token_s = mean(then.itl_sum, then.itl_count, now.itl_sum, now.itl_count);
    return s;
}

}  // namespace folio::ui
