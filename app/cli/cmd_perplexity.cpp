// folio perplexity: llama.cpp's perplexity protocol. The whole text is
// tokenized once (with BOS when the model adds one) and cut into chunks of
// ctx tokens; each chunk runs from an empty cache with its first token set to
// BOS (when the model uses BOS), and only the second half of each chunk is
// scored, so every scored token has at least ctx/2 tokens of context.
//
// --kl-divergence-base FILE saves the scored log-probabilities (llama.cpp's
// file format) while measuring; with --kl-divergence the model is instead
// compared with a FILE saved from another (the full-precision) model, on the
// tokens stored in it: PPL of both, their ratio, KL divergence and how often
// the most likely token agrees, as llama-perplexity --kl-divergence reports.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "folio/generate.h"
#include "folio/quant_quality.h"
#include "folio/scheduler.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> perplexity_flags() {
    std::vector<FlagSpec> flags = model_flags();
    flags.push_back({"-f", "--file", "FILE", "the text to score"});
    flags.push_back({"-b", "--batch-size", "N", "tokens per forward step (default: the context)"});
    flags.push_back({"", "--chunks", "N", "score at most N chunks (default: all)"});
    flags.push_back({"", "--kl-divergence-base", "FILE", "save the log-probabilities to FILE (llama.cpp's format); "
                                                          "with --kl-divergence, compare with those in FILE"});
    flags.push_back({"", "--kl-divergence", "", "compare with --kl-divergence-base FILE: KLD, top token, PPL ratio"});
    flags.push_back({"", "--stream", "MODE", "score the whole text as one stream at -c tokens of context, the "
                                            "window kept by MODE: sink-window (the first --sinks tokens and the "
                                            "latest, slid in place: StreamingLLM's evaluation) or rolling (the "
                                            "latest three quarters, recomputed)"});
    flags.push_back({"", "--sinks", "N", "tokens --stream sink-window keeps at the start (default 4; whole KV blocks)"});
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

void print_kld_summary(const KldSummary& s) {
    std::printf("tokens scored        : %lld\n", static_cast<long long>(s.n_tokens));
    std::printf("Mean PPL(Q)          : %10.6f\n", s.ppl);
    std::printf("Mean PPL(base)       : %10.6f\n", s.ppl_base);
    std::printf("Mean PPL(Q)/PPL(base): %10.6f\n", s.ppl_ratio);
    std::printf("Mean    KLD          : %10.6f\n", s.mean_kld);
    std::printf("Maximum KLD          : %10.6f\n", s.max_kld);
    std::printf("99.0%%   KLD          : %10.6f\n", s.p99_kld);
    std::printf("Median  KLD          : %10.6f\n", s.median_kld);
    std::printf("Same top p           : %6.3f %%\n", 100.0 * s.same_top);
}

int compare_with_base(LoadedModel& m, const std::string& base_path, const ChunkScoring& defaults) {
    auto base = BaseLogitsReader::open(base_path);
    if (!base) return fail("perplexity", base.error().message);
    const int32_t n_vocab = m.backend->n_vocab();
    if (base->n_vocab() != n_vocab)
        return fail("perplexity", "'" + base_path + "' was saved from a model with " + std::to_string(base->n_vocab()) +
                                      " tokens; this one has " + std::to_string(n_vocab));
    if (base->n_ctx() > m.backend->max_context())
        return fail("perplexity", "'" + base_path + "' was saved with -c " + std::to_string(base->n_ctx()) +
                                      "; run with at least that context");
    ChunkScoring scoring = defaults;
    scoring.n_ctx = int32_t(base->n_ctx());
    scoring.n_chunks = defaults.n_chunks >= 0 ? std::min<int64_t>(defaults.n_chunks, base->n_chunk()) : base->n_chunk();
    std::fprintf(stderr, "folio perplexity: comparing with '%s' (%d chunks of %u)\n", base_path.c_str(),
                 int(scoring.n_chunks), base->n_ctx());
    KldAccumulator kld;
    std::vector<uint16_t> records;
    const size_t record = log_prob_record_size(n_vocab);
    Status s = score_chunks(*m.backend, base->tokens(), scoring,
                            [&](int64_t c, std::span<const float> logits, std::span<const int32_t> targets) -> Status {
                                if (Status r = base->read_chunk(records); !r) return r;
                                for (size_t i = 0; i < targets.size(); ++i)
                                    kld.add(logits.subspan(i * size_t(n_vocab), size_t(n_vocab)), targets[i],
                                            std::span<const uint16_t>(records).subspan(i * record, record));
                                const KldSummary so_far = kld.summary();
                                std::fprintf(stderr, "[%lld/%lld] mean KLD %.6f, same top %.2f %%\n",
                                             static_cast<long long>(c + 1), static_cast<long long>(scoring.n_chunks),
                                             so_far.mean_kld, 100.0 * so_far.same_top);
                                return {};
                            });
    if (!s) return fail("perplexity", s.error().message);
    print_kld_summary(kld.summary());
    return 0;
}

// Every token after the first scored in one pass over the text, `step`
// tokens a forward pass, with the context the overflow policy leaves once
// the text outgrows n_ctx: what a chat that never ends sees.
int score_stream(LoadedModel& m, const std::vector<int32_t>& tokens, int32_t n_ctx, bool sinks, int32_t n_sinks) {
    SequenceRunner runner(*m.backend, 512);
    const int32_t n_vocab = m.backend->n_vocab();
    const auto block = static_cast<int32_t>(m.backend->block_size());
    const int32_t capacity = std::min(n_ctx, runner.capacity());
    // A pass at most an eighth of the context, so that what an overflow keeps always leaves room for the next.
    const int32_t step = std::clamp(capacity / 8, 1, 64);
    const SinkSlide slide = sink_slide(capacity, n_sinks, block);
    const int32_t keep = slide.keep_blocks * block, drop = slide.drop_blocks * block;
    if (sinks && drop < block)
        return fail("perplexity", "-c " + std::to_string(capacity) + " leaves no room to slide past " +
                                      std::to_string(keep) + " sink tokens");
    std::fprintf(stderr, "folio perplexity: %zu tokens as one stream at %d of context (%s)\n", tokens.size(), capacity,
                 sinks ? ("sink-window: " + std::to_string(keep) + " sinks, slides of " + std::to_string(drop)).c_str()
                       : "rolling: the latest three quarters recomputed");
    std::vector<float> logits;
    double nll = 0.0;
    int64_t count = 0, recomputed = 0, overflows = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t pos = 0; pos + 1 < tokens.size();) {
        const auto n = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(step), tokens.size() - 1 - pos));
        if (runner.length() + n > capacity) {
            ++overflows;
            if (sinks) {
                if (Status s = runner.slide(keep, drop); !s) return fail("perplexity", s.error().message);
            } else {
                const std::vector<int32_t> tail(runner.tokens().end() - std::min(runner.length(), rolling_keep(capacity)),
                                                runner.tokens().end());
                runner.reset();
                if (Status s = runner.append(tail, logits); !s) return fail("perplexity", s.error().message);
                recomputed += static_cast<int64_t>(tail.size());
            }
            continue;
        }
        const std::span<const int32_t> chunk(tokens.data() + pos, static_cast<size_t>(n));
        if (Status s = runner.append(chunk, logits, /*all_logits=*/true); !s) return fail("perplexity", s.error().message);
        for (int32_t i = 0; i < n; ++i)
            nll += negative_log_likelihood(logits.data() + size_t(i) * size_t(n_vocab), n_vocab,
                                           tokens[pos + static_cast<size_t>(i) + 1]);
        count += n;
        pos += static_cast<size_t>(n);
        if (pos % 2048 < static_cast<size_t>(n))
            std::fprintf(stderr, "[%zu/%zu] PPL so far %.4f (%.1f s)\n", pos, tokens.size(),
                         std::exp(nll / static_cast<double>(count)),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::printf("tokens scored: %lld, context %d, overflows %lld, tokens recomputed %lld, %.1f s\n",
                static_cast<long long>(count), capacity, static_cast<long long>(overflows),
                static_cast<long long>(recomputed),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::printf("PPL = %.4f\n", std::exp(nll / static_cast<double>(count)));
    return 0;
}

}  // namespace

int run_perplexity(int argc, char** argv) {
    const std::vector<FlagSpec> flags = perplexity_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("perplexity", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("perplexity", "-m MODEL -f TEXT [-c 512] [-t THREADS] [--kl-divergence-base FILE "
                                              "[--kl-divergence]]", flags).c_str());
        return 0;
    }
    const std::optional<std::string> base_path = args->get("--kl-divergence-base");
    const bool compare = args->has("--kl-divergence");
    if (compare && !base_path) return fail("perplexity", "--kl-divergence needs --kl-divergence-base FILE");
    auto max_chunks = args->get_int("--chunks", -1, -1, 1 << 30);
    if (!max_chunks) return fail("perplexity", max_chunks.error().message);
    const std::optional<std::string> stream = args->get("--stream");
    if (stream && *stream != "sink-window" && *stream != "rolling")
        return fail("perplexity", "option --stream wants sink-window or rolling, got '" + *stream + "'");
    if (stream && (compare || base_path)) return fail("perplexity", "--stream does not save or compare log-probabilities");
    auto sinks = args->get_int("--sinks", 4, 0, 1 << 20);
    if (!sinks) return fail("perplexity", sinks.error().message);
    std::string text;
    if (!compare) {
        auto file = args->get("--file");
        if (!file) return fail("perplexity", "no text given (-f FILE)");
        std::ifstream in(*file, std::ios::binary);
        if (!in) return fail("perplexity", "cannot read '" + *file + "'");
        std::ostringstream buffer;
        buffer << in.rdbuf();
        text = buffer.str();
    }

    auto loaded = load_for_inference(*args, 512);
    if (!loaded) return fail("perplexity", loaded.error().message);
    LoadedModel& m = **loaded;
    const int32_t n_ctx = static_cast<int32_t>(m.backend->max_context());
    auto batch_size = args->get_int("--batch-size", n_ctx, 1, n_ctx);
    if (!batch_size) return fail("perplexity", batch_size.error().message);
    const bool add_bos = m.tokenizer.add_bos() && m.tokenizer.bos_id() >= 0;
    ChunkScoring scoring;
    scoring.n_ctx = n_ctx;
    scoring.n_chunks = *max_chunks;
    scoring.bos = add_bos ? m.tokenizer.bos_id() : -1;
    scoring.batch = static_cast<int32_t>(*batch_size);
    if (compare) return compare_with_base(m, *base_path, scoring);

    const std::vector<int32_t> tokens = m.tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/false);
    if (stream) {
        if (tokens.size() < 2) return fail("perplexity", "the text has fewer than 2 tokens");
        return score_stream(m, tokens, n_ctx, *stream == "sink-window", static_cast<int32_t>(*sinks));
    }
    int64_t n_chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
    if (*max_chunks >= 0) n_chunks = std::min<int64_t>(n_chunks, *max_chunks);
    if (n_chunks == 0)
        return fail("perplexity", "the text is " + std::to_string(tokens.size()) + " tokens; it needs at least " +
                                      std::to_string(n_ctx) + " (one chunk of -c tokens)");
    std::fprintf(stderr, "folio perplexity: %zu tokens, %lld chunks of %d, scoring the second half of each\n",
                 tokens.size(), static_cast<long long>(n_chunks), n_ctx);

    const int32_t n_vocab = m.backend->n_vocab();
    std::optional<BaseLogitsWriter> writer;
    if (base_path) {
        auto w = BaseLogitsWriter::create(*base_path, uint32_t(n_ctx), n_vocab, int32_t(n_chunks),
                                          std::span<const int32_t>(tokens.data(), size_t(n_chunks * n_ctx)));
        if (!w) return fail("perplexity", w.error().message);
        writer = std::move(*w);
    }
    std::vector<uint16_t> records;
    const size_t record = log_prob_record_size(n_vocab);
    double nll = 0.0;
    int64_t count = 0;
    const auto start = std::chrono::steady_clock::now();
    Status s = score_chunks(*m.backend, tokens, scoring,
                            [&](int64_t c, std::span<const float> logits, std::span<const int32_t> targets) -> Status {
                                records.resize(targets.size() * record);
                                for (size_t i = 0; i < targets.size(); ++i) {
                                    const float* row = logits.data() + i * size_t(n_vocab);
                                    nll += negative_log_likelihood(row, n_vocab, targets[i]);
                                    ++count;
                                    if (writer)
                                        (void)compress_log_probs(std::span<const float>(row, size_t(n_vocab)), targets[i],
                                                                 std::span<uint16_t>(records).subspan(i * record, record));
                                }
                                if (writer)
                                    if (Status w = writer->append(records); !w) return w;
                                const double elapsed =
                                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                                std::fprintf(stderr, "[%lld/%lld] PPL so far %.4f (%.1f s)\n", static_cast<long long>(c + 1),
                                             static_cast<long long>(n_chunks), std::exp(nll / static_cast<double>(count)),
                                             elapsed);
                                return {};
                            });
    if (!s) return fail("perplexity", s.error().message);
    if (writer)
        if (Status w = writer->close(); !w) return fail("perplexity", w.error().message);
    std::printf("PPL = %.4f\n", std::exp(nll / static_cast<double>(count)));
    return 0;
}

}  // namespace folio::cli
