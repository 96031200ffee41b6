// MainWindow's menus and toolbar, the recent-models list, the saved remote
// servers and the shortcuts overview (the window's assembly is in main_window.cpp).
#include "ui/main_window.h"
#include "ui/resources.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDockWidget>
#include <QFileInfo>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QToolBar>
#include <QUrl>

#include "ui/chat_controller.h"
#include "ui/chat_view.h"
#include "ui/engine_bridge.h"
#include "ui/metrics_dialog.h"
#include "ui/remote_dialog.h"
#include "ui/plots_panel.h"
#include "ui/quantize_jobs_panel.h"
#include "ui/session_list_panel.h"
#include "ui/spec_panel.h"
#include "ui/library_panel.h"
#include "ui/model_panel.h"
#include "ui/block_map_widget.h"
#include "ui/session_settings_panel.h"
#include "ui/session_store.h"
#include "ui/theme.h"

namespace folio::ui {

namespace {

constexpr int kMaxRecent = 8;

// Where the studio's documentation is: the source tree's docs/studio.md, or the installed copy.
QUrl docs_url() {
    QStringList candidates;
#ifdef FOLIO_STUDIO_SOURCE_DIR
    candidates << QStringLiteral(FOLIO_STUDIO_SOURCE_DIR) + "/docs/studio.md";
#endif
    const QString exe = QCoreApplication::applicationDirPath();
    candidates << exe + "/../share/doc/folio/studio.md" << exe + "/../docs/studio.md";
    for (const QString& c : candidates)
        if (QFileInfo::exists(c)) return QUrl::fromLocalFile(QFileInfo(c).canonicalFilePath());
    return {};
}

}  // namespace

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(studio_icon("open"), tr("&Open Model…"), this, &MainWindow::openModelDialog);
    open->setShortcut(QKeySequence::Open);
    recent_menu_ = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    file->addAction(studio_icon("unload"), tr("&Unload Model"), bridge_, &EngineBridge::unload);
    file->addSeparator();
    file->addAction(studio_icon("export"), tr("Export Plots as &PNG…"), plots_, &PlotsPanel::exportPngInteractive);
    file->addAction(studio_icon("export"), tr("Export Samples as &CSV…"), plots_, &PlotsPanel::exportCsvInteractive);
    file->addAction(studio_icon("export"), tr("Export Chat as &Markdown…"), this, [this] { exportChatInteractive(false); });
    file->addAction(studio_icon("export"), tr("Export Chat as &JSON…"), this, [this] { exportChatInteractive(true); });
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* model = menuBar()->addMenu(tr("&Model"));
    quantize_action_ = model->addAction(tr("&Quantize to INT4…"), this, &MainWindow::showQuantizeDialog);
    quantize_action_->setObjectName("quantizeAction");
    quantize_action_->setToolTip(tr("Quantize the loaded model to Q4_K_M (or another type) as a job beside the chats"));
    quantize_action_->setEnabled(false);
    model->addAction(tr("Show &Jobs"), this, [this] { raisePanel(jobs_panel_); });
    QAction* library = model->addAction(tr("Model &Library"), this, &MainWindow::showLibrary);
    library->setObjectName("libraryAction");
    library->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));

    QMenu* chat = menuBar()->addMenu(tr("&Chat"));
    QAction* add = chat->addAction(studio_icon("new-chat"), tr("&New Chat"), session_list_, &SessionListPanel::newSession);
    add->setShortcut(QKeySequence::New);
    QAction* stop = chat->addAction(studio_icon("stop"), tr("&Stop Reply"), chat_view_, &ChatView::stopGeneration);
    stop->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
    QAction* regen = chat->addAction(studio_icon("regenerate"), tr("&Regenerate Reply"), chat_view_, &ChatView::regenerate);
    regen->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    chat->addAction(studio_icon("delete"), tr("&Delete Chat"), session_list_, &SessionListPanel::deleteCurrent);
    chat->addSeparator();
    QAction* export_md = chat->addAction(studio_icon("export"), tr("E&xport Chat as Markdown…"), this,
                                         [this] { exportChatInteractive(false); });
    export_md->setObjectName("exportChatMarkdown");
    QAction* export_json = chat->addAction(studio_icon("export"), tr("Export Chat as &JSON…"), this,
                                           [this] { exportChatInteractive(true); });
    export_json->setObjectName("exportChatJson");
    chat->addSeparator();
    QAction* next = chat->addAction(tr("Ne&xt Chat"), this, [this] { switchChat(+1); });
    next->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Tab), QKeySequence(Qt::CTRL | Qt::Key_PageDown)});
    QAction* previous = chat->addAction(tr("Pre&vious Chat"), this, [this] { switchChat(-1); });
    previous->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Backtab), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Tab),
                            QKeySequence(Qt::CTRL | Qt::Key_PageUp)});
    QAction* list = chat->addAction(tr("Go to the Chat &List"), this, [this] {
        raisePanel(session_list_);
        session_list_->list()->setFocus(Qt::ShortcutFocusReason);
    });
    list->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
    QAction* compose = chat->addAction(tr("Go to the &Message Box"), this, [this] {
        chat_view_->composer()->setFocus(Qt::ShortcutFocusReason);
    });
    compose->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));

    QMenu* engine = menuBar()->addMenu(tr("&Engine"));
    QAction* settings = engine->addAction(studio_icon("settings"), tr("&Settings…"), this, &MainWindow::showEngineSettings);
    settings->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
    engine->addAction(tr("&Restart"), this, [this] { bridge_->restart(bridge_->settings()); });
    QAction* metrics = engine->addAction(studio_icon("plots"), tr("&Metrics (Prometheus)…"), this, [this] {
        if (!metrics_dialog_) metrics_dialog_ = new MetricsDialog(bridge_, this);
        metrics_dialog_->show();
        metrics_dialog_->raise();
    });
    metrics->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_M));
    // The OpenAI API on the chats' engine (docs/server.md): serve/host, serve/port, serve/api_key in the settings.
    serve_action_ = engine->addAction(tr("Serve OpenAI &API"));
    serve_action_->setObjectName("serveAction");
    serve_action_->setCheckable(true);
    serve_action_->setToolTip(tr("Answer other programs through the OpenAI API on this engine (127.0.0.1:8080 unless "
                                 "the settings say otherwise)"));
    connect(serve_action_, &QAction::triggered, this, [this](bool on) {
        if (!on) return bridge_->stopServing();
        auto stored = studio_settings();
        bridge_->serve(stored->value("serve/host", "127.0.0.1").toString(), stored->value("serve/port", 8080).toInt(),
                       stored->value("serve/api_key").toString());
    });

    // A model served elsewhere (ui/remote_engine.h): the chats stream from it while connected.
    engine->addSeparator();
    QAction* remote = engine->addAction(tr("&Connect to Server…"), this, &MainWindow::showConnectDialog);
    remote->setObjectName("connectAction");
    remote->setToolTip(tr("Chat with a model served over the OpenAI API: folio serve, llama-server, vLLM, SGLang"));
    servers_menu_ = engine->addMenu(tr("Saved Ser&vers"));
    rebuildServersMenu();
    disconnect_action_ = engine->addAction(tr("&Disconnect"), this, [this] { bridge_->disconnectRemote(); });
    disconnect_action_->setObjectName("disconnectAction");
    disconnect_action_->setEnabled(false);

    view_menu_ = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : findChildren<QDockWidget*>()) view_menu_->addAction(dock->toggleViewAction());
    view_menu_->addSeparator();
    QMenu* theme = view_menu_->addMenu(tr("&Theme"));
    auto* group = new QActionGroup(this);
    const QString current = studio_settings()->value("view/theme", "system").toString();
    for (ThemeMode mode : {ThemeMode::System, ThemeMode::Light, ThemeMode::Dark}) {
        const QString name = theme_to_string(mode);
        QAction* a = theme->addAction(mode == ThemeMode::System ? tr("Follow System") : mode == ThemeMode::Light ? tr("Light") : tr("Dark"));
        a->setCheckable(true);
        a->setChecked(name == current);
        group->addAction(a);
        connect(a, &QAction::triggered, this, [mode, name] {
            apply_theme(mode);
            studio_settings()->setValue("view/theme", name);
        });
    }
    // Speculative decoding: which of a reply's text came from accepted drafts.
    QAction* tint = view_menu_->addAction(tr("Tint &Accepted Drafts"));
    tint->setObjectName("tintDrafts");
    tint->setCheckable(true);
    tint->setToolTip(tr("Replies show the text that came from accepted speculative drafts on a green background "
                        "(plain text instead of Markdown)"));
    tint->setChecked(studio_settings()->value("view/tintDrafts", false).toBool());
    chat_view_->setTintDrafts(tint->isChecked());
    connect(tint, &QAction::toggled, this, [this](bool on) {
        chat_view_->setTintDrafts(on);
        studio_settings()->setValue("view/tintDrafts", on);
    });
    view_menu_->addAction(tr("&Reset Layout"), this, [this] {
        restoreState(default_state_);
        roomy_state_.clear();
        compact_ = false;
        updateCompactLayout();
    });

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* keys = help->addAction(tr("&Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&Documentation"), this, [] {
        const QUrl url = docs_url();
        if (url.isValid()) QDesktopServices::openUrl(url);
    });
    help->addAction(tr("&About Folio Studio"), this, [this] {
        QMessageBox::about(this, tr("About Folio Studio"),
                           tr("<b>Folio Studio</b> %1<br>An LLM inference studio: chats on a continuous-batching engine, "
                              "its KV cache block by block, and its numbers live.").arg(QCoreApplication::applicationVersion()));
    });

    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName("mainToolBar");
    bar->addAction(open);
    bar->addAction(add);
    bar->addAction(stop);
    bar->addAction(regen);
    bar->addAction(settings);
}

QString MainWindow::shortcutsHtml() {
    const QList<QPair<QString, QString>> keys = {
        {tr("Enter"), tr("send the message")},
        {tr("Shift+Enter"), tr("a new line in the message")},
        {tr("Esc"), tr("stop the reply (or cancel an edit)")},
        {tr("Tab / Shift+Tab"), tr("leave the message box (next / previous control)")},
        {tr("Ctrl+Tab, Ctrl+PgDown"), tr("next chat")},
        {tr("Ctrl+Shift+Tab, Ctrl+PgUp"), tr("previous chat")},
        {tr("Ctrl+L"), tr("go to the chat list (Enter there goes to the message box)")},
        {tr("Ctrl+Shift+L"), tr("go to the message box")},
        {tr("Ctrl+N"), tr("new chat")},
        {tr("Ctrl+R"), tr("regenerate the last reply")},
        {tr("Ctrl+."), tr("stop the reply")},
        {tr("Ctrl+O"), tr("open a model")},
        {tr("Ctrl+Shift+O"), tr("the model library")},
        {tr("Ctrl+,"), tr("engine settings")},
        {tr("Ctrl+M"), tr("engine metrics (Prometheus)")},
        {tr("F1"), tr("this list")},
        {tr("Ctrl+Q"), tr("quit")},
    };
    QString html = "<table cellspacing='4'>";
    for (const auto& [key, what] : keys) html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(key.toHtmlEscaped(), what.toHtmlEscaped());
    html += "</table>";
    const QUrl docs = docs_url();
    html += docs.isValid() ? tr("<p>More in the documentation: <a href='%1'>docs/studio.md</a>.</p>").arg(docs.toString())
                           : tr("<p>More in the documentation: docs/studio.md in Folio's source tree.</p>");
    return html;
}

void MainWindow::showShortcuts() {
    auto* box = new QMessageBox(QMessageBox::NoIcon, tr("Keyboard Shortcuts"), shortcutsHtml(), QMessageBox::Close, this);
    box->setObjectName("shortcutsDialog");
    box->setTextFormat(Qt::RichText);
    box->setTextInteractionFlags(Qt::TextBrowserInteraction);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

QStringList MainWindow::recentModels() const {
    // Lists written before paths were made absolute are cleaned up as they are read.
    QStringList recent = studio_settings()->value("model/recent").toStringList();
    if (recent.isEmpty()) return recent;
    const QString first = recent.takeFirst();
    return add_recent_model(recent, first, kMaxRecent);
}

void MainWindow::rememberRecent(const QString& path) {
    studio_settings()->setValue("model/recent", add_recent_model(recentModels(), path, kMaxRecent));
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    recent_menu_->clear();
    const QStringList recent = recentModels();
    const QString fallback = default_model_path();
    QStringList entries = recent;
    if (!fallback.isEmpty() && !entries.contains(fallback)) entries << fallback;  // the default model is always listed
    for (const QString& path : entries) {
        QAction* a = recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openModel(path); });
        a->setToolTip(path);
        a->setEnabled(QFileInfo::exists(path));
    }
    recent_menu_->setEnabled(!entries.isEmpty());
}

void MainWindow::rebuildServersMenu() {
    servers_menu_->clear();
    const QVector<RemoteProfile> profiles = RemoteProfile::load_all(*studio_settings());
    for (const RemoteProfile& p : profiles) {
        QAction* a = servers_menu_->addAction(p.display_name(), this, [this, p] { connectToServer(p); });
        a->setToolTip(p.base().toString() + (p.model.isEmpty() ? QString() : " · " + p.model));
    }
    servers_menu_->setEnabled(!profiles.isEmpty());
}

RemoteDialog* MainWindow::connectDialog() const { return connect_dialog_; }

void MainWindow::showConnectDialog() {
    if (connect_dialog_) {
        connect_dialog_->raise();
        return;
    }
    connect_dialog_ = new RemoteDialog(RemoteProfile::load_all(*studio_settings()), this);
    connect_dialog_->setAttribute(Qt::WA_DeleteOnClose);
    connect(connect_dialog_, &QDialog::accepted, this, [this, dialog = connect_dialog_.data()] {
        connectToServer(dialog->profile());
    });
    connect_dialog_->open();
}

void MainWindow::connectToServer(const RemoteProfile& profile) {
    auto stored = studio_settings();
    RemoteProfile::save_all(*stored, RemoteProfile::remember(RemoteProfile::load_all(*stored), profile));
    rebuildServersMenu();
    pending_load_.clear();
    bridge_->connectRemote(profile);
}

}  // namespace folio::ui
