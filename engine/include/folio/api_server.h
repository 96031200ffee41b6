// An OpenAI-compatible HTTP server on a running Engine: /v1/chat/completions
// and /v1/completions (streamed as server-sent events or not), /v1/models,
// /health, /metrics (the engine's Prometheus text), /tokenize and
// /detokenize (llama-server's shapes). `folio serve` runs one; the studio
// can run one on the engine of its chats. Qt-free: HTTP is cpp-httplib's
// (docs/dependencies.md), JSON nlohmann's.
//
// Every request body is bounded (413) and validated field by field (400 with
// OpenAI's error object, never a crash); with an API key, a request without
// `Authorization: Bearer KEY` gets 401. A streaming client that goes away
// has its request aborted, so its KV blocks are freed. shutdown() stops
// accepting, aborts what is in flight and waits for the handlers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "folio/engine.h"
#include "folio/error.h"
#include "folio/model.h"

namespace folio {

struct ApiServerConfig {
    std::string host = "127.0.0.1";      // loopback unless asked otherwise
    int port = 8080;                      // 0: any free port (ApiServer::port() says which)
    std::string api_key;                  // empty: no authentication
    std::string model_id;                 // the name /v1/models lists; requests may name it or leave it out
    size_t max_body_bytes = size_t{1} << 20;  // larger request bodies get 413
    int http_threads = 64;                // connections served at once (a streaming one holds a thread)
};

class ApiServer {
public:
    // Binds host:port and starts serving on threads of its own. The engine
    // and the model must outlive the server.
    static Result<std::unique_ptr<ApiServer>> start(Engine& engine, const ModelDescription& model,
                                                    const ApiServerConfig& config);
    ~ApiServer();  // shutdown()
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    int port() const;
    // Stops accepting, aborts the requests in flight (their streams end),
    // and returns when every connection's handler has. Any thread; twice is
    // harmless. Not async-signal-safe: call it from a thread that waited
    // for the signal (sigwait), as folio serve does.
    void shutdown();
    // Blocks until shutdown() has finished.
    void wait();

    struct State;

private:
    explicit ApiServer(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

}  // namespace folio
