#include "ui/library_panel.h"
#include "ui/resources.h"

#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/library_model.h"
#include "ui/model_library.h"

namespace folio::ui {

LibraryPanel::LibraryPanel(ModelLibrary* library, QWidget* parent) : QWidget(parent), library_(library) {
    model_ = new LibraryModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(LibraryModel::SortRole);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    proxy_->setFilterKeyColumn(LibraryModel::Name);
    proxy_->setFilterRole(LibraryModel::SearchRole);  // name, architecture, quantization, size class, status word
    proxy_->setRecursiveFilteringEnabled(true);  // a matching child keeps its source shown
    proxy_->setSortCaseSensitivity(Qt::CaseInsensitive);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* top = new QHBoxLayout;
    search_ = new QLineEdit(this);
    search_->setObjectName("librarySearch");
    search_->setPlaceholderText(tr("Search models (name, architecture, quantization)"));
    search_->setClearButtonEnabled(true);
    top->addWidget(search_, 1);
    folders_ = new QToolButton(this);
    folders_->setObjectName("libraryFolders");
    folders_->setText(tr("Folders"));
    folders_->setPopupMode(QToolButton::InstantPopup);
    folders_menu_ = new QMenu(folders_);
    folders_->setMenu(folders_menu_);
    top->addWidget(folders_);
    auto* rescan = new QPushButton(tr("Rescan"), this);
    rescan->setObjectName("libraryRescan");
    top->addWidget(rescan);
    layout->addLayout(top);

    view_ = new QTreeView(this);
    view_->setObjectName("libraryView");
    view_->setModel(proxy_);
    view_->setSortingEnabled(true);
    view_->sortByColumn(LibraryModel::Name, Qt::AscendingOrder);
    view_->setUniformRowHeights(true);
    view_->setAlternatingRowColors(true);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view_->setExpandsOnDoubleClick(false);  // a double click loads
    view_->header()->setStretchLastSection(true);
    view_->header()->setSectionResizeMode(QHeaderView::Interactive);
    layout->addWidget(view_, 1);

    auto* bottom = new QHBoxLayout;
    status_ = new QLabel(this);
    status_->setObjectName("libraryStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bottom->addWidget(status_, 1);
    quantize_ = new QPushButton(tr("Quantize to INT4…"), this);
    quantize_->setObjectName("libraryQuantize");
    quantize_->setToolTip(tr("Quantize this model to Q4_K_M (or another type) as a job beside the chats"));
    load_ = new QPushButton(studio_icon("open"), tr("Load"), this);
    load_->setObjectName("libraryLoad");
    bottom->addWidget(quantize_);
    bottom->addWidget(load_);
    layout->addLayout(bottom);

    refill_timer_.setSingleShot(true);
    refill_timer_.setInterval(200);
    connect(&refill_timer_, &QTimer::timeout, this, &LibraryPanel::refill);
    connect(library_, &ModelLibrary::entriesChanged, this, [this] {
        if (!refill_timer_.isActive()) refill_timer_.start();
    });
    connect(library_, &ModelLibrary::scanStarted, this, &LibraryPanel::updateStatus);
    connect(library_, &ModelLibrary::scanFinished, this, [this] {
        refill_timer_.stop();
        refill();
    });
    connect(library_, &ModelLibrary::foldersChanged, this, &LibraryPanel::rebuildFoldersMenu);
    connect(rescan, &QPushButton::clicked, library_, &ModelLibrary::rescan);
    connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
        proxy_->setFilterFixedString(text);
        view_->expandAll();
        updateStatus();
    });
    connect(view_, &QTreeView::activated, this, [this] { loadCurrent(); });  // a double click, or Enter
    connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this] {
        message_.clear();
        updateButtons();
        updateStatus();
    });
    connect(load_, &QPushButton::clicked, this, &LibraryPanel::loadCurrent);
    connect(quantize_, &QPushButton::clicked, this, &LibraryPanel::quantizeCurrent);
    rebuildFoldersMenu();
    refill();
}

void LibraryPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // The first look scans (on the library's thread); nothing is read before anyone asks.
    if (!scanned_once_) {
        scanned_once_ = true;
        if (!library_->isScanning() && library_->entries().isEmpty()) library_->rescan();
    }
}

void LibraryPanel::setEngineSettings(const EngineSettings& settings) { model_->setEngineSettings(settings); }

const LibraryEntry* LibraryPanel::currentEntry() const { return model_->entry(proxy_->mapToSource(view_->currentIndex())); }

bool LibraryPanel::selectPath(const QString& path) {
    const QModelIndex at = proxy_->mapFromSource(model_->indexForPath(path));
    if (!at.isValid()) return false;
    view_->setCurrentIndex(at);
    view_->scrollTo(at);
    return true;
}

QString LibraryPanel::statusText() const { return status_->text(); }

void LibraryPanel::refill() {
    const QString current = currentEntry() ? currentEntry()->path : QString();
    model_->setEntries(library_->entries());
    view_->expandAll();
    if (!current.isEmpty()) selectPath(current);
    for (int c = 0; c < LibraryModel::Status; ++c) view_->resizeColumnToContents(c);
    view_->setColumnWidth(LibraryModel::Name, std::min(view_->columnWidth(LibraryModel::Name), 360));
    updateButtons();
    updateStatus();
}

void LibraryPanel::updateStatus() {
    if (!message_.isEmpty()) {
        status_->setText(message_);
        return;
    }
    const auto n = library_->entries().size();
    const auto folders = library_->folders().size();
    QString text;
    if (library_->isScanning())
        text = tr("Scanning %n folder(s)…", nullptr, static_cast<int>(folders)) +
               (n ? tr(" %n model(s) so far", nullptr, static_cast<int>(n)) : QString());
    else if (folders == 0)
        text = tr("No folders to scan: add one under Folders (~/models, LM Studio's and the Hugging Face cache are "
                  "scanned when they exist)");
    else
        text = tr("%n model(s)", nullptr, static_cast<int>(n)) + tr(" in %n folder(s)", nullptr, static_cast<int>(folders));
    if (!search_->text().isEmpty() && !library_->isScanning())
        text += tr("; %n shown", nullptr, proxy_->rowCount());
    status_->setText(text);
}

void LibraryPanel::updateButtons() {
    const LibraryEntry* e = currentEntry();
    const bool ready = e && e->status == LibraryEntry::Status::Ready;
    load_->setEnabled(ready);
    quantize_->setEnabled(ready);
    if (e && !ready) load_->setToolTip(LibraryModel::statusText(*e));
    else load_->setToolTip(tr("Load this model (double click, or Enter)"));
}

void LibraryPanel::loadCurrent() {
    const LibraryEntry* e = currentEntry();
    if (!e) return;
    if (e->status != LibraryEntry::Status::Ready) {
        // Said here rather than failing at load.
        message_ = tr("%1 cannot be loaded: %2").arg(e->name, LibraryModel::statusText(*e));
        updateStatus();
        return;
    }
    emit loadRequested(e->path);
}

void LibraryPanel::quantizeCurrent() {
    const LibraryEntry* e = currentEntry();
    if (e && e->status == LibraryEntry::Status::Ready) emit quantizeRequested(e->path);
}

void LibraryPanel::addFolderInteractive() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a Folder to the Library"), QDir::homePath());
    if (!dir.isEmpty()) library_->addFolder(dir);
}

void LibraryPanel::rebuildFoldersMenu() {
    folders_menu_->clear();
    QAction* add = folders_menu_->addAction(tr("Add Folder…"), this, &LibraryPanel::addFolderInteractive);
    add->setObjectName("libraryAddFolder");
    const QStringList user = library_->userFolders();
    if (!user.isEmpty()) folders_menu_->addSection(tr("Remove"));
    for (const QString& f : user)
        folders_menu_->addAction(QDir::toNativeSeparators(f), this, [this, f] { library_->removeFolder(f); });
    const QStringList standard = library_->standardFolders();
    if (!standard.isEmpty()) folders_menu_->addSection(tr("Always scanned"));
    for (const QString& f : standard) folders_menu_->addAction(QDir::toNativeSeparators(f))->setEnabled(false);
}

}  // namespace folio::ui
