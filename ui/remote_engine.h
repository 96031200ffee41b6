// An engine elsewhere: any OpenAI-compatible server (folio serve,
// llama-server, vLLM, SGLang) standing in for the studio's own engine. It
// lists /v1/models to connect, streams chat turns from /v1/chat/completions
// (SSE), times each reply on this side, and samples /metrics four times a
// second for the plots (remote_metrics.h), or, where the server has none, what its
// streams show here. Everything is asynchronous (QNetworkAccessManager on the
// UI thread): a refused connection, a wrong key, a server that never answers
// or one that does not speak the API end as a plain error, never as a wait.
// The EngineBridge routes its chats here while connected.
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QPointer>
#include <QStringList>
#include <QTimer>
#include <QUrl>
#include <QVector>

#include <deque>
#include <map>

#include "ui/remote_metrics.h"
#include "ui/studio_types.h"

class QNetworkAccessManager;
class QNetworkReply;
class QNetworkRequest;
class QSettings;

namespace folio::ui {

// A server the studio attaches to, saved by name (Engine > Connect to Server…).
struct RemoteProfile {
    QString name;      // shown in the menu; the URL's host:port by default
    QString url;       // "http://host:port" (a trailing /v1 is accepted)
    QString api_key;   // sent as a bearer token when set
    QString model;     // one of /v1/models; empty = the first it lists
    int timeout_s = 60;  // longest silence of a request before it fails

    // The server's root (scheme, host, port, any path before /v1), or an error message.
    QUrl base() const;
    QString validate() const;  // "" when usable
    QString display_name() const;

    // Profiles in the studio's settings, most recent first (the API key with them, in plain text).
    static QVector<RemoteProfile> load_all(QSettings& settings);
    static void save_all(QSettings& settings, const QVector<RemoteProfile>& profiles);
    // `p` first, replacing a profile of the same name.
    static QVector<RemoteProfile> remember(QVector<RemoteProfile> profiles, const RemoteProfile& p);
    bool operator==(const RemoteProfile&) const = default;
};

class RemoteEngine : public QObject {
    Q_OBJECT
public:
    explicit RemoteEngine(QObject* parent = nullptr);
    ~RemoteEngine() override;  // aborts what is in flight

    // Lists the server's models; connected() or connectFailed() answers.
    void connectTo(const RemoteProfile& profile);
    // Ends every reply (as aborted) and stops sampling.
    void disconnectFromServer();
    bool isConnected() const { return connected_; }
    const RemoteProfile& profile() const { return profile_; }
    const QStringList& models() const { return models_; }

    void submit(const ChatRequest& request);
    void abort(quint64 ticket);
    bool holds(quint64 ticket) const { return streams_.contains(ticket); }
    // The server's /metrics text, through prometheusReady (an explanation when it has none).
    void requestPrometheusText();

    // The chat-completions request body for a chat turn (the OpenAI fields,
    // and top_k / min_p / repetition_penalty where not off: vLLM, SGLang,
    // llama-server and folio serve take them).
    static QByteArray chat_body(const ChatRequest& request, const QString& model);

    // One more piece of an SSE stream: complete `data:` payloads are
    // taken from the front of `buffer`, the rest is kept for the next piece.
    static QList<QByteArray> take_sse_data(QByteArray& buffer);

signals:
    void connected(const folio::ui::ModelSummary& summary, const folio::ui::EngineStatus& status);
    void connectFailed(const QString& url, const QString& message);
    void disconnected();
    void requestUpdated(const folio::ui::RequestUpdate& update);
    void sampled(const folio::ui::EngineSample& sample);
    void prometheusReady(const QString& text);

private:
    struct Stream {
        QPointer<QNetworkReply> reply;
        QByteArray buffer;
        QElapsedTimer clock;   // since submit
        double first_token_s = -1;
        double last_token_s = -1;
        int chunks = 0;        // content pieces: the token count when the server sends no usage
        folio::RequestTimings timings;
        QString finish_reason;
        bool aborted = false;
        bool done = false;     // [DONE] or an error seen
    };
    QNetworkReply* get(const QString& path, int timeout_ms);
    int models_timeout_ms() const;  // listing models: the profile's timeout, at most 10 s
    QNetworkRequest request_for(const QString& path, int timeout_ms) const;
    void onModels(QNetworkReply* reply);
    void onStreamData(quint64 ticket);
    void onStreamFinished(quint64 ticket);
    // One `data:` payload: a chunk of the reply, or an error the server sent in the stream.
    void onChunk(quint64 ticket, Stream& s, const QByteArray& data);
    void finish(quint64 ticket, Stream& s, const QString& reason, const QString& error,
                Qt::ConnectionType delivery = Qt::DirectConnection);
    void pollMetrics();
    void onMetrics(QNetworkReply* reply);
    EngineSample clientSample(double now_s);

    QNetworkAccessManager* net_ = nullptr;
    RemoteProfile profile_;
    QString model_;
    QStringList models_;
    bool connected_ = false;
    QPointer<QNetworkReply> connecting_;
    std::map<quint64, Stream> streams_;  // node-based: a Stream& stays valid while others come and go

    // Sampling: /metrics while the server answers it with a known dialect, else client-side.
    QTimer poll_;
    QElapsedTimer clock_;
    QPointer<QNetworkReply> metrics_reply_;
    bool metrics_known_ = true;   // until a poll says otherwise
    // The readings of about the last second: rates over it, as the engine here gives them.
    std::deque<MetricsReading> readings_;
    // Client-side: tokens streamed and first tokens seen since the last sample.
    int interval_tokens_ = 0;
    double interval_ttft_sum_ = 0;
    int interval_ttft_count_ = 0;
    double interval_itl_sum_ = 0;
    int interval_itl_count_ = 0;
    double last_sample_s_ = 0;
};

}  // namespace folio::ui
