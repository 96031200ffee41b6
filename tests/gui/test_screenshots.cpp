// Screenshots for a reviewer, written to <build>/artifacts/screenshots/:
// the whole window and the chat mid-generation at 1500x950, the KV block
// map with several owners, the live plots after a few replies, and the
// window again at 1024x700 (compact: the chat keeps the room, the panels
// share a tabbed column) mid-reply and with its plots tab raised. Runs under
// the offscreen platform, and again under Xvfb (xcb) when xvfb-run is
// installed (into screenshots/xvfb/): widgets are grabbed, not the screen.
#include <QDir>

#include <algorithm>
#include <QImage>

#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/block_map_widget.h"
#include "ui/chat_controller.h"
#include "ui/chat_view.h"
#include "ui/plots_panel.h"
#include "ui/model_panel.h"
#include "ui/session_list_panel.h"
#include "ui/theme.h"

using namespace folio::ui;

using folio_gui_test::save;
using folio_gui_test::screenshot_dir;

class ScreenshotTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void main_views() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        folio_gui_test::DataDir data;
        auto window = folio_gui_test::open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        window->resize(1500, 950);
        ChatController* chats = window->chats();

        const QStringList prompts{"Explain in a few short paragraphs how a KV cache speeds up text generation, with a small "
                                  "Markdown list of its costs.",
                                  "Write a short story about a lighthouse keeper.",
                                  "List ten fruits with one fact about each."};
        QStringList ids{window->chatView()->sessionId()};
        chats->renameSession(ids[0], "KV caches explained");
        ids << chats->createSession("Lighthouse story") << chats->createSession("Fruit facts");
        for (int i = 0; i < ids.size(); ++i) {
            SamplingSettings s = chats->session(ids[i])->sampling;
            s.max_tokens = 160;
            s.seed = 11 + i;
            chats->setSampling(ids[i], s);
            // Long enough to fill whole KV blocks: the chats share them through the prefix cache.
            chats->setSystemPrompt(ids[i], "You are a helpful assistant. Answer clearly and concisely, use Markdown "
                                           "lists where they help, and say so when you are not sure of something.");
        }
        // A first short exchange, so the chat shows a finished reply with its statistics.
        SamplingSettings quick = chats->session(ids[0])->sampling;
        quick.max_tokens = 24;
        chats->setSampling(ids[0], quick);
        QVERIFY(chats->send(ids[0], "What is a token?"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(ids[0]), 60000);
        quick.max_tokens = 160;
        chats->setSampling(ids[0], quick);

        window->sessionList()->setCurrentSession(ids[0]);
        for (int i = 0; i < ids.size(); ++i) QVERIFY(chats->send(ids[i], prompts[i]));
        QTRY_VERIFY_WITH_TIMEOUT(window->blockMap()->owners().size() >= 3, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(chats->session(ids[0])->messages.back().content.size() > 120, 90000);
        QVERIFY(chats->isGenerating(ids[0]));
        window->chatView()->flushPendingUpdates();
        QTest::qWait(100);
        QVERIFY(save(window.get(), "studio-window.png"));
        QVERIFY(save(window->chatView(), "chat-mid-generation.png"));
        QVERIFY(window->blockMap()->owners().size() >= 2);
        // The system prompt's blocks, cached by the first exchange, are shared by the chats now running.
        const auto& blocks = window->blockMap()->snapshot().event->blocks;
        QVERIFY2(std::any_of(blocks.begin(), blocks.end(), [](const folio::BlockCell& c) { return c.ref_count > 1; }),
                 "no shared KV block in the map");
        QVERIFY(save(window->blockMap(), "kv-block-map.png"));
        QTRY_VERIFY_WITH_TIMEOUT(chats->generatingCount() == 0, 120000);
        // Samples come every 100 ms while a model is loaded: on a quiet machine the replies can all be
        // done within 2 s, so wait for the plots to hold 2 s of them rather than assume it.
        QTRY_VERIFY_WITH_TIMEOUT(window->plots()->sampleCount() > 20, 10000);
        QVERIFY(window->plots()->exportPng(screenshot_dir() + "/live-plots.png"));
        QVERIFY(window->plots()->exportCsv(screenshot_dir() + "/live-plots.csv"));
        QVERIFY(save(window.get(), "studio-window-after.png"));
        window->raisePanel(window->modelPanel());
        QTest::qWait(50);
        QVERIFY(save(window->modelPanel(), "model-inspector.png"));
        folio::ui::apply_theme(folio::ui::ThemeMode::Dark);
        QTest::qWait(50);
        QVERIFY(save(window.get(), "studio-window-dark.png"));
        folio::ui::apply_theme(folio::ui::ThemeMode::Light);

        // 1024x700: compact, a reply streaming in the chat.
        window->resize(1024, 700);
        QTRY_VERIFY(window->isCompact());
        SamplingSettings longer = chats->session(ids[1])->sampling;
        longer.max_tokens = 200;
        chats->setSampling(ids[1], longer);
        window->sessionList()->setCurrentSession(ids[1]);
        QVERIFY(chats->send(ids[1], "Now tell the same story from the lighthouse's point of view."));
        QTRY_VERIFY_WITH_TIMEOUT(chats->session(ids[1])->messages.back().content.size() > 200, 90000);
        window->chatView()->flushPendingUpdates();
        QTest::qWait(100);
        QVERIFY(save(window.get(), "studio-window-1024x700.png"));
        window->raisePanel(window->plots());
        QTest::qWait(100);
        QVERIFY(save(window.get(), "studio-window-1024x700-plots.png"));
        QTRY_VERIFY_WITH_TIMEOUT(chats->generatingCount() == 0, 120000);
        // And back: the roomy layout as it was.
        window->resize(1500, 950);
        QTRY_VERIFY(!window->isCompact());
        QTest::qWait(100);
        window->raisePanel(window->blockMap());
        QVERIFY(save(window.get(), "studio-window-1500x950-again.png"));
    }
};

QTEST_MAIN(ScreenshotTest)
#include "test_screenshots.moc"
