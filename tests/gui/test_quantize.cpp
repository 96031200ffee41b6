// Quantize to INT4 in the studio, with real QuantizeJobs on the SmolLM2
// Hugging Face folder: the dialog's defaults (the output beside the folder,
// following the type; an output equal to the source refused, an existing
// one replaced only after a question); a job queued
// from the dialog runs to completion on the queue's thread while the UI
// thread keeps its timer's pace and the engine answers a chat, its progress
// (tensor i / N) reaches the Jobs panel, then its report, and the file loads
// (load_model_description, then Load in the studio); a queued job cancelled
// is removed, a running one cancelled within a second leaves no file and
// says so, and a failed one gives the engine's message; quitting during a job asks, Keep Running keeps it, Quit cancels
// it and leaves nothing; a studio killed (SIGKILL) mid-job leaves no file
// under the output name, and its temporary file is removed at the next start. Screenshots of the panel with a running and a finished
// job, at 1500x950 and 1024x700, go where test_gui_screenshots puts its own.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QTimer>

#include <algorithm>
#include <cstdio>

#include <qcustomplot.h>

#include "folio/model.h"
#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/chat_controller.h"
#include "ui/chat_view.h"
#include "ui/model_library.h"
#include "ui/model_panel.h"
#include "ui/quantize_dialog.h"
#include "ui/quantize_job_card.h"
#include "ui/quantize_jobs_panel.h"
#include "ui/quantize_queue.h"
#include "ui/session_store.h"
#include "ui/theme.h"

using namespace folio::ui;

namespace {

using folio_gui_test::save;

// Few chunks, so a job of the 135M model runs in seconds on two cores.
void fill_small(QuantizeDialog* dialog, const QString& output, CalibrationSource calibration) {
    dialog->setAdvancedShown(true);
    dialog->setOutputPath(output);
    dialog->setCalibration(calibration);
    dialog->setCalibrationChunks(2);
    dialog->setValidationChunks(1);
    dialog->setThreads(2);
}

}  // namespace

class QuantizeTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void cleanupTestCase() {
        window_.reset();
        data_.reset();
    }

    // No model needed: names, refusals and the cleanup after a kill.
    void defaultsRefusalsAndLeftovers() {
        folio_gui_test::DataDir data;
        QTemporaryDir dir;
        const QString folder = dir.filePath("Some-1.7B-hf");
        QVERIFY(QDir().mkpath(folder));
        QCOMPARE(default_quantize_output(folder, "Q4_K_M"), dir.filePath("Some-1.7B-hf.Q4_K_M.gguf"));
        QCOMPARE(default_quantize_output(folder + "/", "Q6_K"), dir.filePath("Some-1.7B-hf.Q6_K.gguf"));
        QCOMPARE(default_quantize_output(dir.filePath("m.F16.gguf"), "Q4_0"), dir.filePath("m.F16.Q4_0.gguf"));
        QVERIFY(quantize_preset_names().contains("Q4_K_M"));

        QuantizeRequest same;
        same.source = dir.filePath("m.gguf");
        same.output = dir.filePath("./m.gguf");
        same.calibration = CalibrationSource::None;
        auto refused = same.toOptions();
        QVERIFY(!refused.ok());
        QVERIFY2(QString::fromStdString(refused.error().message).contains("the source itself"), refused.error().message.c_str());
        QuantizeRequest awq_alone = same;
        awq_alone.output = dir.filePath("out.gguf");
        awq_alone.awq = true;
        QVERIFY(!awq_alone.toOptions().ok());

        QuantizeDialog dialog(dir.filePath("m.gguf"));
        QCOMPARE(dialog.outputPath(), dir.filePath("m.Q4_K_M.gguf"));
        QVERIFY(!dialog.advancedShown());
        dialog.setPreset("Q6_K");  // the default output follows the type
        QCOMPARE(dialog.outputPath(), dir.filePath("m.Q6_K.gguf"));
        dialog.setOutputPath(dir.filePath("mine.gguf"));
        dialog.setPreset("Q4_K_M");  // an edited one stays
        QCOMPARE(dialog.outputPath(), dir.filePath("mine.gguf"));
        dialog.setOutputPath(dir.filePath("m.gguf"));
        QVERIFY2(dialog.problem().contains("the source itself", Qt::CaseInsensitive), qPrintable(dialog.problem()));
        QVERIFY(!dialog.findChild<QPushButton*>("quantizeRun")->isEnabled());
        dialog.setCalibration(CalibrationSource::ImatrixFile, dir.filePath("missing.imatrix"));
        dialog.setOutputPath(dir.filePath("out.gguf"));
        QVERIFY2(dialog.problem().contains("cannot read the imatrix", Qt::CaseInsensitive), qPrintable(dialog.problem()));

        // An existing output is replaced only after a question: Cancel keeps the dialog open, Yes accepts.
        {
            QFile existing(dir.filePath("out.gguf"));
            QVERIFY(existing.open(QIODevice::WriteOnly));
        }
        dialog.setCalibration(CalibrationSource::None);
        QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));
        for (auto answer : {QMessageBox::Cancel, QMessageBox::Yes}) {
            QString asked;
            QTimer::singleShot(100, this, [&asked, answer] {
                if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                    asked = box->text();
                    box->button(answer)->click();
                }
            });
            dialog.setResult(QDialog::Rejected);
            dialog.accept();
            QVERIFY2(asked.contains("out.gguf exists"), qPrintable(asked));
            QCOMPARE(dialog.result(), answer == QMessageBox::Yes ? int(QDialog::Accepted) : int(QDialog::Rejected));
        }

        // A studio killed mid-job left "<output>.tmp": the next queue removes it (not a live studio's).
        const QString killed = dir.filePath("killed.gguf"), live = dir.filePath("live.gguf");
        for (const QString& p : {killed, live}) {
            QFile f(p + ".tmp");
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("GGUF partial");
        }
        studio_settings()->setValue("quantize/running", QStringList{QStringLiteral("2147480000 %1").arg(killed),
                                                                      QStringLiteral("1 %1").arg(live)});
        { QuantizeQueue queue; }
        QVERIFY(!QFileInfo::exists(killed + ".tmp"));
        QVERIFY(QFileInfo::exists(live + ".tmp"));  // pid 1 runs
    }

    // The one-click default (Q4_K_M, built-in calibration) driven from the UI, to the end and Load.
    void oneClickInt4RunsBesideTheChatsAndLoads() {
        QVERIFY(openWindow());
        MainWindow* w = window_.get();
        QVERIFY(w->findChild<QAction*>("quantizeAction")->isEnabled());
        QPushButton* button = w->modelPanel()->findChild<QPushButton*>("quantizeButton");
        QVERIFY(button->isEnabled());
        QTest::mouseClick(button, Qt::LeftButton);
        QuantizeDialog* dialog = w->quantizeDialog();
        QVERIFY(dialog && dialog->isVisible());
        // The default: beside the folder, the built-in calibration.
        QCOMPARE(dialog->outputPath(), QFileInfo(QString::fromStdString(folder_)).absolutePath() +
                                          "/SmolLM2-135M-Instruct-hf.Q4_K_M.gguf");
        QCOMPARE(dialog->request().calibration, CalibrationSource::BuiltIn);
        QCOMPARE(dialog->request().preset, QString("Q4_K_M"));
        const QString output = out_.filePath("smollm2.Q4_K_M.gguf");  // not beside the shared models
        QTest::qWait(50);
        QVERIFY(save(dialog, "quantize-dialog.png"));
        fill_small(dialog, output, CalibrationSource::BuiltIn);
        QTest::qWait(50);
        QVERIFY(save(dialog, "quantize-dialog-advanced.png"));

        QuantizeQueue* queue = w->quantizeQueue();
        // The UI thread's pace while the job runs: a 50 ms timer, its longest gap.
        QElapsedTimer pace;
        qint64 longest_gap = 0, ticks = 0;
        QTimer timer;
        timer.setInterval(50);
        connect(&timer, &QTimer::timeout, this, [&] {
            if (pace.isValid()) longest_gap = std::max(longest_gap, pace.elapsed());
            pace.start();
            ++ticks;
        });
        // What the panel showed at each progress value.
        QStringList shown;
        QObject listening;  // the connection ends with this slot
        connect(queue, &QuantizeQueue::jobProgressed, &listening, [&](quint64 id, const QuantizeJobProgress&) {
            if (QuantizeJobCard* c = w->jobsPanel()->card(id)) shown << QString(c->progressText()).replace(QChar(0x00a0), ' ');
        });
        // The Jobs panel stays out of the way until a job is queued.
        QDockWidget* jobs_dock = w->findChild<QDockWidget*>("jobsDock");
        QVERIFY(!jobs_dock->isVisible());
        QElapsedTimer took;
        took.start();
        QTest::mouseClick(dialog->findChild<QPushButton*>("quantizeRun"), Qt::LeftButton);
        QTRY_VERIFY(jobs_dock->isVisible());
        QTRY_VERIFY(!w->quantizeDialog());  // closed and deleted
        QCOMPARE(queue->jobIds().size(), 1);
        const quint64 id = queue->jobIds().front();
        QVERIFY(queue->runningJob() == id);
        timer.start();

        // The engine keeps answering while the job runs.
        ChatController* chats = w->chats();
        const QString chat = w->chatView()->sessionId();
        SamplingSettings s = chats->session(chat)->sampling;
        s.max_tokens = 8;
        chats->setSampling(chat, s);
        QVERIFY(chats->send(chat, "Say hello."));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(chat), 60000);
        QVERIFY2(chats->session(chat)->messages.back().finish_reason != "error",
                 qPrintable(chats->session(chat)->messages.back().error));
        const bool chat_during_job = queue->runningJob() == id;

        // Running: screenshots at both sizes once the tensors are being written.
        QuantizeJobCard* card = w->jobsPanel()->card(id);
        QVERIFY(card);
        QTRY_VERIFY_WITH_TIMEOUT(card->progressText().startsWith("quantizing") || queue->runningJob() != id, 120000);
        if (queue->runningJob() == id) {
            w->resize(1500, 950);
            QTRY_VERIFY(!w->isCompact());
            QTest::qWait(50);
            QVERIFY(save(w, "jobs-running-1500x950.png"));
            w->resize(1024, 700);
            QTRY_VERIFY(w->isCompact());
            w->raisePanel(w->jobsPanel());
            QTest::qWait(50);
            QVERIFY(save(w, "jobs-running-1024x700.png"));
            w->resize(1500, 950);
            QTRY_VERIFY(!w->isCompact());
            w->raisePanel(w->jobsPanel());
        } else {
            qWarning("the job ended before a running screenshot could be taken");
        }
        QTRY_VERIFY_WITH_TIMEOUT(queue->job(id)->state != QuantizeJobState::Running, 180000);
        timer.stop();
        const QuantizeJobEntry* job = queue->job(id);
        QVERIFY2(job->state == QuantizeJobState::Done, qPrintable(job->outcome.message));
        qInfo("job: %.1f s, %d progress updates, UI timer %lld ticks, longest gap %lld ms, chat answered during the job: %s",
              took.elapsed() / 1000.0, job->progress_updates, ticks, longest_gap, chat_during_job ? "yes" : "no");
        QVERIFY(chat_during_job);

        // Progress reached the UI with a tensor count, at most ~10 a second.
        QVERIFY(job->progress_updates > 0);
        QVERIFY2(std::any_of(shown.begin(), shown.end(), [](const QString& t) { return t.contains(QRegularExpression("tensor \\d+ / \\d+")); }),
                 qPrintable(shown.join('\n')));
        QVERIFY2(job->progress_updates <= took.elapsed() / 100 + 6, qPrintable(QString::number(job->progress_updates)));
        QVERIFY2(longest_gap < 500, qPrintable(QString::number(longest_gap)));
        QVERIFY2(ticks >= took.elapsed() / 50 / 2, qPrintable(QString::number(ticks)));  // at its pace, not just alive

        // The report.
        QCOMPARE(card->stateText(), QString("done"));
        const QString report = card->reportText();
        for (const char* key : {"Size: ", "Bits per weight: ", "ΔPPL: ", "Mean KLD: ", "p99 KLD: ", "Same top token: ", "Time: "})
            QVERIFY2(report.contains(QString::fromUtf8(key)), qPrintable(report));
        const folio::QuantizeReport& r = *job->outcome.report;
        QVERIFY(r.quality_measured);
        QVERIFY(r.bits_per_weight > 4 && r.bits_per_weight < 6.5);
        QVERIFY(r.output_bytes < r.source_bytes / 3);
        QVERIFY(r.quality.same_top > 0.5);
        QVERIFY(card->chart()->plottableCount() == 1);
        QVERIFY(card->loadButton()->isVisible());
        QVERIFY(!card->cancelButton()->isVisible());

        // The file is whole and loads.
        QVERIFY(QFileInfo::exists(output));
        QVERIFY(!QFileInfo::exists(output + ".tmp"));
        auto model = folio::load_model_description(output.toStdString());
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().message.c_str());
        QVERIFY(!model->tensors.empty());
        QVERIFY(w->recentModels().contains(QFileInfo(output).absoluteFilePath()));
        // It joins the model library, recording the folder it came from (the library lists it under that).
        QVERIFY(w->library()->addedModels().contains(QFileInfo(output).absoluteFilePath()));
        QTRY_VERIFY_WITH_TIMEOUT(!w->library()->isScanning(), 60000);
        const QVector<LibraryEntry>& listed = w->library()->entries();
        const auto in_library = std::find_if(listed.begin(), listed.end(), [&](const LibraryEntry& e) {
            return e.path == QFileInfo(output).absoluteFilePath();
        });
        QVERIFY(in_library != listed.end());
        QVERIFY(in_library->status == LibraryEntry::Status::Ready && in_library->quantized);
        QCOMPARE(in_library->recorded_source, QFileInfo(QString::fromStdString(folder_)).canonicalFilePath());

        // Finished: screenshots at both sizes, then in the dark theme.
        QTest::qWait(50);
        QVERIFY(save(w, "jobs-finished-1500x950.png"));
        QVERIFY(save(w->jobsPanel(), "jobs-panel-finished.png"));
        w->resize(1024, 700);
        QTRY_VERIFY(w->isCompact());
        w->raisePanel(w->jobsPanel());
        QTest::qWait(50);
        QVERIFY(save(w, "jobs-finished-1024x700.png"));
        // Nothing clipped in the narrow column: the chart went under the numbers, no sideways scrolling.
        auto* scroll = w->jobsPanel()->findChild<QScrollArea*>("jobsScroll");
        QVERIFY2(card->width() <= scroll->viewport()->width(),
                 qPrintable(QString("%1 > %2").arg(card->width()).arg(scroll->viewport()->width())));
        QVERIFY(card->chart()->geometry().top() > card->findChild<QLabel*>("jobReport")->geometry().bottom());
        w->resize(1500, 950);
        QTRY_VERIFY(!w->isCompact());
        apply_theme(ThemeMode::Dark);
        QTest::qWait(50);
        QVERIFY(save(w->jobsPanel(), "jobs-panel-finished-dark.png"));
        apply_theme(ThemeMode::Light);

        // Use as Draft: the source speculates with its quantization as the draft model.
        QVERIFY(card->draftButton()->isVisible());
        QTest::mouseClick(card->draftButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(w->bridge()->isLoaded() && w->bridge()->status().speculation.startsWith("draft"), 60000);
        QCOMPARE(w->bridge()->settings().draft_model, output);
        QCOMPARE(QFileInfo(w->bridge()->model().path).canonicalFilePath(), QFileInfo(QString::fromStdString(folder_)).canonicalFilePath());

        // Load: the studio loads the result as Model > Open would.
        QTest::mouseClick(card->loadButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(w->bridge()->isLoaded() && w->bridge()->model().path == output, 60000);
        QVERIFY(w->lastError().isEmpty());
    }

    // A queued job cancelled is just removed; the running one stops within a second; a failed one says why. Nothing is left.
    void cancelOrFailureLeavesNothingAndSaysWhy() {
        QVERIFY(openWindow());
        MainWindow* w = window_.get();
        QVERIFY(reloadFolder());
        QuantizeQueue* queue = w->quantizeQueue();
        const QString first = out_.filePath("cancelled.gguf"), second = out_.filePath("queued.gguf");
        quint64 ids[2] = {0, 0};
        for (int i = 0; i < 2; ++i) {
            w->findChild<QAction*>("quantizeAction")->trigger();
            QuantizeDialog* dialog = w->quantizeDialog();
            QVERIFY(dialog);
            fill_small(dialog, i == 0 ? first : second, CalibrationSource::BuiltIn);
            QTest::mouseClick(dialog->findChild<QPushButton*>("quantizeRun"), Qt::LeftButton);
            QTRY_VERIFY(!w->quantizeDialog());
            ids[i] = queue->jobIds().back();
        }
        QCOMPARE(queue->runningJob(), ids[0]);
        QCOMPARE(queue->queuedCount(), 1);
        QuantizeJobCard* running = w->jobsPanel()->card(ids[0]);
        QuantizeJobCard* queued = w->jobsPanel()->card(ids[1]);
        QCOMPARE(queued->stateText(), QString("queued"));
        QTest::mouseClick(queued->cancelButton(), Qt::LeftButton);
        QCOMPARE(queue->queuedCount(), 0);
        QCOMPARE(queued->stateText(), QString("cancelled"));
        QVERIFY2(queued->messageText().contains("nothing was written"), qPrintable(queued->messageText()));

        // Cancelled (by its button) at the first tensors written, from the progress signal itself: no race with the job's end.
        QElapsedTimer stop;
        QObject listening;
        connect(queue, &QuantizeQueue::jobProgressed, &listening, [&](quint64 id, const QuantizeJobProgress& p) {
            if (id != ids[0] || p.phase_id != folio::QuantizePhase::Quantizing || stop.isValid()) return;
            stop.start();
            running->cancelButton()->click();
        });
        const QuantizeJobEntry* job = queue->job(ids[0]);
        QTRY_VERIFY_WITH_TIMEOUT(stop.isValid() || job->state != QuantizeJobState::Running, 120000);
        QVERIFY2(stop.isValid(), qPrintable(quantize_job_state_name(job->state) + ": " + job->outcome.message));
        QTRY_VERIFY_WITH_TIMEOUT(queue->job(ids[0])->state != QuantizeJobState::Running, 5000);
        qInfo("cancel took %lld ms", stop.elapsed());
        QVERIFY(stop.elapsed() < 1500);
        QCOMPARE(queue->job(ids[0])->state, QuantizeJobState::Cancelled);
        QCOMPARE(running->stateText(), QString("cancelled"));
        QCOMPARE(running->messageText(), QString("cancelled; nothing was written"));
        QVERIFY(!queue->isBusy());
        for (const QString& p : {first, second}) {
            QVERIFY2(!QFileInfo::exists(p), qPrintable(p));
            QVERIFY2(!QFileInfo::exists(p + ".tmp"), qPrintable(p));
        }
        QCOMPARE(queue->job(ids[1])->progress_updates, 0);  // never ran

        // A job that fails (an imatrix file that is not one) says why, and leaves nothing either.
        const QString bad_imatrix = out_.filePath("not-an.imatrix"), failed = out_.filePath("failed.gguf");
        {
            QFile f(bad_imatrix);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("this is not an importance matrix");
        }
        w->findChild<QAction*>("quantizeAction")->trigger();
        fill_small(w->quantizeDialog(), failed, CalibrationSource::ImatrixFile);
        w->quantizeDialog()->setCalibration(CalibrationSource::ImatrixFile, bad_imatrix);
        QTest::mouseClick(w->quantizeDialog()->findChild<QPushButton*>("quantizeRun"), Qt::LeftButton);
        QTRY_VERIFY(!w->quantizeDialog());
        const quint64 bad = queue->jobIds().back();
        QTRY_VERIFY_WITH_TIMEOUT(queue->job(bad)->state != QuantizeJobState::Running, 60000);
        QCOMPARE(queue->job(bad)->state, QuantizeJobState::Failed);
        QuantizeJobCard* failed_card = w->jobsPanel()->card(bad);
        QCOMPARE(failed_card->stateText(), QString("failed"));
        QVERIFY2(failed_card->messageText().contains("not-an.imatrix") && failed_card->messageText().endsWith("nothing was written"),
                 qPrintable(failed_card->messageText()));
        QVERIFY(!QFileInfo::exists(failed) && !QFileInfo::exists(failed + ".tmp"));
    }

    // Closing the studio during a job asks; Keep Running keeps it, Quit cancels it.
    void quitDuringAJobAsks() {
        QVERIFY(openWindow());
        MainWindow* w = window_.get();
        QuantizeQueue* queue = w->quantizeQueue();
        const QString output = out_.filePath("quit.gguf");
        w->findChild<QAction*>("quantizeAction")->trigger();
        // Calibration first: the question and both answers come while the job still runs.
        fill_small(w->quantizeDialog(), output, CalibrationSource::BuiltIn);
        QTest::mouseClick(w->quantizeDialog()->findChild<QPushButton*>("quantizeRun"), Qt::LeftButton);
        QTRY_VERIFY(!w->quantizeDialog());
        const quint64 id = queue->jobIds().back();
        QTRY_VERIFY_WITH_TIMEOUT(queue->job(id)->progress_updates > 0, 60000);

        QVERIFY(!w->close());
        QVERIFY(w->quitQuestion() && w->quitQuestion()->isVisible());
        QTest::mouseClick(w->quitQuestion()->findChild<QPushButton*>("keepRunning"), Qt::LeftButton);
        QTRY_VERIFY(!w->quitQuestion());
        QVERIFY(w->isVisible());
        QCOMPARE(queue->runningJob(), id);

        w->close();
        QVERIFY(w->quitQuestion());
        QTest::mouseClick(w->quitQuestion()->findChild<QPushButton*>("quitAndCancel"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), 5000);
        QVERIFY(!queue->isBusy());
        QVERIFY(!QFileInfo::exists(output));
        QVERIFY(!QFileInfo::exists(output + ".tmp"));
        QVERIFY(studio_settings()->value("quantize/running").toStringList().isEmpty());
    }

    // This test binary again as a studio mid-job (child_studio below), killed with SIGKILL.
    void killedStudioLeavesNoPartialFile() {
        FOLIO_REQUIRE_MODEL(folder, folio_test::kSmolLM2Folder);
        window_.reset();  // the shared studio is closed by now; its data folder goes too
        data_.reset();
        folio_gui_test::DataDir data;
        const QString output = out_.filePath("killed.gguf");
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("FOLIO_QUANTIZE_CHILD_OUTPUT", output);
        env.insert("FOLIO_QUANTIZE_CHILD_SOURCE", QString::fromStdString(folder));
        child.setProcessEnvironment(env);
        child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        child.start(QCoreApplication::applicationFilePath(), {});
        QVERIFY(child.waitForStarted(10000));
        QElapsedTimer t;
        t.start();
        QByteArray said;
        while (!said.contains("quantizing") && child.state() == QProcess::Running && t.elapsed() < 120000)
            if (child.waitForReadyRead(200)) said += child.readAllStandardOutput();
        QVERIFY2(said.contains("quantizing"), said.constData());
        QVERIFY(QFileInfo::exists(output + ".tmp"));  // being written
        child.kill();  // SIGKILL: no handler runs
        QVERIFY(child.waitForFinished(10000));
        QVERIFY2(!QFileInfo::exists(output), "a partial file under the output name");
        QVERIFY(QFileInfo::exists(output + ".tmp"));  // what a kill leaves
        // The next start removes the temporary file the killed studio left.
        { QuantizeQueue next; }
        QVERIFY(!QFileInfo::exists(output + ".tmp"));
        QVERIFY(studio_settings()->value("quantize/running").toStringList().isEmpty());
    }

private:
    // The Hugging Face folder loaded again (a slot before may have loaded its result).
    bool reloadFolder() {
        const QString folder = QString::fromStdString(folder_);
        if (window_->bridge()->model().path == folder) return true;
        window_->openModel(folder);
        QElapsedTimer t;
        t.start();
        while (!(window_->bridge()->isLoaded() && window_->bridge()->model().path == folder) && t.elapsed() < 60000)
            QTest::qWait(20);
        return window_->bridge()->model().path == folder;
    }

    // One studio on the Hugging Face folder for the slots that need a model.
    bool openWindow() {
        if (window_) return window_->isVisible() && window_->bridge()->isLoaded();
        folder_ = folio_test::model_path(folio_test::kSmolLM2Folder);
        if (folder_.empty()) {
            if (folio_test::models_required()) qFatal("test model missing: run scripts/setup.sh");
            return false;
        }
        data_ = std::make_unique<folio_gui_test::DataDir>();
        window_ = folio_gui_test::open_window(QString::fromStdString(folder_), 120000);
        if (!window_->bridge()->isLoaded()) qWarning("%s", qPrintable(window_->lastError()));
        return window_->bridge()->isLoaded();
    }

    std::string folder_;
    std::unique_ptr<folio_gui_test::DataDir> data_;
    std::unique_ptr<MainWindow> window_;
    QTemporaryDir out_;
};

namespace {

// The studio that killedStudioLeavesNoPartialFile kills: a window on the
// source, one job, "quantizing" on stdout once tensors are being written.
int child_studio() {
    folio::ui::init_resources();
    QuantizeRequest request;
    request.source = qEnvironmentVariable("FOLIO_QUANTIZE_CHILD_SOURCE");
    request.output = qEnvironmentVariable("FOLIO_QUANTIZE_CHILD_OUTPUT");
    request.calibration = CalibrationSource::None;
    request.threads = 2;
    request.validation_chunks = 0;
    auto window = folio_gui_test::open_window(request.source, 120000);
    QString error;
    if (window->quantizeQueue()->enqueue(request, &error) == 0) {
        std::fprintf(stderr, "child studio: %s\n", qPrintable(error));
        return 1;
    }
    QObject::connect(window->quantizeQueue(), &QuantizeQueue::jobProgressed, [](quint64, const QuantizeJobProgress& p) {
        if (p.phase_id != folio::QuantizePhase::Quantizing) return;
        std::printf("quantizing\n");
        std::fflush(stdout);
    });
    return QApplication::exec();
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    if (qEnvironmentVariableIsSet("FOLIO_QUANTIZE_CHILD_OUTPUT")) return child_studio();
    QTEST_SET_MAIN_SOURCE_PATH
    QuantizeTest test;
    return QTest::qExec(&test, argc, argv);
}
#include "test_quantize.moc"
