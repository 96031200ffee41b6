// The engine side of the studio. An EngineHost lives on a QThread of its
// own: it loads models (which blocks: files are read and validated), starts
// and stops the folio::Engine, renders chats through the model's template,
// and turns the engine's callbacks (which run on the engine thread) into
// queued signals carrying immutable values. Widgets never see it: they talk
// to the EngineBridge, which posts to these slots.
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QTimer>

#include <deque>
#include <memory>
#include <mutex>

#include "ui/studio_types.h"

namespace folio::ui {

class EngineHost : public QObject {
    Q_OBJECT
public:
    EngineHost();
    ~EngineHost() override;

public slots:
    // Reads a model's description only (no backend): for the inspector and the memory estimate.
    void inspect(const QString& path);
    // Stops any engine, loads `path` and starts an engine with `settings`.
    void load(const QString& path, const folio::ui::EngineSettings& settings);
    void unload();
    void submit(const folio::ui::ChatRequest& request);
    void abort(quint64 ticket);
    // The engine's counters and histograms in the Prometheus text format.
    void prometheusText();
    // Ends every request and releases the model (before the thread quits).
    void shutdown();
    // Serves the OpenAI API (folio::ApiServer, docs/server.md) on the engine
    // of the chats at host:port (0: any free port) until stopServing(), and
    // again on each engine a load or restart starts; servingChanged says so.
    void serve(const QString& host, int port, const QString& api_key);
    void stopServing();

signals:
    void inspected(const folio::ui::ModelSummary& summary);
    void inspectFailed(const QString& path, const QString& message);
    void loadStarted(const QString& path);
    void loaded(const folio::ui::ModelSummary& summary, const folio::ui::EngineStatus& status);
    void loadFailed(const QString& path, const QString& message);
    void unloaded();
    void requestUpdated(const folio::ui::RequestUpdate& update);
    void blockMapUpdated(const folio::ui::BlockMapSnapshot& snapshot);
    void sampled(const folio::ui::EngineSample& sample);
    void prometheusReady(const QString& text);
    // The server's state: serving at url, or not (error: why, when it could not start).
    void servingChanged(bool serving, const QString& url, const QString& error);

private:
    struct Loaded;
    void on_step(std::shared_ptr<const folio::StepEvent> event);   // engine thread
    void on_output(quint64 ticket, const folio::RequestOutput& out);  // engine thread
    // Where each request without a token yet stands (queued or being read), sent when it changes.
    void report_stages(const folio::StepEvent& event);
    void tick();  // host thread, every 50 ms: at most 20 block maps a second, a plot sample every 100 ms
    void release();
    void start_server();  // on the loaded engine, when serve_ asks for it

    struct Serve {
        bool on = false;
        QString host = "127.0.0.1";
        int port = 8080;  // the bound one once started, kept across engine restarts
        QString api_key;
    } serve_;

    std::unique_ptr<Loaded> loaded_;
    // The folio::ApiServer on loaded_'s engine (Serve), reset before it; held
    // type-erased so that a studio built without cpp-httplib needs no server code.
    std::shared_ptr<void> server_;
    QTimer* ticker_ = nullptr;
    QElapsedTimer clock_;
    int ticks_ = 0;

    // Shared with the engine thread.
    std::mutex mutex_;
    std::shared_ptr<const folio::StepEvent> latest_step_;
    bool step_pending_ = false;
    QHash<qint64, quint64> tickets_;   // engine id -> ticket, while the request lives
    QHash<quint64, qint64> requests_;  // ticket -> engine id
    QSet<qint64> first_token_seen_;
    struct Stage {
        RequestStage stage = RequestStage::Queued;
        int ahead = 0;
    };
    QHash<qint64, Stage> stages_;  // requests without an output yet, as last reported
    double ttft_sum_ = 0;
    int ttft_count_ = 0;
    // Speculative decoding since the last sample, from the step events.
    struct SpecInterval {
        uint64_t verify_steps = 0;      // steps that verified drafts
        uint64_t plain_decode_steps = 0;  // steps that decoded without any
        uint64_t draft_tokens = 0, accepted_tokens = 0, drafts = 0;
        double draft_s = 0, verify_s = 0;
        int draft_k = 0, running = 0;
    } spec_;

    // Host thread only: the counters over the last second, for rates that
    // do not jump with every 100 ms sample.
    struct CounterReading {
        double time_s;
        uint64_t prompt_tokens, generation_tokens, itl_count;
        double itl_sum;
    };
    std::deque<CounterReading> readings_;
};

}  // namespace folio::ui
