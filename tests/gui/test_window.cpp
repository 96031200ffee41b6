// The main window without a model: the dock layout and geometry come back
// after a restart, a file dropped on the window is opened (a bad one gives
// the error dialog, not a crash), the engine settings dialog edits every
// setting and warns when the KV budget holds less than a context, copy puts
// a message on the clipboard, edit-and-resend rewrites the conversation from
// the edited message, a failed reply is an error card that says what to do;
// at 1024x700 the chat gets the room and a larger window gets the layout
// back; the keyboard leaves the message box and switches chats; Help lists
// the shortcuts; folio-studio --help and --version need no display.
#include <QClipboard>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QDockWidget>
#include <QDropEvent>
#include <QLabel>
#include <QStandardItemModel>
#include <QComboBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QToolButton>

#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/chat_controller.h"
#include "ui/chat_view.h"
#include "ui/engine_settings_dialog.h"
#include "ui/message_widget.h"
#include "ui/block_map_widget.h"
#include "ui/model_panel.h"
#include "ui/plots_panel.h"
#include "ui/session_list_panel.h"

using namespace folio::ui;

class WindowTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void layout_is_restored_after_restart() {
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        QSize size;
        {
            MainWindow window(options);
            window.resize(1111, 999);
            window.show();
            size = window.size();  // what the window's minimum allowed
            QDockWidget* plots = window.findChild<QDockWidget*>("plotsDock");
            QVERIFY(plots);
            plots->hide();
            window.close();
        }
        MainWindow again(options);
        again.show();
        QDockWidget* plots = again.findChild<QDockWidget*>("plotsDock");
        QVERIFY(plots);
        QVERIFY(!plots->isVisible());
        QVERIFY(again.findChild<QDockWidget*>("blockMapDock")->isVisible() ||
                again.findChild<QDockWidget*>("modelDock")->isVisible());
        QCOMPARE(again.size(), size);
        QCOMPARE(again.size().width(), 1111);
    }

    void dropped_bad_file_shows_error_dialog() {
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        window.show();
        const QString bad = data.path() + "/garbage.gguf";
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(4096, 'x'));
        f.close();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(bad)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &drop);
        QTRY_VERIFY_WITH_TIMEOUT(window.errorDialog() != nullptr, 10000);
        QVERIFY(window.errorDialog()->isVisible());
        QVERIFY2(window.lastError().contains("garbage.gguf"), qPrintable(window.lastError()));
        QVERIFY(!window.bridge()->isLoaded());
    }

    void engine_settings_dialog_edits_every_setting() {
        EngineSettings s;
        s.block_size = 32;
        s.kv_budget_mib = 100;
        s.threads = 2;
        s.prefix_caching = false;
        s.spec_method = "int4-self";
        s.draft_max = 6;
        s.draft_adaptive = false;
        ModelSummary model;
        model.path = "/m.gguf";
        model.name = "m";
        model.weight_bytes = 100 << 20;
        model.kv_bytes_per_token = 1024;
        EngineSettingsDialog dialog(s, model);
        QVERIFY(dialog.settings() == s);
        const QList<QSpinBox*> boxes = dialog.findChildren<QSpinBox*>();
        QCOMPARE(boxes.size(), 7);  // the six engine numbers and K
        QVERIFY(dialog.contextWarning().isEmpty());  // 100 MiB: 102400 tokens of 1 KiB
        boxes[0]->setValue(64);  // block size
        QCOMPARE(dialog.settings().block_size, 64u);
        QVERIFY(dialog.findChild<QLabel*>() != nullptr);
    }

    void copy_and_edit_and_resend() {
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        window.show();
        ChatController* chats = window.chats();
        const QString id = window.chatView()->sessionId();
        QVERIFY(chats->send(id, "first question"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 5000);  // no model: an error reply
        QVERIFY(chats->send(id, "second question"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 5000);
        QCOMPARE(window.chatView()->messageCount(), 4);
        // Copy.
        MessageWidget* first = window.chatView()->messageWidget(0);
        const QList<QToolButton*> buttons = first->findChildren<QToolButton*>();
        QVERIFY(buttons.size() >= 1);
        QTest::mouseClick(buttons[0], Qt::LeftButton);
        QCOMPARE(QApplication::clipboard()->text(), QString("first question"));
        // Edit the first question and resend: everything after it goes.
        window.chatView()->beginEdit(0);
        QCOMPARE(window.chatView()->composer()->toPlainText(), QString("first question"));
        window.chatView()->composer()->setPlainText("edited question");
        window.chatView()->sendComposer();
        QCOMPARE(chats->session(id)->messages.size(), 2);
        QCOMPARE(chats->session(id)->messages[0].content, QString("edited question"));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 5000);
        QCOMPARE(window.chatView()->messageCount(), 2);
        // The failed reply is a card that says what happened and what to do, not "…" with empty numbers.
        MessageWidget* failed = window.chatView()->messageWidget(1);
        QVERIFY(failed->isErrorCard());
        QVERIFY2(failed->errorText().contains("No model") && failed->errorText().contains("File &gt; Open Model"),
                 qPrintable(failed->errorText()));
        QVERIFY2(!failed->statsText().contains("TTFT"), qPrintable(failed->statsText()));
        QVERIFY2(!failed->errorText().contains("Model menu"), qPrintable(failed->errorText()));
    }

    void a_reply_sent_during_a_load_says_it_waits_for_the_model() {
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        window.show();
        window.bridge()->load(data.path() + "/not-there.gguf", window.bridge()->settings());
        QVERIFY(window.bridge()->isLoading());
        const QString id = window.chatView()->sessionId();
        QVERIFY(window.chats()->send(id, "hello"));
        window.chatView()->flushPendingUpdates();
        QVERIFY2(window.chatView()->messageWidget(1)->statsText().contains("waiting for the model to load"),
                 qPrintable(window.chatView()->messageWidget(1)->statsText()));
        QTRY_VERIFY_WITH_TIMEOUT(!window.chats()->isGenerating(id), 10000);
    }

    void nothing_loaded_is_said_as_such() {
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        window.show();
        QCOMPARE(window.blockMap()->summary(), QString("No model loaded"));
        QVERIFY2(window.modelPanel()->stateText().startsWith("No model loaded"), qPrintable(window.modelPanel()->stateText()));
        // A model's pool before its first step is idle, not "no engine".
        auto idle = std::make_shared<folio::StepEvent>();
        idle->blocks.resize(64);
        idle->block_size = 16;
        window.blockMap()->setSnapshot({idle, {}});
        QCOMPARE(window.blockMap()->summary(), QString("64 blocks × 16 tokens · all free · idle"));
    }

    void settings_dialog_warns_when_the_kv_budget_holds_less_than_a_context() {
        ModelSummary model;
        model.path = "/m.gguf";
        model.name = "m";
        model.weight_bytes = 100 << 20;
        model.kv_bytes_per_token = 23040;  // SmolLM2-135M: 1 MiB holds 45 tokens
        model.n_ctx_train = 8192;
        EngineSettings s;
        s.max_context = 4096;
        s.kv_budget_mib = 16;
        EngineSettingsDialog dialog(s, model);
        dialog.show();
        QLabel* warning = dialog.findChild<QLabel*>("kvContextWarning");
        QVERIFY(warning);
        QVERIFY(warning->isVisible());
        QVERIFY2(dialog.contextWarning().contains("less than one full context (4096 tokens)"), qPrintable(dialog.contextWarning()));
        QVERIFY2(dialog.contextWarning().contains("holds 720 tokens"), qPrintable(dialog.contextWarning()));
        QVERIFY2(dialog.contextWarning().contains("90 MiB holds a whole context"), qPrintable(dialog.contextWarning()));
        // Enough for a whole context: no warning.
        QList<QSpinBox*> boxes = dialog.findChildren<QSpinBox*>();
        boxes[1]->setValue(90);  // KV budget
        QVERIFY2(dialog.contextWarning().isEmpty(), qPrintable(dialog.contextWarning()));
        QVERIFY(!warning->isVisible());
        boxes[1]->setValue(40);
        boxes[2]->setValue(1024);  // a shorter context fits in 40 MiB
        QVERIFY(dialog.contextWarning().isEmpty());
    }

    // The KV cache type box: F16, Q8_0 and FP8, the quantized ones disabled for heads that are not whole
    // blocks of 32; the budget warning counts the chosen type's bytes (SmolLM2-135M: 11,880 B a token as fp8).
    void settings_dialog_offers_the_kv_types_the_heads_fit() {
        ModelSummary model;
        model.path = "/m.gguf";
        model.name = "m";
        model.weight_bytes = 100 << 20;
        model.kv_bytes_per_token = 23040;
        model.kv_bytes_per_token_by_type = {{"q8_0", 12240}, {"fp8", 11880}};
        model.n_ctx_train = 8192;
        EngineSettings s;
        s.max_context = 4096;
        s.kv_budget_mib = 16;
        EngineSettingsDialog dialog(s, model);
        auto* types = dialog.findChild<QComboBox*>("kvType");
        QVERIFY(types);
        QCOMPARE(types->count(), 3);
        QCOMPARE(types->itemData(1).toString(), QString("q8_0"));
        QCOMPARE(types->itemData(2).toString(), QString("fp8"));
        auto* items = qobject_cast<QStandardItemModel*>(types->model());
        QVERIFY(items && items->item(1)->isEnabled() && items->item(2)->isEnabled());
        QVERIFY2(dialog.contextWarning().contains("holds 720 tokens"), qPrintable(dialog.contextWarning()));
        types->setCurrentIndex(2);
        QCOMPARE(dialog.settings().kv_type, QString("fp8"));
        QVERIFY2(dialog.contextWarning().contains("holds 1408 tokens"), qPrintable(dialog.contextWarning()));

        model.kv_bytes_per_token_by_type.clear();  // heads of 48 values: neither quantized type fits
        EngineSettingsDialog odd(EngineSettings{}, model);
        auto* odd_types = odd.findChild<QComboBox*>("kvType");
        QVERIFY(odd_types);
        auto* odd_items = qobject_cast<QStandardItemModel*>(odd_types->model());
        QVERIFY(odd_items && !odd_items->item(1)->isEnabled() && !odd_items->item(2)->isEnabled());
    }

    void small_window_gives_the_chat_priority_and_a_larger_one_restores_the_layout() {
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        window.resize(1500, 950);
        window.show();
        QTRY_VERIFY(!window.isCompact());
        QDockWidget* plots = window.findChild<QDockWidget*>("plotsDock");
        QCOMPARE(window.dockWidgetArea(plots), Qt::BottomDockWidgetArea);
        const QSize chat_roomy = window.chatView()->size();
        const QSize plots_roomy = plots->size();
        QDockWidget* list = window.findChild<QDockWidget*>("chatsDock");
        const QSize list_roomy = list->size();

        window.resize(1024, 700);
        QTRY_VERIFY(window.isCompact());
        QTest::qWait(50);
        // The chat keeps most of the width and the whole height between the bars.
        QVERIFY2(window.chatView()->width() >= 1024 / 2,
                 qPrintable(QString("chat %1 px wide of 1024").arg(window.chatView()->width())));
        QVERIFY2(window.chatView()->height() >= 700 * 7 / 10,
                 qPrintable(QString("chat %1 px tall of 700").arg(window.chatView()->height())));
        QVERIFY(window.tabifiedDockWidgets(plots).contains(window.findChild<QDockWidget*>("blockMapDock")));

        window.resize(1500, 950);
        QTRY_VERIFY(!window.isCompact());
        QTest::qWait(50);
        QCOMPARE(window.dockWidgetArea(plots), Qt::BottomDockWidgetArea);
        QVERIFY2(std::abs(window.chatView()->width() - chat_roomy.width()) <= 4 &&
                     std::abs(plots->height() - plots_roomy.height()) <= 4,
                 qPrintable(QString("chat %1x%2 (was %3x%4), plots %5 tall (was %6)")
                                .arg(window.chatView()->width()).arg(window.chatView()->height())
                                .arg(chat_roomy.width()).arg(chat_roomy.height())
                                .arg(plots->height()).arg(plots_roomy.height())));
        QVERIFY2(std::abs(list->height() - list_roomy.height()) <= 4 && std::abs(list->width() - list_roomy.width()) <= 4,
                 qPrintable(QString("chat list %1x%2 (was %3x%4)").arg(list->width()).arg(list->height())
                                .arg(list_roomy.width()).arg(list_roomy.height())));
    }

    void keyboard_leaves_the_message_box_and_switches_chats() {
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        window.show();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        ChatController* chats = window.chats();
        const QString first = window.chatView()->sessionId();
        const QString second = chats->createSession("Second");
        const QString third = chats->createSession("Third");
        window.sessionList()->setCurrentSession(first);
        QPlainTextEdit* composer = window.chatView()->composer();
        composer->setFocus();
        QTRY_VERIFY(composer->hasFocus());
        QTest::keyClick(composer, Qt::Key_Tab);
        QVERIFY2(!composer->hasFocus(), "Tab stayed in the message box");
        QVERIFY(!composer->toPlainText().contains('\t'));

        composer->setFocus();
        QTest::keyClick(composer, Qt::Key_Tab, Qt::ControlModifier);
        QTRY_COMPARE(window.chatView()->sessionId(), second);
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_PageDown, Qt::ControlModifier);
        QTRY_COMPARE(window.chatView()->sessionId(), third);
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_PageDown, Qt::ControlModifier);
        QTRY_COMPARE(window.chatView()->sessionId(), first);  // around
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_PageUp, Qt::ControlModifier);
        QTRY_COMPARE(window.chatView()->sessionId(), third);

        QTest::keyClick(QApplication::focusWidget(), Qt::Key_L, Qt::ControlModifier);
        QTRY_VERIFY(window.sessionList()->list()->hasFocus());
        // Enter on a chat in the list goes on to its message box.
        QTest::keyClick(window.sessionList()->list(), Qt::Key_Return);
        QTRY_VERIFY(composer->hasFocus());
    }

    void help_lists_the_shortcuts_and_links_the_docs() {
        const QString html = MainWindow::shortcutsHtml();
        for (const char* key : {"Ctrl+Tab", "Ctrl+PgUp", "Ctrl+L", "Tab / Shift+Tab", "Esc", "Shift+Enter"})
            QVERIFY2(html.contains(key), key);
        QVERIFY2(html.contains("studio.md"), qPrintable(html));
        QVERIFY2(html.contains("<a href='file://"), qPrintable(html));  // the source tree's copy, found
        folio_gui_test::DataDir data;
        MainWindowOptions options;
        options.load_model = false;
        MainWindow window(options);
        QStringList help;
        for (QAction* a : window.findChildren<QAction*>()) help << a->text();
        QVERIFY(help.contains("&Keyboard Shortcuts"));
        QVERIFY(help.contains("&Documentation"));
    }

    void recent_models_are_absolute_and_unique() {
        const QString here = QDir::currentPath();
        QStringList recent = add_recent_model({}, "models/a.gguf", 8);
        QCOMPARE(recent, QStringList{here + "/models/a.gguf"});
        recent = add_recent_model(recent, here + "/models/b.gguf", 8);
        recent = add_recent_model(recent, "./models/a.gguf", 8);
        QCOMPARE(recent, (QStringList{here + "/models/a.gguf", here + "/models/b.gguf"}));
        recent = add_recent_model({"x1", "x2", "x3"}, "x4", 3);
        QCOMPARE(recent.size(), 3);
        QCOMPARE(recent.front(), here + "/x4");
    }

    void studio_help_and_version_need_no_display() {
#ifndef FOLIO_STUDIO_EXE
        QSKIP("folio-studio is not built");
#else
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* var : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(var);
        for (const QString& flag : {QString("--help"), QString("--version")}) {
            QProcess studio;
            studio.setProcessEnvironment(env);
            studio.start(FOLIO_STUDIO_EXE, {flag});
            QVERIFY(studio.waitForFinished(20000));
            const QString out = QString::fromUtf8(studio.readAllStandardOutput());
            QVERIFY2(studio.exitStatus() == QProcess::NormalExit && studio.exitCode() == 0,
                     qPrintable(flag + ": " + QString::fromUtf8(studio.readAllStandardError())));
            QVERIFY2(out.contains(flag == "--help" ? "--no-model" : "Folio Studio"), qPrintable(out));
        }
#endif
    }
};

QTEST_MAIN(WindowTest)
#include "test_window.moc"
