// Folio Studio on the default model: the model loads at start; a message's
// reply streams into the chat view; two chats generate at the same moment
// and the block map shows both as owners; Stop ends a reply mid-way;
// restarting the engine with new settings keeps the chats; a chat longer
// than a tiny KV budget holds loses its oldest turns with a notice (or,
// as its settings say, fails with advice or is truncated); a reply queued
// behind another says so; a bad file shows an error dialog while the
// loaded model stays shown; and the real app killed mid-reply comes back
// with its sessions.
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>

#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/block_map_widget.h"
#include "ui/chat_controller.h"
#include "ui/chat_view.h"
#include "ui/message_widget.h"
#include "ui/metrics_dialog.h"
#include "ui/model_panel.h"
#include "ui/plots_panel.h"
#include "ui/session_list_panel.h"
#include "ui/session_store.h"

using namespace folio::ui;
using folio_gui_test::DataDir;
using folio_gui_test::open_window;

namespace {

void set_max_tokens(ChatController* chats, const QString& id, int max_tokens, double temperature = 0.0) {
    SamplingSettings s = chats->session(id)->sampling;
    s.max_tokens = max_tokens;
    s.temperature = temperature;
    s.seed = 7;
    chats->setSampling(id, s);
}

const ChatMessageRecord& last_message(ChatController* chats, const QString& id) {
    return chats->session(id)->messages.back();
}

const char* kLongPrompt = "Count from 1 to 300, separated by commas.";
// SmolLM2 Q4_1's greedy reply to this runs to max_tokens; its greedy count to 300 stops at 20 (122 tokens),
// which a fast 2-core machine finishes in 0.8 s, before the first partial save (a second after the first
// token), so a test killing the app mid-reply would find nothing saved.
const char* kGreedyLongPrompt = "Write a very long story about a dragon.";

}  // namespace

class StudioTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void default_model_loads_at_start() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        qputenv("FOLIO_MODEL", model.c_str());
        folio::ui::MainWindowOptions options;  // no model given: the default one
        MainWindow window(options);
        window.show();
        QTRY_VERIFY_WITH_TIMEOUT(window.bridge()->isLoaded(), 60000);
        qunsetenv("FOLIO_MODEL");
        QCOMPARE(window.bridge()->model().architecture, QString("llama"));
        QVERIFY(window.bridge()->status().n_blocks > 0);
        QVERIFY2(window.modelPanel()->estimateText().contains("Weights"), qPrintable(window.modelPanel()->estimateText()));
        QVERIFY(!window.bridge()->model().quant_mix.isEmpty());
        QVERIFY(window.recentModels().contains(QString::fromStdString(model)));
        QVERIFY(window.lastError().isEmpty());
        QCOMPARE(window.chats()->sessions().size(), 1);  // a first chat is there to type into
        // Named by its file (the metadata's name in the tooltip), idle until asked.
        const QString file = QFileInfo(QString::fromStdString(model)).fileName();
        QVERIFY2(window.windowTitle().endsWith(file), qPrintable(window.windowTitle()));
        QVERIFY2(window.modelPanel()->stateText().startsWith("Loaded: " + file), qPrintable(window.modelPanel()->stateText()));
        QVERIFY2(window.modelPanel()->stateText().contains("context 4096 tokens"), qPrintable(window.modelPanel()->stateText()));
        QVERIFY2(window.blockMap()->summary().contains("all free · idle"), qPrintable(window.blockMap()->summary()));
        QCOMPARE(window.recentModels().count(QFileInfo(QString::fromStdString(model)).absoluteFilePath()), 1);
    }

    void long_chat_drops_its_oldest_turns_with_a_notice() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        {
            // Twelve earlier messages: some 450 tokens, more than the 7 MiB KV budget below holds (304 tokens).
            ChatSession long_chat = ChatSession::create("Long");
            const QDateTime now = QDateTime::currentDateTimeUtc();
            for (int i = 0; i < 6; ++i) {
                long_chat.messages.push_back({"user", QString("Question %1: tell me something interesting about the "
                                                             "number %1 and why people like it.").arg(i + 1), now, false, {}, {}, {}});
                long_chat.messages.push_back({"assistant", QString("The number %1 is interesting because it shows up in "
                                                                  "many places in mathematics, nature and daily life.").arg(i + 1),
                                              now, false, {}, "stop", {}});
            }
            long_chat.sampling.temperature = 0;
            long_chat.sampling.max_tokens = 16;
            QVERIFY(SessionStore(data.path() + "/sessions.json").save({long_chat}));
        }
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        EngineSettings small = window->bridge()->settings();
        small.kv_budget_mib = 7;
        QSignalSpy loaded(window->bridge(), &EngineBridge::modelLoaded);
        window->bridge()->restart(small);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.size(), 1, 60000);
        QCOMPARE(window->bridge()->status().effective_context(), 304u);
        QVERIFY2(window->modelPanel()->stateText().contains("effective context 304 tokens"),
                 qPrintable(window->modelPanel()->stateText()));

        ChatController* chats = window->chats();
        const QString id = chats->sessions().front().id;
        window->sessionList()->setCurrentSession(id);
        QVERIFY(chats->send(id, "And what about the number seven?"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 60000);
        const ChatMessageRecord& reply = last_message(chats, id);
        QVERIFY2(reply.finish_reason != "error", qPrintable(reply.error));
        QVERIFY(!reply.content.isEmpty());
        QVERIFY2(reply.dropped_messages >= 2 && reply.dropped_messages % 2 == 0,
                 qPrintable(QString::number(reply.dropped_messages)));  // whole turns
        QVERIFY(reply.full_prompt_tokens > 304);
        QCOMPARE(reply.context_tokens, 304);
        QVERIFY(reply.stats.prompt_tokens <= 304 - 16);  // room for the reply
        window->chatView()->flushPendingUpdates();
        MessageWidget* shown = window->chatView()->messageWidget(window->chatView()->messageCount() - 1);
        QVERIFY2(shown->noticeText().contains("oldest messages were left out"), qPrintable(shown->noticeText()));
        QVERIFY(!shown->isErrorCard());

        // "Stop with an error": the card says what to do.
        chats->setOverflow(id, folio::ChatOverflow::Stop);
        QVERIFY(chats->regenerate(id));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 60000);
        QCOMPARE(last_message(chats, id).finish_reason, QString("error"));
        window->chatView()->flushPendingUpdates();
        shown = window->chatView()->messageWidget(window->chatView()->messageCount() - 1);
        QVERIFY(shown->isErrorCard());
        QVERIFY2(shown->errorText().contains("the context holds 304") && shown->errorText().contains("Drop oldest turns"),
                 qPrintable(shown->errorText()));

        // "Truncate the middle": the engine keeps the system prompt and the latest tokens, and says how many went.
        chats->setOverflow(id, folio::ChatOverflow::TruncateMiddle);
        QVERIFY(chats->regenerate(id));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 60000);
        QVERIFY2(last_message(chats, id).finish_reason != "error", qPrintable(last_message(chats, id).error));
        QVERIFY(last_message(chats, id).stats.truncated_tokens > 0);
        QVERIFY(last_message(chats, id).stats.summary().contains("left out to fit the context"));
        // The choice is the chat's: saved with it.
        QVERIFY(chats->saveNow());
        const QVector<ChatSession> saved = SessionStore(data.path() + "/sessions.json").load();
        QCOMPARE(saved.front().overflow, folio::ChatOverflow::TruncateMiddle);
    }

    void a_queued_reply_says_what_it_waits_for() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        EngineSettings one = window->bridge()->settings();
        one.max_num_seqs = 1;  // one reply at a time: the second waits
        QSignalSpy loaded(window->bridge(), &EngineBridge::modelLoaded);
        window->bridge()->restart(one);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.size(), 1, 60000);
        ChatController* chats = window->chats();
        const QString a = window->chatView()->sessionId();
        const QString b = chats->createSession("Second");
        set_max_tokens(chats, a, 300);
        set_max_tokens(chats, b, 8);
        QVERIFY(chats->send(a, kLongPrompt));
        QTRY_VERIFY_WITH_TIMEOUT(!last_message(chats, a).content.isEmpty(), 60000);
        QVERIFY(chats->send(b, "Hi"));
        window->sessionList()->setCurrentSession(b);
        QTRY_VERIFY_WITH_TIMEOUT(window->chatView()->messageWidget(1) &&
                                     (window->chatView()->flushPendingUpdates(),
                                      window->chatView()->messageWidget(1)->statsText().contains("queued behind 1 request")),
                                 10000);
        QVERIFY(chats->isGenerating(a));
        chats->stop(a);
        // Once the first is gone, the second runs.
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(b), 60000);
        QVERIFY(last_message(chats, b).finish_reason != "error");
    }

    void reply_streams_into_the_view() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        ChatController* chats = window->chats();
        const QString id = window->chatView()->sessionId();
        QVERIFY(!id.isEmpty());
        set_max_tokens(chats, id, 48);
        window->chatView()->composer()->setPlainText("Write a short poem about autumn leaves.");
        QTest::mouseClick(window->chatView()->sendButton(), Qt::LeftButton);
        QCOMPARE(window->chatView()->messageCount(), 2);
        QVERIFY(window->chatView()->stopButton()->isEnabled());
        // Tokens arrive while the reply is still generating: several distinct partial texts.
        QSet<QString> partials;
        QElapsedTimer t;
        t.start();
        while (chats->isGenerating(id) && t.elapsed() < 60000) {
            QTest::qWait(30);
            window->chatView()->flushPendingUpdates();
            const QString shown = window->chatView()->messageText(1);
            if (!shown.isEmpty() && chats->isGenerating(id)) partials.insert(shown);
        }
        QVERIFY(!chats->isGenerating(id));
        QVERIFY2(partials.size() >= 3, qPrintable(QString("only %1 partial texts seen").arg(partials.size())));
        const ChatMessageRecord& reply = last_message(chats, id);
        QVERIFY(!reply.content.isEmpty());
        QCOMPARE(window->chatView()->messageText(1), reply.content);
        QVERIFY(reply.finish_reason == "stop" || reply.finish_reason == "length");
        QVERIFY(reply.has_stats);
        QVERIFY(reply.stats.ttft_s > 0);
        QVERIFY(reply.stats.prompt_tokens > 0);
        QVERIFY(reply.stats.generated_tokens > 0);
        QVERIFY(reply.stats.prefill_tokens_per_s > 0);
        QVERIFY2(window->chatView()->messageWidget(1)->statsText().contains("TTFT"),
                 qPrintable(window->chatView()->messageWidget(1)->statsText()));
        QVERIFY(!window->chatView()->stopButton()->isEnabled());

        // A second turn reuses the first turn's KV blocks through the prefix cache.
        QVERIFY(chats->send(id, "Now make it rhyme."));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 60000);
        QVERIFY2(last_message(chats, id).stats.cached_prompt_tokens > 0,
                 qPrintable(QString::number(last_message(chats, id).stats.cached_prompt_tokens)));
        // Plots got samples along the way.
        QVERIFY(window->plots()->sampleCount() > 0);
        // Engine > Metrics shows the Prometheus text with the tokens counted.
        QAction* metrics = nullptr;
        for (QAction* a : window->findChildren<QAction*>())
            if (a->text().contains("Metrics")) metrics = a;
        QVERIFY(metrics);
        metrics->trigger();
        QVERIFY(window->metricsDialog() && window->metricsDialog()->isVisible());
        QTRY_VERIFY_WITH_TIMEOUT(window->metricsDialog()->text().contains("folio:generation_tokens_total"), 5000);
        window->metricsDialog()->close();
    }

    void hugging_face_folder_is_inspected() {
        FOLIO_REQUIRE_MODEL(folder, folio_test::kSmolLM2Folder);
        DataDir data;
        EngineBridge bridge;
        QSignalSpy inspected(&bridge, &EngineBridge::modelInspected);
        bridge.inspect(QString::fromStdString(folder));
        QTRY_COMPARE_WITH_TIMEOUT(inspected.size(), 1, 30000);
        const ModelSummary s = inspected.front().front().value<ModelSummary>();
        QCOMPARE(s.format, QString("Hugging Face folder"));
        QCOMPARE(s.architecture, QString("llama"));
        QVERIFY(s.parameters > 100'000'000);
        QVERIFY(s.kv_bytes_per_token > 0);
    }

    void two_chats_generate_at_once_and_own_blocks() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        ChatController* chats = window->chats();
        const QString a = window->chatView()->sessionId();
        const QString b = chats->createSession("Second");
        set_max_tokens(chats, a, 200);
        set_max_tokens(chats, b, 200);
        QVERIFY(chats->send(a, kLongPrompt));
        QVERIFY(chats->send(b, "List the names of twenty animals, one per line."));
        QCOMPARE(chats->generatingCount(), 2);
        // Both replies have text while both still generate, and the map shows two owners.
        QTRY_VERIFY_WITH_TIMEOUT(window->blockMap()->owners().size() >= 2, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(!last_message(chats, a).content.isEmpty() && !last_message(chats, b).content.isEmpty(), 60000);
        const QList<qint64> owners = window->blockMap()->owners();
        QSet<QString> labels;
        for (qint64 o : owners) {
            const quint64 ticket = window->blockMap()->snapshot().tickets.value(o);
            labels.insert(chats->sessionForTicket(ticket));
        }
        QVERIFY2(labels.contains(a) && labels.contains(b), "the block map's owners are not the two chats");
        chats->stop(a);
        chats->stop(b);
        QCOMPARE(chats->generatingCount(), 0);
    }

    void stop_ends_a_reply_midway() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        ChatController* chats = window->chats();
        const QString id = window->chatView()->sessionId();
        set_max_tokens(chats, id, 400);
        QVERIFY(chats->send(id, kLongPrompt));
        QTRY_VERIFY_WITH_TIMEOUT(last_message(chats, id).content.size() >= 8, 60000);
        QVERIFY(chats->isGenerating(id));
        QTest::mouseClick(window->chatView()->stopButton(), Qt::LeftButton);
        QVERIFY(!chats->isGenerating(id));
        const QString at_stop = last_message(chats, id).content;
        QCOMPARE(last_message(chats, id).finish_reason, QString("abort"));
        QTest::qWait(800);
        QCOMPARE(last_message(chats, id).content, at_stop);  // nothing more arrives
        // The engine is free again: a regenerate runs to its end.
        set_max_tokens(chats, id, 8);
        QVERIFY(chats->regenerate(id));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 60000);
        QVERIFY(last_message(chats, id).finish_reason != "abort");
    }

    void engine_restart_keeps_chats() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        ChatController* chats = window->chats();
        const QString id = window->chatView()->sessionId();
        set_max_tokens(chats, id, 6);
        QVERIFY(chats->send(id, "Hi"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 60000);
        EngineSettings s = window->bridge()->settings();
        s.block_size = 32;
        s.kv_budget_mib = 32;
        s.prefix_caching = false;
        QSignalSpy loaded(window->bridge(), &EngineBridge::modelLoaded);
        window->bridge()->restart(s);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.size(), 1, 60000);
        QCOMPARE(window->bridge()->status().block_size, 32u);
        QCOMPARE(chats->session(id)->messages.size(), 2);
        QVERIFY(chats->send(id, "Hello again"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 60000);
        QCOMPARE(chats->session(id)->messages.size(), 4);
        QVERIFY(last_message(chats, id).finish_reason != "error");
    }

    void bad_file_shows_an_error_dialog() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY(window->bridge()->isLoaded());
        const QString bad = data.path() + "/broken.gguf";
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("GGUF\x03\0\0\0this is not a model at all", 32);
        }
        window->openModel(bad);
        QTRY_VERIFY_WITH_TIMEOUT(window->errorDialog() != nullptr, 10000);
        QMessageBox* box = window->errorDialog();
        QVERIFY(box->isVisible());
        QVERIFY2(box->text().contains("broken.gguf"), qPrintable(box->text()));
        QVERIFY(window->findChild<QMessageBox*>("errorDialog") == box);
        box->accept();
        // The loaded model is untouched and still answers, and the panel still says so.
        QVERIFY(window->bridge()->isLoaded());
        QVERIFY2(window->modelPanel()->stateText().startsWith("Loaded: "), qPrintable(window->modelPanel()->stateText()));
        QCOMPARE(window->modelPanel()->summary().path, window->bridge()->model().path);
        window->openModel(data.path() + "/does-not-exist.gguf");
        QTRY_VERIFY_WITH_TIMEOUT(window->errorDialog() != nullptr && window->lastError().contains("does-not-exist"), 10000);
        window->errorDialog()->accept();
        window->openModel(data.path());  // a folder that is no model
        QTRY_VERIFY_WITH_TIMEOUT(window->errorDialog() != nullptr, 10000);
        window->errorDialog()->accept();
        QVERIFY(window->bridge()->isLoaded());
    }

    void killed_app_restores_its_sessions() {
#ifndef FOLIO_STUDIO_EXE
        QSKIP("folio-studio is not built");
#else
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        {
            // A greedy first chat: the --chat one copies its settings, so the reply is long and predictable.
            ChatSession seed = ChatSession::create("Greedy");
            seed.sampling.temperature = 0;
            seed.sampling.max_tokens = 1000;
            QVERIFY(SessionStore(data.path() + "/sessions.json").save({seed}));
        }
        QProcess app;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("FOLIO_STUDIO_DATA", data.path());
        env.insert("QT_QPA_PLATFORM", "offscreen");
        app.setProcessEnvironment(env);
        app.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        app.start(FOLIO_STUDIO_EXE, {QString::fromStdString(model), "--chat", kGreedyLongPrompt});
        QVERIFY2(app.waitForStarted(10000), qPrintable(app.errorString()));
        // Wait until a partial reply is on disk, then kill the app mid-reply.
        const QString file = data.path() + "/sessions.json";
        QString partial;
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 90000 && app.state() == QProcess::Running) {
            QTest::qWait(100);
            QFile f(file);
            if (!f.open(QIODevice::ReadOnly)) continue;
            const QJsonArray sessions = QJsonDocument::fromJson(f.readAll()).object().value("sessions").toArray();
            for (const QJsonValue& s : sessions) {
                const QJsonArray messages = s.toObject().value("messages").toArray();
                if (messages.size() == 2 && messages[1].toObject().value("finish_reason").toString().isEmpty())
                    partial = messages[1].toObject().value("content").toString();
            }
            if (partial.size() >= 10) break;
        }
        QFile saved(file);
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QVERIFY2(partial.size() >= 10, qPrintable("no partial reply was saved while generating: " + saved.readAll()));
        QCOMPARE(app.state(), QProcess::Running);
        app.kill();  // SIGKILL: no chance to save
        QVERIFY(app.waitForFinished(10000));

        folio::ui::MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        window.show();
        const ChatSession* restored = nullptr;
        for (const ChatSession& s : window.chats()->sessions())
            if (s.messages.size() == 2) restored = &s;
        QVERIFY2(restored != nullptr, "the killed app's chat is not there");
        QCOMPARE(restored->messages[0].content, QString(kGreedyLongPrompt));
        QVERIFY(restored->messages[1].content.startsWith(partial.left(10)));
        QCOMPARE(restored->messages[1].finish_reason, QString("interrupted"));
        window.sessionList()->setCurrentSession(restored->id);
        QCOMPARE(window.chatView()->messageCount(), 2);
        QVERIFY(window.chatView()->messageWidget(1)->statsText().contains("interrupted"));
#endif
    }
};

QTEST_MAIN(StudioTest)
#include "test_studio.moc"
