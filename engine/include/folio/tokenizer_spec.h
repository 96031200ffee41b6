// What a tokenizer is made of, as read from a GGUF file (tokenizer.ggml.*) or
// a Hugging Face tokenizer.json: the vocabulary, merges or scores, special
// ids and the pre-tokenizer. The Tokenizer is built from this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "folio/error.h"

namespace folio {

enum class TokenizerModel {
    BytePairEncoding,  // GPT-2 style byte-level BPE (tokenizer.ggml.model = "gpt2")
    SentencePiece,     // scores + byte fallback (tokenizer.ggml.model = "llama"), e.g. Gemma 3
};

// GGUF's tokenizer.ggml.token_type values.
enum class TokenKind : int32_t {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

struct TokenizerSpec {
    TokenizerModel model = TokenizerModel::BytePairEncoding;
    // Pre-tokenizer name as GGUF spells it (tokenizer.ggml.pre: "smollm", "gpt2",
    // "llama-bpe", "qwen2", "default"); for tokenizer.json the split regexes below.
    std::string pre;
    std::vector<std::string> pre_regexes;  // applied in order; empty = resolve from `pre`

    std::vector<std::string> tokens;
    std::vector<float> scores;             // SentencePiece only
    std::vector<TokenKind> kinds;          // one per token
    std::vector<std::string> merges;       // BPE only, "left right", rank = index

    int32_t bos_id = -1;
    int32_t eos_id = -1;
    int32_t eot_id = -1;                   // end of turn (e.g. <end_of_turn>, <|im_end|>), -1 if none
    int32_t unk_id = -1;
    int32_t pad_id = -1;
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;         // SentencePiece: prepend "▁" to the text
};

// Reads a Hugging Face tokenizer.json, and tokenizer_config.json when the path
// is not empty (bos/eos, add_bos_token), into a TokenizerSpec.
// Implemented in engine/src/tokenizer/.
Result<TokenizerSpec> tokenizer_spec_from_hf_files(const std::string& tokenizer_json_path,
                                                   const std::string& tokenizer_config_path);

}  // namespace folio
