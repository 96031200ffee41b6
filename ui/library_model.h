// The model library as a Qt item model: top-level models with their
// quantized children under them (library_parents), one column per fact
// (name, architecture, parameters, quantization, size, context, whether it
// fits in memory with the engine settings, status). Display text for
// people, SortRole for QSortFilterProxyModel (numbers sort as numbers).
// UI thread only: it is refilled from ModelLibrary's values.
#pragma once

#include <QAbstractItemModel>
#include <QVector>

#include "ui/library_scan.h"

namespace folio::ui {

class LibraryModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Name, Architecture, Parameters, Quantization, Size, Context, Fits, Status, ColumnCount };
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int PathRole = Qt::UserRole + 2;
    // What search matches (on the Name column): name, architecture, quantization, parameters and the
    // status word (ready / unsupported / error), not the reasons (they name every architecture Folio runs).
    static constexpr int SearchRole = Qt::UserRole + 3;

    explicit LibraryModel(QObject* parent = nullptr);

    void setEntries(const QVector<LibraryEntry>& entries);
    // The settings the "Fits" column estimates with (KV budget, block size).
    void setEngineSettings(const EngineSettings& settings);
    const LibraryEntry* entry(const QModelIndex& index) const;
    QModelIndex indexForPath(const QString& path) const;
    // "ready", "unsupported: …", "error: …"
    static QString statusText(const LibraryEntry& entry);

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(const LibraryEntry& e, int column) const;
    QVariant sortKey(const LibraryEntry& e, int column) const;
    QString tooltip(const LibraryEntry& e, int column) const;

    QVector<LibraryEntry> entries_;
    QVector<int> parent_;            // entry -> its parent entry, -1 at the top
    QVector<int> top_;               // top-level entries in order
    QVector<QVector<int>> children_; // entry -> its children
    QVector<int> row_;               // entry -> its row under its parent
    EngineSettings settings_;
    uint64_t available_ = 0;         // MemAvailable when the entries were set
};

}  // namespace folio::ui
