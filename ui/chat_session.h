// A chat session as the studio keeps it: a title, its own system prompt and
// sampling settings, and the messages with the statistics of each reply.
// Plain values with a JSON form (what SessionStore writes to disk).
#pragma once

#include <QDateTime>
#include <QJsonObject>
#include <QPair>
#include <QString>
#include <QVector>

#include "folio/chat_prompt.h"
#include "folio/sampling.h"

namespace folio::ui {

// A reply's numbers, from the engine's RequestTimings (rates are cumulative).
struct MessageStats {
    double queue_s = 0;
    double ttft_s = 0;
    double e2e_s = 0;
    double prefill_tokens_per_s = 0;
    double decode_tokens_per_s = 0;
    int prompt_tokens = 0;
    int cached_prompt_tokens = 0;
    int generated_tokens = 0;
    int preemptions = 0;
    int truncated_tokens = 0;  // left out by the truncate / rolling policies
    // Speculative decoding: verify steps, drafts verified and accepted, and
    // the decode speed against a plain reply of this run (0: none yet).
    int n_drafts = 0;
    int draft_tokens = 0;
    int accepted_tokens = 0;
    double plain_decode_tokens_per_s = 0;
    QString summary() const;  // "TTFT 0.21 s · prefill 310 tok/s · decode 41.2 tok/s · ..."
};

struct ChatMessageRecord {
    QString role;            // "user", "assistant"
    QString content;
    QDateTime created;
    bool has_stats = false;
    MessageStats stats;
    // For replies: "" while generating, then the engine's finish reason
    // ("stop", "length", "abort", "error", ...) or "interrupted" when the app
    // ended mid-reply.
    QString finish_reason;
    QString error;
    // What was left out of the conversation to fit the context (drop-oldest).
    int dropped_messages = 0;
    int full_prompt_tokens = 0;
    int context_tokens = 0;
    // Before the first token, where the reply stands (not saved).
    enum class Waiting { Engine, Model, Queue, Prompt };
    Waiting waiting = Waiting::Engine;
    int waiting_ahead = 0;  // Queue: requests before it
    // [begin, end) of `content` that came with accepted draft tokens
    // (speculative decoding), adjacent ones merged; the chat view can tint
    // them. Not saved with the session nor exported: a reply read back from
    // disk has none.
    QVector<QPair<int, int>> draft_ranges{};
    bool generating() const { return role == "assistant" && finish_reason.isEmpty(); }
};

// The defaults are the engine's (SamplingParams), which `folio run` and
// `folio chat` use too: the studio and the CLI sample alike.
struct SamplingSettings {
    double temperature = folio::SamplingParams{}.temperature;
    int top_k = folio::SamplingParams{}.top_k;
    double top_p = folio::SamplingParams{}.top_p;
    double min_p = folio::SamplingParams{}.min_p;
    double repetition_penalty = folio::SamplingParams{}.repetition_penalty;
    int max_tokens = 512;
    qint64 seed = -1;  // -1 = random
    // Speculative decoding for the chat's replies: "" the engine's setting,
    // else a method name (folio::to_string of a SpecMethod: off, ngram, or
    // the engine's draft-model method); draft_max > 0: that K, fixed, else
    // the engine's choice. Greedy replies are the same either way.
    QString speculation;
    int draft_max = 0;
    folio::SamplingParams to_params() const;
    bool operator==(const SamplingSettings&) const = default;
};

// The JSON form of sampling settings (sessions, exports, presets); absent keys take the defaults.
QJsonObject sampling_to_json(const SamplingSettings& sampling);
SamplingSettings sampling_from_json(const QJsonObject& object);
QString overflow_to_string(folio::ChatOverflow overflow);
folio::ChatOverflow overflow_from_string(const QString& name);  // unknown: drop oldest turns

struct ChatSession {
    QString id;  // a UUID
    QString title;
    QString system_prompt;
    SamplingSettings sampling;
    folio::ChatOverflow overflow = folio::ChatOverflow::DropOldestTurns;  // when the chat outgrows the context
    QString preset;  // the name of the preset last applied ("" = none); its settings may have been edited since
    QVector<ChatMessageRecord> messages;
    QDateTime created;
    QDateTime updated;

    static ChatSession create(const QString& title);
    QJsonObject to_json() const;
    // Replies that were generating when the file was written become "interrupted".
    static ChatSession from_json(const QJsonObject& object);
};

}  // namespace folio::ui
