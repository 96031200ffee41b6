// The immutable values that cross from the engine side of Folio Studio to
// the widgets: engine settings, a model's summary, one request's streamed
// update, a plot sample and a block-map snapshot. They travel through queued
// signals by value (or, for the large block map, as a shared pointer to a
// const event), so no widget ever reads engine state across threads.
#pragma once

#include <QHash>
#include <QMetaType>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "folio/chat_prompt.h"
#include "folio/chat_template.h"
#include "folio/engine.h"
#include "folio/sampling.h"

class QSettings;

namespace folio::ui {

// What the Engine Settings dialog edits; applied by restarting the engine.
struct EngineSettings {
    uint32_t block_size = 16;
    uint64_t kv_budget_mib = 256;
    uint32_t max_context = 4096;
    uint32_t max_num_seqs = 16;
    uint32_t max_num_batched_tokens = 512;
    bool prefix_caching = true;
    int threads = 0;          // 0 = physical cores
    QString device = "cpu";   // "cpu" or "cuda:N"
    QString kv_type = "f16";  // how the KV cache stores K and V: "f16", "q8_0" or "fp8" (folio::kv_type_name)
    // Speculative decoding for every chat: the method (folio::to_string of a
    // SpecMethod: off, ngram, draft, layer-skip, int4-self), the draft model
    // for "draft", K at most, and adaptive K (else always draft_max).
    QString spec_method = "off";
    QString draft_model;
    int draft_max = 4;
    bool draft_adaptive = true;

    void save(QSettings& settings) const;
    static EngineSettings load(QSettings& settings);
    bool operator==(const EngineSettings&) const = default;
};

// One weight type's share of a model (the quantization mix).
struct TensorTypeShare {
    QString type;
    int tensors = 0;
    uint64_t elements = 0;
    uint64_t bytes = 0;
};

// Everything the metadata inspector shows about a model file.
struct ModelSummary {
    QString path;
    QString name;
    QString format;        // "GGUF" or "Hugging Face folder"
    QString architecture;
    bool architecture_supported = true;
    uint64_t parameters = 0;
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes_per_token = 0;  // F16 K and V over all layers
    // The same in the other KV types ("q8_0", "fp8": folio::kv_type_name); absent where the heads do not
    // fit the type's blocks.
    QHash<QString, uint64_t> kv_bytes_per_token_by_type;
    // kv_bytes_per_token for an EngineSettings::kv_type ("f16", "q8_0", "fp8"); 0 where it does not fit.
    uint64_t kv_bytes_per_token_as(const QString& kv_type) const {
        return kv_type == QLatin1String("f16") ? kv_bytes_per_token : kv_bytes_per_token_by_type.value(kv_type, 0);
    }
    uint32_t n_ctx_train = 0, n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0,
             n_vocab = 0;
    QVector<TensorTypeShare> quant_mix;  // largest first
    QString tokenizer;                   // "byte-level BPE (smollm), 49152 tokens"
    QString chat_template;               // the Jinja source in use
    QString chat_template_notice;        // non-empty when a built-in fallback is used
    // A model served elsewhere (RemoteEngine): the server and what it lists; nothing else is known here.
    QString remote_url;
    QStringList remote_models;
    bool valid() const { return !path.isEmpty(); }
};

// The engine as it runs: backend and KV cache geometry.
struct EngineStatus {
    QString device;        // "cpu (AVX2, 2 threads)"
    uint32_t n_blocks = 0;
    uint32_t block_size = 0;
    uint32_t max_context = 0;
    uint64_t kv_cache_bytes = 0;
    QString speculation;   // "int4-self, K <= 4 (adaptive)", or empty when off
    QString remote_url;    // an engine elsewhere (RemoteEngine): the server's URL; no blocks, no context known
    EngineSettings settings;
    // The longest conversation the engine runs: its context, or the KV pool when that is smaller.
    uint32_t effective_context() const { return std::min(max_context, n_blocks * block_size); }
};

// A chat turn for the engine: the conversation, rendered by the model's
// template on the engine side.
struct ChatRequest {
    quint64 ticket = 0;
    std::vector<folio::ChatMessage> messages;
    folio::SamplingParams sampling;
    int32_t max_tokens = 512;
    int32_t priority = 0;
    folio::ChatOverflow overflow = folio::ChatOverflow::DropOldestTurns;
    QString speculation;  // SamplingSettings::speculation and draft_max
    int32_t draft_max = 0;
};

// Where a reply stands before its first token (RequestUpdate::stage).
enum class RequestStage {
    Streaming,  // an ordinary update: text, statistics, the finish
    Loading,    // the model it waits for is loading
    Queued,     // in the engine's queue, behind `ahead` requests
    Prefill,    // the engine is reading its prompt
};

// One streamed update of a request (what is new since the last one).
struct RequestUpdate {
    quint64 ticket = 0;
    qint64 engine_id = -1;
    QString text;           // new text
    int new_tokens = 0;
    bool finished = false;
    QString reason;         // "stop", "stop_string", "length", "abort", "error" when finished
    QString error;
    folio::RequestTimings timings;
    RequestStage stage = RequestStage::Streaming;  // not Streaming: only where the request stands
    int ahead = 0;                // Queued: requests before it in the engine
    int dropped_messages = 0;     // the oldest messages left out to fit the context (drop-oldest)
    int full_prompt_tokens = 0;   // the whole conversation's prompt, when messages were dropped
    int context_tokens = 0;       // the context it was fitted to
    // [begin, end) of `text` (QString offsets) that came with accepted draft
    // tokens (speculative decoding); the rest came with the target's own.
    QVector<QPair<int, int>> draft_ranges;

    // `text` and `draft_ranges` from the engine's UTF-8 text and its byte
    // ranges (RequestOutput::draft_text). Each run between two boundaries is
    // converted on its own, so the offsets are exact for any text.
    void set_text(const std::string& utf8, const std::vector<std::pair<uint32_t, uint32_t>>& draft_bytes);
};

// One point of the live plots, over the interval since the previous one.
struct EngineSample {
    double time_s = 0;            // since the bridge started
    double prompt_tokens_per_s = 0;
    double generation_tokens_per_s = 0;
    double kv_usage = 0;          // 0..1; NAN where a remote engine does not report it
    int running = 0;
    int waiting = 0;
    double ttft_s = NAN;          // mean over requests whose first token came in the interval
    double inter_token_s = NAN;   // mean over tokens in the interval
    uint64_t preemptions_total = 0;
    // Speculative decoding over the interval (NAN where no drafts were
    // verified in it): acceptance rate (accepted / drafted), mean acceptance
    // length (1 + accepted / verify steps), and per verify step the draft
    // model's time and the target's verify pass; the latest step's K; paused:
    // speculation is on and sequences decoded in the interval, none with
    // drafts (adaptive K found that drafts cannot pay, e.g. at a large batch).
    bool spec_on = false;
    double acceptance_rate = NAN;
    double mean_acceptance_length = NAN;
    double draft_ms_per_step = NAN;
    double verify_ms_per_step = NAN;
    int draft_k = 0;
    bool spec_paused = false;
    int running_batch = 0;      // sequences in the latest step (the batch speculation paused at)
    // Since the engine started: per draft position, the share of verify steps
    // whose draft was accepted there (a shorter draft counts as not accepted).
    QVector<double> accepted_share_per_position;
};

// The latest step's block map with the request -> ticket map it needs.
struct BlockMapSnapshot {
    std::shared_ptr<const folio::StepEvent> event;
    QHash<qint64, quint64> tickets;  // engine request id -> UI ticket
};

QString finish_reason_name(folio::FinishReason reason);
// "1.2 GiB", "512 MiB", "12 KiB"
QString format_bytes(uint64_t bytes);
// "135 M", "1.2 B"
QString format_count(uint64_t count);

void register_studio_types();

}  // namespace folio::ui

Q_DECLARE_METATYPE(folio::ui::EngineSettings)
Q_DECLARE_METATYPE(folio::ui::ModelSummary)
Q_DECLARE_METATYPE(folio::ui::EngineStatus)
Q_DECLARE_METATYPE(folio::ui::ChatRequest)
Q_DECLARE_METATYPE(folio::ui::RequestUpdate)
Q_DECLARE_METATYPE(folio::ui::EngineSample)
Q_DECLARE_METATYPE(folio::ui::BlockMapSnapshot)
