// Text <-> token ids for a model, built from its TokenizerSpec. Two model
// kinds: GPT-2 style byte-level BPE (SmolLM2, Llama 3, Qwen 2) and
// SentencePiece-style BPE with byte fallback (Gemma). Hugging Face
// `tokenizers` is the reference for what the ids must be; tests compare
// against goldens made with it. StreamingDecoder turns ids into text as they
// are generated without ever emitting half a UTF-8 character.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "folio/error.h"
#include "folio/tokenizer_spec.h"

namespace folio {

namespace tokenizer_detail {
struct TokenizerState;
}

class Tokenizer {
public:
    static Result<Tokenizer> create(const TokenizerSpec& spec);

    // `add_special`: BOS/EOS as the spec says (add_bos / add_eos).
    // `parse_special`: text spelling a control token ("<|im_start|>") becomes
    // that token; when false it is tokenized as plain text. User-defined
    // (added, non-control) tokens are always matched, as Hugging Face does.
    // Invalid UTF-8 in `text` is replaced by U+FFFD before tokenizing.
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special = true) const;

    // Concatenated text of the tokens; invalid UTF-8 that byte tokens spell
    // becomes U+FFFD. Control tokens are written as their text unless
    // `skip_control`.
    std::string decode(std::span<const int32_t> ids, bool skip_control = false) const;

    // The vocabulary entry as stored ("Ġworld", "▁world", "<0x0A>").
    const std::string& token_text(int32_t id) const;
    // The bytes a token stands for in decoded text (may be part of a UTF-8
    // character); empty for ids out of range.
    std::string token_bytes(int32_t id) const;
    TokenKind token_kind(int32_t id) const;

    int32_t vocab_size() const;
    TokenizerModel model() const;
    int32_t bos_id() const;
    int32_t eos_id() const;
    int32_t eot_id() const;
    bool add_bos() const;
    // EOS, EOT and the other control tokens that end a turn (<|im_end|>, <end_of_turn>, ...).
    bool is_end_of_generation(int32_t id) const;
    bool is_control(int32_t id) const;

private:
    explicit Tokenizer(std::shared_ptr<const tokenizer_detail::TokenizerState> state)
        : state_(std::move(state)) {}
    std::shared_ptr<const tokenizer_detail::TokenizerState> state_;  // immutable, shared by copies
};

// Incremental detokenizer for generated text. Holds back the bytes of an
// incomplete trailing UTF-8 character until it is complete; bytes that can
// never become a valid character are written as U+FFFD at once. Every string
// it returns is valid UTF-8, and the concatenation of all push() results and
// flush() equals tokenizer.decode(all ids). The tokenizer must outlive it.
class StreamingDecoder {
public:
    explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_control = false)
        : tokenizer_(&tokenizer), skip_control_(skip_control) {}

    std::string push(int32_t id);
    // The held-back bytes (as U+FFFD), and a reset for the next sequence.
    std::string flush();

private:
    const Tokenizer* tokenizer_;
    bool skip_control_ = false;
    bool first_ = true;
    std::string pending_;
};

}  // namespace folio
