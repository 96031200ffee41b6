// The live plots of a remote engine, from its Prometheus /metrics text.
// Servers name the same quantities differently: Folio ("folio:", vLLM's
// names), vLLM ("vllm:", v0 and v1 names), SGLang ("sglang:") and llama.cpp's
// llama-server ("llamacpp:", with --metrics). read_metrics() finds which one
// a text speaks and reads it into one MetricsReading; sample_between() turns
// two readings into the EngineSample the plots draw, as EngineHost does for
// the engine in the studio. What a server does not report stays NAN.
#pragma once

#include <QHash>
#include <QString>

#include <cmath>

#include "ui/studio_types.h"

namespace folio::ui {

// Every sample of a Prometheus text exposition, summed over its labels per
// name (a histogram's buckets, _sum and _count are names of their own).
// Comments, malformed lines and non-numbers are skipped: a server's text is
// input, not trusted.
QHash<QString, double> parse_prometheus_text(const QString& text);

enum class MetricsDialect { None, Folio, Vllm, Sglang, LlamaCpp };
QString dialect_name(MetricsDialect dialect);  // "Folio", "vLLM", "SGLang", "llama.cpp", "none"

struct MetricsReading {
    double time_s = 0;
    MetricsDialect dialect = MetricsDialect::None;
    double prompt_tokens = NAN, generation_tokens = NAN;  // counters
    double running = NAN, waiting = NAN, kv_usage = NAN;  // gauges (kv_usage 0..1)
    double preemptions = NAN;
    // Histograms' sums and counts. llama.cpp has no latency histograms: its
    // decode seconds over predicted tokens stand for the inter-token latency.
    double ttft_sum = NAN, ttft_count = NAN, itl_sum = NAN, itl_count = NAN;
};

MetricsReading read_metrics(const QHash<QString, double>& values, double time_s);

// The interval from `then` to `now`: rates from the counters' differences,
// means of the latencies whose counts grew, the gauges as they are now.
EngineSample sample_between(const MetricsReading& then, const MetricsReading& now);

}  // namespace folio::ui
