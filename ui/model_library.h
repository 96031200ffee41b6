// The model library: the folders it scans (the user's, saved in the
// settings, plus the usual places that exist: ~/models, LM Studio's and the
// Hugging Face cache), single files added to it (quantization results), and
// the entries found there. A scan runs on a thread of its own
// (find_model_paths, describe_library_model) and hands each entry back by
// a queued call, so the UI thread never waits on a disk or a header; a
// rescan cancels the one in progress.
#pragma once

#include <QObject>
#include <QStringList>
#include <QVector>

#include <atomic>
#include <memory>

#include "ui/library_scan.h"

class QThread;

namespace folio::ui {

// The usual places under `home` that exist: ~/models, ~/.lmstudio/models,
// ~/.cache/lm-studio/models, ~/.cache/huggingface/hub.
QStringList standard_library_folders(const QString& home);

class ModelLibrary : public QObject {
    Q_OBJECT
public:
    explicit ModelLibrary(QStringList standard_folders, QObject* parent = nullptr);
    ~ModelLibrary() override;  // cancels a scan and waits for its thread

    QStringList standardFolders() const { return standard_; }
    QStringList userFolders() const;  // from the settings
    QStringList addedModels() const;  // single files (quantization results outside the folders)
    QStringList folders() const;      // what a scan walks: user folders, standard ones, added files

    void addFolder(const QString& path);   // saved, then rescanned
    void removeFolder(const QString& path);
    void addModel(const QString& path);    // a file to list even outside the folders

    bool isScanning() const { return scanning_; }
    const QVector<LibraryEntry>& entries() const { return entries_; }

public slots:
    void rescan();

signals:
    void scanStarted();
    void entriesChanged();  // entries were added (during a scan) or cleared (at its start)
    void scanFinished();
    void foldersChanged();

private:
    void onFound(quint64 generation, const folio::ui::LibraryEntry& entry);
    void onDone(quint64 generation);

    QStringList standard_;
    QVector<LibraryEntry> entries_;
    quint64 generation_ = 0;
    bool scanning_ = false;
    std::shared_ptr<std::atomic<bool>> cancel_;
    QList<QThread*> threads_;
};

}  // namespace folio::ui
