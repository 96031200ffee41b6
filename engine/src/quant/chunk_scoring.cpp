// score_chunks(): llama-perplexity's chunking (quant_quality.h).
#include "folio/generate.h"
#include "folio/quant_quality.h"

namespace folio {

Status score_chunks(Backend& backend, std::span<const int32_t> tokens, const ChunkScoring& scoring,
                    const ScoredChunk& scored) {
    const int32_t n_ctx = scoring.n_ctx;
    if (n_ctx < 4) return make_error("the context of the chunks (" + std::to_string(n_ctx) + ") is too small");
    if (uint32_t(n_ctx) > backend.max_context())
        return make_error("chunks of " + std::to_string(n_ctx) + " tokens do not fit the backend's context of " +
                          std::to_string(backend.max_context()));
    int64_t n_chunks = int64_t(tokens.size()) / n_ctx;
    if (scoring.n_chunks >= 0) n_chunks = std::min(n_chunks, scoring.n_chunks);
    if (n_chunks == 0)
        return make_error("the text is " + std::to_string(tokens.size()) + " tokens; scoring needs at least one chunk of " +
                          std::to_string(n_ctx));
    SequenceRunner seq(backend, scoring.batch > 0 ? scoring.batch : n_ctx);
    const int32_t first = n_ctx / 2;
    std::vector<float> logits;
    std::vector<int32_t> targets;
    const size_t n_vocab = size_t(backend.n_vocab());
    for (int64_t c = 0; c < n_chunks; ++c) {
        if (scoring.cancel && scoring.cancel->load(std::memory_order_relaxed)) return make_error("cancelled");
        std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (scoring.bos >= 0) chunk[0] = scoring.bos;
        seq.reset();
        if (Status s = seq.append_from(chunk, first, logits); !s) return s;
        // Rows first .. n_ctx - 2 predict tokens first + 1 .. n_ctx - 1 (the last row has no target).
        const size_t n_rows = size_t(n_ctx - 1 - first);
        targets.assign(tokens.begin() + c * n_ctx + first + 1, tokens.begin() + (c + 1) * n_ctx);
        if (Status s = scored(c, std::span<const float>(logits.data(), n_rows * n_vocab), targets); !s) return s;
    }
    return {};
}

}  // namespace folio
