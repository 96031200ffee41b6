// The HTTP side of the server: cpp-httplib's routes, authentication, body
// limits and error bodies, and the handlers that turn a request into a
// CompletionJob and its answer into a body or a stream.
#include "folio/api_server.h"

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "folio/chat_template.h"
#include "server/completion_job.h"
#include "server/json_text.h"
#include "server/openai_request.h"

namespace folio {

using nlohmann::json;
using server::ApiError;
using server::CompletionJob;
using server::Endpoint;

struct ApiServer::State {
    Engine& engine;
    const ModelDescription& model;
    ApiServerConfig config;
    ChatTemplate chat_template;
    int32_t context = 0;
    httplib::Server http;
    std::thread listener;
    int port = 0;
    std::atomic<bool> stopping{false};
    std::atomic<uint64_t> next_response{1};
    uint64_t response_salt = 0;

    // The jobs being answered, for shutdown() to abort.
    std::mutex jobs_mutex;
    std::condition_variable jobs_changed;
    std::unordered_map<uint64_t, std::shared_ptr<CompletionJob>> jobs;
    uint64_t next_job = 1;

    std::mutex shutdown_mutex;
    std::condition_variable shut_down_cv;
    bool shutdown_started = false, shut_down = false;

    State(Engine& e, const ModelDescription& m, const ApiServerConfig& c) : engine(e), model(m), config(c) {}

    uint64_t add_job(std::shared_ptr<CompletionJob> job) {
        std::lock_guard lock(jobs_mutex);
        jobs.emplace(next_job, std::move(job));
        return next_job++;
    }
    void remove_job(uint64_t handle) {
        {
            std::lock_guard lock(jobs_mutex);
            jobs.erase(handle);
        }
        jobs_changed.notify_all();
    }
    std::string response_id(const char* prefix) {
        char text[48];
        std::snprintf(text, sizeof text, "%s-%016llx", prefix,
                      static_cast<unsigned long long>(response_salt ^ (next_response++ * 0x9E3779B97F4A7C15ull)));
        return text;
    }
};

namespace {

constexpr const char* kJson = "application/json";

void send_error(httplib::Response& res, const ApiError& error) {
    res.status = error.status;
    res.set_content(server::error_body(error), kJson);
}

void send_json(httplib::Response& res, const json& body) {
    res.status = 200;
    res.set_content(server::dump_json(body), kJson);
}

// What a status without a body of its own says (httplib's own 404 and 413 too).
ApiError error_for_status(const httplib::Request& req, const httplib::Response& res, size_t max_body) {
    const int status = res.status;
    switch (status) {
        case 404: return {404, "no such endpoint: " + req.method + " " + req.path, "invalid_request_error", "", "not_found"};
        case 405:
            return {405, req.method + " is not allowed on " + req.path + " (" + res.get_header_value("Allow") + " is)",
                    "invalid_request_error", "", "method_not_allowed"};
        case 413:
            return {413, "the request body is larger than the server's limit of " + std::to_string(max_body) + " bytes",
                    "invalid_request_error", "", "request_too_large"};
        case 400: return {400, "the request could not be read", "invalid_request_error", "", ""};
        default: return {status, "HTTP error " + std::to_string(status), status >= 500 ? "server_error" : "invalid_request_error", "", ""};
    }
}

// Constant-time comparison, so the key cannot be guessed a byte at a time from response times.
bool same_secret(const std::string& a, const std::string& b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
    return diff == 0;
}

}  // namespace

static void handle_completion(ApiServer::State& s, Endpoint endpoint, const httplib::Request& req,
                              httplib::Response& res) {
    if (s.stopping) return send_error(res, {503, "the server is shutting down", "server_error", "", "shutting_down"});
    server::CompletionParams params;
    if (auto e = server::parse_completion_request(req.body, endpoint, params)) return send_error(res, *e);
    if (!params.model.empty() && params.model != s.config.model_id)
        return send_error(res, {404, "the model '" + params.model + "' does not exist; this server has '" +
                                         s.config.model_id + "'", "invalid_request_error", "model", "model_not_found"});
    server::ResponseHeader header;
    header.endpoint = endpoint;
    header.id = s.response_id(endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl");
    header.created = static_cast<int64_t>(std::time(nullptr));
    header.model = s.config.model_id;
    header.logprobs = params.logprobs;
    header.top_logprobs = params.top_logprobs;
    const bool stream = params.stream;
    ApiError error;
    const server::JobContext ctx{s.engine, s.engine.tokenizer(), s.chat_template, s.context};
    std::shared_ptr<CompletionJob> job = CompletionJob::start(ctx, std::move(params), std::move(header), error);
    if (!job) return send_error(res, error);
    const uint64_t handle = s.add_job(job);
    if (s.stopping) job->abort();  // shutdown() may have looked at the jobs before this one was added

    if (!stream) {
        json body;
        const bool ok = job->collect(body, error);
        s.remove_job(handle);
        return ok ? send_json(res, body) : send_error(res, error);
    }
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, last_write = std::chrono::steady_clock::now()](size_t, httplib::DataSink& sink) mutable {
            bool done = false;
            std::string events = job->next_events(std::chrono::milliseconds(100), done);
            // Only a write tells whether the client is still there (httplib
            // 0.11's is_writable() does not see a closed peer). While nothing
            // streams (queued, a long prefill) an SSE comment, which clients
            // ignore, is that write, every half second.
            const auto now = std::chrono::steady_clock::now();
            if (events.empty() && now - last_write >= std::chrono::milliseconds(500)) events = ": waiting\n\n";
            if (!events.empty()) {
                last_write = now;
                // A client that went away: its requests end here, which frees their KV blocks.
                if (!sink.write(events.data(), events.size())) {
                    job->abort();
                    return false;
                }
            }
            if (done) sink.done();
            return true;
        },
        [&s, job, handle](bool success) {
            if (!success) job->abort();
            s.remove_job(handle);
        });
}

static void handle_tokenize(ApiServer::State& s, const httplib::Request& req, httplib::Response& res) {
    server::TokenizeParams params;
    if (auto e = server::parse_tokenize_request(req.body, params)) return send_error(res, *e);
    const Tokenizer& tokenizer = s.engine.tokenizer();
    const std::vector<int32_t> ids = tokenizer.encode(params.content, params.add_special, params.parse_special);
    json tokens = json::array();
    for (int32_t id : ids) {
        if (params.with_pieces) tokens.push_back({{"id", id}, {"piece", tokenizer.token_bytes(id)}});
        else tokens.push_back(id);
    }
    send_json(res, json{{"tokens", std::move(tokens)}});
}

static void handle_detokenize(ApiServer::State& s, const httplib::Request& req, httplib::Response& res) {
    std::vector<int32_t> ids;
    if (auto e = server::parse_detokenize_request(req.body, s.engine.tokenizer().vocab_size(), ids))
        return send_error(res, *e);
    send_json(res, json{{"content", s.engine.tokenizer().decode(ids)}});
}

static void add_routes(ApiServer::State& s) {
    httplib::Server& http = s.http;
    http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
        if (s.config.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
        if (same_secret(req.get_header_value("Authorization"), "Bearer " + s.config.api_key))
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, {401, "a valid API key is required: send 'Authorization: Bearer <key>'",
                         "invalid_request_error", "", "invalid_api_key"});
        res.set_header("WWW-Authenticate", "Bearer");
        return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [&s](const httplib::Request& req, httplib::Response& res) {
            // A known endpoint asked with the wrong method is a 405, not a 404.
            static const std::pair<const char*, const char*> kRoutes[] = {
                {"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"}, {"/tokenize", "POST"},
                {"/detokenize", "POST"},          {"/v1/models", "GET"},       {"/health", "GET"},
                {"/metrics", "GET"}};
            for (const auto& [path, method] : kRoutes)
                if (res.status == 404 && res.body.empty() && req.path == path) {
                    res.status = 405;
                    res.set_header("Allow", method);
                }
            if (res.body.empty()) send_error(res, error_for_status(req, res, s.config.max_body_bytes));
            return httplib::Server::HandlerResponse::Handled;
        }));
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        send_error(res, {500, "internal error: " + what, "server_error", "", ""});
    });
    http.Post("/v1/chat/completions", [&s](const httplib::Request& req, httplib::Response& res) {
        handle_completion(s, Endpoint::Chat, req, res);
    });
    http.Post("/v1/completions", [&s](const httplib::Request& req, httplib::Response& res) {
        handle_completion(s, Endpoint::Completion, req, res);
    });
    http.Get("/v1/models", [&s](const httplib::Request&, httplib::Response& res) {
        json model = {{"id", s.config.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "folio"},
                      {"max_model_len", s.context}};
        send_json(res, json{{"object", "list"}, {"data", json::array({model})}});
    });
    http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
        if (s.stopping) return send_error(res, {503, "the server is shutting down", "server_error", "", "shutting_down"});
        send_json(res, json{{"status", "ok"}});
    });
    http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
        res.set_content(s.engine.prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Post("/tokenize", [&s](const httplib::Request& req, httplib::Response& res) { handle_tokenize(s, req, res); });
    http.Post("/detokenize",
              [&s](const httplib::Request& req, httplib::Response& res) { handle_detokenize(s, req, res); });
}

ApiServer::ApiServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

ApiServer::~ApiServer() { shutdown(); }

Result<std::unique_ptr<ApiServer>> ApiServer::start(Engine& engine, const ModelDescription& model,
                                                    const ApiServerConfig& config) {
    if (config.port < 0 || config.port > 65535)
        return make_error("port " + std::to_string(config.port) + " is not between 0 and 65535");
    if (config.http_threads < 1) return make_error("the server needs at least one HTTP thread");
    auto state = std::make_unique<State>(engine, model, config);
    State& s = *state;
    if (s.config.model_id.empty()) s.config.model_id = model.name.empty() ? "folio" : model.name;
    s.chat_template = ChatTemplate::for_model(model.chat_template, model.hparams.architecture).chat_template;
    const Backend& b = engine.backend();
    s.context = static_cast<int32_t>(
        std::min<int64_t>(b.max_context(), static_cast<int64_t>(b.n_blocks()) * b.block_size()));
    s.response_salt = std::random_device{}();
    s.http.new_task_queue = [n = static_cast<size_t>(config.http_threads)] { return new httplib::ThreadPool(n); };
    s.http.set_payload_max_length(config.max_body_bytes);
    s.http.set_keep_alive_max_count(1000);
    s.http.set_tcp_nodelay(true);
    // httplib's default binds with SO_REUSEPORT, so a second server on a port
    // in use would share it silently (the kernel splitting connections between
    // the two): SO_REUSEADDR alone makes a port in use the error it should be.
    // On Windows SO_REUSEADDR would let a second server take the port over;
    // SO_EXCLUSIVEADDRUSE is what refuses it there.
    s.http.set_socket_options([](socket_t sock) {
        int yes = 1;
#ifdef _WIN32
        setsockopt(sock, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, reinterpret_cast<const char*>(&yes), sizeof yes);
#else
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
#endif
    });
    add_routes(s);
    if (config.port == 0) {
        s.port = s.http.bind_to_any_port(config.host);
        if (s.port < 0) return make_error("cannot listen on " + config.host + " (any port)");
    } else {
        if (!s.http.bind_to_port(config.host, config.port))
            return make_error("cannot listen on " + config.host + ":" + std::to_string(config.port) +
                              " (in use, or not an address of this machine)");
        s.port = config.port;
    }
    s.listener = std::thread([&s] { s.http.listen_after_bind(); });
    // httplib's stop() does nothing before the loop runs: let it start first.
    for (int i = 0; i < 2000 && !s.http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::unique_ptr<ApiServer>(new ApiServer(std::move(state)));
}

int ApiServer::port() const { return state_->port; }

void ApiServer::shutdown() {
    State& s = *state_;
    {
        std::unique_lock lock(s.shutdown_mutex);
        if (s.shutdown_started) {  // another thread is at it (or was): wait for it
            s.shut_down_cv.wait(lock, [&s] { return s.shut_down; });
            return;
        }
        s.shutdown_started = true;
    }
    s.stopping = true;
    {
        // Abort what is in flight; each stream sends its last events and ends,
        // each waiting handler answers. Give them a few seconds.
        std::unique_lock lock(s.jobs_mutex);
        for (auto& [handle, job] : s.jobs) job->abort();
        s.jobs_changed.wait_for(lock, std::chrono::seconds(10), [&s] { return s.jobs.empty(); });
    }
    s.http.stop();
    if (s.listener.joinable()) s.listener.join();
    {
        std::lock_guard lock(s.shutdown_mutex);
        s.shut_down = true;
    }
    s.shut_down_cv.notify_all();
}

void ApiServer::wait() {
    State& s = *state_;
    std::unique_lock lock(s.shutdown_mutex);
    s.shut_down_cv.wait(lock, [&s] { return s.shut_down; });
}

}  // namespace folio
