// folio chat: a multi-turn conversation in the terminal, through the engine.
// Each turn renders the whole conversation through the chat template and
// submits it; the engine's prefix cache finds the earlier turns' blocks, so
// only the new suffix is computed. A conversation longer than the context
// loses its oldest turns by default (--overflow; folio/chat_prompt.h), and
// says so. Reads lines from stdin (a pipe works too); lines starting with
// '/' are commands (/help lists them). Ctrl+C stops the reply; at the
// prompt, or a second time, it ends the program.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <unistd.h>

#include "commands.h"
#include "folio/chat_prompt.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> chat_flags() {
    std::vector<FlagSpec> flags = model_flags();
    flags.push_back({"-n", "--n-predict", "N", "most tokens per reply (default 512)"});
    flags.push_back({"", "--system", "TEXT", "a system message"});
    flags.push_back({"", "--overflow", "MODE",
                     "when the conversation outgrows the context: drop-oldest (default: leave out the oldest turns, "
                     "keep the system message), stop, truncate (keep the system message and the latest tokens), "
                     "rolling (the latest tokens), sink-window (the first 4 tokens and the latest, slid without "
                     "recomputation: StreamingLLM)"});
    flags.push_back({"-h", "--help", "", "this help"});
    for (const FlagSpec& f : sampling_flags()) flags.push_back(f);
    for (const FlagSpec& f : engine_flags()) flags.push_back(f);
    return flags;
}

const char* kCommands =
    "commands:\n"
    "  /help    this list\n"
    "  /reset   start the conversation over (the system message stays)\n"
    "  /exit    end (also Ctrl+D)\n"
    "Ctrl+C stops a reply; at the prompt, or twice, it ends the program.\n";

// Ctrl+C: the signal handler only sets flags (and ends the program when no
// reply is running or the user pressed it again); the reply loop polls.
volatile std::sig_atomic_t g_replying = 0;
volatile std::sig_atomic_t g_interrupts = 0;

void on_interrupt(int) {
    if (!g_replying || g_interrupts > 0) {
        const char newline = '\n';
        [[maybe_unused]] auto n = ::write(STDERR_FILENO, &newline, 1);
        ::_exit(130);  // 128 + SIGINT, as a shell reports it
    }
    g_interrupts = 1;
}

bool interrupted() { return g_interrupts > 0; }

// The longest sequence the engine runs: its context, or its KV pool when that is smaller.
int32_t effective_context(const Backend& b) {
    const int64_t pool = static_cast<int64_t>(b.n_blocks()) * b.block_size();
    return static_cast<int32_t>(std::min<int64_t>(b.max_context(), pool));
}

}  // namespace

int run_chat(int argc, char** argv) {
    const std::vector<FlagSpec> flags = chat_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("chat", args.error().message);
    if (args->has("--help")) {
        std::printf("%s\n%s", usage("chat", "-m MODEL [--system TEXT] [--temp T] [--overflow MODE]", flags).c_str(),
                    kCommands);
        return 0;
    }
    auto n_predict = args->get_int("--n-predict", 512, 1, 1 << 24);
    if (!n_predict) return fail("chat", n_predict.error().message);
    const std::string overflow_name = args->get_or("--overflow", "drop-oldest");
    const auto overflow = chat_overflow_from_string(overflow_name);
    if (!overflow)
        return fail("chat", "option --overflow wants drop-oldest, stop, truncate, rolling or sink-window, got '" + overflow_name + "'");
    SamplingParams params;
    if (Status s = read_sampling_flags(*args, params); !s) return fail("chat", s.error().message);
    auto loaded = start_engine(*args, 4096);
    if (!loaded) return fail("chat", loaded.error().message);
    LoadedModel& m = **loaded;
    const int32_t context = effective_context(*m.backend);
    const ChatTemplateChoice choice = ChatTemplate::for_model(m.model.chat_template, m.model.hparams.architecture);
    if (choice.is_fallback) std::fprintf(stderr, "folio: %s\n", choice.notice.c_str());

    std::signal(SIGINT, on_interrupt);

    std::vector<ChatMessage> messages;
    if (auto system = args->get("--system")) messages.push_back({"system", *system, ""});
    const size_t n_fixed = messages.size();
    size_t dropped_before = 0;  // the notice is given when more turns go
    std::fprintf(stderr, "folio chat: type a message; /help lists the commands\n");
    std::string line;
    while (true) {
        std::fprintf(stderr, "> ");
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line == "/reset") {
            messages.resize(n_fixed);
            dropped_before = 0;
            std::fprintf(stderr, "(conversation cleared)\n");
            continue;
        }
        if (line == "/help") {
            std::fprintf(stderr, "%s", kCommands);
            continue;
        }
        if (line.starts_with("/")) {
            std::fprintf(stderr, "folio chat: unknown command '%s' (/help lists them)\n", line.c_str());
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({"user", line, ""});
        auto turn = chat_turn_prompt(choice.chat_template, m.tokenizer, messages, *overflow, context,
                                     static_cast<int32_t>(*n_predict));
        if (!turn) {
            std::fprintf(stderr, "folio chat: %s; /reset starts over%s\n", turn.error().message.c_str(),
                         *overflow == ChatOverflow::Stop ? ", --overflow drop-oldest leaves out the oldest turns" : "");
            messages.pop_back();
            continue;
        }
        if (turn->dropped_messages > dropped_before)
            std::fprintf(stderr,
                         "(the conversation is %zu tokens, more than the context of %d holds: the %zu oldest "
                         "messages are left out from now on)\n",
                         turn->full_tokens, context, turn->dropped_messages);
        dropped_before = turn->dropped_messages;
        GenerationRequest request;
        request.prompt_tokens = std::move(turn->tokens);
        request.overflow = turn->overflow;
        request.keep_tokens = turn->keep_tokens;
        request.sampling = params;
        request.max_tokens = static_cast<int32_t>(*n_predict);
        g_interrupts = 0;
        g_replying = 1;
        const Completion reply =
            complete(*m.engine, std::move(request), /*stream=*/true, {.prefill_progress = true, .interrupted = interrupted});
        g_replying = 0;
        std::fputc('\n', stdout);
        std::fflush(stdout);
        if (reply.last.reason == FinishReason::Error) {
            std::fprintf(stderr, "folio chat: %s\n", reply.last.error.c_str());
            messages.pop_back();
            continue;
        }
        const RequestTimings& t = reply.last.timings;
        std::string ending;
        if (reply.last.reason == FinishReason::Abort) ending = "; stopped (Ctrl+C)";
        else if (reply.last.reason == FinishReason::Length && t.generated_tokens >= *n_predict)
            ending = "; cut at -n " + std::to_string(*n_predict) + " tokens (raise -n for longer replies)";
        else if (reply.last.reason == FinishReason::Length)
            ending = "; cut: the context (" + std::to_string(context) + " tokens) is full";
        if (t.truncated_tokens > 0) ending += "; " + std::to_string(t.truncated_tokens) + " tokens left out (--overflow " +
                                              std::string(to_string(*overflow)) + ")";
        std::fprintf(stderr, "(%d prompt tokens, %d from the cache; %d tokens at %.1f tok/s%s)\n", t.prompt_tokens,
                     t.cached_prompt_tokens, t.generated_tokens, t.decode_tokens_per_s(), ending.c_str());
        messages.push_back({"assistant", reply.text, ""});
    }
    return 0;
}

}  // namespace folio::cli
