#include "ui/model_library.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QThread>

#include "ui/session_store.h"

namespace folio::ui {

QStringList standard_library_folders(const QString& home) {
    QStringList out;
    for (const QString& relative : {QStringLiteral("models"), QStringLiteral(".lmstudio/models"),
                                    QStringLiteral(".cache/lm-studio/models"), QStringLiteral(".cache/huggingface/hub")}) {
        const QString path = QDir(home).filePath(relative);
        if (QFileInfo(path).isDir()) out << QDir::cleanPath(path);
    }
    return out;
}

ModelLibrary::ModelLibrary(QStringList standard_folders, QObject* parent)
    : QObject(parent), standard_(std::move(standard_folders)) {
    qRegisterMetaType<LibraryEntry>();
}

ModelLibrary::~ModelLibrary() {
    if (cancel_) cancel_->store(true);
    for (QThread* t : threads_) {
        t->wait();
        delete t;
    }
}

QStringList ModelLibrary::userFolders() const { return studio_settings()->value("library/folders").toStringList(); }
QStringList ModelLibrary::addedModels() const { return studio_settings()->value("library/models").toStringList(); }

QStringList ModelLibrary::folders() const {
    QStringList out = userFolders();
    for (const QString& f : standard_ + addedModels())
        if (!out.contains(f)) out << f;
    return out;
}

void ModelLibrary::addFolder(const QString& path) {
    const QString clean = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
    QStringList list = userFolders();
    if (clean.isEmpty() || list.contains(clean)) return;
    list << clean;
    studio_settings()->setValue("library/folders", list);
    emit foldersChanged();
    rescan();
}

void ModelLibrary::removeFolder(const QString& path) {
    QStringList list = userFolders();
    if (!list.removeAll(path)) return;
    studio_settings()->setValue("library/folders", list);
    emit foldersChanged();
    rescan();
}

void ModelLibrary::addModel(const QString& path) {
    const QString clean = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
    for (const LibraryEntry& e : entries_)
        if (e.path == clean) return;  // already listed through a folder
    QStringList list = addedModels();
    if (!list.contains(clean)) {
        list << clean;
        studio_settings()->setValue("library/models", list);
    }
    rescan();
}

void ModelLibrary::rescan() {
    if (cancel_) cancel_->store(true);  // the scan in progress stops; its late results are ignored
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    const quint64 generation = ++generation_;
    const QStringList roots = folders();
    entries_.clear();
    scanning_ = true;
    emit scanStarted();
    emit entriesChanged();
    QThread* thread = QThread::create([this, roots, generation, cancel = cancel_] {
        for (const QString& path : find_model_paths(roots, *cancel)) {
            if (cancel->load()) break;
            LibraryEntry entry = describe_library_model(path);
            QMetaObject::invokeMethod(this, [this, generation, entry] { onFound(generation, entry); }, Qt::QueuedConnection);
        }
        QMetaObject::invokeMethod(this, [this, generation] { onDone(generation); }, Qt::QueuedConnection);
    });
    thread->setObjectName("folio-library-scan");
    threads_ << thread;
    connect(thread, &QThread::finished, this, [this, thread] {
        threads_.removeAll(thread);
        thread->deleteLater();
    });
    thread->start(QThread::LowPriority);
}

void ModelLibrary::onFound(quint64 generation, const LibraryEntry& entry) {
    if (generation != generation_) return;
    entries_.push_back(entry);
    emit entriesChanged();
}

void ModelLibrary::onDone(quint64 generation) {
    if (generation != generation_) return;
    scanning_ = false;
    emit scanFinished();
}

}  // namespace folio::ui
