// One sequence on a Backend, for the CLI verbs and tests until the engine's
// scheduler and BlockPool arrive: appends tokens to the sequence (prefill in
// chunks, or one decode token), building the flat Batch with its block
// table, slot mapping and positions from a trivial block allocator.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "folio/backend.h"
#include "folio/batch.h"
#include "folio/error.h"

namespace folio {

class SequenceRunner {
public:
    // `max_chunk`: most tokens per forward step (prefill is split into chunks).
    explicit SequenceRunner(Backend& backend, int32_t max_chunk = 512);

    // Runs `tokens` after what the sequence holds. logits gets n_vocab floats
    // per token when `all_logits`, else those of the last token only.
    // Errors when the context would overflow (nothing is appended then).
    Status append(std::span<const int32_t> tokens, std::vector<float>& logits, bool all_logits = false) {
        return append_from(tokens, all_logits ? 0 : static_cast<int32_t>(tokens.size()) - 1, logits);
    }
    // Same, with logits for tokens[first_logit_row..] only (perplexity
    // scores the second half of a chunk: the output head runs for that half).
    Status append_from(std::span<const int32_t> tokens, int32_t first_logit_row, std::vector<float>& logits);

    // Drops tokens [keep, keep + drop) from the cache without recomputing
    // the rest: the blocks go back to the free list and the later tokens'
    // keys are turned back by `drop` positions (Backend::shift_keys), as a
    // sink window slides (OverflowPolicy::SinkWindow). Both are whole
    // blocks; an error (no change) otherwise, or where the backend cannot.
    Status slide(int32_t keep, int32_t drop);
    // Forgets everything after the first n tokens (n <= length()).
    void truncate(int32_t n);
    void reset() { truncate(0); }

    int32_t length() const { return static_cast<int32_t>(tokens_.size()); }
    const std::vector<int32_t>& tokens() const { return tokens_; }
    int32_t capacity() const;  // longest sequence the backend's cache and context allow
    Backend& backend() { return backend_; }

private:
    Backend& backend_;
    int32_t max_chunk_;
    std::vector<int32_t> tokens_;
    std::vector<int32_t> block_table_;
    std::vector<int32_t> free_blocks_;  // the stand-in allocator: a stack of free block ids
    Batch batch_;
};

}  // namespace folio
