#include "ui/remote_engine.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QSettings>

#include <algorithm>

namespace folio::ui {

namespace {

constexpr int kModelsTimeoutMs = 10000;
constexpr int kMetricsTimeoutMs = 5000;
constexpr int kSampleIntervalMs = 250;  // rates over the trailing second, like EngineHost's
constexpr qint64 kMaxErrorBody = 64 * 1024;   // of a failed request's body, read for its message
constexpr qsizetype kMaxSseBuffer = 4 << 20;  // an unterminated event this long is not SSE

// "the server answered 401 …" from an OpenAI-style error body ({"error": {"message": …}}),
// or the start of whatever it sent.
QString error_from_body(int status, const QByteArray& body) {
    QString message;
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (doc.isObject()) {
        const QJsonValue e = doc.object().value("error");
        if (e.isObject()) message = e.toObject().value("message").toString();
        else if (e.isString()) message = e.toString();
        if (message.isEmpty()) message = doc.object().value("message").toString();
    }
    if (message.isEmpty()) message = QString::fromUtf8(body.left(200)).simplified();
    QString text = QObject::tr("the server answered %1").arg(status);
    if (status == 401 || status == 403)
        text += QObject::tr(" (the API key is missing or wrong: set it in Engine > Connect to Server…)");
    if (status == 404) text += QObject::tr(" (not found: is this an OpenAI-compatible server, and the model one it lists?)");
    return message.isEmpty() ? text : text + ": " + message;
}

// A reply's failure in words: the transport's, else the server's answer.
QString describe_failure(QNetworkReply* reply, const QUrl& url, int timeout_ms, bool timed_out) {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) return error_from_body(status, reply->read(kMaxErrorBody));
    const QString where = url.toDisplayString(QUrl::RemoveUserInfo | QUrl::RemovePath);
    if (timed_out)
        return QObject::tr("%1 did not answer within %2 s").arg(where).arg(timeout_ms / 1000.0, 0, 'g', 3);
    switch (reply->error()) {
        case QNetworkReply::ConnectionRefusedError:
            return QObject::tr("nothing answers at %1 (connection refused): is the server running?").arg(where);
        case QNetworkReply::HostNotFoundError: return QObject::tr("host %1 not found").arg(url.host());
        case QNetworkReply::RemoteHostClosedError:
            return QObject::tr("%1 closed the connection before answering").arg(where);
        default: break;
    }
    return QObject::tr("%1: %2").arg(where, reply->errorString());
}

QString finish_name(const QString& openai_reason) {
    if (openai_reason == "length") return "length";
    if (openai_reason.isEmpty() || openai_reason == "stop" || openai_reason == "eos") return "stop";
    return openai_reason;  // tool_calls, content_filter: as the server says
}

}  // namespace

// ---- RemoteProfile ---------------------------------------------------------

QUrl RemoteProfile::base() const {
    QString text = url.trimmed();
    if (!text.contains("://")) text = "http://" + text;
    QUrl u(text, QUrl::StrictMode);
    QString path = u.path();
    while (path.endsWith('/')) path.chop(1);
    if (path.endsWith("/v1")) path.chop(3);
    u.setPath(path);
    u.setQuery(QString());
    u.setFragment(QString());
    return u;
}

QString RemoteProfile::validate() const {
    if (url.trimmed().isEmpty()) return QObject::tr("no server URL");
    const QUrl u = base();
    if (!u.isValid() || u.host().isEmpty()) return QObject::tr("'%1' is not a server URL (http://host:port)").arg(url);
    if (u.scheme() != "http" && u.scheme() != "https")
        return QObject::tr("'%1': the URL must start with http:// or https://").arg(url);
    if (timeout_s < 1 || timeout_s > 3600) return QObject::tr("the timeout must be 1 to 3600 s");
    return {};
}

QString RemoteProfile::display_name() const {
    if (!name.trimmed().isEmpty()) return name.trimmed();
    const QUrl u = base();
    return u.port() > 0 ? QString("%1:%2").arg(u.host()).arg(u.port()) : u.host();
}

QVector<RemoteProfile> RemoteProfile::load_all(QSettings& settings) {
    QVector<RemoteProfile> out;
    const int n = settings.beginReadArray("remote/profiles");
    for (int i = 0; i < n; ++i) {
        settings.setArrayIndex(i);
        RemoteProfile p;
        p.name = settings.value("name").toString();
        p.url = settings.value("url").toString();
        p.api_key = settings.value("api_key").toString();
        p.model = settings.value("model").toString();
        p.timeout_s = settings.value("timeout_s", 60).toInt();
        if (p.validate().isEmpty()) out.push_back(p);
    }
    settings.endArray();
    return out;
}

void RemoteProfile::save_all(QSettings& settings, const QVector<RemoteProfile>& profiles) {
    settings.beginWriteArray("remote/profiles", static_cast<int>(profiles.size()));
    for (int i = 0; i < profiles.size(); ++i) {
        settings.setArrayIndex(i);
        const RemoteProfile& p = profiles[i];
        settings.setValue("name", p.name);
        settings.setValue("url", p.url);
        settings.setValue("api_key", p.api_key);
        settings.setValue("model", p.model);
        settings.setValue("timeout_s", p.timeout_s);
    }
    settings.endArray();
}

QVector<RemoteProfile> RemoteProfile::remember(QVector<RemoteProfile> profiles, const RemoteProfile& p) {
    profiles.erase(std::remove_if(profiles.begin(), profiles.end(),
                                  [&](const RemoteProfile& o) { return o.display_name() == p.display_name(); }),
                   profiles.end());
    profiles.prepend(p);
    constexpr int kMaxProfiles = 12;
    if (profiles.size() > kMaxProfiles) profiles.resize(kMaxProfiles);
    return profiles;
}

// ---- RemoteEngine ----------------------------------------------------------

RemoteEngine::RemoteEngine(QObject* parent) : QObject(parent), net_(new QNetworkAccessManager(this)) {
    poll_.setInterval(kSampleIntervalMs);
    connect(&poll_, &QTimer::timeout, this, &RemoteEngine::pollMetrics);
}

RemoteEngine::~RemoteEngine() {
    // Quietly: no one listens to a dying engine's updates.
    blockSignals(true);
    disconnectFromServer();
}

QNetworkRequest RemoteEngine::request_for(const QString& path, int timeout_ms) const {
    QUrl url = profile_.base();
    url.setPath(url.path() + path);
    QNetworkRequest r(url);
    r.setTransferTimeout(timeout_ms);
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    r.setHeader(QNetworkRequest::UserAgentHeader, "Folio Studio");
    if (!profile_.api_key.isEmpty()) r.setRawHeader("Authorization", "Bearer " + profile_.api_key.toUtf8());
    return r;
}

QNetworkReply* RemoteEngine::get(const QString& path, int timeout_ms) {
    return net_->get(request_for(path, timeout_ms));
}

int RemoteEngine::models_timeout_ms() const { return std::min(kModelsTimeoutMs, profile_.timeout_s * 1000); }

void RemoteEngine::connectTo(const RemoteProfile& profile) {
    disconnectFromServer();
    profile_ = profile;
    if (const QString bad = profile.validate(); !bad.isEmpty()) {
        emit connectFailed(profile.url, bad);
        return;
    }
    QNetworkReply* reply = get("/v1/models", models_timeout_ms());
    connecting_ = reply;
    connect(reply, &QNetworkReply::finished, this, [this, reply] { onModels(reply); });
}

void RemoteEngine::onModels(QNetworkReply* reply) {
    reply->deleteLater();
    if (reply != connecting_) return;  // a later connect or a disconnect superseded it
    connecting_.clear();
    const QString url = profile_.base().toString();
    if (reply->error() != QNetworkReply::NoError) {
        const bool timed_out = reply->error() == QNetworkReply::OperationCanceledError;
        emit connectFailed(url, describe_failure(reply, profile_.base(), models_timeout_ms(), timed_out));
        return;
    }
    const QByteArray body = reply->readAll();
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    QStringList ids;
    if (doc.isObject() && doc.object().value("data").isArray())
        for (const QJsonValue& m : doc.object().value("data").toArray())
            if (const QString id = m.toObject().value("id").toString(); !id.isEmpty()) ids << id;
    if (ids.isEmpty()) {
        emit connectFailed(url, tr("%1 is not an OpenAI-compatible server: /v1/models did not list models "
                                   "({\"data\": [{\"id\": …}]}); it sent: %2")
                                    .arg(url, QString::fromUtf8(body.left(120)).simplified()));
        return;
    }
    if (!profile_.model.isEmpty() && !ids.contains(profile_.model)) {
        emit connectFailed(url, tr("%1 does not serve the model '%2'; it lists: %3")
                                    .arg(url, profile_.model, ids.join(", ")));
        return;
    }
    models_ = ids;
    model_ = profile_.model.isEmpty() ? ids.front() : profile_.model;
    connected_ = true;
    clock_.start();
    metrics_known_ = true;
    readings_.clear();
    last_sample_s_ = 0;
    poll_.start();

    ModelSummary summary;
    summary.path = url;
    summary.name = model_;
    summary.format = tr("Remote server (OpenAI API)");
    summary.remote_url = url;
    summary.remote_models = models_;
    EngineStatus status;
    status.device = tr("remote: %1").arg(profile_.display_name());
    status.remote_url = url;
    emit connected(summary, status);
}

void RemoteEngine::disconnectFromServer() {
    poll_.stop();
    if (connecting_) connecting_->abort();
    connecting_.clear();
    if (metrics_reply_) metrics_reply_->abort();
    std::vector<quint64> tickets;
    for (const auto& [t, stream] : streams_) tickets.push_back(t);
    for (const quint64 t : tickets) abort(t);
    const bool was = connected_;
    connected_ = false;
    models_.clear();
    if (was) emit disconnected();
}

QByteArray RemoteEngine::chat_body(const ChatRequest& request, const QString& model) {
    QJsonArray messages;
    for (const folio::ChatMessage& m : request.messages)
        messages.append(QJsonObject{{"role", QString::fromStdString(m.role)},
                                    {"content", QString::fromStdString(m.content)}});
    const folio::SamplingParams& s = request.sampling;
    QJsonObject body{{"model", model},
                     {"messages", messages},
                     {"stream", true},
                     {"stream_options", QJsonObject{{"include_usage", true}}},
                     {"max_tokens", request.max_tokens},
                     {"temperature", s.temperature},
                     {"top_p", s.top_p}};
    if (s.frequency_penalty != 0.0f) body["frequency_penalty"] = s.frequency_penalty;
    if (s.presence_penalty != 0.0f) body["presence_penalty"] = s.presence_penalty;
    if (s.seed != folio::kRandomSeed) body["seed"] = static_cast<qint64>(s.seed);
    if (s.top_k > 0) body["top_k"] = s.top_k;
    if (s.min_p > 0.0f) body["min_p"] = s.min_p;
    if (s.repetition_penalty != 1.0f) body["repetition_penalty"] = s.repetition_penalty;
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

QList<QByteArray> RemoteEngine::take_sse_data(QByteArray& buffer) {
    QList<QByteArray> out;
    // Events end at a blank line; "\r\n" line ends are allowed.
    for (;;) {
        qsizetype end = -1, skip = 0;
        for (qsizetype i = 0; i + 1 < buffer.size(); ++i) {
            if (buffer[i] != '\n') continue;
            if (buffer[i + 1] == '\n') { end = i; skip = 2; break; }
            if (buffer[i + 1] == '\r' && i + 2 < buffer.size() && buffer[i + 2] == '\n') { end = i; skip = 3; break; }
        }
        if (end < 0) break;
        const QByteArray event = buffer.left(end);
        buffer.remove(0, end + skip);
        QByteArray data;
        bool any = false;
        for (QByteArray line : event.split('\n')) {
            if (line.endsWith('\r')) line.chop(1);
            if (!line.startsWith("data:")) continue;  // comments (":"), event:, id:, retry:
            line.remove(0, 5);
            if (line.startsWith(' ')) line.remove(0, 1);
            if (any) data += '\n';
            data += line;
            any = true;
        }
        if (any) out << data;
    }
    return out;
}

void RemoteEngine::submit(const ChatRequest& request) {
    const quint64 ticket = request.ticket;
    Stream& s = streams_[ticket];
    s.clock.start();
    if (!connected_) {
        finish(ticket, s, "error", tr("not connected to a server"), Qt::QueuedConnection);  // after submit returns
        return;
    }
    QNetworkRequest r = request_for("/v1/chat/completions", profile_.timeout_s * 1000);
    r.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
    r.setRawHeader("Accept", "text/event-stream");
    QNetworkReply* reply = net_->post(r, chat_body(request, model_));
    s.reply = reply;
    connect(reply, &QNetworkReply::readyRead, this, [this, ticket] { onStreamData(ticket); });
    connect(reply, &QNetworkReply::finished, this, [this, ticket] { onStreamFinished(ticket); });
}

void RemoteEngine::abort(quint64 ticket) {
    auto it = streams_.find(ticket);
    if (it == streams_.end()) return;
    it->second.aborted = true;
    if (it->second.reply) it->second.reply->abort();  // finished() follows, synchronously or later
    it = streams_.find(ticket);
    // Queued, as the engine here answers: the caller (a chat's Stop) is not re-entered.
    if (it != streams_.end()) finish(ticket, it->second, "abort", {}, Qt::QueuedConnection);
}

void RemoteEngine::onStreamData(quint64 ticket) {
    auto it = streams_.find(ticket);
    if (it == streams_.end() || !it->second.reply) return;
    Stream& s = it->second;
    const int status = s.reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) return;  // the error body is read when it ends
    s.buffer += s.reply->readAll();
    for (const QByteArray& data : take_sse_data(s.buffer)) {
        onChunk(ticket, s, data);
        if (!streams_.contains(ticket)) return;  // finished by that chunk
    }
    if (s.buffer.size() > kMaxSseBuffer)
        finish(ticket, s, "error", tr("the server's stream is not server-sent events (4 MiB without an event)"));
}

void RemoteEngine::onChunk(quint64 ticket, Stream& s, const QByteArray& data) {
    if (data.trimmed() == "[DONE]") {
        s.done = true;
        return;
    }
    QJsonParseError parse_error;
    const QJsonDocument doc = QJsonDocument::fromJson(data, &parse_error);
    if (!doc.isObject()) {
        finish(ticket, s, "error", tr("the server sent a stream event that is not JSON (%1): %2")
                                       .arg(parse_error.errorString(), QString::fromUtf8(data.left(120))));
        return;
    }
    const QJsonObject chunk = doc.object();
    if (chunk.contains("error")) {
        finish(ticket, s, "error", error_from_body(200, data));
        return;
    }
    RequestUpdate u;
    u.ticket = ticket;
    const double now = s.clock.nsecsElapsed() / 1e9;
    const QJsonArray choices = chunk.value("choices").toArray();
    if (!choices.isEmpty()) {
        const QJsonObject choice = choices.first().toObject();
        const QString piece = choice.value("delta").toObject().value("content").toString();
        if (!piece.isEmpty()) {
            u.text = piece;
            u.new_tokens = 1;
            ++s.chunks;
            ++interval_tokens_;
            if (s.first_token_s < 0) {
                s.first_token_s = now;
                interval_ttft_sum_ += now;
                ++interval_ttft_count_;
            } else {
                interval_itl_sum_ += now - s.last_token_s;
                ++interval_itl_count_;
            }
            s.last_token_s = now;
        }
        if (const QJsonValue r = choice.value("finish_reason"); r.isString()) s.finish_reason = r.toString();
    }
    if (const QJsonValue usage = chunk.value("usage"); usage.isObject()) {
        const QJsonObject o = usage.toObject();
        s.timings.prompt_tokens = o.value("prompt_tokens").toInt();
        s.timings.generated_tokens = o.value("completion_tokens").toInt();
        s.timings.cached_prompt_tokens = o.value("prompt_tokens_details").toObject().value("cached_tokens").toInt();
    }
    if (u.text.isEmpty()) return;
    s.timings.ttft_s = s.first_token_s;
    s.timings.e2e_s = now;
    u.timings = s.timings;
    if (u.timings.generated_tokens < s.chunks) u.timings.generated_tokens = s.chunks;
    emit requestUpdated(u);
}

void RemoteEngine::onStreamFinished(quint64 ticket) {
    auto it = streams_.find(ticket);
    if (it == streams_.end()) return;  // finish() has let go of its reply
    Stream& s = it->second;
    QNetworkReply* reply = s.reply;
    if (!reply) return;
    reply->deleteLater();
    if (s.aborted) return;  // abort() finishes it
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply->error() != QNetworkReply::NoError || status >= 400) {
        const bool timed_out = reply->error() == QNetworkReply::OperationCanceledError;
        finish(ticket, s, "error", describe_failure(reply, profile_.base(), profile_.timeout_s * 1000, timed_out));
        return;
    }
    onStreamData(ticket);  // whatever came with the end
    it = streams_.find(ticket);
    if (it == streams_.end()) return;
    if (!it->second.done && it->second.chunks == 0 && it->second.finish_reason.isEmpty()) {
        const QString type = reply->header(QNetworkRequest::ContentTypeHeader).toString();
        finish(ticket, it->second, "error", tr("the server's answer is not an OpenAI chat stream (content type '%1', "
                                        "no data: events)").arg(type));
        return;
    }
    finish(ticket, it->second, finish_name(it->second.finish_reason), {});
}

void RemoteEngine::finish(quint64 ticket, Stream& s, const QString& reason, const QString& error,
                          Qt::ConnectionType delivery) {
    RequestUpdate u;
    u.ticket = ticket;
    u.finished = true;
    u.reason = reason;
    u.error = error;
    u.timings = s.timings;
    u.timings.e2e_s = s.clock.nsecsElapsed() / 1e9;
    u.timings.ttft_s = std::max(0.0, s.first_token_s);
    if (u.timings.generated_tokens < s.chunks) u.timings.generated_tokens = s.chunks;
    if (s.reply) {
        QNetworkReply* r = s.reply;
        s.reply.clear();
        r->disconnect(this);
        r->deleteLater();
    }
    streams_.erase(ticket);
    if (delivery == Qt::QueuedConnection)
        QMetaObject::invokeMethod(this, [this, u] { emit requestUpdated(u); }, Qt::QueuedConnection);
    else
        emit requestUpdated(u);
}

void RemoteEngine::requestPrometheusText() {
    if (!connected_) {
        emit prometheusReady(tr("# not connected to a server\n"));
        return;
    }
    QNetworkReply* reply = get("/metrics", kMetricsTimeoutMs);
    connect(reply, &QNetworkReply::finished, this, [this, reply] {
        reply->deleteLater();
        if (reply->error() != QNetworkReply::NoError) {
            emit prometheusReady(tr("# %1 has no metrics: %2\n")
                                     .arg(profile_.base().toString(),
                                          describe_failure(reply, profile_.base(), kMetricsTimeoutMs,
                                                           reply->error() == QNetworkReply::OperationCanceledError)));
            return;
        }
        emit prometheusReady(QString::fromUtf8(reply->readAll()));
    });
}

void RemoteEngine::pollMetrics() {
    if (!connected_) return;
    if (!metrics_known_) {
        emit sampled(clientSample(clock_.nsecsElapsed() / 1e9));
        return;
    }
    if (metrics_reply_) return;  // the last one still on its way
    metrics_reply_ = get("/metrics", kMetricsTimeoutMs);
    QNetworkReply* reply = metrics_reply_;
    connect(reply, &QNetworkReply::finished, this, [this, reply] { onMetrics(reply); });
}

void RemoteEngine::onMetrics(QNetworkReply* reply) {
    reply->deleteLater();
    if (reply != metrics_reply_) return;
    metrics_reply_.clear();
    if (!connected_) return;
    const double now = clock_.nsecsElapsed() / 1e9;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply->error() != QNetworkReply::NoError && status != 404 && status != 501) {
        emit sampled(clientSample(now));  // a bad moment (busy, timed out): ask again next second
        return;
    }
    const MetricsReading reading = reply->error() == QNetworkReply::NoError
                                       ? read_metrics(parse_prometheus_text(QString::fromUtf8(reply->readAll())), now)
                                       : MetricsReading{};
    if (reading.dialect == MetricsDialect::None) {
        metrics_known_ = false;  // no /metrics, or names no plot knows: what the streams show, from now on
        emit sampled(clientSample(now));
        return;
    }
    // The oldest reading kept is at least a second old, when there is one.
    while (readings_.size() > 1 && readings_[1].time_s <= now - 1.0) readings_.pop_front();
    if (!readings_.empty()) {
        EngineSample s = sample_between(readings_.front(), reading);
        // Where the server has no latency histograms (llama-server's TTFT), this side's measurement.
        const EngineSample client = clientSample(now);
        if (std::isnan(s.ttft_s)) s.ttft_s = client.ttft_s;
        if (std::isnan(s.inter_token_s)) s.inter_token_s = client.inter_token_s;
        emit sampled(s);
    } else {
        clientSample(now);  // starts the client-side interval here
    }
    readings_.push_back(reading);
}

EngineSample RemoteEngine::clientSample(double now_s) {
    EngineSample s;
    s.time_s = now_s;
    s.kv_usage = NAN;  // the server's to know
    const double dt = now_s - last_sample_s_;
    if (dt > 0) s.generation_tokens_per_s = interval_tokens_ / dt;
    int running = 0;
    for (const auto& [t, st] : streams_) running += st.first_token_s >= 0 ? 1 : 0;
    s.running = running;
    s.waiting = static_cast<int>(streams_.size()) - running;  // sent, no token yet: queued or in prefill there
    if (interval_ttft_count_ > 0) s.ttft_s = interval_ttft_sum_ / interval_ttft_count_;
    if (interval_itl_count_ > 0) s.inter_token_s = interval_itl_sum_ / interval_itl_count_;
    interval_tokens_ = 0;
    interval_ttft_sum_ = interval_itl_sum_ = 0;
    interval_ttft_count_ = interval_itl_count_ = 0;
    last_sample_s_ = now_s;
    return s;
}

}  // namespace folio::ui
