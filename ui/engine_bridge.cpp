#include "ui/engine_bridge.h"

#include "ui/engine_host.h"
#include "ui/remote_engine.h"

namespace folio::ui {

EngineBridge::EngineBridge(QObject* parent) : QObject(parent) {
    register_studio_types();
    thread_.setObjectName("folio-engine-host");
    host_ = new EngineHost;
    host_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, host_, &QObject::deleteLater);

    const auto queued = Qt::QueuedConnection;
    connect(host_, &EngineHost::inspected, this, &EngineBridge::modelInspected, queued);
    connect(host_, &EngineHost::inspectFailed, this, &EngineBridge::modelInspectFailed, queued);
    // While attached to a server (remote_), what the host still says about a
    // local model it is letting go of is not the studio's engine any more.
    connect(host_, &EngineHost::loadStarted, this, [this](const QString& path) {
        if (remote_) return;
        loading_ = true;
        emit loadingChanged(true, path);
    }, queued);
    connect(host_, &EngineHost::loaded, this, [this](const ModelSummary& summary, const EngineStatus& status) {
        if (remote_) return;
        loaded_ = true;
        loading_ = false;
        model_ = summary;
        status_ = status;
        emit loadingChanged(false, summary.path);
        emit modelLoaded(summary, status);
    }, queued);
    connect(host_, &EngineHost::loadFailed, this, [this](const QString& path, const QString& message) {
        if (remote_) return;
        loading_ = false;
        emit loadingChanged(false, path);
        emit modelLoadFailed(path, message);
    }, queued);
    connect(host_, &EngineHost::unloaded, this, [this] {
        if (remote_ || !loaded_) return;
        loaded_ = false;
        model_ = {};
        status_ = {};
        last_block_map_ = {};
        emit modelUnloaded();
    }, queued);
    connect(host_, &EngineHost::requestUpdated, this, &EngineBridge::requestUpdated, queued);
    connect(host_, &EngineHost::blockMapUpdated, this, [this](const BlockMapSnapshot& snapshot) {
        if (remote_) return;
        last_block_map_ = snapshot;
        emit blockMapUpdated(snapshot);
    }, queued);
    connect(host_, &EngineHost::sampled, this, [this](const EngineSample& sample) {
        if (remote_) return;
        last_sample_ = sample;
        emit sampled(sample);
    }, queued);
    connect(host_, &EngineHost::prometheusReady, this, &EngineBridge::prometheusText, queued);
    connect(host_, &EngineHost::servingChanged, this, [this](bool serving, const QString& url, const QString& error) {
        serving_ = serving;
        server_url_ = url;
        emit servingChanged(serving, url, error);
    }, queued);
    thread_.start();
}

EngineBridge::~EngineBridge() {
    // The one place the UI thread waits: at exit, for the engine to let go of the model.
    QMetaObject::invokeMethod(host_, &EngineHost::shutdown, Qt::BlockingQueuedConnection);
    thread_.quit();
    thread_.wait();
}

void EngineBridge::inspect(const QString& path) {
    QMetaObject::invokeMethod(host_, [host = host_, path] { host->inspect(path); }, Qt::QueuedConnection);
}

void EngineBridge::load(const QString& path, const EngineSettings& settings) {
    disconnectRemote();
    settings_ = settings;
    last_path_ = path;
    loading_ = true;
    QMetaObject::invokeMethod(host_, [host = host_, path, settings] { host->load(path, settings); },
                              Qt::QueuedConnection);
}

void EngineBridge::restart(const EngineSettings& settings) {
    settings_ = settings;
    if (last_path_.isEmpty() || remote_) return;
    load(last_path_, settings);
}

void EngineBridge::unload() {
    if (remote_) {
        disconnectRemote();
        return;
    }
    QMetaObject::invokeMethod(host_, [host = host_] { host->unload(); }, Qt::QueuedConnection);
}

quint64 EngineBridge::submit(ChatRequest request) {
    request.ticket = next_ticket_++;
    const quint64 ticket = request.ticket;
    if (remote_) {
        remote_->submit(request);
        return ticket;
    }
    QMetaObject::invokeMethod(host_, [host = host_, r = std::move(request)] { host->submit(r); },
                              Qt::QueuedConnection);
    return ticket;
}

void EngineBridge::requestPrometheusText() {
    if (remote_) {
        remote_->requestPrometheusText();
        return;
    }
    QMetaObject::invokeMethod(host_, [host = host_] { host->prometheusText(); }, Qt::QueuedConnection);
}

void EngineBridge::serve(const QString& host, int port, const QString& api_key) {
    QMetaObject::invokeMethod(host_, [host = host_, h = host, port, api_key] { host->serve(h, port, api_key); },
                              Qt::QueuedConnection);
}

void EngineBridge::stopServing() {
    QMetaObject::invokeMethod(host_, [host = host_] { host->stopServing(); }, Qt::QueuedConnection);
}

void EngineBridge::abort(quint64 ticket) {
    if (remote_ && remote_->holds(ticket)) {
        remote_->abort(ticket);
        return;
    }
    QMetaObject::invokeMethod(host_, [host = host_, ticket] { host->abort(ticket); }, Qt::QueuedConnection);
}

void EngineBridge::connectRemote(const RemoteProfile& profile) {
    disconnectRemote();
    if (loaded_ || loading_) {
        last_path_.clear();  // a restart has no local model to go back to
        unload();
        const bool was_loaded = loaded_;
        loaded_ = loading_ = false;
        model_ = {};
        status_ = {};
        last_block_map_ = {};
        if (was_loaded) emit modelUnloaded();
    }
    remote_ = new RemoteEngine(this);
    loading_ = true;
    emit loadingChanged(true, profile.base().toString());
    connect(remote_, &RemoteEngine::connected, this, [this](const ModelSummary& summary, const EngineStatus& status) {
        loaded_ = true;
        loading_ = false;
        model_ = summary;
        status_ = status;
        last_block_map_ = {};
        emit loadingChanged(false, summary.path);
        emit modelLoaded(summary, status);
    });
    connect(remote_, &RemoteEngine::connectFailed, this, [this](const QString& url, const QString& message) {
        loading_ = false;
        remote_->deleteLater();
        remote_ = nullptr;
        emit loadingChanged(false, url);
        emit remoteFailed(url, message);
    });
    connect(remote_, &RemoteEngine::requestUpdated, this, &EngineBridge::requestUpdated);
    connect(remote_, &RemoteEngine::sampled, this, [this](const EngineSample& sample) {
        last_sample_ = sample;
        emit sampled(sample);
    });
    connect(remote_, &RemoteEngine::prometheusReady, this, &EngineBridge::prometheusText);
    remote_->connectTo(profile);
}

void EngineBridge::disconnectRemote() {
    if (!remote_) return;
    RemoteEngine* remote = remote_;
    remote_ = nullptr;
    remote->disconnectFromServer();  // its replies end as aborted, through requestUpdated
    remote->deleteLater();
    const bool was_loaded = loaded_;
    loaded_ = false;
    loading_ = false;
    model_ = {};
    status_ = {};
    if (was_loaded) emit modelUnloaded();
}

}  // namespace folio::ui
