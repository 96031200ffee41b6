// Speculative decoding in the studio (issue 22, part 2), on the default
// model: Engine Settings refuses a draft model of another vocabulary (with
// its reason) and takes one of the same; an INT4 self-draft chat gives the
// plain chat's greedy reply token for token, its stats say what was drafted
// and accepted and the speed-up against the plain reply, and the
// Speculation panel fills (method and K, acceptance over time, draft vs
// verify time, one bar per draft position); switching to n-gram keeps the
// chats. Screenshots of the panel.
#include <QAction>
#include <QLabel>
#include <QPushButton>

#include <qcustomplot.h>

#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/chat_controller.h"
#include "ui/chat_view.h"
#include "ui/engine_settings_dialog.h"
#include "ui/message_widget.h"
#include "ui/session_list_panel.h"
#include "ui/spec_panel.h"
#include "ui/block_map_widget.h"

using namespace folio::ui;
using folio_gui_test::DataDir;
using folio_gui_test::open_window;

namespace {

const char* kPrompt = "List the days of the week, one per line.";

// A new chat that replies greedily with at most `max_tokens`; its reply.
const ChatMessageRecord& greedy_reply(MainWindow& window, const QString& title, int max_tokens) {
    ChatController* chats = window.chats();
    const QString id = chats->createSession(title);
    SamplingSettings s = chats->session(id)->sampling;
    s.max_tokens = max_tokens;
    s.temperature = 0;
    chats->setSampling(id, s);
    window.sessionList()->setCurrentSession(id);
    if (!chats->send(id, kPrompt)) qFatal("send failed");
    QElapsedTimer t;
    t.start();
    while (chats->isGenerating(id) && t.elapsed() < 120000) QTest::qWait(20);
    return chats->session(id)->messages.back();
}

bool restart(MainWindow& window, const EngineSettings& s) {
    QSignalSpy loaded(window.bridge(), &EngineBridge::modelLoaded);
    window.bridge()->restart(s);
    return loaded.wait(120000) || loaded.size() == 1;
}

}  // namespace

class SpecTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void settings_refuse_a_draft_of_another_vocabulary() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        FOLIO_REQUIRE_MODEL(gemma, folio_test::kGemma3);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        EngineSettings s = window->bridge()->settings();
        s.spec_method = "draft";
        s.draft_model = QString::fromStdString(gemma);
        {
            EngineSettingsDialog dialog(s, window->bridge()->model());
            QVERIFY2(dialog.draftProblem().contains("vocabulary"), qPrintable(dialog.draftProblem()));
            QVERIFY2(dialog.draftProblem().contains("262144"), qPrintable(dialog.draftProblem()));
            auto* status = dialog.findChild<QLabel*>("draftStatus");
            QVERIFY(status && status->text().startsWith("✗"));
            bool apply_enabled = true;
            for (QPushButton* b : dialog.findChildren<QPushButton*>())
                if (b->text() == "Apply and restart") apply_enabled = b->isEnabled();
            QVERIFY(!apply_enabled);
        }
        s.draft_model = QString::fromStdString(model);  // the model itself: the same vocabulary
        EngineSettingsDialog dialog(s, window->bridge()->model());
        QVERIFY2(dialog.draftProblem().isEmpty(), qPrintable(dialog.draftProblem()));
        QVERIFY2(dialog.findChild<QLabel*>("draftStatus")->text().contains("same vocabulary"),
                 qPrintable(dialog.findChild<QLabel*>("draftStatus")->text()));
        QCOMPARE(dialog.settings().spec_method, QString("draft"));
        QCOMPARE(dialog.settings().draft_model, QString::fromStdString(model));
    }

    void int4_self_chat_is_the_plain_reply_and_fills_the_panel() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        window->resize(1500, 950);
        SpecPanel* panel = window->specPanel();
        QVERIFY2(panel->stateText().contains("off"), qPrintable(panel->stateText()));

        const ChatMessageRecord plain = greedy_reply(*window, "Plain", 48);
        QVERIFY2(plain.finish_reason != "error", qPrintable(plain.error));
        QCOMPARE(plain.stats.draft_tokens, 0);
        BlockMapWidget* map = window->blockMap();
        QCOMPARE(map->draftBlocks(), 0);  // no draft model: no band
        QVERIFY(map->draftArea().isEmpty());

        EngineSettings s = window->bridge()->settings();
        s.spec_method = "int4-self";
        s.draft_max = 4;
        s.draft_adaptive = false;  // always 4 drafts: every position gets its bar
        QVERIFY(restart(*window, s));
        QVERIFY2(window->bridge()->status().speculation.startsWith("int4-self"),
                 qPrintable(window->bridge()->status().speculation));
        const ChatMessageRecord spec = greedy_reply(*window, "Speculative", 48);
        QVERIFY2(spec.finish_reason != "error", qPrintable(spec.error));
        // Greedy speculation changes nothing in the reply.
        QCOMPARE(spec.content, plain.content);
        QVERIFY(spec.stats.draft_tokens > 0);
        QVERIFY(spec.stats.accepted_tokens > 0);
        QVERIFY(spec.stats.n_drafts > 0);
        QVERIFY(spec.stats.plain_decode_tokens_per_s > 0);
        window->chatView()->flushPendingUpdates();
        const QString stats = spec.stats.summary();
        QVERIFY2(stats.contains("drafted") && stats.contains("x plain decode"), qPrintable(stats));
        // The accepted drafts' text is marked: some of the reply, not all; none in the plain one.
        QVERIFY(plain.draft_ranges.isEmpty());
        int drafted = 0;
        for (const auto& [b, e] : spec.draft_ranges) {
            QVERIFY(0 <= b && b < e && e <= spec.content.size());
            drafted += e - b;
        }
        QVERIFY2(drafted > 0 && drafted < spec.content.size(), qPrintable(QString::number(drafted)));
        // View > Tint Accepted Drafts: the reply as tinted rich text, and the legend; off: Markdown again.
        QAction* tint = window->findChild<QAction*>("tintDrafts");
        QVERIFY(tint != nullptr);
        ChatView* view = window->chatView();
        MessageWidget* shown = view->messageWidget(view->messageCount() - 1);
        QCOMPARE(shown->bodyFormat(), Qt::MarkdownText);
        QVERIFY(view->draftLegend()->isHidden());

        // The draft model's KV pool in the block map: its own band, its blocks
        // held for the chat while it drafts, all free once the reply is done.
        {
            ChatController* chats = window->chats();
            const QString speculative = view->sessionId();
            const QString id = chats->createSession("Draft blocks");
            SamplingSettings g = chats->session(id)->sampling;
            g.temperature = 0;
            g.max_tokens = 96;
            chats->setSampling(id, g);
            window->sessionList()->setCurrentSession(id);
            QVERIFY(chats->send(id, kPrompt));
            int most = 0;
            QString tip;
            QElapsedTimer t;
            t.start();
            while (chats->isGenerating(id) && t.elapsed() < 60000) {
                QTest::qWait(5);
                const int used = map->draftBlocksInUse();
                if (used > most) {
                    most = used;
                    for (int b = 0; b < map->draftBlocks() && tip.isEmpty(); ++b)
                        if (map->snapshot().event->draft_blocks[static_cast<size_t>(b)].owner >= 0)
                            tip = map->describeDraftBlock(b);
                }
            }
            QVERIFY(map->draftBlocks() > 0);
            QVERIFY(!map->draftArea().isEmpty());
            QVERIFY2(most > 0, "the draft model's blocks were held while it drafted");
            QVERIFY2(tip.contains("Drafting for:"), qPrintable(tip));
            QTRY_COMPARE_WITH_TIMEOUT(map->draftBlocksInUse(), 0, 5000);
            std::printf("draft blocks: %d, at most %d in use; %s\n", map->draftBlocks(), most, qPrintable(tip));
            QVERIFY(folio_gui_test::save(window.get(), "spec-draft-blocks-1500x950.png"));
            window->sessionList()->setCurrentSession(speculative);
        }
        tint->setChecked(true);
        shown = view->messageWidget(view->messageCount() - 1);
        QCOMPARE(shown->bodyFormat(), Qt::RichText);
        QVERIFY2(shown->bodyText().contains(MessageWidget::draftTintCss()), qPrintable(shown->bodyText()));
        QVERIFY(!view->draftLegend()->isHidden());

        // The panel (drawn while shown): method and K, acceptance and cost over time, one bar per position.
        window->raisePanel(panel);
        QTRY_VERIFY_WITH_TIMEOUT(panel->acceptancePlot()->graph(0)->dataCount() > 0, 5000);
        QVERIFY(panel->costPlot()->graph(1)->dataCount() > 0);   // verify time
        QTRY_COMPARE_WITH_TIMEOUT(panel->positionBars(), 4, 5000);
        QVERIFY2(panel->stateText().startsWith("int4-self, K ≤ 4 (fixed)"), qPrintable(panel->stateText()));
        double first_rate = -1;
        for (auto it = panel->acceptancePlot()->graph(0)->data()->constBegin();
             it != panel->acceptancePlot()->graph(0)->data()->constEnd(); ++it)
            if (!std::isnan(it->value)) first_rate = it->value;
        QVERIFY2(first_rate > 0 && first_rate <= 1, qPrintable(QString::number(first_rate)));
        QTest::qWait(300);
        QVERIFY(folio_gui_test::save(window.get(), "spec-int4-self-1500x950.png"));
        window->resize(1024, 700);
        QTest::qWait(300);
        QVERIFY(folio_gui_test::save(window.get(), "spec-int4-self-1024x700.png"));
        tint->setChecked(false);
        QCOMPARE(view->messageWidget(view->messageCount() - 1)->bodyFormat(), Qt::MarkdownText);
        QVERIFY(view->draftLegend()->isHidden());

        // Another method: the chats stay, replies come.
        s.spec_method = "ngram";
        s.draft_adaptive = true;
        QVERIFY(restart(*window, s));
        QVERIFY2(panel->stateText().startsWith("ngram"), qPrintable(panel->stateText()));
        QCOMPARE(window->chats()->sessions().size(), 4);  // the first chat, Plain, Speculative, Draft blocks
        const ChatMessageRecord ngram = greedy_reply(*window, "N-gram", 48);
        QVERIFY2(ngram.finish_reason != "error", qPrintable(ngram.error));
        QCOMPARE(ngram.content, plain.content);
    }
};

QTEST_MAIN(SpecTest)
#include "test_spec.moc"
