#include "ui/library_model.h"

#include <QApplication>
#include <QDir>
#include <QIcon>
#include <QPalette>
#include <QStyle>

#include "ui/model_summary.h"

namespace folio::ui {

namespace {

QString context_text(uint32_t n) {
    if (n == 0) return {};
    if (n >= 1024 && n % 1024 == 0) return QObject::tr("%1 K").arg(n / 1024);
    return QString::number(n);
}

bool has_metadata(const LibraryEntry& e) { return e.summary.parameters > 0; }

}  // namespace

LibraryModel::LibraryModel(QObject* parent) : QAbstractItemModel(parent) {}

void LibraryModel::setEntries(const QVector<LibraryEntry>& entries) {
    beginResetModel();
    entries_ = entries;
    parent_ = library_parents(entries_);
    top_.clear();
    children_ = QVector<QVector<int>>(entries_.size());
    row_ = QVector<int>(entries_.size(), 0);
    for (int i = 0; i < entries_.size(); ++i) {
        if (parent_[i] < 0) {
            row_[i] = static_cast<int>(top_.size());
            top_ << i;
        } else {
            row_[i] = static_cast<int>(children_[parent_[i]].size());
            children_[parent_[i]] << i;
        }
    }
    available_ = available_memory_bytes();
    endResetModel();
}

void LibraryModel::setEngineSettings(const EngineSettings& settings) {
    if (settings == settings_) return;
    settings_ = settings;
    // The Fits column of every row, under each parent.
    if (!top_.isEmpty()) emit dataChanged(index(0, Fits), index(static_cast<int>(top_.size()) - 1, Fits));
    for (int t : top_) {
        if (children_[t].isEmpty()) continue;
        const QModelIndex p = createIndex(row_[t], 0, quintptr(t + 1));
        emit dataChanged(index(0, Fits, p), index(static_cast<int>(children_[t].size()) - 1, Fits, p));
    }
}

const LibraryEntry* LibraryModel::entry(const QModelIndex& index) const {
    if (!index.isValid() || index.model() != this) return nullptr;
    const auto i = static_cast<qsizetype>(index.internalId()) - 1;
    return i >= 0 && i < entries_.size() ? &entries_[i] : nullptr;
}

QModelIndex LibraryModel::indexForPath(const QString& path) const {
    const QString clean = QDir::cleanPath(path);
    for (int i = 0; i < entries_.size(); ++i)
        if (entries_[i].path == clean || entries_[i].canonical_path == clean)
            return createIndex(row_[i], Name, quintptr(i + 1));
    return {};
}

QModelIndex LibraryModel::index(int row, int column, const QModelIndex& parent) const {
    if (column < 0 || column >= ColumnCount || row < 0) return {};
    if (!parent.isValid()) return row < top_.size() ? createIndex(row, column, quintptr(top_[row] + 1)) : QModelIndex();
    const auto p = static_cast<qsizetype>(parent.internalId()) - 1;
    if (p < 0 || p >= children_.size() || row >= children_[p].size()) return {};
    return createIndex(row, column, quintptr(children_[p][row] + 1));
}

QModelIndex LibraryModel::parent(const QModelIndex& child) const {
    if (!child.isValid()) return {};
    const auto i = static_cast<qsizetype>(child.internalId()) - 1;
    if (i < 0 || i >= parent_.size() || parent_[i] < 0) return {};
    const int p = parent_[i];
    return createIndex(row_[p], 0, quintptr(p + 1));
}

int LibraryModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid()) return static_cast<int>(top_.size());
    if (parent.column() != 0) return 0;
    const auto p = static_cast<qsizetype>(parent.internalId()) - 1;
    return p >= 0 && p < children_.size() ? static_cast<int>(children_[p].size()) : 0;
}

int LibraryModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QString LibraryModel::statusText(const LibraryEntry& e) {
    switch (e.status) {
    case LibraryEntry::Status::Ready: return tr("ready");
    case LibraryEntry::Status::Unsupported: return tr("unsupported: %1").arg(e.problem);
    case LibraryEntry::Status::Error: return tr("error: %1").arg(e.problem);
    }
    return {};
}

QVariant LibraryModel::display(const LibraryEntry& e, int column) const {
    switch (column) {
    case Name: return e.name;
    case Architecture: return e.architecture().isEmpty() ? QStringLiteral("—") : e.architecture();
    case Parameters: return has_metadata(e) ? format_count(e.summary.parameters) : QString();
    case Quantization: return quantization_text(e.summary);
    case Size: return format_bytes(e.size_bytes);
    case Context: return context_text(e.summary.n_ctx_train);
    case Fits: {
        if (e.status != LibraryEntry::Status::Ready || !has_metadata(e)) return QStringLiteral("—");  // nothing to load
        const MemoryEstimate m = estimate_memory(e.summary, settings_);
        if (!m.known) return tr("unknown");
        return m.fits() ? tr("yes") : tr("no");
    }
    case Status: return statusText(e);
    }
    return {};
}

QVariant LibraryModel::sortKey(const LibraryEntry& e, int column) const {
    switch (column) {
    case Parameters: return QVariant::fromValue<qulonglong>(e.summary.parameters);
    case Size: return QVariant::fromValue<qulonglong>(e.size_bytes);
    case Context: return e.summary.n_ctx_train;
    case Quantization:  // bits per weight
        return e.summary.parameters ? 8.0 * static_cast<double>(e.summary.weight_bytes) / static_cast<double>(e.summary.parameters) : 0.0;
    case Fits: {
        if (!has_metadata(e)) return -1;
        return QVariant::fromValue<qulonglong>(estimate_memory(e.summary, settings_).total_bytes);
    }
    case Status: return static_cast<int>(e.status);
    default: return display(e, column).toString().toLower();
    }
}

QString LibraryModel::tooltip(const LibraryEntry& e, int column) const {
    if (column == Fits && has_metadata(e)) {
        MemoryEstimate m = estimate_memory(e.summary, settings_);
        return m.describe();
    }
    QStringList lines{QDir::toNativeSeparators(e.path)};
    if (!e.summary.name.isEmpty() && e.summary.name != e.name) lines << tr("Name in the metadata: %1").arg(e.summary.name);
    if (!e.recorded_source.isEmpty()) lines << tr("Quantized from %1").arg(QDir::toNativeSeparators(e.recorded_source));
    if (e.status != LibraryEntry::Status::Ready) lines << statusText(e);
    return lines.join('\n');
}

QVariant LibraryModel::data(const QModelIndex& index, int role) const {
    const LibraryEntry* e = entry(index);
    if (!e) return {};
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole: return display(*e, column);
    case SortRole: return sortKey(*e, column);
    case PathRole: return e->path;
    case SearchRole: {
        const QString status = e->status == LibraryEntry::Status::Ready ? tr("ready")
                               : e->status == LibraryEntry::Status::Unsupported ? tr("unsupported") : tr("error");
        return QStringList{e->name, e->architecture(), quantization_text(e->summary), display(*e, Parameters).toString(), status}
            .join(' ');
    }
    case Qt::ToolTipRole: return tooltip(*e, column);
    case Qt::DecorationRole:
        if (column != Name) return {};
        if (e->status == LibraryEntry::Status::Error) return QApplication::style()->standardIcon(QStyle::SP_MessageBoxCritical);
        if (e->status == LibraryEntry::Status::Unsupported) return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
        return QApplication::style()->standardIcon(e->folder ? QStyle::SP_DirIcon : QStyle::SP_FileIcon);
    case Qt::ForegroundRole:
        if (e->status != LibraryEntry::Status::Ready) return QApplication::palette().color(QPalette::Disabled, QPalette::Text);
        if (column == Fits && display(*e, column).toString() == tr("no")) return QColor(0xc6, 0x28, 0x28);
        return {};
    case Qt::TextAlignmentRole:
        if (column == Parameters || column == Size || column == Context)
            return QVariant::fromValue<int>(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    default: return {};
    }
}

QVariant LibraryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Name: return tr("Name");
    case Architecture: return tr("Architecture");
    case Parameters: return tr("Parameters");
    case Quantization: return tr("Quantization");
    case Size: return tr("Size");
    case Context: return tr("Context");
    case Fits: return tr("Fits in memory");
    case Status: return tr("Status");
    }
    return {};
}

}  // namespace folio::ui
