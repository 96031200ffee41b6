// Judging a quantized model against its source, as llama-perplexity's
// KL-divergence mode does: the text is cut into chunks of n_ctx tokens, the
// second half of each chunk is scored, and for every scored token the base
// (full-precision) model's log-probabilities, kept in 16 bits per token of
// the vocabulary, are compared with the quantized model's: KL divergence,
// whether the top token is the same, and each model's perplexity. The base
// side can be saved to a file in llama.cpp's own format ("_logits_"), so
// `folio perplexity --kl-divergence-base` and `llama-perplexity
// --kl-divergence` read each other's files.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "folio/backend.h"
#include "folio/error.h"

namespace folio {

// The base model's log-probabilities for one scored token: llama.cpp's
// record of 2 floats (step, minimum log-prob) + n_vocab 16-bit levels,
// padded to an even count.
size_t log_prob_record_size(int32_t n_vocab);  // in uint16_t units
// Compresses one row of logits into `record` (log_prob_record_size units);
// returns the NLL of `target`.
double compress_log_probs(std::span<const float> logits, int32_t target, std::span<uint16_t> record);

struct KldSummary {
    int64_t n_tokens = 0;
    double ppl_base = 0, ppl = 0, ppl_ratio = 0;  // ppl_ratio = ppl / ppl_base
    double mean_kld = 0, median_kld = 0, p99_kld = 0, max_kld = 0;
    double same_top = 0;                           // share of tokens whose most likely token agrees
};

// Accumulates the comparison token by token.
class KldAccumulator {
public:
    void add(std::span<const float> logits, int32_t target, std::span<const uint16_t> base_record);
    KldSummary summary() const;

private:
    double sum_nll_ = 0, sum_nll_base_ = 0, sum_kld_ = 0;
    int64_t same_top_ = 0;
    std::vector<float> klds_;
};

// Runs `tokens` in chunks of n_ctx on a backend, llama-perplexity's way (BOS
// replaces each chunk's first token when `bos` >= 0), and hands every chunk's
// scored rows to `scored(chunk, logits rows [n_rows x n_vocab], targets)`.
struct ChunkScoring {
    int32_t n_ctx = 512;
    int64_t n_chunks = -1;                 // -1: all whole chunks
    int32_t bos = -1;
    int32_t batch = 0;                     // tokens per forward step; 0: the whole chunk
    const std::atomic<bool>* cancel = nullptr;
};
using ScoredChunk = std::function<Status(int64_t chunk, std::span<const float> logits, std::span<const int32_t> targets)>;
Status score_chunks(Backend& backend, std::span<const int32_t> tokens, const ChunkScoring& scoring,
                    const ScoredChunk& scored);

// llama.cpp's logits file: "_logits_", n_ctx, n_vocab, n_chunk, the chunks'
// tokens, then one record per scored token, chunk by chunk.
class BaseLogitsWriter {
public:
    static Result<BaseLogitsWriter> create(const std::string& path, uint32_t n_ctx, int32_t n_vocab, int32_t n_chunk,
                                           std::span<const int32_t> tokens);
    Status append(std::span<const uint16_t> records);
    Status close();

private:
    std::string path_;
    std::shared_ptr<std::FILE> file_;
};

class BaseLogitsReader {
public:
    static Result<BaseLogitsReader> open(const std::string& path);
    uint32_t n_ctx() const { return n_ctx_; }
    int32_t n_vocab() const { return n_vocab_; }
    int32_t n_chunk() const { return n_chunk_; }
    const std::vector<int32_t>& tokens() const { return tokens_; }
    // The next chunk's records (n_ctx - 1 - n_ctx/2 of them).
    Status read_chunk(std::vector<uint16_t>& records);

private:
    std::string path_;
    std::shared_ptr<std::FILE> file_;
    uint32_t n_ctx_ = 0;
    int32_t n_vocab_ = 0, n_chunk_ = 0;
    std::vector<int32_t> tokens_;
};

}  // namespace folio
