// folio perplexity: llama.cpp's perplexity protocol. The whole text is
// tokenized once (with BOS when the model adds one) and cut into chunks of
// ctx tokens; each chunk runs from an empty cache with its first token set to
// BOS (when the model uses BOS), and only the second half of each chunk is
// scored, so every scored token has at least ctx/2 tokens of context.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "folio/generate.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> perplexity_flags() {
    std::vector<FlagSpec> flags = model_flags();
    flags.push_back({"-f", "--file", "FILE", "the text to score"});
    flags.push_back({"-b", "--batch-size", "N", "tokens per forward step (default: the context)"});
    flags.push_back({"", "--chunks", "N", "score at most N chunks (default: all)"});
    flags.push_back({"-h", "--help", "", "this help"});
    return flags;
}

// -log p(target) under softmax(logits), in double.
double negative_log_likelihood(const float* logits, int32_t n_vocab, int32_t target) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; ++i) max = std::max(max, logits[i]);
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
    return std::log(sum) - (static_cast<double>(logits[target]) - max);
}

}  // namespace

int run_perplexity(int argc, char** argv) {
    const std::vector<FlagSpec> flags = perplexity_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("perplexity", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("perplexity", "-m MODEL -f TEXT [-c 512] [-t THREADS]", flags).c_str());
        return 0;
    }
    auto file = args->get("--file");
    if (!file) return fail("perplexity", "no text given (-f FILE)");
    std::ifstream in(*file, std::ios::binary);
    if (!in) return fail("perplexity", "cannot read '" + *file + "'");
    std::ostringstream text;
    text << in.rdbuf();
    auto max_chunks = args->get_int("--chunks", -1, -1, 1 << 30);
    if (!max_chunks) return fail("perplexity", max_chunks.error().message);

    auto loaded = load_for_inference(*args, 512);
    if (!loaded) return fail("perplexity", loaded.error().message);
    LoadedModel& m = **loaded;
    const int32_t n_ctx = static_cast<int32_t>(m.backend->max_context());
    auto batch_size = args->get_int("--batch-size", n_ctx, 1, n_ctx);
    if (!batch_size) return fail("perplexity", batch_size.error().message);

    const bool add_bos = m.tokenizer.add_bos() && m.tokenizer.bos_id() >= 0;
    const std::vector<int32_t> tokens = m.tokenizer.encode(text.str(), /*add_special=*/true, /*parse_special=*/false);
    int64_t n_chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
    if (*max_chunks >= 0) n_chunks = std::min<int64_t>(n_chunks, *max_chunks);
    if (n_chunks == 0)
        return fail("perplexity", "the text is " + std::to_string(tokens.size()) + " tokens; it needs at least " +
                                      std::to_string(n_ctx) + " (one chunk of -c tokens)");
    std::fprintf(stderr, "folio perplexity: %zu tokens, %lld chunks of %d, scoring the second half of each\n",
                 tokens.size(), static_cast<long long>(n_chunks), n_ctx);

    SequenceRunner seq(*m.backend, static_cast<int32_t>(*batch_size));
    const int32_t n_vocab = m.backend->n_vocab();
    const int32_t first = n_ctx / 2;
    std::vector<float> logits;
    double nll = 0.0;
    int64_t count = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < n_chunks; ++c) {
        std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (add_bos) chunk[0] = m.tokenizer.bos_id();
        seq.reset();
        if (Status s = seq.append_from(chunk, first, logits); !s) return fail("perplexity", s.error().message);
        for (int32_t j = first; j < n_ctx - 1; ++j) {
            const int32_t target = tokens[static_cast<size_t>(c * n_ctx + j + 1)];
            nll += negative_log_likelihood(logits.data() + static_cast<size_t>(j - first) * n_vocab, n_vocab, target);
            ++count;
        }
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "[%lld/%lld] PPL so far %.4f (%.1f s)\n", static_cast<long long>(c + 1),
                     static_cast<long long>(n_chunks), std::exp(nll / static_cast<double>(count)), elapsed);
    }
    std::printf("PPL = %.4f\n", std::exp(nll / static_cast<double>(count)));
    return 0;
}

}  // namespace folio::cli
