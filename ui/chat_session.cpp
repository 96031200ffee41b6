#include "ui/chat_session.h"

#include <QJsonArray>
#include <QObject>
#include <QUuid>

namespace folio::ui {

QString MessageStats::summary() const {
    QStringList parts;
    parts << QObject::tr("TTFT %1 s").arg(ttft_s, 0, 'f', 2);
    parts << QObject::tr("prefill %1 tok/s").arg(prefill_tokens_per_s, 0, 'f', 0);
    parts << QObject::tr("decode %1 tok/s").arg(decode_tokens_per_s, 0, 'f', 1);
    parts << QObject::tr("%1 prompt + %2 generated tokens").arg(prompt_tokens).arg(generated_tokens);
    parts << QObject::tr("%1 reused from prefix cache").arg(cached_prompt_tokens);
    if (preemptions == 1) parts << QObject::tr("1 preemption");
    if (preemptions > 1) parts << QObject::tr("%1 preemptions").arg(preemptions);
    if (truncated_tokens > 0) parts << QObject::tr("%1 tokens left out to fit the context").arg(truncated_tokens);
    if (draft_tokens > 0) {
        parts << QObject::tr("drafted %1 · accepted %2 (%3 %)")
                     .arg(draft_tokens)
                     .arg(accepted_tokens)
                     .arg(100.0 * accepted_tokens / draft_tokens, 0, 'f', 0);
        if (plain_decode_tokens_per_s > 0 && decode_tokens_per_s > 0)
            parts << QObject::tr("%1x plain decode (%2 tok/s)")
                         .arg(decode_tokens_per_s / plain_decode_tokens_per_s, 0, 'f', 2)
                         .arg(plain_decode_tokens_per_s, 0, 'f', 1);
    }
    return parts.join(QStringLiteral(" · "));
}

folio::SamplingParams SamplingSettings::to_params() const {
    folio::SamplingParams p;
    p.temperature = static_cast<float>(temperature);
    p.top_k = top_k;
    p.top_p = static_cast<float>(top_p);
    p.min_p = static_cast<float>(min_p);
    p.repetition_penalty = static_cast<float>(repetition_penalty);
    p.seed = seed < 0 ? folio::kRandomSeed : static_cast<uint64_t>(seed);
    return p;
}

ChatSession ChatSession::create(const QString& title) {
    ChatSession s;
    s.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    s.title = title;
    s.created = s.updated = QDateTime::currentDateTimeUtc();
    return s;
}

namespace {

QJsonObject stats_to_json(const MessageStats& s) {
    return QJsonObject{{"queue_s", s.queue_s},
                       {"ttft_s", s.ttft_s},
                       {"e2e_s", s.e2e_s},
                       {"prefill_tokens_per_s", s.prefill_tokens_per_s},
                       {"decode_tokens_per_s", s.decode_tokens_per_s},
                       {"prompt_tokens", s.prompt_tokens},
                       {"cached_prompt_tokens", s.cached_prompt_tokens},
                       {"generated_tokens", s.generated_tokens},
                       {"preemptions", s.preemptions},
                       {"truncated_tokens", s.truncated_tokens}};
}

MessageStats stats_from_json(const QJsonObject& o) {
    MessageStats s;
    s.queue_s = o.value("queue_s").toDouble();
    s.ttft_s = o.value("ttft_s").toDouble();
    s.e2e_s = o.value("e2e_s").toDouble();
    s.prefill_tokens_per_s = o.value("prefill_tokens_per_s").toDouble();
    s.decode_tokens_per_s = o.value("decode_tokens_per_s").toDouble();
    s.prompt_tokens = o.value("prompt_tokens").toInt();
    s.cached_prompt_tokens = o.value("cached_prompt_tokens").toInt();
    s.generated_tokens = o.value("generated_tokens").toInt();
    s.preemptions = o.value("preemptions").toInt();
    s.truncated_tokens = o.value("truncated_tokens").toInt();
    return s;
}

}  // namespace

QJsonObject sampling_to_json(const SamplingSettings& s) {
    return QJsonObject{{"temperature", s.temperature},       {"top_k", s.top_k},
                       {"top_p", s.top_p},                   {"min_p", s.min_p},
                       {"repetition_penalty", s.repetition_penalty}, {"max_tokens", s.max_tokens},
                       {"seed", static_cast<double>(s.seed)},
                       {"speculation", s.speculation},       {"draft_max", s.draft_max}};
}

SamplingSettings sampling_from_json(const QJsonObject& o) {
    const SamplingSettings d;
    SamplingSettings s;
    s.temperature = o.value("temperature").toDouble(d.temperature);
    s.top_k = o.value("top_k").toInt(d.top_k);
    s.top_p = o.value("top_p").toDouble(d.top_p);
    s.min_p = o.value("min_p").toDouble(d.min_p);
    s.repetition_penalty = o.value("repetition_penalty").toDouble(d.repetition_penalty);
    s.max_tokens = o.value("max_tokens").toInt(d.max_tokens);
    s.seed = static_cast<qint64>(o.value("seed").toDouble(static_cast<double>(d.seed)));
    s.speculation = o.value("speculation").toString(d.speculation);
    s.draft_max = o.value("draft_max").toInt(d.draft_max);
    return s;
}

QString overflow_to_string(folio::ChatOverflow overflow) {
    const std::string_view name = folio::to_string(overflow);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

folio::ChatOverflow overflow_from_string(const QString& name) {
    return folio::chat_overflow_from_string(name.toStdString()).value_or(folio::ChatOverflow::DropOldestTurns);
}

QJsonObject ChatSession::to_json() const {
    QJsonArray list;
    for (const ChatMessageRecord& m : messages) {
        QJsonObject o{{"role", m.role},
                      {"content", m.content},
                      {"created", m.created.toString(Qt::ISODateWithMs)},
                      {"finish_reason", m.finish_reason}};
        if (!m.error.isEmpty()) o.insert("error", m.error);
        if (m.dropped_messages > 0)
            o.insert("dropped", QJsonObject{{"messages", m.dropped_messages},
                                            {"prompt_tokens", m.full_prompt_tokens},
                                            {"context_tokens", m.context_tokens}});
        if (m.has_stats) o.insert("stats", stats_to_json(m.stats));
        list.append(o);
    }
    return QJsonObject{{"id", id},
                       {"title", title},
                       {"system_prompt", system_prompt},
                       {"sampling", sampling_to_json(sampling)},
                       {"overflow", overflow_to_string(overflow)},
                       {"preset", preset},
                       {"created", created.toString(Qt::ISODateWithMs)},
                       {"updated", updated.toString(Qt::ISODateWithMs)},
                       {"messages", list}};
}

ChatSession ChatSession::from_json(const QJsonObject& object) {
    ChatSession s;
    s.id = object.value("id").toString();
    if (s.id.isEmpty()) s.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    s.title = object.value("title").toString();
    s.system_prompt = object.value("system_prompt").toString();
    s.sampling = sampling_from_json(object.value("sampling").toObject());
    s.overflow = overflow_from_string(object.value("overflow").toString());
    s.preset = object.value("preset").toString();
    s.created = QDateTime::fromString(object.value("created").toString(), Qt::ISODateWithMs);
    s.updated = QDateTime::fromString(object.value("updated").toString(), Qt::ISODateWithMs);
    for (const QJsonValue& v : object.value("messages").toArray()) {
        const QJsonObject o = v.toObject();
        ChatMessageRecord m;
        m.role = o.value("role").toString();
        if (m.role != "user" && m.role != "assistant") continue;
        m.content = o.value("content").toString();
        m.created = QDateTime::fromString(o.value("created").toString(), Qt::ISODateWithMs);
        m.finish_reason = o.value("finish_reason").toString();
        m.error = o.value("error").toString();
        const QJsonObject dropped = o.value("dropped").toObject();
        m.dropped_messages = dropped.value("messages").toInt();
        m.full_prompt_tokens = dropped.value("prompt_tokens").toInt();
        m.context_tokens = dropped.value("context_tokens").toInt();
        if (o.contains("stats")) {
            m.has_stats = true;
            m.stats = stats_from_json(o.value("stats").toObject());
        }
        if (m.role == "assistant" && m.finish_reason.isEmpty()) m.finish_reason = "interrupted";
        s.messages.push_back(m);
    }
    return s;
}

}  // namespace folio::ui
