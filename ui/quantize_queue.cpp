#include "ui/quantize_queue.h"

#include <cerrno>
#ifdef _WIN32
#include <windows.h>
#else
#include <signal.h>
#endif

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QSettings>

#include "ui/session_store.h"

namespace folio::ui {

namespace {

// Whether process `pid` still runs (possibly as another user).
bool process_runs(qint64 pid) {
#ifdef _WIN32
    HANDLE process = ::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, DWORD(pid));
    if (!process) return ::GetLastError() == ERROR_ACCESS_DENIED;
    DWORD code = 0;
    const bool runs = ::GetExitCodeProcess(process, &code) && code == STILL_ACTIVE;
    ::CloseHandle(process);
    return runs;
#else
    return ::kill(pid_t(pid), 0) == 0 || errno == EPERM;  // EPERM: it runs, as another user
#endif
}

constexpr qint64 kProgressIntervalMs = 100;  // at most 10 updates a second per job
const char* kRunningKey = "quantize/running";

QuantizeJobProgress to_value(quint64 id, const folio::QuantizeProgress& p) {
    QuantizeJobProgress v;
    v.job = id;
    const std::string_view phase = folio::quantize_phase_name(p.phase);
    v.phase = QString::fromUtf8(phase.data(), static_cast<qsizetype>(phase.size()));
    v.phase_id = p.phase;
    v.tensor_index = static_cast<qint64>(p.tensor_index);
    v.n_tensors = static_cast<qint64>(p.n_tensors);
    v.tensor_name = QString::fromStdString(p.tensor_name);
    v.bytes_done = p.bytes_done;
    v.bytes_total = p.bytes_total;
    v.elapsed_s = p.elapsed_s;
    v.eta_s = p.eta_s;
    return v;
}

}  // namespace

void QuantizeWorker::run(quint64 id, std::shared_ptr<folio::QuantizeJob> job) {
    QuantizeJobOutcome outcome;
    outcome.job = id;
    folio::Result<folio::QuantizeReport> report = job->run();
    if (report) {
        outcome.state = QuantizeJobState::Done;
        outcome.report = std::make_shared<const folio::QuantizeReport>(std::move(*report));
    } else if (job->was_cancelled()) {
        outcome.state = QuantizeJobState::Cancelled;
        outcome.message = tr("cancelled; nothing was written");
    } else {
        outcome.state = QuantizeJobState::Failed;
        outcome.message = QString::fromStdString(report.error().message) + tr("; nothing was written");
    }
    emit finished(outcome);
}

QuantizeQueue::QuantizeQueue(QObject* parent) : QObject(parent) {
    register_quantize_types();
    removeLeftovers();
    thread_.setObjectName("folio-quantize");
    worker_ = new QuantizeWorker;
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    connect(worker_, &QuantizeWorker::progressed, this, &QuantizeQueue::onProgress, Qt::QueuedConnection);
    connect(worker_, &QuantizeWorker::finished, this, &QuantizeQueue::onFinished, Qt::QueuedConnection);
    thread_.start();
}

QuantizeQueue::~QuantizeQueue() { shutdown(); }

quint64 QuantizeQueue::enqueue(const QuantizeRequest& request, QString* error) {
    folio::Result<folio::QuantizeOptions> options = request.toOptions();
    if (!options || shut_down_) {
        if (error) *error = options ? tr("the studio is quitting") : QString::fromStdString(options.error().message);
        return 0;
    }
    const quint64 id = next_id_++;
    // The engine calls back on the worker thread; values leave it through a
    // queued signal, the latest at most every 100 ms (and the last one).
    auto since_last = std::make_shared<QElapsedTimer>();
    options->on_progress = [worker = worker_, id, since_last](const folio::QuantizeProgress& p) {
        if (since_last->isValid() && since_last->elapsed() < kProgressIntervalMs && p.phase != folio::QuantizePhase::Done)
            return;
        since_last->start();
        emit worker->progressed(to_value(id, p));
    };
    QuantizeJobEntry e;
    e.id = id;
    e.request = request;
    jobs_.push_back(e);
    pending_.push_back({id, std::make_shared<folio::QuantizeJob>(std::move(*options))});
    emit jobAdded(id);
    if (running_ == 0) startNext();
    return id;
}

void QuantizeQueue::startNext() {
    if (running_ != 0 || pending_.empty() || shut_down_) return;
    Pending next = std::move(pending_.front());
    pending_.pop_front();
    running_ = next.id;
    running_job_ = next.job;
    QuantizeJobEntry* e = entry(next.id);
    e->state = QuantizeJobState::Running;
    rememberRunning(e->request.output, true);
    QuantizeWorker* worker = worker_;
    QMetaObject::invokeMethod(worker, [worker, id = next.id, job = next.job] { worker->run(id, job); }, Qt::QueuedConnection);
    emit jobStarted(next.id);
}

void QuantizeQueue::cancel(quint64 id) {
    if (id == running_) {
        running_job_->cancel();  // its end arrives from the worker
        return;
    }
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if (it->id != id) continue;
        pending_.erase(it);
        QuantizeJobEntry* e = entry(id);
        e->state = QuantizeJobState::Cancelled;
        e->outcome.job = id;
        e->outcome.state = QuantizeJobState::Cancelled;
        e->outcome.message = tr("cancelled before it started; nothing was written");
        emit jobFinished(id, e->outcome);
        return;
    }
}

void QuantizeQueue::shutdown() {
    if (shut_down_) return;
    shut_down_ = true;
    // No signals from here: at quit the panels may be gone already.
    for (const Pending& p : pending_) {
        QuantizeJobEntry* e = entry(p.id);
        e->state = QuantizeJobState::Cancelled;
        e->outcome = {p.id, QuantizeJobState::Cancelled, tr("cancelled at quit before it started; nothing was written"), nullptr};
    }
    pending_.clear();
    if (running_job_) running_job_->cancel();
    thread_.quit();
    thread_.wait();  // the running job stops within a second
    if (running_ == 0) return;
    QuantizeJobEntry* e = entry(running_);
    rememberRunning(e->request.output, false);
    e->state = QuantizeJobState::Cancelled;
    e->outcome = {running_, QuantizeJobState::Cancelled, tr("cancelled at quit; nothing was written"), nullptr};
    running_ = 0;
    running_job_.reset();
}

void QuantizeQueue::onProgress(const QuantizeJobProgress& progress) {
    QuantizeJobEntry* e = entry(progress.job);
    if (!e || e->state != QuantizeJobState::Running) return;
    e->progress = progress;
    ++e->progress_updates;
    emit jobProgressed(progress.job, progress);
}

void QuantizeQueue::onFinished(const QuantizeJobOutcome& outcome) {
    QuantizeJobEntry* e = entry(outcome.job);
    if (!e) return;
    e->state = outcome.state;
    e->outcome = outcome;
    rememberRunning(e->request.output, false);
    running_ = 0;
    running_job_.reset();
    emit jobFinished(outcome.job, outcome);
    startNext();
}

const QuantizeJobEntry* QuantizeQueue::job(quint64 id) const {
    for (const QuantizeJobEntry& e : jobs_)
        if (e.id == id) return &e;
    return nullptr;
}

QuantizeJobEntry* QuantizeQueue::entry(quint64 id) { return const_cast<QuantizeJobEntry*>(job(id)); }

QList<quint64> QuantizeQueue::jobIds() const {
    QList<quint64> ids;
    for (const QuantizeJobEntry& e : jobs_) ids << e.id;
    return ids;
}

// Entries are "<pid> <output>": the studio that writes it.
void QuantizeQueue::rememberRunning(const QString& output, bool running) {
    auto settings = studio_settings();
    QStringList entries = settings->value(kRunningKey).toStringList();
    const QString mine = QStringLiteral("%1 %2").arg(QCoreApplication::applicationPid()).arg(output);
    entries.removeAll(mine);
    if (running) entries << mine;
    settings->setValue(kRunningKey, entries);
    settings->sync();  // a kill right after must still find it
}

void QuantizeQueue::removeLeftovers() {
    // The engine writes "<output>.tmp" and renames it when whole: a studio
    // killed mid-job leaves only that, removed here unless its studio still runs.
    auto settings = studio_settings();
    QStringList alive;
    for (const QString& e : settings->value(kRunningKey).toStringList()) {
        const qsizetype space = e.indexOf(' ');
        if (space <= 0) continue;
        const qint64 pid = e.left(space).toLongLong();
        if (pid != QCoreApplication::applicationPid() && process_runs(pid)) {
            alive << e;
            continue;
        }
        QFile::remove(e.mid(space + 1) + ".tmp");
    }
    settings->setValue(kRunningKey, alive);
}

}  // namespace folio::ui
