#include "smoke_test.h"

#include <QApplication>
#include <QImage>
#include <QTimer>

#include <cstdio>

#include "ui/chat_controller.h"
#include "ui/engine_bridge.h"
#include "ui/main_window.h"

namespace {

void finish(int code, const QString& message) {
    std::fprintf(stderr, "folio-studio --smoke-test: %s\n", qPrintable(message));
    QTimer::singleShot(0, qApp, [code] { QApplication::exit(code); });
}

}  // namespace

void start_smoke_test(folio::ui::MainWindow& window, const QString& png_path, int timeout_s) {
    using namespace folio::ui;
    QTimer::singleShot(timeout_s * 1000, &window, [timeout_s] {
        finish(1, QString("no reply within %1 s").arg(timeout_s));
    });
    QObject::connect(window.bridge(), &EngineBridge::modelLoadFailed, &window,
                     [](const QString& path, const QString& message) {
                         finish(1, QString("the model %1 did not load: %2").arg(path, message));
                     });
    QObject::connect(window.chats(), &ChatController::generatingChanged, &window,
                     [&window, png_path](const QString& id, bool generating) {
        if (generating) return;
        const ChatSession* session = window.chats()->session(id);
        if (!session || session->messages.isEmpty()) return finish(1, "the chat is gone");
        const ChatMessageRecord& reply = session->messages.back();
        if (reply.role != "assistant" || reply.content.trimmed().isEmpty() || !reply.error.isEmpty())
            return finish(1, "no reply: " + (reply.error.isEmpty() ? reply.finish_reason : reply.error));
        const QImage image = window.grab().toImage();
        if (image.isNull() || !image.save(png_path, "PNG")) return finish(1, "cannot write " + png_path);
        std::printf("%s\n", qPrintable(reply.content));
        finish(0, QString("replied (%1 characters, %2); window %3x%4 saved to %5")
                      .arg(reply.content.size()).arg(reply.finish_reason)
                      .arg(image.width()).arg(image.height()).arg(png_path));
    });
}
