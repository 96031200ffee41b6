// folio chat: a multi-turn conversation in the terminal. Each turn renders
// the whole conversation through the chat template; the tokens the cache
// already holds (the earlier turns) are kept and only the new suffix runs.
// Reads lines from stdin (a pipe works too); /reset starts over, /exit ends.
#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"
#include "folio/generate.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> chat_flags() {
    std::vector<FlagSpec> flags = model_flags();
    flags.push_back({"-n", "--n-predict", "N", "most tokens per reply (default 512)"});
    flags.push_back({"", "--system", "TEXT", "a system message"});
    flags.push_back({"-h", "--help", "", "this help"});
    for (const FlagSpec& f : sampling_flags()) flags.push_back(f);
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
    auto sampler = Sampler::create(params);
    if (!sampler) return fail("chat", sampler.error().message);
    auto loaded = load_for_inference(*args, 4096);
    if (!loaded) return fail("chat", loaded.error().message);
    LoadedModel& m = **loaded;

    std::vector<ChatMessage> messages;
    if (auto system = args->get("--system")) messages.push_back({"system", *system, ""});
    const size_t n_fixed = messages.size();
    SequenceRunner seq(*m.backend);
    std::vector<float> logits;
    bool announced = false;
    std::fprintf(stderr, "folio chat: type a message; /reset starts over, /exit ends\n");
    std::string line;
    while (true) {
        std::fprintf(stderr, "> ");
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line == "/reset") {
            messages.resize(n_fixed);
            seq.reset();
            std::fprintf(stderr, "(conversation cleared)\n");
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({"user", line, ""});
        auto text = render_chat(m, messages, !announced);
        announced = true;
        if (!text) return fail("chat", "chat template: " + text.error().message);
        std::vector<int32_t> ids = tokenize_chat(m, *text);
        if (static_cast<int64_t>(ids.size()) + 1 >= seq.capacity()) {
            std::fprintf(stderr, "folio chat: the conversation no longer fits the context (%d tokens); /reset\n",
                         seq.capacity());
            messages.pop_back();
            continue;
        }
        // Keep the cached tokens the new prompt starts with; run only the rest.
        size_t common = 0;
        const std::vector<int32_t>& cached = seq.tokens();
        while (common < cached.size() && common < ids.size() && cached[common] == ids[common]) ++common;
        if (common == ids.size()) --common;  // at least one token runs, to get logits
        seq.truncate(static_cast<int32_t>(common));
        const std::vector<int32_t> suffix(ids.begin() + static_cast<std::ptrdiff_t>(common), ids.end());
        if (Status s = seq.append(suffix, logits); !s) return fail("chat", s.error().message);

        StreamingDecoder decoder(m.tokenizer, /*skip_control=*/true);
        std::vector<int32_t> history = ids;
        std::string reply;
        for (int64_t i = 0; i < *n_predict; ++i) {
            const int32_t token = sampler->sample(logits, history);
            if (m.tokenizer.is_end_of_generation(token)) break;
            history.push_back(token);
            const std::string piece = decoder.push(token);
            reply += piece;
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            if (seq.length() >= seq.capacity()) break;
            const int32_t one[1] = {token};
            if (Status s = seq.append(one, logits); !s) return fail("chat", s.error().message);
        }
        const std::string tail = decoder.flush();
        reply += tail;
        std::fwrite(tail.data(), 1, tail.size(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
        messages.push_back({"assistant", reply, ""});
    }
    return 0;
}

}  // namespace folio::cli
