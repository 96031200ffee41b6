#include "ui/engine_bridge.h"

#include "ui/engine_host.h"

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
    connect(host_, &EngineHost::loadStarted, this, [this](const QString& path) {
        loading_ = true;
        emit loadingChanged(true, path);
    }, queued);
    connect(host_, &EngineHost::loaded, this, [this](const ModelSummary& summary, const EngineStatus& status) {
        loaded_ = true;
        loading_ = false;
        model_ = summary;
        status_ = status;
        emit loadingChanged(false, summary.path);
        emit modelLoaded(summary, status);
    }, queued);
    connect(host_, &EngineHost::loadFailed, this, [this](const QString& path, const QString& message) {
        loading_ = false;
        emit loadingChanged(false, path);
        emit modelLoadFailed(path, message);
    }, queued);
    connect(host_, &EngineHost::unloaded, this, [this] {
        loaded_ = false;
        model_ = {};
        status_ = {};
        last_block_map_ = {};
        emit modelUnloaded();
    }, queued);
    connect(host_, &EngineHost::requestUpdated, this, &EngineBridge::requestUpdated, queued);
    connect(host_, &EngineHost::blockMapUpdated, this, [this](const BlockMapSnapshot& snapshot) {
        last_block_map_ = snapshot;
        emit blockMapUpdated(snapshot);
    }, queued);
    connect(host_, &EngineHost::sampled, this, [this](const EngineSample& sample) {
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
    settings_ = settings;
    last_path_ = path;
    loading_ = true;
    QMetaObject::invokeMethod(host_, [host = host_, path, settings] { host->load(path, settings); },
                              Qt::QueuedConnection);
}

void EngineBridge::restart(const EngineSettings& settings) {
    settings_ = settings;
    if (last_path_.isEmpty()) return;
    load(last_path_, settings);
}

void EngineBridge::unload() {
    QMetaObject::invokeMethod(host_, [host = host_] { host->unload(); }, Qt::QueuedConnection);
}

quint64 EngineBridge::submit(ChatRequest request) {
    request.ticket = next_ticket_++;
    const quint64 ticket = request.ticket;
    QMetaObject::invokeMethod(host_, [host = host_, r = std::move(request)] { host->submit(r); },
                              Qt::QueuedConnection);
    return ticket;
}

void EngineBridge::requestPrometheusText() {
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
    QMetaObject::invokeMethod(host_, [host = host_, ticket] { host->abort(ticket); }, Qt::QueuedConnection);
}

}  // namespace folio::ui
