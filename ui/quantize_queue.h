// The studio's quantization jobs: queued in order and run one at a time by a
// worker on a QThread of its own, so the UI thread never waits on one and
// the engine keeps serving chats meanwhile. A job's progress callback (on
// the worker thread) is sent to the UI thread as values in queued signals,
// at most 10 a second per job; cancel() removes a queued job, or stops the
// running one through QuantizeJob::cancel() (within a second; the engine
// leaves nothing under the output name). The output of the running job is
// remembered in the settings, so the temporary file of a studio killed
// mid-job is removed at the next start.
#pragma once

#include <QList>
#include <QObject>
#include <QThread>

#include <deque>
#include <memory>

#include "ui/quantize_request.h"

namespace folio::ui {

// On the worker thread: runs one job after another as the queue posts them.
class QuantizeWorker : public QObject {
    Q_OBJECT
public:
    void run(quint64 id, std::shared_ptr<folio::QuantizeJob> job);

signals:
    void progressed(const folio::ui::QuantizeJobProgress& progress);
    void finished(const folio::ui::QuantizeJobOutcome& outcome);
};

// One job as the UI sees it.
struct QuantizeJobEntry {
    quint64 id = 0;
    QuantizeRequest request;
    QuantizeJobState state = QuantizeJobState::Queued;
    QuantizeJobProgress progress;
    QuantizeJobOutcome outcome;
    int progress_updates = 0;       // progress values that reached the UI thread
};

class QuantizeQueue : public QObject {
    Q_OBJECT
public:
    explicit QuantizeQueue(QObject* parent = nullptr);
    ~QuantizeQueue() override;  // shutdown()

    // Queues a job; it starts when those before it have ended. Returns its id
    // (0, with `error` set, when the request cannot run).
    quint64 enqueue(const QuantizeRequest& request, QString* error = nullptr);
    // A queued job is removed; the running one is stopped (its end arrives as jobFinished).
    void cancel(quint64 id);
    // Cancels every job and joins the worker thread (at quit).
    void shutdown();

    const QuantizeJobEntry* job(quint64 id) const;
    QList<quint64> jobIds() const;
    bool isBusy() const { return running_ != 0 || !pending_.empty(); }
    quint64 runningJob() const { return running_; }
    int queuedCount() const { return static_cast<int>(pending_.size()); }

signals:
    void jobAdded(quint64 id);
    void jobStarted(quint64 id);
    void jobProgressed(quint64 id, const folio::ui::QuantizeJobProgress& progress);
    void jobFinished(quint64 id, const folio::ui::QuantizeJobOutcome& outcome);

private:
    void startNext();
    void onProgress(const QuantizeJobProgress& progress);
    void onFinished(const QuantizeJobOutcome& outcome);
    QuantizeJobEntry* entry(quint64 id);
    // The settings' list of outputs being written, for the cleanup after a kill.
    void rememberRunning(const QString& output, bool running);
    static void removeLeftovers();

    QThread thread_;
    QuantizeWorker* worker_ = nullptr;
    QList<QuantizeJobEntry> jobs_;     // every job of this session, in order
    struct Pending {
        quint64 id;
        std::shared_ptr<folio::QuantizeJob> job;
    };
    std::deque<Pending> pending_;
    quint64 running_ = 0;
    std::shared_ptr<folio::QuantizeJob> running_job_;
    quint64 next_id_ = 1;
    bool shut_down_ = false;
};

}  // namespace folio::ui
