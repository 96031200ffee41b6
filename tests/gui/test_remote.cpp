// The studio attached to a remote engine (issue 26): Engine > Connect to
// Server… on any OpenAI-compatible server. Without a model: the /metrics
// dialects (Folio's own text as the engine writes it; vLLM's, SGLang's and
// llama-server's names), SSE framing, the request body, and every failure a
// user meets (nothing listening, a wrong key, a server that never answers,
// one that is not OpenAI's) as a plain error within its timeout while the UI
// thread keeps running. On the default model: the real `folio serve` and,
// where FOLIO_LLAMA_SERVER names llama.cpp's llama-server (scripts/test.sh
// builds it from the llama-cpp-python sdist), the real llama-server, both
// started here on 127.0.0.1: a chat streams into the window, its reply is
// timed here, the plots fill from /metrics, the block map says why it is
// empty, Disconnect ends it, and a local model loads again afterwards.
#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>

#include "folio/metrics.h"
#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/block_map_widget.h"
#include "ui/chat_controller.h"
#include "ui/plots_panel.h"
#include "ui/remote_dialog.h"
#include "ui/remote_engine.h"
#include "ui/remote_metrics.h"

using namespace folio::ui;
using folio_gui_test::DataDir;

namespace {

// A server started for one test, killed with it.
struct ServerProcess {
    QProcess process;
    int port = 0;
    ~ServerProcess() {
        if (process.state() != QProcess::NotRunning) {
            process.terminate();
            if (!process.waitForFinished(10000)) process.kill();
            process.waitForFinished(5000);
        }
    }
    // Waits until `ready` matches a line of its output (the port in group 1
    // when `port_from_output`), or it exits; false with its output on failure.
    bool start(const QString& program, const QStringList& args, const QRegularExpression& ready, int timeout_ms,
               QString& output) {
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.start(program, args);
        if (!process.waitForStarted(10000)) {
            output = process.errorString();
            return false;
        }
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < timeout_ms && process.state() == QProcess::Running) {
            process.waitForReadyRead(100);
            output += QString::fromUtf8(process.readAll());
            const QRegularExpressionMatch m = ready.match(output);
            if (m.hasMatch()) {
                if (port == 0) port = m.captured(1).toInt();
                return port > 0;
            }
        }
        output += QString::fromUtf8(process.readAll());
        return false;
    }
};

int free_port() {
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}

RemoteProfile profile_for(int port, const QString& key = {}, int timeout_s = 60) {
    RemoteProfile p;
    p.url = QString("http://127.0.0.1:%1/v1").arg(port);
    p.api_key = key;
    p.timeout_s = timeout_s;
    return p;
}

// The window's remote attach, waited for; the error when it failed.
QString connect_window(MainWindow& window, const RemoteProfile& profile) {
    QSignalSpy failed(window.bridge(), &EngineBridge::remoteFailed);
    window.connectToServer(profile);
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 20000 && failed.isEmpty() &&
           !(window.bridge()->isLoaded() && !window.bridge()->status().remote_url.isEmpty()))
        QTest::qWait(20);
    if (!failed.isEmpty()) return failed.front().at(1).toString();
    return window.bridge()->isLoaded() ? QString() : QString("no answer in 20 s");
}

// Sends `text` in the current chat and waits for the reply to finish; the reply.
ChatMessageRecord chat_once(MainWindow& window, const QString& text, int max_tokens) {
    ChatController* chats = window.chats();
    const QString id = chats->sessions().front().id;
    SamplingSettings s = chats->session(id)->sampling;
    s.max_tokens = max_tokens;
    s.temperature = 0;
    chats->setSampling(id, s);
    if (!chats->send(id, text)) return {};
    QElapsedTimer t;
    t.start();
    while (chats->isGenerating(id) && t.elapsed() < 120000) QTest::qWait(20);
    return chats->session(id)->messages.back();
}

// The server side of the failures: a listener that accepts and then sends `answer` (or nothing).
class StubServer : public QTcpServer {
public:
    explicit StubServer(QByteArray answer) : answer_(std::move(answer)) {
        connect(this, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* s = nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, s, [this, s] {
                    s->readAll();
                    if (answer_.isEmpty()) return;  // silent: the client's timeout must end it
                    s->write(answer_);
                    s->disconnectFromHost();
                });
            }
        });
        listen(QHostAddress::LocalHost, 0);
    }

private:
    QByteArray answer_;
};

// A studio window that loads no model at start.
std::unique_ptr<MainWindow> window_without_model() {
    MainWindowOptions options;
    options.load_model = false;
    auto window = std::make_unique<MainWindow>(options);
    window->resize(1280, 860);
    window->show();
    return window;
}

// "" when a reply finished normally with some words, else what went wrong.
QString reply_problem(const ChatMessageRecord& reply) {
    if (reply.finish_reason != "length" && reply.finish_reason != "stop")
        return reply.finish_reason + ": " + reply.error;
    if (reply.content.split(' ', Qt::SkipEmptyParts).size() < 3) return "too few words: " + reply.content;
    return {};
}

bool generation_seen(const QSignalSpy& samples) {
    for (const QList<QVariant>& args : samples)
        if (args.at(0).value<EngineSample>().generation_tokens_per_s > 0) return true;
    return false;
}

QByteArray http_answer(int status, const QByteArray& type, const QByteArray& body) {
    return "HTTP/1.1 " + QByteArray::number(status) + " X\r\nContent-Type: " + type +
           "\r\nConnection: close\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

class RemoteTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void metrics_of_every_dialect() {
        // Folio's own text, as the engine writes it.
        folio::EngineMetrics m;
        m.prompt_tokens_total = 100;
        m.generation_tokens_total = 40;
        m.num_requests_running = 3;
        m.num_requests_waiting = 1;
        m.kv_cache_usage_perc = 0.25;
        m.time_to_first_token_seconds.observe(0.5);
        m.inter_token_latency_seconds.observe(0.02);
        const MetricsReading a = read_metrics(parse_prometheus_text(QString::fromStdString(
                                                  folio::prometheus_text(m, "model \"x\" {1}"))), 1.0);
        QCOMPARE(a.dialect, MetricsDialect::Folio);
        QCOMPARE(a.prompt_tokens, 100.0);
        QCOMPARE(a.running, 3.0);
        m.prompt_tokens_total = 300;
        m.generation_tokens_total = 90;
        m.kv_cache_usage_perc = 0.5;
        m.time_to_first_token_seconds.observe(1.5);
        m.inter_token_latency_seconds.observe(0.04);
        m.inter_token_latency_seconds.observe(0.06);
        const MetricsReading b =
            read_metrics(parse_prometheus_text(QString::fromStdString(folio::prometheus_text(m, "x"))), 3.0);
        const EngineSample s = sample_between(a, b);
        QCOMPARE(s.prompt_tokens_per_s, 100.0);
        QCOMPARE(s.generation_tokens_per_s, 25.0);
        QCOMPARE(s.kv_usage, 0.5);
        QCOMPARE(s.running, 3);
        QCOMPARE(s.waiting, 1);
        QVERIFY(qAbs(s.ttft_s - 1.5) < 1e-9);
        QVERIFY(qAbs(s.inter_token_s - 0.05) < 1e-9);

        // vLLM v1 (labels on every sample, two engines summed), v0's older names, SGLang, llama-server.
        const QString vllm = "# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n"
                             "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2.0\n"
                             "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1.0\n"
                             "vllm:num_requests_waiting{model_name=\"m\"} 4.0\n"
                             "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.125\n"
                             "vllm:prompt_tokens_total{model_name=\"m\"} 1000.0\n"
                             "vllm:generation_tokens_total{model_name=\"m\"} 500.0\n"
                             "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 2.0\n"
                             "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 4.0\n"
                             "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4.0\n";
        const MetricsReading v = read_metrics(parse_prometheus_text(vllm), 0);
        QCOMPARE(v.dialect, MetricsDialect::Vllm);
        QCOMPARE(v.running, 3.0);
        QCOMPARE(v.kv_usage, 0.125);
        QCOMPARE(v.ttft_count, 4.0);
        const MetricsReading v0 = read_metrics(
            parse_prometheus_text("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.75\n"
                                  "vllm:generation_tokens_total{model_name=\"m\"} 5\n"
                                  "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.3\n"),
            0);
        QCOMPARE(v0.kv_usage, 0.75);
        QCOMPARE(v0.itl_sum, 0.3);
        const MetricsReading sg = read_metrics(
            parse_prometheus_text("sglang:num_running_reqs{name=\"m\"} 7\nsglang:num_queue_reqs{name=\"m\"} 2\n"
                                  "sglang:token_usage{name=\"m\"} 0.4\nsglang:prompt_tokens_total{name=\"m\"} 9\n"),
            0);
        QCOMPARE(sg.dialect, MetricsDialect::Sglang);
        QCOMPARE(sg.running, 7.0);
        QCOMPARE(sg.waiting, 2.0);
        QCOMPARE(sg.kv_usage, 0.4);
        // llama-server: counters and gauges, no KV ratio (0.3.36's), decode seconds for the inter-token latency.
        auto llama = [](double predicted, double seconds) {
            return QString("# HELP llamacpp:prompt_tokens_total x\n# TYPE llamacpp:prompt_tokens_total counter\n"
                           "llamacpp:prompt_tokens_total 50\nllamacpp:tokens_predicted_total %1\n"
                           "llamacpp:tokens_predicted_seconds_total %2\nllamacpp:requests_processing 1\n"
                           "llamacpp:requests_deferred 0\n").arg(predicted).arg(seconds);
        };
        const MetricsReading l0 = read_metrics(parse_prometheus_text(llama(10, 0.5)), 0);
        const MetricsReading l1 = read_metrics(parse_prometheus_text(llama(30, 1.5)), 2);
        QCOMPARE(l1.dialect, MetricsDialect::LlamaCpp);
        const EngineSample ls = sample_between(l0, l1);
        QCOMPARE(ls.generation_tokens_per_s, 10.0);
        QVERIFY(qAbs(ls.inter_token_s - 0.05) < 1e-9);
        QVERIFY(std::isnan(ls.kv_usage));  // not reported: a gap, not a zero
        QVERIFY(std::isnan(ls.ttft_s));

        // Not metrics at all, and hostile lines: nothing read, nothing crashes.
        QCOMPARE(read_metrics(parse_prometheus_text("<html>Not Found</html>"), 0).dialect, MetricsDialect::None);
        const auto junk = parse_prometheus_text("a{b=\"}\\\"\"} 1\nc{unterminated 2\nd NaN\ne 1e999\nf 3 1700000000\n{ 4\n");
        QCOMPARE(junk.value("a"), 1.0);
        QVERIFY(!junk.contains("c") && !junk.contains("d") && !junk.contains("e"));
        QCOMPARE(junk.value("f"), 3.0);
        // A counter that went back (the server restarted): no negative rate.
        QCOMPARE(sample_between(b, a).prompt_tokens_per_s, 0.0);
    }

    void server_sent_events() {
        QByteArray buffer = "data: {\"a\":1}\n\n: keep-alive comment\n\ndata: {\"b\"";
        QList<QByteArray> got = RemoteEngine::take_sse_data(buffer);
        QCOMPARE(got, QList<QByteArray>({"{\"a\":1}"}));
        QCOMPARE(buffer, QByteArray("data: {\"b\""));
        buffer += ":2}\r\n\r\nevent: x\ndata:[DONE]\n\n";
        got = RemoteEngine::take_sse_data(buffer);
        QCOMPARE(got, QList<QByteArray>({"{\"b\":2}", "[DONE]"}));
        QVERIFY(buffer.isEmpty());
        buffer = "data: line one\ndata: line two\n\n";
        QCOMPARE(RemoteEngine::take_sse_data(buffer), QList<QByteArray>({"line one\nline two"}));
    }

    void request_body_and_profiles() {
        ChatRequest r;
        r.messages = {{"system", "Be brief.", ""}, {"user", "Hi \"there\"", ""}};
        r.max_tokens = 33;
        r.sampling.temperature = 0;
        r.sampling.seed = 7;
        r.sampling.frequency_penalty = 0.5f;
        const QJsonObject body = QJsonDocument::fromJson(RemoteEngine::chat_body(r, "m")).object();
        QCOMPARE(body["model"].toString(), QString("m"));
        QCOMPARE(body["messages"].toArray().size(), 2);
        QCOMPARE(body["messages"].toArray()[1].toObject()["content"].toString(), QString("Hi \"there\""));
        QCOMPARE(body["max_tokens"].toInt(), 33);
        QCOMPARE(body["seed"].toInt(), 7);
        QVERIFY(body["stream"].toBool());
        QVERIFY(body["stream_options"].toObject()["include_usage"].toBool());
        QCOMPARE(body["top_k"].toInt(), 40);
        QVERIFY(!body.contains("presence_penalty") && !body.contains("repetition_penalty"));

        RemoteProfile p;
        p.url = "localhost:8000/v1/";
        QCOMPARE(p.base().toString(), QString("http://localhost:8000"));
        QCOMPARE(p.display_name(), QString("localhost:8000"));
        QVERIFY(p.validate().isEmpty());
        p.url = "ftp://x";
        QVERIFY(p.validate().contains("http://"));
        p.url = "";
        QVERIFY(!p.validate().isEmpty());

        DataDir data;
        auto settings = studio_settings();
        RemoteProfile a = profile_for(1), b = profile_for(2, "k");
        b.name = "big box";
        RemoteProfile::save_all(*settings, RemoteProfile::remember(RemoteProfile::remember({}, a), b));
        QVector<RemoteProfile> loaded = RemoteProfile::load_all(*settings);
        QCOMPARE(loaded.size(), 2);
        QCOMPARE(loaded[0], b);  // the latest first
        QCOMPARE(loaded[1], a);
        loaded = RemoteProfile::remember(loaded, a);
        QCOMPARE(loaded.size(), 2);
        QCOMPARE(loaded[0], a);
    }

    void failures_are_said_plainly() {
        // The UI thread's 50 ms timer, never late by half a second while the failures happen.
        QTimer heartbeat;
        QElapsedTimer since_beat;
        qint64 worst_gap_ms = 0;
        heartbeat.setInterval(50);
        connect(&heartbeat, &QTimer::timeout, this, [&] {
            worst_gap_ms = std::max(worst_gap_ms, since_beat.restart());
        });
        since_beat.start();
        heartbeat.start();
        RemoteEngine engine;
        QSignalSpy failed(&engine, &RemoteEngine::connectFailed);
        auto expect_failure = [&](const RemoteProfile& p, const QString& words, int within_ms) {
            failed.clear();
            QElapsedTimer t;
            t.start();
            engine.connectTo(p);
            // The UI thread runs meanwhile (this loop is it): no request blocks.
            while (failed.isEmpty() && t.elapsed() < within_ms) QTest::qWait(20);
            if (failed.isEmpty()) return QString("no failure within %1 ms").arg(within_ms);
            const QString message = failed.front().at(1).toString();
            return message.contains(words, Qt::CaseInsensitive) ? QString() : "said: " + message;
        };
        QString why = expect_failure(profile_for(free_port()), "connection refused", 10000);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        StubServer silent({});
        why = expect_failure(profile_for(silent.serverPort(), {}, 2), "did not answer within 2 s", 10000);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        StubServer html(http_answer(200, "text/html", "<html><body>A web page</body></html>"));
        why = expect_failure(profile_for(html.serverPort()), "not an OpenAI-compatible server", 10000);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        StubServer key(http_answer(401, "application/json",
                                   R"({"error":{"message":"Invalid API key","type":"invalid_request_error"}})"));
        why = expect_failure(profile_for(key.serverPort()), "401 (the API key is missing or wrong", 10000);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QVERIFY(failed.front().at(1).toString().contains("Invalid API key"));
        StubServer missing(http_answer(404, "text/plain", "no such path"));
        why = expect_failure(profile_for(missing.serverPort()), "404", 10000);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QVERIFY(!engine.isConnected());

        // A chat asked of a server that lists models but does not stream: an error reply, not a hang.
        StubServer models(http_answer(200, "application/json", R"({"object":"list","data":[{"id":"m"}]})"));
        QSignalSpy connected(&engine, &RemoteEngine::connected);
        engine.connectTo(profile_for(models.serverPort()));
        QTRY_VERIFY_WITH_TIMEOUT(!connected.isEmpty(), 10000);
        QSignalSpy updates(&engine, &RemoteEngine::requestUpdated);
        ChatRequest r;
        r.ticket = 5;
        r.messages = {{"user", "Hi", ""}};
        engine.submit(r);
        QTRY_VERIFY_WITH_TIMEOUT(!updates.isEmpty(), 10000);
        const RequestUpdate u = updates.back().at(0).value<RequestUpdate>();
        QVERIFY(u.finished);
        QCOMPARE(u.reason, QString("error"));
        QVERIFY2(u.error.contains("not an OpenAI chat stream"), qPrintable(u.error));
        QVERIFY2(worst_gap_ms < 500, qPrintable(QString("the UI thread stalled for %1 ms").arg(worst_gap_ms)));
    }

    void the_studio_chats_on_folio_serve() {
#ifndef FOLIO_EXE
        QSKIP("the folio CLI is not built");
#else
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        ServerProcess server;
        QString output;
        QVERIFY2(server.start(FOLIO_EXE, {"serve", "-m", QString::fromStdString(model), "--port", "0", "--api-key",
                                          "sekrit", "-t", "2", "--parallel", "4"},
                              QRegularExpression("on http://127\\.0\\.0\\.1:(\\d+)/v1"), 60000, output),
                 qPrintable(output));
        DataDir data;
        const auto shown = window_without_model();
        MainWindow& window = *shown;

        // The dialog lists the server's models, asynchronously; without the key, it says why.
        window.showConnectDialog();
        RemoteDialog* dialog = window.connectDialog();
        QVERIFY(dialog);
        dialog->findChild<QLineEdit*>("remoteUrl")->setText(QString("http://127.0.0.1:%1").arg(server.port));
        dialog->listModels();
        QTRY_VERIFY_WITH_TIMEOUT(dialog->statusText().contains("401"), 10000);
        dialog->findChild<QLineEdit*>("remoteKey")->setText("sekrit");
        dialog->listModels();
        QTRY_COMPARE_WITH_TIMEOUT(dialog->listedModels(), QStringList({"SmolLM2-135M-Instruct.Q4_1.gguf"}), 10000);
        const RemoteProfile chosen = dialog->profile();
        dialog->reject();

        const QString error = connect_window(window, chosen);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(window.bridge()->isRemote());
        QVERIFY(window.findChild<QAction*>("disconnectAction")->isEnabled());
        QVERIFY(!window.findChild<QAction*>("serveAction")->isEnabled());
        QVERIFY2(window.blockMap()->summary().contains("remote engine"), qPrintable(window.blockMap()->summary()));
        QVERIFY2(window.windowTitle().contains("SmolLM2") && window.windowTitle().contains(QString::number(server.port)),
                 qPrintable(window.windowTitle()));

        const ChatMessageRecord reply = chat_once(window, "Name three colours of the rainbow.", 24);
        QVERIFY2(reply_problem(reply).isEmpty(), qPrintable(reply_problem(reply)));
        // Timed on this side; the token counts from the server's usage.
        QVERIFY(reply.stats.ttft_s > 0 && reply.stats.e2e_s >= reply.stats.ttft_s);
        QVERIFY2(reply.stats.prompt_tokens > 5, qPrintable(QString::number(reply.stats.prompt_tokens)));
        QCOMPARE(reply.stats.generated_tokens, reply.finish_reason == "length" ? 24 : reply.stats.generated_tokens);

        // The plots fill from /metrics (Folio's names): the reply's tokens counted, the KV usage reported.
        QSignalSpy samples(window.bridge(), &EngineBridge::sampled);
        chat_once(window, "Count to five.", 16);
        QTest::qWait(2500);
        QVERIFY2(generation_seen(samples), "no sample saw folio serve's generation counter move");
        QVERIFY(!std::isnan(window.bridge()->lastSample().kv_usage));
        QVERIFY(window.plots()->sampleCount() >= 2);

        // Stop mid-reply: the stream is aborted; the server frees it (its /metrics back to none running).
        ChatController* chats = window.chats();
        const QString id = chats->sessions().front().id;
        SamplingSettings s = chats->session(id)->sampling;
        s.max_tokens = 400;
        chats->setSampling(id, s);
        QVERIFY(chats->send(id, "Write a long story about a lighthouse."));
        QTRY_VERIFY_WITH_TIMEOUT(!chats->session(id)->messages.back().content.isEmpty(), 30000);
        chats->stop(id);
        QCOMPARE(chats->session(id)->messages.back().finish_reason, QString("abort"));
        QTRY_VERIFY_WITH_TIMEOUT(window.bridge()->lastSample().running == 0, 15000);

        folio_gui_test::save(&window, "remote-folio-serve.png");

        // Disconnect, then a model of the studio's own: the local engine is back.
        window.findChild<QAction*>("disconnectAction")->trigger();
        QVERIFY(!window.bridge()->isRemote());
        QVERIFY(!window.bridge()->isLoaded());
        QVERIFY(window.findChild<QAction*>("serveAction")->isEnabled());
        window.openModel(QString::fromStdString(model));
        QTRY_VERIFY_WITH_TIMEOUT(window.bridge()->isLoaded(), 60000);
        QVERIFY(window.bridge()->status().remote_url.isEmpty());
        QVERIFY(window.blockMap()->snapshot().event && !window.blockMap()->snapshot().event->blocks.empty());
        // The profile was saved: the menu offers it.
        QCOMPARE(RemoteProfile::load_all(*studio_settings()).front().api_key, QString("sekrit"));
#endif
    }

    void the_studio_chats_on_llama_server() {
        const QString binary = qEnvironmentVariable("FOLIO_LLAMA_SERVER");
        if (binary.isEmpty()) {
            if (qEnvironmentVariable("FOLIO_REQUIRE_MODELS") == "1")
                QFAIL("FOLIO_LLAMA_SERVER is not set (scripts/test.sh builds llama-server and sets it)");
            QSKIP("FOLIO_LLAMA_SERVER does not name llama.cpp's llama-server");
        }
        FOLIO_REQUIRE_MODEL(model, folio_test::kSmolLM2);
        ServerProcess server;
        server.port = free_port();
        QString output;
        QVERIFY2(server.start(binary, {"-m", QString::fromStdString(model), "--host", "127.0.0.1", "--port",
                                       QString::number(server.port), "-t", "2", "-c", "2048", "-np", "2", "--metrics"},
                              QRegularExpression("model loaded"), 120000, output),
                 qPrintable(output.right(2000)));
        DataDir data;
        const auto shown = window_without_model();
        MainWindow& window = *shown;
        const QString error = connect_window(window, profile_for(server.port));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const ChatMessageRecord reply = chat_once(window, "Name three colours of the rainbow.", 24);
        QVERIFY2(reply_problem(reply).isEmpty(), qPrintable(reply_problem(reply)));
        QVERIFY(reply.stats.ttft_s > 0);
        QVERIFY(reply.stats.generated_tokens > 0);
        // llama-server's /metrics (--metrics): generation counted once the reply is done; no KV ratio.
        QSignalSpy samples(window.bridge(), &EngineBridge::sampled);
        chat_once(window, "Count to five.", 16);
        QTest::qWait(2500);
        QVERIFY2(generation_seen(samples), "no sample saw llama-server's generation counter move");
        QVERIFY(std::isnan(window.bridge()->lastSample().kv_usage));
        folio_gui_test::save(&window, "remote-llama-server.png");
    }
};

QTEST_MAIN(RemoteTest)
#include "test_remote.moc"
