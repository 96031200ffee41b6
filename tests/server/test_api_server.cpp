// ApiServer over HTTP without a model: an Engine on the fake backend
// (tests/engine/fake_backend.h) and the tiny byte-level vocabulary, served on
// a free loopback port and driven with cpp-httplib's client. The HTTP rules:
// the API key, the body limit, error bodies and statuses, a whole answer and
// a stream, a streaming client that leaves (its request aborted, its blocks
// freed), and shutdown() with a stream in flight.
#include <folio_test.h>

#include <chrono>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../engine/fake_backend.h"
#include "../engine/fake_workload.h"
#include "../tokenizer/tiny_vocab.h"
#include "folio/api_server.h"
#include "folio/engine.h"

using nlohmann::json;

namespace {

constexpr const char* kKey = "k3y";
const char* kChat = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "temperature": 0})";

httplib::Headers auth() { return {{"Authorization", std::string("Bearer ") + kKey}}; }

// Waits until the engine runs nothing and every KV block is free.
bool engine_idle(folio::Engine& engine) {
    for (int i = 0; i < 200; ++i) {
        const folio::EngineMetrics m = engine.metrics();
        if (m.num_requests_running == 0 && m.num_requests_waiting == 0 && m.kv_cache_usage_perc == 0.0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

}  // namespace

class ApiServerTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        auto tok = folio::Tokenizer::create(tiny_vocab::byte_level());
        QVERIFY(tok);
        tokenizer_ = std::make_unique<folio::Tokenizer>(std::move(*tok));
        model_.name = "fake";
        model_.hparams.architecture = "fake";
        backend_ = std::make_unique<FakeBackend>(267, fake_workload::kEos, 256);
        backend_->row_delay = std::chrono::microseconds(1000);  // streams last long enough to leave one
        auto engine = folio::Engine::start(model_, *tokenizer_, *backend_, folio::EngineConfig{});
        QVERIFY(engine);
        engine_ = std::move(*engine);
        folio::ApiServerConfig config;
        config.port = 0;
        config.api_key = kKey;
        config.model_id = "fake-model";
        config.max_body_bytes = 4096;
        auto server = folio::ApiServer::start(*engine_, model_, config);
        QVERIFY(server);
        server_ = std::move(*server);
        QVERIFY(server_->port() > 0);
    }

    void healthNeedsNoKeyEverythingElseDoes() {
        httplib::Client cli("127.0.0.1", server_->port());
        auto health = cli.Get("/health");
        QVERIFY(health);
        QCOMPARE(health->status, 200);
        for (const httplib::Headers& headers : {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer nope"}}}) {
            auto r = cli.Post("/v1/chat/completions", headers, kChat, "application/json");
            QVERIFY(r);
            QCOMPARE(r->status, 401);
            QCOMPARE(json::parse(r->body)["error"]["code"].get<std::string>(), std::string("invalid_api_key"));
        }
        auto models = cli.Get("/v1/models", auth());
        QVERIFY(models);
        QCOMPARE(models->status, 200);
        QCOMPARE(json::parse(models->body)["data"][0]["id"].get<std::string>(), std::string("fake-model"));
    }

    void badRequestsGetErrorObjects() {
        httplib::Client cli("127.0.0.1", server_->port());
        const std::pair<std::string, int> cases[] = {
            {"{not json", 400},
            {R"({"messages": [{"role": "user", "content": "hi"}], "n": -1})", 400},
            {R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100000})", 400},
            {R"({"model": "other", "messages": [{"role": "user", "content": "hi"}]})", 404},
            {"{\"messages\": \"" + std::string(5000, 'x') + "\"}", 413},
        };
        for (const auto& [body, status] : cases) {
            auto r = cli.Post("/v1/chat/completions", auth(), body, "application/json");
            QVERIFY(r);
            QVERIFY2(r->status == status, (body.substr(0, 60) + " -> " + std::to_string(r->status)).c_str());
            const json e = json::parse(r->body, nullptr, false);
            QVERIFY2(e.is_object() && e.contains("error") && e["error"]["message"].is_string(), r->body.c_str());
        }
        auto missing = cli.Get("/v2/nothing", auth());
        QVERIFY(missing);
        QCOMPARE(missing->status, 404);
        QVERIFY(json::parse(missing->body).contains("error"));
        auto wrong_method = cli.Get("/v1/chat/completions", auth());
        QVERIFY(wrong_method);
        QCOMPARE(wrong_method->status, 405);
        QCOMPARE(json::parse(wrong_method->body)["error"]["code"].get<std::string>(), std::string("method_not_allowed"));
    }

    void chatAnswersWholeAndStreamed() {
        httplib::Client cli("127.0.0.1", server_->port());
        auto r = cli.Post("/v1/chat/completions", auth(), kChat, "application/json");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const json body = json::parse(r->body);
        const std::string text = body["choices"][0]["message"]["content"].get<std::string>();
        QVERIFY(body["usage"]["completion_tokens"].get<int>() > 0);
        QCOMPARE(body["usage"]["total_tokens"].get<int>(),
                 body["usage"]["prompt_tokens"].get<int>() + body["usage"]["completion_tokens"].get<int>());

        json request = json::parse(kChat);
        request["stream"] = true;
        auto s = cli.Post("/v1/chat/completions", auth(), request.dump(), "application/json");
        QVERIFY(s);
        QCOMPARE(s->status, 200);
        QVERIFY(s->get_header_value("Content-Type").starts_with("text/event-stream"));
        QVERIFY(s->body.ends_with("data: [DONE]\n\n"));
        std::string streamed;
        for (size_t at = 0; (at = s->body.find("data: {", at)) != std::string::npos; ++at) {
            const json chunk = json::parse(s->body.substr(at + 6, s->body.find("\n\n", at) - at - 6));
            streamed += chunk["choices"][0]["delta"].value("content", "");
        }
        QCOMPARE(streamed, text);  // greedy: the stream is the whole answer, in pieces
        QVERIFY(engine_idle(*engine_));
    }

    void aClientThatLeavesHasItsRequestAborted() {
        const uint64_t aborted_before = engine_->metrics().request_success_total.at("abort");
        httplib::Client cli("127.0.0.1", server_->port());
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/chat/completions";
        req.headers = auth();
        req.set_header("Content-Type", "application/json");
        req.body = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 200, "ignore_eos": true,
                       "stream": true})";
        int chunks = 0;
        bool was_running = false;
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            was_running = was_running || engine_->metrics().num_requests_running > 0;
            return ++chunks < 3;  // false: the client hangs up
        };
        cli.send(req);
        QVERIFY(was_running);
        QVERIFY2(engine_idle(*engine_), "the request of a client that left kept running, or kept its blocks");
        QCOMPARE(engine_->metrics().request_success_total.at("abort"), aborted_before + 1);
    }

    // Last: the server is gone afterwards.
    void shutdownEndsAStreamInFlight() {
        std::string received;
        std::thread client([&] {
            httplib::Client cli("127.0.0.1", server_->port());
            httplib::Request req;
            req.method = "POST";
            req.path = "/v1/chat/completions";
            req.headers = auth();
            req.set_header("Content-Type", "application/json");
            req.body = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 200, "ignore_eos": true,
                           "stream": true})";
            req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
                received.append(data, n);
                return true;
            };
            cli.send(req);
        });
        for (int i = 0; i < 200 && engine_->metrics().num_requests_running == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const auto t0 = std::chrono::steady_clock::now();
        server_->shutdown();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        client.join();
        QVERIFY2(seconds < 5.0, std::to_string(seconds).c_str());
        QVERIFY2(received.find("\"finish_reason\":\"abort\"") != std::string::npos, received.c_str());
        QVERIFY(received.ends_with("data: [DONE]\n\n"));
        QVERIFY(engine_idle(*engine_));
        httplib::Client after("127.0.0.1", server_->port());
        after.set_connection_timeout(1);
        QVERIFY(!after.Get("/health"));  // nobody listens any more
    }

    void cleanupTestCase() {
        server_.reset();
        engine_.reset();
    }

private:
    std::unique_ptr<folio::Tokenizer> tokenizer_;
    folio::ModelDescription model_;
    std::unique_ptr<FakeBackend> backend_;
    std::unique_ptr<folio::Engine> engine_;
    std::unique_ptr<folio::ApiServer> server_;
};

FOLIO_TEST_MAIN(ApiServerTest)
#include "test_api_server.moc"
