// The widgets' one door to the engine. EngineBridge lives on the UI thread
// and owns an EngineHost on a thread of its own; every call here posts to
// the host and returns at once (the UI thread never waits on a model load or
// a step), and every answer comes back as a queued signal carrying a value.
// Requests are named by tickets the bridge hands out, so a chat can stop or
// follow its reply across engine restarts.
#pragma once

#include <QObject>
#include <QThread>

#include "ui/studio_types.h"

namespace folio::ui {

class EngineHost;
class RemoteEngine;
struct RemoteProfile;

class EngineBridge : public QObject {
    Q_OBJECT
public:
    explicit EngineBridge(QObject* parent = nullptr);
    ~EngineBridge() override;  // ends every request and joins the engine's threads

    void inspect(const QString& path);
    void load(const QString& path, const EngineSettings& settings);
    // Restarts the engine on the last model asked for with new settings (requests in flight end as aborted).
    void restart(const EngineSettings& settings);
    void unload();
    // The settings the next load uses.
    void setSettings(const EngineSettings& settings) { settings_ = settings; }
    // Queues a chat turn; the updates arrive through requestUpdated with the returned ticket.
    quint64 submit(ChatRequest request);
    void abort(quint64 ticket);
    // Asks for the Prometheus text; it comes back through prometheusText().
    void requestPrometheusText();
    // The OpenAI API on the chats' engine (EngineHost::serve); servingChanged answers.
    void serve(const QString& host, int port, const QString& api_key = {});
    void stopServing();
    bool isServing() const { return serving_; }
    const QString& serverUrl() const { return server_url_; }

    // An OpenAI-compatible server in place of the engine here (RemoteEngine):
    // the local model is unloaded, chats stream from the server until
    // disconnectRemote() or a load; answered by modelLoaded (status().remote_url
    // set) or remoteFailed.
    void connectRemote(const RemoteProfile& profile);
    void disconnectRemote();
    bool isRemote() const { return remote_ != nullptr; }
    RemoteEngine* remote() const { return remote_; }

    bool isLoaded() const { return loaded_; }
    bool isLoading() const { return loading_; }
    const ModelSummary& model() const { return model_; }
    const EngineStatus& status() const { return status_; }
    const EngineSettings& settings() const { return settings_; }
    const EngineSample& lastSample() const { return last_sample_; }
    const BlockMapSnapshot& lastBlockMap() const { return last_block_map_; }

signals:
    void modelInspected(const folio::ui::ModelSummary& summary);
    void modelInspectFailed(const QString& path, const QString& message);
    void loadingChanged(bool loading, const QString& path);
    void modelLoaded(const folio::ui::ModelSummary& summary, const folio::ui::EngineStatus& status);
    void modelLoadFailed(const QString& path, const QString& message);
    // connectRemote() could not attach: the server is not there, refused, or not OpenAI's.
    void remoteFailed(const QString& url, const QString& message);
    void modelUnloaded();
    void requestUpdated(const folio::ui::RequestUpdate& update);
    void blockMapUpdated(const folio::ui::BlockMapSnapshot& snapshot);
    void sampled(const folio::ui::EngineSample& sample);
    void prometheusText(const QString& text);
    void servingChanged(bool serving, const QString& url, const QString& error);

private:
    QThread thread_;
    EngineHost* host_ = nullptr;
    quint64 next_ticket_ = 1;
    bool loaded_ = false;
    bool loading_ = false;
    ModelSummary model_;
    QString last_path_;  // the model the last load asked for: a restart reloads it even after a failure
    EngineStatus status_;
    EngineSettings settings_;
    EngineSample last_sample_;
    BlockMapSnapshot last_block_map_;
    RemoteEngine* remote_ = nullptr;  // while attached to a server
    bool serving_ = false;
    QString server_url_;
};

}  // namespace folio::ui
