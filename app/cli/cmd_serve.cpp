// folio serve: the engine behind an OpenAI-compatible HTTP API
// (folio/api_server.h; docs/server.md). Loopback only unless --host says
// otherwise. SIGINT / SIGTERM (Windows: Ctrl+C) stop it gracefully: no new connections, the
// requests in flight aborted, exit status 0.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "commands.h"
#include "inference_common.h"
#include "stop_signal.h"

#ifdef FOLIO_HAVE_SERVER
#include "folio/api_server.h"
#endif

namespace folio::cli {
namespace {

std::vector<FlagSpec> serve_flags() {
    std::vector<FlagSpec> flags = model_flags();
    const std::vector<FlagSpec> own = {
        {"", "--host", "ADDR", "address to listen on (default 127.0.0.1: this machine only)"},
        {"", "--port", "N", "TCP port (default 8080; 0 = any free port, printed at start)"},
        {"", "--api-key", "KEY", "require 'Authorization: Bearer KEY' on every request but /health (or set "
                                 "FOLIO_API_KEY, which other users' `ps` does not show)"},
        {"", "--alias", "NAME", "the model's name in the API (default: the model file's name)"},
        {"", "--parallel", "N", "sequences the KV cache holds whole contexts for (default 8; or --kv-budget)"},
        {"", "--max-body", "BYTES", "largest request body accepted (default 1048576)"},
        {"", "--http-threads", "N", "connections served at once (default 64)"},
        {"-h", "--help", "", "this help"},
    };
    flags.insert(flags.end(), own.begin(), own.end());
    for (const FlagSpec& f : engine_flags()) flags.push_back(f);
    return flags;
}

}  // namespace

int run_serve(int argc, char** argv) {
    const std::vector<FlagSpec> flags = serve_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("serve", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("serve", "-m MODEL [--host 127.0.0.1] [--port 8080] [--api-key KEY]", flags).c_str());
        return 0;
    }
#ifndef FOLIO_HAVE_SERVER
    return fail("serve", "this folio was built without cpp-httplib (Debian libcpp-httplib-dev); install it and rebuild");
#else
    auto port = args->get_int("--port", 8080, 0, 65535);
    if (!port) return fail("serve", port.error().message);
    auto parallel = args->get_int("--parallel", 8, 1, 4096);
    if (!parallel) return fail("serve", parallel.error().message);
    auto max_body = args->get_int("--max-body", 1 << 20, 1024, int64_t{1} << 30);
    if (!max_body) return fail("serve", max_body.error().message);
    auto threads = args->get_int("--http-threads", 64, 1, 4096);
    if (!threads) return fail("serve", threads.error().message);
    if (args->has("--api-key") && args->get("--api-key")->empty()) return fail("serve", "--api-key is empty");

    // Before the engine's and the HTTP server's threads start (POSIX: they
    // inherit the blocked signals, which only wait() below takes).
    StopSignal stop;

    auto loaded = start_engine(*args, 4096, static_cast<uint32_t>(*parallel));
    if (!loaded) return fail("serve", loaded.error().message);
    LoadedModel& m = **loaded;

    ApiServerConfig config;
    config.host = args->get_or("--host", "127.0.0.1");
    config.port = static_cast<int>(*port);
    const char* key_from_env = std::getenv("FOLIO_API_KEY");
    config.api_key = args->get_or("--api-key", key_from_env ? key_from_env : "");
    const std::string model_path = *args->get("--model");
    config.model_id = args->get_or("--alias", std::filesystem::path(model_path).filename().string());
    config.max_body_bytes = static_cast<size_t>(*max_body);
    config.http_threads = static_cast<int>(*threads);
    if (config.api_key.empty() && config.host != "127.0.0.1" && config.host != "localhost" && config.host != "::1")
        std::fprintf(stderr, "folio serve: warning: listening on %s without --api-key: anyone who can reach this "
                             "machine can use the model\n", config.host.c_str());
    auto server = ApiServer::start(*m.engine, m.model, config);
    if (!server) return fail("serve", server.error().message);
    std::fprintf(stderr, "folio serve: '%s' on http://%s:%d/v1 (%s); Ctrl+C stops\n", config.model_id.c_str(),
                 config.host.c_str(), (*server)->port(),
                 config.api_key.empty() ? "no API key" : "API key required");
    std::fflush(stderr);

    const char* reason = stop.wait();
    std::fprintf(stderr, "folio serve: %s: stopping (requests in flight are aborted)\n", reason);
    (*server)->shutdown();
    server->reset();
    std::fprintf(stderr, "folio serve: stopped\n");
    return 0;
#endif
}

}  // namespace folio::cli
