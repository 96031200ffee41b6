// folio run: generate from a prompt, streaming only the generated text to
// stdout; logs and timings go to stderr.
#include <chrono>
#include <cstdio>
#include <string>

#include "commands.h"
#include "folio/chat_template.h"
#include "folio/generate.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> run_flags() {
    std::vector<FlagSpec> flags = model_flags();
    const std::vector<FlagSpec> own = {
        {"-p", "--prompt", "TEXT", "the prompt"},
        {"-n", "--n-predict", "N", "tokens to generate (default 128)"},
        {"", "--ignore-eos", "", "keep generating past end-of-generation tokens"},
        {"", "--chat", "", "wrap the prompt in the model's chat template as one user message"},
        {"-h", "--help", "", "this help"},
    };
    flags.insert(flags.end(), own.begin(), own.end());
    for (const FlagSpec& f : sampling_flags()) flags.push_back(f);
    return flags;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Result<std::string> render_chat(const LoadedModel& m, const std::vector<ChatMessage>& messages, bool announce) {
    ChatTemplateChoice choice = ChatTemplate::for_model(m.model.chat_template, m.model.hparams.architecture);
    if (announce && choice.is_fallback) std::fprintf(stderr, "folio: %s\n", choice.notice.c_str());
    ChatTemplateInputs inputs;
    inputs.messages = messages;
    inputs.add_generation_prompt = true;
    if (m.tokenizer.bos_id() >= 0) inputs.bos_token = m.tokenizer.token_text(m.tokenizer.bos_id());
    if (m.tokenizer.eos_id() >= 0) inputs.eos_token = m.tokenizer.token_text(m.tokenizer.eos_id());
    return choice.chat_template.render(inputs);
}

std::vector<int32_t> tokenize_chat(const LoadedModel& m, const std::string& text) {
    const Tokenizer& tok = m.tokenizer;
    const bool has_bos = tok.bos_id() >= 0 && text.rfind(tok.token_text(tok.bos_id()), 0) == 0;
    std::vector<int32_t> ids = tok.encode(text, /*add_special=*/!has_bos, /*parse_special=*/true);
    return ids;
}

int run_run(int argc, char** argv) {
    const std::vector<FlagSpec> flags = run_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("run", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("run", "-m MODEL -p PROMPT [-n N] [--temp T] [--chat]", flags).c_str());
        return 0;
    }
    auto prompt = args->get("--prompt");
    if (!prompt) return fail("run", "no prompt given (-p TEXT)");
    if (prompt->empty()) return fail("run", "the prompt is empty");
    auto n_predict = args->get_int("--n-predict", 128, -1, 1 << 24);
    if (!n_predict) return fail("run", n_predict.error().message);
    SamplingParams params;
    if (Status s = read_sampling_flags(*args, params); !s) return fail("run", s.error().message);
    auto sampler = Sampler::create(params);
    if (!sampler) return fail("run", sampler.error().message);

    auto loaded = load_for_inference(*args, 4096);
    if (!loaded) return fail("run", loaded.error().message);
    LoadedModel& m = **loaded;

    std::vector<int32_t> prompt_ids;
    if (args->has("--chat")) {
        auto text = render_chat(m, {ChatMessage{"user", *prompt, ""}}, true);
        if (!text) return fail("run", "chat template: " + text.error().message);
        prompt_ids = tokenize_chat(m, *text);
    } else {
        prompt_ids = m.tokenizer.encode(*prompt, /*add_special=*/true, /*parse_special=*/true);
    }
    if (prompt_ids.empty()) return fail("run", "the prompt has no tokens");
    SequenceRunner seq(*m.backend);
    if (static_cast<int64_t>(prompt_ids.size()) >= seq.capacity())
        return fail("run", "the prompt is " + std::to_string(prompt_ids.size()) + " tokens; the context holds " +
                               std::to_string(seq.capacity()) + " (raise -c)");

    const auto t_prompt = std::chrono::steady_clock::now();
    std::vector<float> logits;
    if (Status s = seq.append(prompt_ids, logits); !s) return fail("run", s.error().message);
    const double prompt_seconds = seconds_since(t_prompt);

    const bool ignore_eos = args->has("--ignore-eos");
    StreamingDecoder decoder(m.tokenizer, /*skip_control=*/true);
    std::vector<int32_t> history = prompt_ids;
    int64_t generated = 0;
    std::string stop_reason = "length";
    const auto t_gen = std::chrono::steady_clock::now();
    const int64_t limit = *n_predict < 0 ? int64_t{1} << 40 : *n_predict;
    while (generated < limit) {
        const int32_t token = sampler->sample(logits, history);
        if (!ignore_eos && m.tokenizer.is_end_of_generation(token)) {
            stop_reason = "end of generation";
            break;
        }
        ++generated;
        history.push_back(token);
        const std::string text = decoder.push(token);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        if (generated == limit) break;
        if (seq.length() >= seq.capacity()) {
            stop_reason = "context full";
            break;
        }
        const int32_t one[1] = {token};
        if (Status s = seq.append(one, logits); !s) return fail("run", s.error().message);
    }
    const std::string tail = decoder.flush();
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    const double gen_seconds = seconds_since(t_gen);
    std::fprintf(stderr, "folio: prompt %zu tokens in %.3f s (%.1f tok/s); generated %lld tokens in %.3f s (%.1f tok/s); stop: %s\n",
                 prompt_ids.size(), prompt_seconds, static_cast<double>(prompt_ids.size()) / prompt_seconds,
                 static_cast<long long>(generated), gen_seconds,
                 gen_seconds > 0 ? static_cast<double>(generated) / gen_seconds : 0.0, stop_reason.c_str());
    return 0;
}

}  // namespace folio::cli
