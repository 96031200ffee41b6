// The studio's Serve toggle (issue 26): Engine > Serve OpenAI API starts
// folio serve's server on the engine of the chats. On the default model: the
// status bar shows its URL; /v1/models names the loaded file; a chat
// completion over HTTP is answered while a chat in the window is, both by
// the one engine (the HTTP request is an owner of its own in the block map
// meanwhile); an API key is asked for when set; an engine restart keeps
// serving; turning it off closes the port; a port in use says why.
#include <QAction>
#include <QLabel>
#include <QStatusBar>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/block_map_widget.h"
#include "ui/chat_controller.h"
#include "ui/session_list_panel.h"

using namespace folio::ui;
using folio_gui_test::DataDir;
using folio_gui_test::open_window;

namespace {

int port_of(const QString& url) {  // "http://127.0.0.1:PORT/v1"
    return url.section(':', 2).section('/', 0, 0).toInt();
}

}  // namespace

class ServeTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void the_toggle_serves_the_chats_engine() {
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        DataDir data;
        auto window = open_window(QString::fromStdString(model));
        QVERIFY2(window->bridge()->isLoaded(), qPrintable(window->lastError()));
        auto* action = window->findChild<QAction*>("serveAction");
        auto* label = window->findChild<QLabel*>("serveLabel");
        QVERIFY(action && label);

        // Port 0: any free one (the settings' serve/port; 8080 by default).
        window->bridge()->serve("127.0.0.1", 0, "sekrit");
        QTRY_VERIFY_WITH_TIMEOUT(window->bridge()->isServing(), 10000);
        const int port = port_of(window->bridge()->serverUrl());
        QVERIFY2(port > 0, qPrintable(window->bridge()->serverUrl()));
        QTRY_VERIFY(label->isVisible() && label->text().contains(window->bridge()->serverUrl()));

        httplib::Client cli("127.0.0.1", port);
        cli.set_read_timeout(120, 0);
        const httplib::Headers auth{{"Authorization", "Bearer sekrit"}};
        auto no_key = cli.Get("/v1/models");
        QVERIFY(no_key);
        QCOMPARE(no_key->status, 401);
        auto models = cli.Get("/v1/models", auth);
        QVERIFY(models && models->status == 200);
        const auto listed = nlohmann::json::parse(models->body);
        QCOMPARE(QString::fromStdString(listed["data"][0]["id"].get<std::string>()),
                 QString("SmolLM2-135M-Instruct.Q4_1.gguf"));

        // An HTTP chat while a chat of the window generates: both answered by the one engine.
        ChatController* chats = window->chats();
        const QString id = chats->sessions().front().id;
        SamplingSettings s = chats->session(id)->sampling;
        s.max_tokens = 48;
        s.temperature = 0;
        chats->setSampling(id, s);
        QVERIFY(chats->send(id, "Write a short poem about the sea."));
        std::atomic<int> status{0};
        std::string body;
        std::thread client([&] {  // joined below, before any check can return
            const std::string request = R"({"messages":[{"role":"user","content":"Name three colours."}],
                                            "max_tokens":48,"temperature":0})";
            auto r = cli.Post("/v1/chat/completions", auth, request, "application/json");
            if (r) body = r->body;
            status = r ? r->status : -1;
        });
        // The block map shows two owners at once: the chat and the HTTP request.
        bool two_owners = false;
        QElapsedTimer t;
        t.start();
        while (status == 0 && t.elapsed() < 120000) {
            two_owners = two_owners || window->blockMap()->owners().size() >= 2;
            QTest::qWait(10);
        }
        client.join();
        QCOMPARE(status.load(), 200);
        const auto reply = nlohmann::json::parse(body);
        QVERIFY(!reply["choices"][0]["message"]["content"].get<std::string>().empty());
        QVERIFY(reply["usage"]["completion_tokens"].get<int>() > 0);
        QTRY_VERIFY_WITH_TIMEOUT(!chats->isGenerating(id), 120000);
        QVERIFY(!chats->session(id)->messages.back().content.isEmpty());
        QVERIFY2(two_owners, "the chat and the HTTP request never held blocks at the same time");

        // An engine restart (new settings) serves again, on the same port.
        EngineSettings more = window->bridge()->settings();
        more.kv_budget_mib = 128;
        QSignalSpy loaded(window->bridge(), &EngineBridge::modelLoaded);
        window->bridge()->restart(more);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.size(), 1, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(window->bridge()->isServing(), 10000);
        QCOMPARE(port_of(window->bridge()->serverUrl()), port);
        auto health = cli.Get("/health", auth);
        QVERIFY(health && health->status == 200);

        // Off: the port closes.
        window->bridge()->stopServing();
        QTRY_VERIFY(!window->bridge()->isServing());
        QTRY_VERIFY(!label->isVisible());
        httplib::Client gone("127.0.0.1", port);
        gone.set_connection_timeout(2, 0);
        QVERIFY(!gone.Get("/health"));

        // A port in use (by a server as httplib binds by default, with SO_REUSEPORT): the
        // action goes off and the status bar says why, instead of two servers sharing the port.
        httplib::Server squatter;
        const int taken = squatter.bind_to_any_port("127.0.0.1");
        std::thread squat([&] { squatter.listen_after_bind(); });
        struct Stop {
            httplib::Server& server;
            std::thread& thread;
            ~Stop() {
                server.stop();
                thread.join();
            }
        } stop{squatter, squat};
        action->setChecked(true);
        window->bridge()->serve("127.0.0.1", taken, {});
        QTRY_VERIFY_WITH_TIMEOUT(!action->isChecked(), 10000);
        QVERIFY2(window->lastError().startsWith("Cannot serve") && window->lastError().contains("in use"),
                 qPrintable(window->lastError()));
        QVERIFY(!window->bridge()->isServing());
    }
};

QTEST_MAIN(ServeTest)
#include "test_serve.moc"
