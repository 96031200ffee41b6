// The KV block map: every physical KV block of the engine's pool drawn as a
// cell, coloured by the chat (or request) that owns it; shared blocks
// (reference count > 1) and prefix-cached blocks are marked, free blocks are
// grey. Hovering tells block id, owner, tokens held and references. When a
// cell would be smaller than 2 px, neighbouring blocks share one cell (the
// majority decides its colour), so 100,000 blocks draw as fast as 1,000.
// A draft model's own pool (speculative decoding) is a band under the map,
// its blocks in the colours of the chats they draft for.
#pragma once

#include <QColor>
#include <QHash>
#include <QElapsedTimer>
#include <QImage>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <functional>

#include "ui/studio_types.h"

class QPainter;

namespace folio::ui {

struct BlockOwner {
    QString label;  // "Chat: Travel plans"
    QColor color;
};

class BlockMapWidget : public QWidget {
    Q_OBJECT
public:
    explicit BlockMapWidget(QWidget* parent = nullptr);

    // Who a request is, for colours and tooltips; by default "Request #id".
    using OwnerResolver = std::function<BlockOwner(qint64 engine_id, quint64 ticket)>;
    void setOwnerResolver(OwnerResolver resolver);

    void setSnapshot(const BlockMapSnapshot& snapshot);
    // Shown instead of "No model loaded" while there is no pool to draw
    // (a remote engine's blocks are the server's); "" for none.
    void setNotice(const QString& notice);
    const BlockMapSnapshot& snapshot() const { return snapshot_; }

    // The distinct owners in the current map (engine request ids).
    QList<qint64> owners() const;
    int cellSize() const { return cell_; }
    int blocksPerCell() const { return group_; }
    QString describeBlock(int block) const;
    // The line above the map: pool, usage, requests (running, waiting,
    // preempted and swapped this step), step number.
    QString summary() const;
    // The summary as drawn: wrapped to the widget's width (at its " · "
    // separators, then at spaces where a part is wider than the widget).
    QStringList summaryLines() const;
    // The block under a widget position, -1 for none (the first of the cell when aggregated).
    int blockAt(QPoint pos) const;
    // The draft model's own KV pool (speculative decoding by a draft model,
    // layer skip or INT4 self-draft), drawn as a band under the target's map:
    // its blocks, how many hold a sequence's tokens, the one under a position
    // (-1 for none) and its tooltip.
    int draftBlocks() const;
    int draftBlocksInUse() const;
    int draftBlockAt(QPoint pos) const;
    QString describeDraftBlock(int block) const;
    QRect draftArea() const { return draft_.area; }

    static QColor colorForKey(quint64 key);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;
    QSize sizeHint() const override { return {420, 320}; }
    QSize minimumSizeHint() const override { return {160, 120}; }

private:
    struct Legend {
        QString label;
        QColor color;
        int mark = 0;  // 0 none, 1 shared, 2 cached
    };
    // Cells of one pool laid out in an area: side, blocks per cell, columns.
    struct Grid {
        QRect area;
        int cell = 8, group = 1, cols = 1;
        int at(QPoint pos, int n) const;  // the first block of the cell at pos, -1 for none
    };
    static Grid fit(int n, QRect area);
    void layoutGrid();
    BlockOwner owner(qint64 engine_id) const;
    QRgb cellColor(int first_block, int count) const;
    int legendHeight() const;
    void paintDraftBand(QPainter& p) const;
    QVector<Legend> legend() const;

    BlockMapSnapshot snapshot_;
    QString notice_;
    // When each block last changed (owner, references or cache state), for a
    // fading outline: the map shows blocks being allocated, shared and freed.
    QVector<qint64> changed_ms_;
    QElapsedTimer clock_;
    QTimer fade_timer_;
    OwnerResolver resolver_;
    mutable QHash<qint64, BlockOwner> owner_cache_;
    int cell_ = 8;      // pixels per cell side
    int group_ = 1;     // blocks per cell
    int cols_ = 1;
    QRect grid_;
    Grid draft_;  // the draft model's band (empty area: none)
};

}  // namespace folio::ui
