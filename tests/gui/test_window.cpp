// The main window without a model: the dock layout and geometry come back
// after a restart, a file dropped on the window is opened (a bad one gives
// the error dialog, not a crash), the engine settings dialog edits every
// setting, copy puts a message on the clipboard, and edit-and-resend
// rewrites the conversation from the edited message.
#include <QClipboard>
#include <QDockWidget>
#include <QDropEvent>
#include <QLabel>
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
        ModelSummary model;
        model.path = "/m.gguf";
        model.name = "m";
        model.weight_bytes = 100 << 20;
        model.kv_bytes_per_token = 1024;
        EngineSettingsDialog dialog(s, model);
        QVERIFY(dialog.settings() == s);
        const QList<QSpinBox*> boxes = dialog.findChildren<QSpinBox*>();
        QCOMPARE(boxes.size(), 6);
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
        QVERIFY2(window.chatView()->messageWidget(1)->statsText().contains("No model"),
                 qPrintable(window.chatView()->messageWidget(1)->statsText()));
    }
};

QTEST_MAIN(WindowTest)
#include "test_window.moc"
