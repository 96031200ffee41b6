// Folio Studio's main window: the chat in the middle, dockable panels
// around it (sessions, session settings, model, KV block map, live plots,
// quantization jobs) whose layout is saved and restored, a status bar (device, model, KV usage,
// tok/s), menus with keyboard shortcuts, model opening by dialog, drag and
// drop or the recent list, and error dialogs that never block the engine
// (they are window-modal and open(); the last one is kept for tests).
// Closing it while a quantization job runs asks first (Quit and cancel the
// job / Keep running).
#pragma once

#include <QMainWindow>
#include <QMessageBox>
#include <QPointer>

#include "ui/studio_types.h"

class QDockWidget;
class QLabel;
class QProgressBar;
class QMenu;


namespace folio::ui {

class BlockMapWidget;
class ChatController;
class ChatPresets;
class ChatView;
class EngineBridge;
class LibraryPanel;
class MetricsDialog;
class ModelLibrary;
class ModelPanel;
class PlotsPanel;
class SpecPanel;
class QuantizeDialog;
class QuantizeJobsPanel;
class QuantizeQueue;
class RemoteDialog;
struct RemoteProfile;
class SessionListPanel;
class SessionSettingsPanel;

struct MainWindowOptions {
    QString model;              // open this model at start ("" = the last one, or the default)
    bool load_model = true;     // false: start without loading anything
};

// How the studio names a model: its file (or folder) name; the name in its
// metadata is often a family name several files share, so it goes in tooltips.
QString model_display_name(const ModelSummary& summary);

// The recent-models list with `path` first: absolute paths, no duplicates, at most `max`.
QStringList add_recent_model(const QStringList& recent, const QString& path, int max);

// The window is compact below this size: the chat takes the room the block map and plots had.
constexpr int kCompactWidth = 1200, kCompactHeight = 800;

// The default model: $FOLIO_MODEL, else models/SmolLM2-135M-Instruct.Q4_1.gguf in the source tree
// or next to the executable; "" when none exists.
QString default_model_path();

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const MainWindowOptions& options = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    EngineBridge* bridge() const { return bridge_; }
    ChatController* chats() const { return chats_; }
    ChatPresets* presets() const { return presets_; }
    SessionSettingsPanel* sessionSettings() const { return session_settings_; }
    ChatView* chatView() const { return chat_view_; }
    SessionListPanel* sessionList() const { return session_list_; }
    BlockMapWidget* blockMap() const { return block_map_; }
    PlotsPanel* plots() const { return plots_; }
    SpecPanel* specPanel() const { return spec_; }
    ModelPanel* modelPanel() const { return model_panel_; }
    QuantizeQueue* quantizeQueue() const { return quantize_queue_; }
    QuantizeJobsPanel* jobsPanel() const { return jobs_panel_; }
    ModelLibrary* library() const { return library_; }
    LibraryPanel* libraryPanel() const { return library_panel_; }
    // The open Quantize to INT4 dialog, and the question asked at quit while a job runs (null when none).
    QuantizeDialog* quantizeDialog() const;
    QMessageBox* quitQuestion() const { return quit_box_; }
    // The question before loading a model that will not fit (null when none is open).
    QMessageBox* memoryQuestion() const { return memory_box_; }
    // Brings a dock's panel to the front (tabbed docks), e.g. for screenshots.
    void raisePanel(QWidget* panel);
    void showSpecPanel();
    QString lastError() const { return last_error_; }
    QMessageBox* errorDialog() const { return error_box_; }
    MetricsDialog* metricsDialog() const { return metrics_dialog_; }
    QStringList recentModels() const;
    bool isCompact() const { return compact_; }
    // The Help > Keyboard Shortcuts text (HTML).
    static QString shortcutsHtml();

public slots:
    // Inspects `path` (metadata and memory estimate), then loads it.
    void openModel(const QString& path);
    void openModelDialog();
    void showEngineSettings();
    // Engine > Connect to Server…: the dialog (window-modal, open()); Connect attaches the studio.
    void showConnectDialog();
    // The studio's chats on an OpenAI-compatible server instead of its own
    // engine (EngineBridge::connectRemote); the profile is remembered.
    void connectToServer(const RemoteProfile& profile);
    // The dialog while it is open (null when none is).
    RemoteDialog* connectDialog() const;
    // Model > Quantize to INT4…: the dialog on the loaded model (window-modal, open()); OK queues the job.
    void showQuantizeDialog();
    // Model > Library: the panel shown and raised, tall enough for a dozen rows.
    void showLibrary();
    // The same dialog on any model (a library row): no load needed.
    void showQuantizeDialogFor(const QString& path);
    void showError(const QString& title, const QString& message);
    // Chat > Export as Markdown / JSON…: a file dialog, then exportChat().
    void exportChatInteractive(bool json);
    // Writes the current chat to `path` (JSON for .json, else Markdown), whole or not at
    // all; false, with an error dialog that says why, when it cannot.
    bool exportChat(const QString& path);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    // Sees the end of a dock separator drag: the roomy layout is remembered as the user left it.
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QDockWidget* addPanel(QWidget* panel, const QString& title, const QString& name, Qt::DockWidgetArea area);
    void createMenus();
    void createStatusBar();
    void connectBridge();
    void rememberRecent(const QString& path);
    void rebuildRecentMenu();
    void rebuildServersMenu();
    void selectSession(const QString& id);
    void onSample(const EngineSample& sample);
    // The model panel's state line: the loaded model, or that none is.
    void showModelState();
    // Below kCompactWidth x kCompactHeight the right and bottom panels share
    // one tabbed dock; above, the roomy layout as it was comes back.
    void updateCompactLayout();
    void switchChat(int step);
    void showShortcuts();
    void onQuantizeFinished(quint64 id);

    EngineBridge* bridge_ = nullptr;
    ChatController* chats_ = nullptr;
    ChatPresets* presets_ = nullptr;
    ChatView* chat_view_ = nullptr;
    SessionListPanel* session_list_ = nullptr;
    SessionSettingsPanel* session_settings_ = nullptr;
    ModelPanel* model_panel_ = nullptr;
    BlockMapWidget* block_map_ = nullptr;
    PlotsPanel* plots_ = nullptr;
    SpecPanel* spec_ = nullptr;
    QuantizeQueue* quantize_queue_ = nullptr;
    QuantizeJobsPanel* jobs_panel_ = nullptr;
    ModelLibrary* library_ = nullptr;
    LibraryPanel* library_panel_ = nullptr;
    QPointer<QuantizeDialog> quantize_dialog_;
    QPointer<RemoteDialog> connect_dialog_;
    QPointer<QMessageBox> quit_box_;
    QPointer<QMessageBox> memory_box_;
    bool quit_confirmed_ = false;  // the user chose to cancel the running job and quit
    QAction* quantize_action_ = nullptr;
    QAction* serve_action_ = nullptr;
    QAction* disconnect_action_ = nullptr;
    QMenu* servers_menu_ = nullptr;  // saved remote profiles
    QLabel* serve_label_ = nullptr;
    QMenu* recent_menu_ = nullptr;
    QMenu* view_menu_ = nullptr;
    QLabel* device_label_ = nullptr;
    QLabel* model_label_ = nullptr;
    QLabel* kv_label_ = nullptr;
    QLabel* speed_label_ = nullptr;
    QProgressBar* load_progress_ = nullptr;
    QString pending_load_;  // inspected, to be loaded once the summary arrives
    QString last_error_;
    QPointer<QMessageBox> error_box_;
    MetricsDialog* metrics_dialog_ = nullptr;
    QByteArray default_state_;
    QByteArray roomy_state_;  // the dock layout before the window went compact
    bool compact_ = false;
    bool restoring_ = false;  // restoreState() at start: not a user's resize
};

}  // namespace folio::ui
