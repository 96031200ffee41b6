// The studio's state without a model: sessions round-trip through JSON
// (replies cut short by a kill come back "interrupted"), the store writes
// atomically and reports a damaged file instead of dropping it silently,
// a send with no model loaded ends in a readable error, the plots export
// CSV and PNG, and engine settings survive QSettings with bad values fixed.
#include <QFile>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "folio_test.h"
#include <QTextDocument>

#include "ui/chat_controller.h"
#include "ui/chat_markdown.h"
#include "ui/message_widget.h"
#include "ui/chat_session.h"
#include "ui/engine_bridge.h"
#include "ui/plots_panel.h"
#include "ui/resources.h"
#include "ui/session_store.h"

using namespace folio::ui;

class SessionsTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void session_round_trips_through_json() {
        ChatSession s = ChatSession::create("Trip");
        s.system_prompt = "Be brief.";
        s.sampling.temperature = 0.2;
        s.sampling.seed = 1234;
        ChatMessageRecord u{"user", "Hello **there**", QDateTime::currentDateTimeUtc(), false, {}, {}, {}};
        ChatMessageRecord a{"assistant", "Hi!", QDateTime::currentDateTimeUtc(), true, {}, "stop", {}};
        a.stats.ttft_s = 0.25;
        a.stats.cached_prompt_tokens = 16;
        ChatMessageRecord cut{"assistant", "Half a rep", QDateTime::currentDateTimeUtc(), false, {}, "", {}};
        s.messages = {u, a, u, cut};
        const ChatSession back = ChatSession::from_json(s.to_json());
        QCOMPARE(back.id, s.id);
        QCOMPARE(back.title, QString("Trip"));
        QCOMPARE(back.system_prompt, QString("Be brief."));
        QCOMPARE(back.sampling.seed, qint64(1234));
        QVERIFY(back.sampling == s.sampling);
        QCOMPARE(back.messages.size(), 4);
        QCOMPARE(back.messages[1].stats.cached_prompt_tokens, 16);
        QCOMPARE(back.messages[1].finish_reason, QString("stop"));
        QCOMPARE(back.messages[3].finish_reason, QString("interrupted"));
        QCOMPARE(back.messages[3].content, QString("Half a rep"));
    }

    void overflow_choice_and_dropped_turns_round_trip() {
        ChatSession s = ChatSession::create("Long");
        s.overflow = folio::ChatOverflow::RollingWindow;
        ChatMessageRecord a{"assistant", "Hi!", QDateTime::currentDateTimeUtc(), true, {}, "stop", {}};
        a.dropped_messages = 4;
        a.full_prompt_tokens = 1162;
        a.context_tokens = 720;
        a.stats.truncated_tokens = 33;
        s.messages = {a};
        const ChatSession back = ChatSession::from_json(s.to_json());
        QCOMPARE(back.overflow, folio::ChatOverflow::RollingWindow);
        QCOMPARE(back.messages[0].dropped_messages, 4);
        QCOMPARE(back.messages[0].full_prompt_tokens, 1162);
        QCOMPARE(back.messages[0].context_tokens, 720);
        QCOMPARE(back.messages[0].stats.truncated_tokens, 33);
        // Files from before the choice existed drop the oldest turns.
        QJsonObject old = s.to_json();
        old.remove("overflow");
        QCOMPARE(ChatSession::from_json(old).overflow, folio::ChatOverflow::DropOldestTurns);
        QCOMPARE(ChatSession::create("New").overflow, folio::ChatOverflow::DropOldestTurns);
    }

    void the_studio_samples_with_the_cli_defaults() {
        // One default temperature (and the rest) for folio run/chat and the studio: the engine's.
        const folio::SamplingParams engine;
        const folio::SamplingParams studio = SamplingSettings{}.to_params();
        QCOMPARE(studio.temperature, engine.temperature);
        QCOMPARE(studio.temperature, 0.8f);
        QCOMPARE(studio.top_k, engine.top_k);
        QCOMPARE(studio.top_p, engine.top_p);
        QCOMPARE(studio.min_p, engine.min_p);
        QCOMPARE(studio.repetition_penalty, engine.repetition_penalty);
    }

    void reply_labels_say_what_happens() {
        MessageStats stats;
        stats.preemptions = 1;
        QVERIFY2(stats.summary().contains("1 preemption") && !stats.summary().contains("1 preemptions"),
                 qPrintable(stats.summary()));
        stats.preemptions = 3;
        QVERIFY(stats.summary().contains("3 preemptions"));

        MessageWidget w(1);
        ChatMessageRecord reply{"assistant", "", QDateTime::currentDateTimeUtc(), false, {}, "", {}};
        reply.waiting = ChatMessageRecord::Waiting::Queue;
        reply.waiting_ahead = 2;
        w.setMessage(reply, true);
        QVERIFY2(w.statsText().contains("queued behind 2 requests"), qPrintable(w.statsText()));
        reply.waiting_ahead = 1;
        w.setMessage(reply, true);
        QVERIFY2(w.statsText().contains("queued behind 1 request…"), qPrintable(w.statsText()));
        reply.waiting = ChatMessageRecord::Waiting::Prompt;
        w.setMessage(reply, true);
        QVERIFY2(w.statsText().contains("reading the prompt"), qPrintable(w.statsText()));
        reply.waiting = ChatMessageRecord::Waiting::Model;
        w.setMessage(reply, true);
        QVERIFY2(w.statsText().contains("waiting for the model to load"), qPrintable(w.statsText()));

        QVERIFY(w.noticeText().isEmpty());
        reply.dropped_messages = 4;
        reply.full_prompt_tokens = 1162;
        reply.context_tokens = 720;
        reply.content = "Sure.";
        reply.finish_reason = "stop";
        reply.has_stats = true;
        w.setMessage(reply, true);
        QVERIFY2(w.noticeText().contains("The 4 oldest messages were left out") && w.noticeText().contains("1162") &&
                     w.noticeText().contains("720"),
                 qPrintable(w.noticeText()));
        QVERIFY(!w.isErrorCard());

        // A failed reply: the card with advice, no "…", no empty numbers.
        ChatMessageRecord failed{"assistant", "", QDateTime::currentDateTimeUtc(), true, {}, "error",
                                 "The conversation does not fit: the conversation is 1162 tokens; the context holds 720."};
        w.setMessage(failed, true);
        QVERIFY(w.isErrorCard());
        QVERIFY2(w.errorText().contains("Drop oldest turns") && w.errorText().contains("Engine &gt; Settings"),
                 qPrintable(w.errorText()));
        QVERIFY2(!w.statsText().contains("TTFT"), qPrintable(w.statsText()));
    }

    void markdown_keeps_single_line_breaks() {
        auto rendered = [](const QString& text) {
            QTextDocument doc;
            doc.setMarkdown(chat_markdown(text));
            return doc.toPlainText();
        };
        // A poem typed without blank lines keeps its lines.
        const QString poem = rendered("Roses are red\nViolets are blue\nSugar is sweet");
        QVERIFY2(!poem.contains("red Violets") && poem.contains("Violets are blue"), qPrintable(poem));
        QCOMPARE(poem.count(QChar::LineSeparator) + poem.count('\n'), 2);
        // Paragraphs, lists and code stay as Markdown has them.
        const QString mixed = rendered("Intro line\n\n- one\n- two\n\n```\ncode  line\nnext\n```");
        QVERIFY2(mixed.contains("one") && mixed.contains("two") && mixed.contains("code  line\nnext"), qPrintable(mixed));
        QCOMPARE(chat_markdown("a\n```\nx  \ny\n```"), QString("a  \n```\nx  \ny\n```"));
        QCOMPARE(chat_markdown("| a | b |\n|---|---|\n| 1 | 2 |"), QString("| a | b |\n|---|---|\n| 1 | 2 |"));
        QCOMPARE(chat_markdown("a\nb"), QString("a  \nb"));
    }

    void store_saves_atomically_and_reports_damage() {
        QTemporaryDir dir;
        SessionStore store(dir.path() + "/sessions.json");
        QVector<ChatSession> sessions{ChatSession::create("A"), ChatSession::create("B")};
        QString error;
        QVERIFY2(store.save(sessions, &error), qPrintable(error));
        QCOMPARE(store.load(&error).size(), 2);
        QVERIFY(error.isEmpty());
        // No temporary file is left next to it.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);
        QFile f(store.path());
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"sessions\": [");
        f.close();
        QVERIFY(store.load(&error).isEmpty());
        QVERIFY2(error.contains("not valid JSON"), qPrintable(error));
    }

    void send_without_model_ends_in_an_error_reply() {
        QTemporaryDir dir;
        EngineBridge bridge;
        ChatController chats(&bridge, SessionStore(dir.path() + "/sessions.json"));
        const QString id = chats.createSession();
        QSignalSpy generating(&chats, &ChatController::generatingChanged);
        QVERIFY(chats.send(id, "Hello"));
        QVERIFY(chats.isGenerating(id));
        QTRY_VERIFY_WITH_TIMEOUT(!chats.isGenerating(id), 5000);
        const ChatSession* s = chats.session(id);
        QCOMPARE(s->messages.size(), 2);
        QCOMPARE(s->messages[1].finish_reason, QString("error"));
        QVERIFY2(s->messages[1].error.contains("No model"), qPrintable(s->messages[1].error));
        QCOMPARE(s->title, QString("Hello"));
        // Regenerate replaces the failed reply; edit-and-resend rewrites the question.
        QVERIFY(chats.regenerate(id));
        QTRY_VERIFY_WITH_TIMEOUT(!chats.isGenerating(id), 5000);
        QCOMPARE(chats.session(id)->messages.size(), 2);
        QVERIFY(chats.editAndResend(id, 0, "Bonjour"));
        QCOMPARE(chats.session(id)->messages[0].content, QString("Bonjour"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats.isGenerating(id), 5000);
        QVERIFY(chats.saveNow());
        SessionStore again(dir.path() + "/sessions.json");
        QCOMPARE(again.load().front().messages[0].content, QString("Bonjour"));
        QVERIFY(!chats.send(id, "   "));
    }

    void plots_export_csv_and_png() {
        QTemporaryDir dir;
        PlotsPanel plots;
        plots.resize(800, 500);
        for (int i = 0; i < 50; ++i) {
            EngineSample s;
            s.time_s = i * 0.1;
            s.prompt_tokens_per_s = 100 + i;
            s.generation_tokens_per_s = 20;
            s.kv_usage = 0.01 * i;
            s.running = i % 3;
            s.ttft_s = i % 10 == 0 ? 0.2 : NAN;
            plots.addSample(s);
        }
        QCOMPARE(plots.sampleCount(), size_t(50));
        QVERIFY(plots.exportCsv(dir.path() + "/s.csv"));
        QFile f(dir.path() + "/s.csv");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 51);
        QVERIFY(lines[0].startsWith("time_s,prompt_tokens_per_s"));
        QVERIFY(lines[1].startsWith("0,100,20,0,0,0,0.2,"));
        plots.setPaused(true);
        QVERIFY(plots.isPaused());
        plots.setPaused(false);
        QVERIFY(plots.exportPng(dir.path() + "/p.png"));
        QVERIFY(QImage(dir.path() + "/p.png").width() > 100);
    }

    void engine_settings_survive_qsettings() {
        QTemporaryDir dir;
        QSettings settings(dir.path() + "/s.ini", QSettings::IniFormat);
        EngineSettings s;
        s.block_size = 32;
        s.kv_budget_mib = 64;
        s.prefix_caching = false;
        s.save(settings);
        QVERIFY(EngineSettings::load(settings) == s);
        settings.setValue("engine/block_size", 0);
        QCOMPARE(EngineSettings::load(settings).block_size, EngineSettings{}.block_size);
    }
};

QTEST_MAIN(SessionsTest)
#include "test_sessions.moc"
