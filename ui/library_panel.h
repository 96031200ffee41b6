// The Library panel: every model the ModelLibrary found, searchable and
// sortable (a QSortFilterProxyModel over LibraryModel), quantized models
// under their sources; Load (or a double click) opens one, Quantize to
// INT4… starts the dialog on it, Folders ▾ adds and removes scanned folders,
// Rescan looks again. A model Folio cannot run says why in its row and is
// not loaded.
#pragma once

#include <QTimer>
#include <QWidget>

#include "ui/studio_types.h"

class QLabel;
class QLineEdit;
class QMenu;
class QPushButton;
class QSortFilterProxyModel;
class QToolButton;
class QTreeView;

namespace folio::ui {

class LibraryModel;
class ModelLibrary;
struct LibraryEntry;

class LibraryPanel : public QWidget {
    Q_OBJECT
public:
    explicit LibraryPanel(ModelLibrary* library, QWidget* parent = nullptr);

    void setEngineSettings(const EngineSettings& settings);
    QTreeView* view() const { return view_; }
    QLineEdit* search() const { return search_; }
    LibraryModel* model() const { return model_; }
    QSortFilterProxyModel* proxy() const { return proxy_; }
    QString statusText() const;
    // The entry of the current row (null when none is chosen).
    const LibraryEntry* currentEntry() const;
    // Makes the row of `path` current (false when it is not listed).
    bool selectPath(const QString& path);

public slots:
    // Loads the current row's model, or says in the status line why it cannot be.
    void loadCurrent();
    void quantizeCurrent();
    void addFolderInteractive();

protected:
    void showEvent(QShowEvent* event) override;

signals:
    void loadRequested(const QString& path);
    void quantizeRequested(const QString& path);

private:
    void refill();  // from the library's entries, keeping the current row
    void updateStatus();
    void updateButtons();
    void rebuildFoldersMenu();

    ModelLibrary* library_;
    LibraryModel* model_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QLineEdit* search_ = nullptr;
    QTreeView* view_ = nullptr;
    QLabel* status_ = nullptr;
    QPushButton* load_ = nullptr;
    QPushButton* quantize_ = nullptr;
    QToolButton* folders_ = nullptr;
    QMenu* folders_menu_ = nullptr;
    QTimer refill_timer_;  // entries arriving during a scan are shown at most 5 times a second
    QString message_;      // the last "cannot load" explanation
    bool scanned_once_ = false;
};

}  // namespace folio::ui
