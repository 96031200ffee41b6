// folio chat: a multi-turn conversation in the terminal, through the engine.
// Each turn renders the whole conversation through the chat template and
// submits it; the engine's prefix cache finds the earlier turns' blocks, so
// only the new suffix is computed. Reads lines from stdin (a pipe works
// too); /reset starts over, /exit ends.
#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> chat_flags() {
    std::vector<FlagSpec> flags = model_flags();
    flags.push_back({"-n", "--n-predict", "N", "most tokens per reply (default 512)"});
    flags.push_back({"", "--system", "TEXT", "a system message"});
    flags.push_back({"-h", "--help", "", "this help"});
    for (const FlagSpec& f : sampling_flags()) flags.push_back(f);
    for (const FlagSpec& f : engine_flags()) flags.push_back(f);
    return flags;
}

}  // namespace

int run_chat(int argc, char** argv) {
    const std::vector<FlagSpec> flags = chat_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("chat", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("chat", "-m MODEL [--system TEXT] [--temp T]", flags).c_str());
        return 0;
    }
    auto n_predict = args->get_int("--n-predict", 512, 1, 1 << 24);
    if (!n_predict) return fail("chat", n_predict.error().message);
    SamplingParams params;
    if (Status s = read_sampling_flags(*args, params); !s) return fail("chat", s.error().message);
    auto loaded = start_engine(*args, 4096);
    if (!loaded) return fail("chat", loaded.error().message);
    LoadedModel& m = **loaded;

    std::vector<ChatMessage> messages;
    if (auto system = args->get("--system")) messages.push_back({"system", *system, ""});
    const size_t n_fixed = messages.size();
    bool announced = false;
    std::fprintf(stderr, "folio chat: type a message; /reset starts over, /exit ends\n");
    std::string line;
    while (true) {
        std::fprintf(stderr, "> ");
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line == "/reset") {
            messages.resize(n_fixed);
            std::fprintf(stderr, "(conversation cleared)\n");
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({"user", line, ""});
        auto ids = chat_tokens(m, messages, !announced);
        announced = true;
        if (!ids) return fail("chat", ids.error().message);
        GenerationRequest request;
        request.prompt_tokens = std::move(*ids);
        request.sampling = params;
        request.max_tokens = static_cast<int32_t>(*n_predict);
        if (static_cast<int64_t>(request.prompt_tokens.size()) + 1 >= m.backend->max_context()) {
            std::fprintf(stderr, "folio chat: the conversation no longer fits the context (%u tokens); /reset\n",
                         m.backend->max_context());
            messages.pop_back();
            continue;
        }
        const Completion reply = complete(*m.engine, std::move(request), /*stream=*/true);
        std::fputc('\n', stdout);
        std::fflush(stdout);
        if (reply.last.reason == FinishReason::Error) {
            std::fprintf(stderr, "folio chat: %s\n", reply.last.error.c_str());
            messages.pop_back();
            continue;
        }
        const RequestTimings& t = reply.last.timings;
        std::fprintf(stderr, "(%d prompt tokens, %d from the cache; %d tokens at %.1f tok/s)\n", t.prompt_tokens,
                     t.cached_prompt_tokens, t.generated_tokens, t.decode_tokens_per_s());
        messages.push_back({"assistant", reply.text, ""});
    }
    return 0;
}

}  // namespace folio::cli
