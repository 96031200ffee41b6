#include "ui/block_map_widget.h"

#include <QHelpEvent>
#include <QLocale>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <map>

namespace folio::ui {

namespace {

const QColor kFree(0x9a, 0xa0, 0xa6);
const QColor kCachedFree(0x6f, 0xb8, 0xae);
const QColor kHeld(0x5f, 0x63, 0x68);
constexpr int kMaxCell = 28;
constexpr int kMinCell = 2;
constexpr int kLegendRow = 18;
constexpr qint64 kFadeMs = 600;

}  // namespace

BlockMapWidget::BlockMapWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    clock_.start();
    fade_timer_.setInterval(50);
    connect(&fade_timer_, &QTimer::timeout, this, [this] { update(); });
    resolver_ = [](qint64 id, quint64) { return BlockOwner{tr("Request #%1").arg(id), colorForKey(static_cast<quint64>(id))}; };
}

QColor BlockMapWidget::colorForKey(quint64 key) {
    // Golden-ratio hues: neighbouring keys get far-apart colours.
    const double hue = std::fmod(0.11 + static_cast<double>(key % 1000) * 0.618033988749895, 1.0);
    return QColor::fromHsvF(static_cast<float>(hue), 0.62f, 0.92f);
}

void BlockMapWidget::setOwnerResolver(OwnerResolver resolver) {
    resolver_ = std::move(resolver);
    owner_cache_.clear();
    update();
}

void BlockMapWidget::setSnapshot(const BlockMapSnapshot& snapshot) {
    const std::shared_ptr<const folio::StepEvent> before = snapshot_.event;
    snapshot_ = snapshot;
    owner_cache_.clear();
    const size_t n = snapshot_.event ? snapshot_.event->blocks.size() : 0;
    if (!before || before->blocks.size() != n) {
        changed_ms_.fill(-kFadeMs, static_cast<qsizetype>(n));
    } else {
        const qint64 now = clock_.elapsed();
        bool any = false;
        for (size_t i = 0; i < n; ++i) {
            const folio::BlockCell& a = before->blocks[i];
            const folio::BlockCell& b = snapshot_.event->blocks[i];
            if (a.owner != b.owner || a.ref_count != b.ref_count || a.cached != b.cached) {
                changed_ms_[static_cast<qsizetype>(i)] = now;
                any = true;
            }
        }
        if (any && !fade_timer_.isActive()) fade_timer_.start();
    }
    layoutGrid();  // the legend may have grown a row
    update();
}

QList<qint64> BlockMapWidget::owners() const {
    QList<qint64> ids;
    if (!snapshot_.event) return ids;
    QSet<qint64> seen;
    for (const folio::BlockCell& c : snapshot_.event->blocks)
        if (c.owner >= 0 && !seen.contains(c.owner)) {
            seen.insert(c.owner);
            ids.push_back(c.owner);
        }
    return ids;
}

BlockOwner BlockMapWidget::owner(qint64 engine_id) const {
    auto it = owner_cache_.find(engine_id);
    if (it != owner_cache_.end()) return it.value();
    const BlockOwner o = resolver_(engine_id, snapshot_.tickets.value(engine_id, 0));
    owner_cache_.insert(engine_id, o);
    return o;
}

QVector<BlockMapWidget::Legend> BlockMapWidget::legend() const {
    const bool pool = snapshot_.event && !snapshot_.event->blocks.empty();
    if (!pool && !notice_.isEmpty()) return {};  // nothing drawn that a key would explain
    QVector<Legend> items{{tr("free"), kFree, 0},
                          {tr("free, prefix-cached"), kCachedFree, 0},
                          {tr("held, no running owner"), kHeld, 0},
                          {tr("shared (refs > 1)"), kFree.darker(130), 1},
                          {tr("prefix-cached"), kFree.darker(130), 2}};
    const QList<qint64> ids = owners();
    for (int i = 0; i < ids.size() && i < 12; ++i) {
        const BlockOwner o = owner(ids[i]);
        items.push_back({o.label, o.color, 0});
    }
    if (ids.size() > 12) items.push_back({tr("+%1 more").arg(ids.size() - 12), palette().mid().color(), 0});
    return items;
}

QStringList BlockMapWidget::summaryLines() const {
    // Wrapped at its " · " separators, so that a narrow panel shows all of it.
    const QFontMetrics fm(font());
    const QString sep = QStringLiteral(" · ");
    const int room = width() - 8;
    QStringList lines;
    for (const QString& part : summary().split(sep)) {
        if (!lines.isEmpty() && fm.horizontalAdvance(lines.back() + sep + part) <= room) {
            lines.back() += sep + part;
            continue;
        }
        lines << QString();
        for (const QString& word : part.split(' ')) {
            if (lines.back().isEmpty()) lines.back() = word;
            else if (fm.horizontalAdvance(lines.back() + ' ' + word) <= room) lines.back() += ' ' + word;
            else lines << word;
        }
    }
    return lines;
}

void BlockMapWidget::setNotice(const QString& notice) {
    notice_ = notice;
    updateGeometry();
    update();
}

int BlockMapWidget::legendHeight() const {
    const QFontMetrics fm(font());
    int x = 4, rows = static_cast<int>(summaryLines().size()) + 1;  // the summary, then the first legend row
    for (const Legend& l : legend()) {
        const int w = 16 + fm.horizontalAdvance(l.label) + 12;
        if (x + w > width() - 4 && x > 4) {
            ++rows;
            x = 4;
        }
        x += w;
    }
    return rows * kLegendRow + 6;
}

BlockMapWidget::Grid BlockMapWidget::fit(int n, QRect area) {
    Grid g;
    g.area = area;
    if (n == 0) return g;
    const double per_block = static_cast<double>(area.width()) * area.height() / n;
    int cell = static_cast<int>(std::floor(std::sqrt(per_block)));
    // Whole rows must fit: shrink until they do.
    while (cell > kMinCell && ((n + area.width() / cell - 1) / std::max(1, area.width() / cell)) * cell > area.height()) --cell;
    cell = std::min(cell, kMaxCell);
    if (cell < kMinCell) {
        cell = kMinCell;
        const int cells = std::max(1, (area.width() / cell) * (area.height() / cell));
        g.group = (n + cells - 1) / cells;
    }
    g.cell = cell;
    g.cols = std::max(1, area.width() / cell);
    return g;
}

int BlockMapWidget::Grid::at(QPoint pos, int n) const {
    if (n == 0 || !area.contains(pos)) return -1;
    const int col = (pos.x() - area.left()) / cell;
    const int row = (pos.y() - area.top()) / cell;
    if (col >= cols) return -1;
    const int block = (row * cols + col) * group;
    return block < n ? block : -1;
}

void BlockMapWidget::layoutGrid() {
    const int n = snapshot_.event ? static_cast<int>(snapshot_.event->blocks.size()) : 0;
    const int top = legendHeight();
    QRect area(4, top, std::max(1, width() - 8), std::max(1, height() - top - 4));
    // The draft model's band: a quarter of the map at most, under a line of its own.
    draft_ = Grid{};
    if (const int d = draftBlocks(); d > 0 && area.height() > 4 * kLegendRow) {
        const int band = std::max(kLegendRow + 2 * kMinCell, area.height() / 4);
        draft_ = fit(d, QRect(area.left(), area.bottom() - band + kLegendRow + 1, area.width(), band - kLegendRow));
        const int cells = (d + draft_.group - 1) / draft_.group;
        draft_.area.setHeight(((cells + draft_.cols - 1) / draft_.cols) * draft_.cell);
        area.setHeight(area.height() - band - 4);
    }
    const Grid g = fit(n, area);
    if (!draft_.area.isEmpty() && n > 0) {  // the band right under the target's last row
        const int rows = ((n + g.group - 1) / g.group + g.cols - 1) / g.cols;
        draft_.area.moveTop(area.top() + rows * g.cell + 4 + kLegendRow);
    }
    grid_ = g.area;
    cell_ = g.cell;
    group_ = g.group;
    cols_ = g.cols;
}

int BlockMapWidget::draftBlocks() const {
    return snapshot_.event ? static_cast<int>(snapshot_.event->draft_blocks.size()) : 0;
}

int BlockMapWidget::draftBlocksInUse() const {
    int used = 0;
    for (int i = 0; i < draftBlocks(); ++i) used += snapshot_.event->draft_blocks[static_cast<size_t>(i)].owner >= 0;
    return used;
}

int BlockMapWidget::draftBlockAt(QPoint pos) const { return draft_.at(pos, draftBlocks()); }

QString BlockMapWidget::describeDraftBlock(int block) const {
    if (block < 0 || block >= draftBlocks()) return {};
    const std::vector<folio::BlockCell>& cells = snapshot_.event->draft_blocks;
    if (draft_.group > 1) {
        const int last = std::min(block + draft_.group, draftBlocks()) - 1;
        int used = 0;
        for (int i = block; i <= last; ++i) used += cells[static_cast<size_t>(i)].owner >= 0;
        return tr("Draft model: blocks %1–%2\n%3 in use").arg(block).arg(last).arg(used);
    }
    const folio::BlockCell& c = cells[static_cast<size_t>(block)];
    if (c.owner < 0) return tr("Draft model: block %1\nfree").arg(block);
    return tr("Draft model: block %1\nDrafting for: %2 (request #%3)\nTokens: %4 of %5")
        .arg(block).arg(owner(c.owner).label).arg(c.owner).arg(c.tokens).arg(snapshot_.event->block_size);
}

void BlockMapWidget::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    layoutGrid();
}

QRgb BlockMapWidget::cellColor(int first, int count) const {
    const std::vector<folio::BlockCell>& blocks = snapshot_.event->blocks;
    if (count == 1) {
        const folio::BlockCell& c = blocks[static_cast<size_t>(first)];
        if (c.owner >= 0) return owner(c.owner).color.rgb();
        if (c.ref_count > 0) return kHeld.rgb();
        return (c.cached ? kCachedFree : kFree).rgb();
    }
    // Aggregated: the most common state (an owner, held, cached or free) wins.
    std::map<qint64, int> votes;  // owner id >= 0, -1 free, -2 cached free, -3 held
    for (int i = first; i < first + count; ++i) {
        const folio::BlockCell& c = blocks[static_cast<size_t>(i)];
        ++votes[c.owner >= 0 ? c.owner : c.ref_count > 0 ? -3 : c.cached ? -2 : -1];
    }
    const auto best = std::max_element(votes.begin(), votes.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    if (best->first >= 0) return owner(best->first).color.rgb();
    return (best->first == -3 ? kHeld : best->first == -2 ? kCachedFree : kFree).rgb();
}

QString BlockMapWidget::summary() const {
    const std::shared_ptr<const folio::StepEvent>& e = snapshot_.event;
    const int n = e ? static_cast<int>(e->blocks.size()) : 0;
    if (n == 0) return notice_.isEmpty() ? tr("No model loaded") : notice_;
    // The pool of a model just loaded, before its first step.
    // The blocks' type and size, where known: "F16, 360 KiB each".
    const QString pool = tr("%1 blocks × %2 tokens").arg(n).arg(e->block_size) +
                         (e->kv_bytes_per_block ? tr(" (%1, %2 each)")
                                                      .arg(QString::fromLatin1(folio::kv_type_name(e->kv_type)).toUpper(),
                                                           QLocale().formattedDataSize(static_cast<qint64>(e->kv_bytes_per_block),
                                                                                       1, QLocale::DataSizeIecFormat))
                                                : QString());
    if (e->step == 0) return tr("%1 · all free · idle").arg(pool);
    QString summary = tr("%1 · %2% in use · %3 running, %4 waiting · step %5").arg(pool)
            .arg(e->kv_usage * 100.0, 0, 'f', 1).arg(e->running).arg(e->waiting).arg(e->step);
    if (e->preempted > 0) summary += tr(" · %1 preempted").arg(e->preempted);
    if (e->swapped > 0) summary += tr(" · %1 swapped to host").arg(e->swapped);
    if (group_ > 1) summary += tr(" · %1 blocks per cell").arg(group_);
    return summary;
}

void BlockMapWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const QFontMetrics fm(font());
    const std::shared_ptr<const folio::StepEvent>& e = snapshot_.event;
    const int n = e ? static_cast<int>(e->blocks.size()) : 0;

    p.setPen(palette().text().color());
    int x = 4, y = 2;
    for (const QString& line : summaryLines()) {
        p.drawText(QRect(4, y, width() - 8, kLegendRow), Qt::AlignLeft | Qt::AlignVCenter, line);
        y += kLegendRow;
    }
    for (const Legend& l : legend()) {
        const int w = 16 + fm.horizontalAdvance(l.label) + 12;
        if (x + w > width() - 4 && x > 4) {
            x = 4;
            y += kLegendRow;
        }
        const QRect sw(x, y + 4, 10, 10);
        p.fillRect(sw, l.color);
        if (l.mark == 1) {
            QPainterPath tri;
            tri.moveTo(sw.right() + 1, sw.top());
            tri.lineTo(sw.right() + 1, sw.top() + 6);
            tri.lineTo(sw.right() - 5, sw.top());
            p.fillPath(tri, Qt::white);
        } else if (l.mark == 2) {
            p.fillRect(QRect(sw.left() + 1, sw.bottom() - 3, 4, 4), QColor(20, 20, 20));
        }
        p.drawText(QRect(x + 14, y, w - 14, kLegendRow), Qt::AlignLeft | Qt::AlignVCenter, l.label);
        x += w;
    }
    if (n == 0) return;

    const int cells = (n + group_ - 1) / group_;
    const qint64 now = clock_.elapsed();
    bool fading = false;
    if (cell_ >= 6) {
        // Large cells: one rectangle each with a gap, and the shared / cached marks.
        for (int i = 0; i < cells; ++i) {
            const QRect r(grid_.left() + (i % cols_) * cell_, grid_.top() + (i / cols_) * cell_, cell_ - 1, cell_ - 1);
            const int first = i * group_;
            const int count = std::min(group_, n - first);
            p.fillRect(r, QColor::fromRgb(cellColor(first, count)));
            const folio::BlockCell& c = e->blocks[static_cast<size_t>(first)];
            if (c.ref_count > 1) {
                QPainterPath tri;
                const int s = std::max(3, cell_ / 2);
                tri.moveTo(r.right() + 1, r.top());
                tri.lineTo(r.right() + 1, r.top() + s);
                tri.lineTo(r.right() + 1 - s, r.top());
                p.fillPath(tri, Qt::white);
            }
            if (c.cached && c.owner >= 0) {
                const int s = std::max(2, cell_ / 3);
                p.fillRect(QRect(r.left() + 1, r.bottom() - s, s, s), QColor(20, 20, 20));
            }
            const qint64 age = group_ == 1 && first < changed_ms_.size() ? now - changed_ms_[first] : kFadeMs;
            if (age < kFadeMs) {
                fading = true;
                QColor glow = palette().highlight().color();
                glow.setAlphaF(static_cast<float>(1.0 - static_cast<double>(age) / kFadeMs));
                p.setPen(QPen(glow, 2));
                p.drawRect(r.adjusted(1, 1, -1, -1));
            }
        }
        if (!fading) fade_timer_.stop();
        paintDraftBand(p);
        return;
    }
    // Small cells: one pixel per cell in an image, scaled without smoothing.
    const int rows = (cells + cols_ - 1) / cols_;
    QImage image(cols_, rows, QImage::Format_RGB32);
    image.fill(palette().base().color());
    for (int i = 0; i < cells; ++i) {
        const int first = i * group_;
        QRgb color = cellColor(first, std::min(group_, n - first));
        if (group_ == 1 && e->blocks[static_cast<size_t>(first)].ref_count > 1) color = QColor::fromRgb(color).lighter(135).rgb();
        reinterpret_cast<QRgb*>(image.scanLine(i / cols_))[i % cols_] = color;
    }
    fade_timer_.stop();
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.drawImage(QRect(grid_.left(), grid_.top(), cols_ * cell_, rows * cell_), image);
    paintDraftBand(p);
}

void BlockMapWidget::paintDraftBand(QPainter& p) const {
    // The draft model's blocks in their owners' colours (the chats they draft
    // for), free ones in the free colour, under a line that names the pool.
    const int d = draftBlocks();
    if (d == 0 || draft_.area.isEmpty()) return;
    const std::vector<folio::BlockCell>& cells = snapshot_.event->draft_blocks;
    p.setPen(palette().text().color());
    p.drawText(QRect(draft_.area.left(), draft_.area.top() - kLegendRow, draft_.area.width(), kLegendRow),
               Qt::AlignLeft | Qt::AlignVCenter,
               tr("Draft model: %1 blocks · %2 in use").arg(d).arg(draftBlocksInUse()));
    const int gap = draft_.cell >= 6 ? 1 : 0;
    for (int i = 0; i * draft_.group < d; ++i) {
        const int first = i * draft_.group;
        qint64 who = -1;
        for (int b = first; b < std::min(d, first + draft_.group) && who < 0; ++b) who = cells[static_cast<size_t>(b)].owner;
        const QRect r(draft_.area.left() + (i % draft_.cols) * draft_.cell,
                      draft_.area.top() + (i / draft_.cols) * draft_.cell, draft_.cell - gap, draft_.cell - gap);
        p.fillRect(r, who >= 0 ? owner(who).color : kFree);
    }
}

int BlockMapWidget::blockAt(QPoint pos) const {
    const int n = snapshot_.event ? static_cast<int>(snapshot_.event->blocks.size()) : 0;
    return Grid{grid_, cell_, group_, cols_}.at(pos, n);
}

QString BlockMapWidget::describeBlock(int block) const {
    if (!snapshot_.event || block < 0 || block >= static_cast<int>(snapshot_.event->blocks.size())) return {};
    const folio::StepEvent& e = *snapshot_.event;
    if (group_ > 1) {
        const int last = std::min<int>(block + group_, static_cast<int>(e.blocks.size())) - 1;
        int used = 0, shared = 0, cached = 0;
        QStringList names;
        for (int i = block; i <= last; ++i) {
            const folio::BlockCell& c = e.blocks[static_cast<size_t>(i)];
            used += c.ref_count > 0;
            shared += c.ref_count > 1;
            cached += c.cached;
            if (c.owner >= 0) {
                const QString name = owner(c.owner).label;
                if (!names.contains(name)) names << name;
            }
        }
        return tr("Blocks %1–%2\n%3 in use, %4 shared, %5 prefix-cached\nOwners: %6")
            .arg(block).arg(last).arg(used).arg(shared).arg(cached)
            .arg(names.isEmpty() ? tr("none") : names.join(", "));
    }
    const folio::BlockCell& c = e.blocks[static_cast<size_t>(block)];
    const QString who = c.owner >= 0 ? tr("%1 (request #%2)").arg(owner(c.owner).label).arg(c.owner)
                        : c.ref_count > 0 ? tr("no running request") : tr("free");
    return tr("Block %1\nOwner: %2\nTokens: %3 of %4\nReferences: %5%6\nPrefix-cached: %7")
        .arg(block).arg(who).arg(c.tokens).arg(e.block_size).arg(c.ref_count)
        .arg(c.ref_count > 1 ? tr(" (shared)") : QString())
        .arg(c.cached ? tr("yes") : tr("no"));
}

bool BlockMapWidget::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int block = blockAt(help->pos());
        const int draft = draftBlockAt(help->pos());
        if (block >= 0) QToolTip::showText(help->globalPos(), describeBlock(block), this);
        else if (draft >= 0) QToolTip::showText(help->globalPos(), describeDraftBlock(draft), this);
        else QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

}  // namespace folio::ui
