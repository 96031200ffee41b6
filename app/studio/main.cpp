// folio-studio: the Qt desktop front end of the engine.
//   folio-studio [MODEL] [--no-model] [--chat TEXT [--smoke-test PNG]]
// MODEL is a GGUF file or a Hugging Face folder (default: the last one
// opened, else models/SmolLM2-135M-Instruct.Q4_1.gguf or $FOLIO_MODEL).
// --chat starts a new chat with TEXT once the model is loaded.
#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QLockFile>
#include <QMessageBox>
#include <QThreadPool>
#include <QTimer>

#include <cstdio>

#include "folio/backend.h"

#include "ui/chat_controller.h"
#include "ui/chat_view.h"
#include "ui/engine_bridge.h"
#include "ui/main_window.h"
#include "ui/resources.h"
#include "ui/session_list_panel.h"
#include "ui/session_store.h"
#include "smoke_test.h"

namespace {

void describe_application() {
    QCoreApplication::setOrganizationName("Folio");
    QCoreApplication::setApplicationName("Folio Studio");
    QCoreApplication::setApplicationVersion(FOLIO_VERSION);
}

bool asks_for_help_or_version(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        if (a == "--help" || a == "-h" || a == "-?" || a == "--help-all" || a == "--version" || a == "-v") return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    const QCommandLineOption no_model("no-model", "Start without loading a model.");
    const QCommandLineOption chat("chat", "Start a new chat with TEXT once the model is loaded.", "TEXT");
    const QCommandLineOption smoke_test("smoke-test",
                                        "With --chat: save the window to PNG once the reply is there, then quit "
                                        "(exit status 1 if the model or the reply fails).", "PNG");
    QCommandLineParser parser;
    parser.setApplicationDescription("Folio Studio: chat with local LLMs and watch the engine work.");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("model", "GGUF file or Hugging Face folder to open");
    parser.addOption(no_model);
    parser.addOption(chat);
    parser.addOption(smoke_test);
    // --help and --version need no display: answered before QApplication,
    // which cannot start without one (ssh, a container, a CI log).
    if (asks_for_help_or_version(argc, argv)) {
        QCoreApplication core(argc, argv);
        describe_application();
        parser.process(core);  // prints and exits
        return 0;
    }

    QApplication app(argc, argv);
    describe_application();
    QApplication::setDesktopFileName("org.folio.Studio");
    folio::ui::init_resources();
    parser.process(app);
    if (parser.isSet(smoke_test) && !parser.isSet(chat)) {
        std::fprintf(stderr, "folio-studio: --smoke-test needs --chat TEXT\n");
        return 2;
    }

    // One studio per data folder: two would overwrite each other's sessions.
    // A lock left by a killed studio is stale (its process is gone) and taken over.
    QLockFile lock(folio::ui::studio_data_dir() + "/studio.lock");
    if (!lock.tryLock(200)) {
        qint64 pid = 0;
        QString host, app_name;
        lock.getLockInfo(&pid, &host, &app_name);
        QMessageBox::critical(nullptr, QObject::tr("Folio Studio is already running"),
                              QObject::tr("Another Folio Studio (process %1) is using %2. Switch to it, or set "
                                          "FOLIO_STUDIO_DATA to use another folder.")
                                  .arg(pid).arg(folio::ui::studio_data_dir()));
        return 1;
    }

    // Looking for GPUs loads the CUDA driver (up to seconds): off the UI
    // thread, before the engine settings or a load ask for the answer.
    QThreadPool::globalInstance()->start([] { folio::cuda_device_count(); });

    folio::ui::MainWindowOptions options;
    options.load_model = !parser.isSet(no_model);
    if (!parser.positionalArguments().isEmpty()) options.model = parser.positionalArguments().front();
    folio::ui::MainWindow window(options);
    window.show();

    if (parser.isSet(smoke_test)) start_smoke_test(window, parser.value(smoke_test));
    if (parser.isSet(chat)) {
        const QString text = parser.value(chat);
        QObject::connect(window.bridge(), &folio::ui::EngineBridge::modelLoaded, &window, [&window, text] {
            const QString id = window.chats()->createSession();
            window.sessionList()->setCurrentSession(id);
            window.chats()->send(id, text);
        }, Qt::SingleShotConnection);
    }
    return app.exec();
}
