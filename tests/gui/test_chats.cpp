// A chat leaves the studio whole: exported as Markdown (title, system
// prompt, sampling settings, each message under its role with a reply's
// numbers) and as JSON that parses back into the same chat; a failed export
// says why in a dialog and leaves nothing half-written. Presets (system
// prompt + sampling + long-chat policy) are saved from a chat's settings,
// read back by a fresh settings scope, applied to another chat from the
// picker, marked "(edited)" once changed, remembered by the chat across a
// restart, and deleted; they carry the chat's speculation settings. A chat
// chooses its own speculation on the default model: prompt lookup on an
// engine without it, then off mid-conversation (the history stays, the
// replies are the same), a draft-model method the engine does not hold is
// greyed with its reason, and a chat that asks for it anyway gets an error
// reply that says why.
#include <QStandardItemModel>
#include <QSpinBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>

#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/chat_controller.h"
#include "ui/chat_export.h"
#include "ui/chat_presets.h"
#include "ui/main_window.h"
#include "ui/session_list_panel.h"
#include "ui/session_settings_panel.h"
#include "ui/session_store.h"

using namespace folio::ui;

namespace {

// A chat as a user would have it after two turns, one reply cut at the token limit.
ChatSession sample_chat() {
    ChatSession s = ChatSession::create("Trip plans");
    s.system_prompt = "Answer in one sentence.";
    s.sampling.temperature = 0.2;
    s.sampling.top_k = 12;
    s.sampling.seed = 77;
    s.sampling.speculation = "ngram";
    s.sampling.draft_max = 3;
    s.overflow = folio::ChatOverflow::TruncateMiddle;
    const QDateTime t = QDateTime::fromString("2026-12-01T10:00:00.000Z", Qt::ISODateWithMs);
    ChatMessageRecord u1{"user", "Where should I go in **May**?", t, false, {}, {}, {}};
    ChatMessageRecord a1{"assistant", "Lisbon:\n- mild\n- cheap", t.addSecs(2), true, {}, "stop", {}};
    a1.stats.ttft_s = 0.25;
    a1.stats.decode_tokens_per_s = 41.5;
    a1.stats.prompt_tokens = 31;
    a1.stats.generated_tokens = 9;
    a1.stats.cached_prompt_tokens = 16;
    ChatMessageRecord u2{"user", "And in June?", t.addSecs(30), false, {}, {}, {}};
    ChatMessageRecord a2{"assistant", "Oslo, for the long", t.addSecs(31), true, {}, "length", {}};
    a2.stats.generated_tokens = 5;
    s.messages = {u1, a1, u2, a2};
    return s;
}

// Sends `text` in chat `id` and waits for the reply; returns it.
ChatMessageRecord reply_to(MainWindow& w, const QString& id, const QString& text) {
    ChatController* chats = w.chats();
    if (!chats->send(id, text)) qFatal("send failed");
    QElapsedTimer t;
    t.start();
    while (chats->isGenerating(id) && t.elapsed() < 60000) QTest::qWait(20);
    return chats->session(id)->messages.back();
}

std::unique_ptr<MainWindow> window_without_model() {
    MainWindowOptions options;
    options.load_model = false;
    auto w = std::make_unique<MainWindow>(options);
    w->resize(1280, 860);
    w->show();
    return w;
}

QString read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class ChatsTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void chat_exports_as_markdown_and_json_and_parses_back() {
        folio_gui_test::DataDir data;
        const ChatSession chat = sample_chat();
        QVERIFY(SessionStore(studio_data_dir() + "/sessions.json").save({chat}));
        auto w = window_without_model();
        w->sessionList()->setCurrentSession(chat.id);
        QTemporaryDir out;

        const QString md_path = out.path() + "/" + chat_export_file_name(chat, ChatExportFormat::Markdown);
        QCOMPARE(QFileInfo(md_path).fileName(), QString("Trip plans.md"));
        QVERIFY2(w->exportChat(md_path), qPrintable(w->lastError()));
        const QString md = read_all(md_path);
        QVERIFY2(md.startsWith("# Trip plans\n"), qPrintable(md));
        QVERIFY(md.contains("## System prompt\n\nAnswer in one sentence.\n"));
        QVERIFY(md.contains("temperature 0.2, top-k 12"));
        QVERIFY(md.contains("seed 77"));
        QVERIFY(md.contains("## User\n\nWhere should I go in **May**?\n"));
        QVERIFY(md.contains("## Assistant\n\nLisbon:\n- mild\n- cheap\n"));
        QVERIFY2(md.contains("> TTFT 0.25 s"), qPrintable(md));
        QVERIFY(md.contains("31 prompt + 9 generated tokens"));
        QVERIFY(md.contains("stopped at the token limit"));
        // The messages in their order.
        QVERIFY(md.indexOf("May**?") < md.indexOf("Lisbon") && md.indexOf("Lisbon") < md.indexOf("June?") &&
                md.indexOf("June?") < md.indexOf("Oslo"));

        const QString json_path = out.path() + "/trip.json";
        QVERIFY2(w->exportChat(json_path), qPrintable(w->lastError()));
        QJsonParseError parse;
        const QJsonDocument doc = QJsonDocument::fromJson(read_all(json_path).toUtf8(), &parse);
        QVERIFY2(!doc.isNull(), qPrintable(parse.errorString()));
        QCOMPARE(doc.object().value("format").toString(), QString("folio-chat"));
        const QJsonObject raw = doc.object().value("chat").toObject();
        QCOMPARE(raw.value("sampling").toObject().value("temperature").toDouble(), 0.2);
        const QJsonArray messages = raw.value("messages").toArray();
        QCOMPARE(messages.size(), 4);
        QCOMPARE(messages[1].toObject().value("role").toString(), QString("assistant"));
        QCOMPARE(messages[1].toObject().value("stats").toObject().value("decode_tokens_per_s").toDouble(), 41.5);
        ChatSession back;
        QVERIFY(chat_from_export_json(doc.object(), &back));
        QCOMPARE(back.title, chat.title);
        QCOMPARE(back.system_prompt, chat.system_prompt);
        QVERIFY(back.sampling == chat.sampling);
        QCOMPARE(back.overflow, folio::ChatOverflow::TruncateMiddle);
        QCOMPARE(back.messages.size(), chat.messages.size());
        for (int i = 0; i < chat.messages.size(); ++i) {
            QCOMPARE(back.messages[i].role, chat.messages[i].role);
            QCOMPARE(back.messages[i].content, chat.messages[i].content);
            QCOMPARE(back.messages[i].created, chat.messages[i].created);
            QCOMPARE(back.messages[i].finish_reason, chat.messages[i].finish_reason);
            QCOMPARE(back.messages[i].has_stats, chat.messages[i].has_stats);
            QCOMPARE(back.messages[i].stats.generated_tokens, chat.messages[i].stats.generated_tokens);
            QCOMPARE(back.messages[i].stats.ttft_s, chat.messages[i].stats.ttft_s);
        }
        QVERIFY(!chat_from_export_json(QJsonObject{{"sessions", QJsonArray{}}}, &back));
        // Written whole: only the two exports in the folder, no temporary file beside them.
        QCOMPARE(QDir(out.path()).entryList(QDir::Files | QDir::Hidden).size(), 2);

        // A second export over the first replaces it whole.
        QVERIFY(w->exportChat(md_path));
        QCOMPARE(read_all(md_path), md);

        // A folder where the file should be: the export fails, a dialog says which file and why, nothing else appears.
        QVERIFY(QDir(out.path()).mkdir("taken.md"));
        QVERIFY(!w->exportChat(out.path() + "/taken.md"));
        QVERIFY(w->errorDialog() != nullptr);
        QTRY_VERIFY(w->errorDialog()->isVisible());
        QCOMPARE(w->errorDialog()->windowTitle(), QString("Chat not exported"));
        QVERIFY2(w->errorDialog()->text().contains(out.path() + "/taken.md"), qPrintable(w->errorDialog()->text()));
        QVERIFY(QFileInfo(out.path() + "/taken.md").isDir());
        w->errorDialog()->close();
        QVERIFY(!w->exportChat(out.path() + "/no/such/folder/chat.json"));
        QVERIFY(w->lastError().contains("no/such/folder/chat.json"));
        QCOMPARE(QDir(out.path()).entryList(QDir::Files | QDir::Hidden).size(), 2);
    }

    void chat_chooses_its_speculation() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        folio_gui_test::DataDir data;
        auto w = folio_gui_test::open_window(QString::fromStdString(model));
        QVERIFY2(w->bridge()->isLoaded(), qPrintable(w->lastError()));
        QCOMPARE(w->bridge()->status().settings.spec_method, QString("off"));
        ChatController* chats = w->chats();
        SessionSettingsPanel* panel = w->sessionSettings();
        const QString plain = chats->createSession("Plain");
        const QString spec = chats->createSession("Speculative");
        SamplingSettings greedy;
        greedy.temperature = 0;
        greedy.max_tokens = 40;
        chats->setSampling(plain, greedy);
        chats->setSampling(spec, greedy);
        const QString first = "Repeat this sentence three times: the quick brown fox jumps over the lazy dog.";
        const ChatMessageRecord want = reply_to(*w, plain, first);
        QVERIFY2(want.finish_reason != "error", qPrintable(want.error));
        QCOMPARE(want.stats.draft_tokens, 0);

        // Prompt lookup for this chat alone, from its settings panel, at K = 3.
        w->sessionList()->setCurrentSession(spec);
        QComboBox* method = panel->speculationChoice();
        QCOMPARE(method->currentData().toString(), QString());  // the engine's
        QVERIFY(method->currentText().contains("Off"));
        QVERIFY(!panel->draftLength()->isEnabled());  // the engine's is off
        method->setCurrentIndex(method->findData("ngram"));
        QVERIFY(panel->draftLength()->isEnabled());
        QCOMPARE(panel->draftLength()->maximum(), 4);  // the engine's K
        panel->draftLength()->setValue(3);
        QCOMPARE(chats->session(spec)->sampling.speculation, QString("ngram"));
        QCOMPARE(chats->session(spec)->sampling.draft_max, 3);
        // A draft-model method the engine does not hold: greyed, with the reason.
        auto* items = qobject_cast<QStandardItemModel*>(method->model());
        QStandardItem* int4 = items->item(method->findData("int4-self"));
        QVERIFY(!int4->isEnabled());
        QVERIFY2(int4->toolTip().contains("Engine > Settings"), qPrintable(int4->toolTip()));

        const ChatMessageRecord drafted = reply_to(*w, spec, first);
        QVERIFY2(drafted.finish_reason != "error", qPrintable(drafted.error));
        QCOMPARE(drafted.content, want.content);  // greedy: the same reply
        QVERIFY2(drafted.stats.draft_tokens > 0, "the chat's prompt lookup drafted");
        QVERIFY(drafted.stats.draft_tokens <= 3 * drafted.stats.n_drafts);  // K = 3 at most

        // Off mid-conversation: the history stays, the next reply drafts nothing.
        method->setCurrentIndex(method->findData("off"));
        QVERIFY(!panel->draftLength()->isEnabled());
        const ChatMessageRecord second = reply_to(*w, spec, "Now backwards.");
        QVERIFY2(second.finish_reason != "error", qPrintable(second.error));
        QCOMPARE(second.stats.draft_tokens, 0);
        QCOMPARE(chats->session(spec)->messages.size(), 4);
        QCOMPARE(chats->session(spec)->messages[1].content, want.content);

        // A chat that asks for a draft model the engine does not hold (a preset
        // from another engine setting, say): the reply says why, the chat stays.
        SamplingSettings other = chats->session(spec)->sampling;
        other.speculation = "int4-self";
        chats->setSampling(spec, other);
        const ChatMessageRecord refused = reply_to(*w, spec, "Again.");
        QCOMPARE(refused.finish_reason, QString("error"));
        QVERIFY2(refused.error.contains("'int4-self' needs that draft model"), qPrintable(refused.error));
        QCOMPARE(chats->session(spec)->messages.size(), 6);
        QCOMPARE(method->currentData().toString(), QString("int4-self"));  // shown as chosen, still greyed
        QVERIFY(!items->item(method->currentIndex())->isEnabled());
        QVERIFY(folio_gui_test::save(w.get(), "chat-speculation-settings.png"));
    }

    void presets_are_saved_reloaded_and_applied_per_chat() {
        folio_gui_test::DataDir data;
        const ChatSession chat = sample_chat();
        QVERIFY(SessionStore(studio_data_dir() + "/sessions.json").save({chat}));
        auto w = window_without_model();
        ChatController* chats = w->chats();
        SessionSettingsPanel* panel = w->sessionSettings();
        w->sessionList()->setCurrentSession(chat.id);
        QCOMPARE(panel->presetChoice()->currentText(), QString("(none)"));

        // Save As… through its dialog.
        panel->findChild<QPushButton*>("savePresetAs")->click();
        QInputDialog* ask = panel->presetNameDialog();
        QVERIFY(ask != nullptr);
        ask->setTextValue("Terse");
        ask->accept();
        const ChatPreset* saved = w->presets()->find("Terse");
        QVERIFY(saved != nullptr);
        QCOMPARE(saved->system_prompt, QString("Answer in one sentence."));
        QCOMPARE(saved->sampling.top_k, 12);
        QCOMPARE(saved->sampling.speculation, QString("ngram"));  // speculation travels with the preset
        QCOMPARE(saved->sampling.draft_max, 3);
        QCOMPARE(saved->overflow, folio::ChatOverflow::TruncateMiddle);
        QCOMPARE(chats->session(chat.id)->preset, QString("Terse"));
        QCOMPARE(panel->presetChoice()->currentText(), QString("Terse"));

        // A fresh settings scope reads it back from the file.
        {
            ChatPresets fresh;
            QCOMPARE(fresh.names(), QStringList{"Terse"});
            QVERIFY(*fresh.find("Terse") == *saved);
            QSettings ini(data.path() + "/settings.ini", QSettings::IniFormat);
            QCOMPARE(ini.value("chatPresets/size").toInt(), 1);
        }

        // Another chat with other settings takes the preset from the picker.
        const QString other = chats->createSession("Other");
        SamplingSettings hot;
        hot.temperature = 1.4;
        chats->setSampling(other, hot);
        chats->setSystemPrompt(other, "Ramble.");
        chats->setOverflow(other, folio::ChatOverflow::Stop);
        w->sessionList()->setCurrentSession(other);
        QComboBox* picker = panel->presetChoice();
        QCOMPARE(picker->currentText(), QString("(none)"));
        const int at = picker->findData("Terse");
        QVERIFY(at > 0);
        picker->setCurrentIndex(at);
        emit picker->activated(at);
        const ChatSession* s = chats->session(other);
        QCOMPARE(s->system_prompt, QString("Answer in one sentence."));
        QVERIFY(s->sampling == chat.sampling);
        QCOMPARE(s->overflow, folio::ChatOverflow::TruncateMiddle);
        QCOMPARE(s->preset, QString("Terse"));
        // The panel shows what the chat now has.
        QCOMPARE(panel->findChild<QPlainTextEdit*>()->toPlainText(), QString("Answer in one sentence."));

        // Edited afterwards: the picker says so; the preset itself is unchanged.
        SamplingSettings edited = s->sampling;
        edited.temperature = 0.9;
        chats->setSampling(other, edited);
        QCOMPARE(picker->currentText(), QString("Terse (edited)"));
        QCOMPARE(w->presets()->find("Terse")->sampling.temperature, 0.2);
        QTest::qWait(50);  // the chat view's old message widgets go at the next event loop pass
        QVERIFY(folio_gui_test::save(w.get(), "chat-presets.png"));

        // A restart: the chat still follows its preset.
        w->close();
        w.reset();
        w = window_without_model();
        w->sessionList()->setCurrentSession(other);
        QCOMPARE(w->chats()->session(other)->preset, QString("Terse"));
        QCOMPARE(w->sessionSettings()->presetChoice()->currentText(), QString("Terse (edited)"));

        // Deleted: gone from the settings; the chats keep their settings and follow none.
        w->sessionSettings()->findChild<QPushButton*>("deletePreset")->click();
        QVERIFY(w->presets()->find("Terse") == nullptr);
        QVERIFY(ChatPresets().names().isEmpty());
        QCOMPARE(w->chats()->session(other)->preset, QString());
        QCOMPARE(w->chats()->session(chat.id)->preset, QString());
        QCOMPARE(w->chats()->session(other)->sampling.temperature, 0.9);
        QCOMPARE(w->sessionSettings()->presetChoice()->currentText(), QString("(none)"));
    }
};

QTEST_MAIN(ChatsTest)
#include "test_chats.moc"
