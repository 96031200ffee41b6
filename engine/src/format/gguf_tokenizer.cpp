// TokenizerSpec from a GGUF file's tokenizer.ggml.* keys.
#include <algorithm>

#include "format/gguf_model.h"

namespace folio {

namespace {

// Ids of the end-of-turn marker of chat formats whose GGUF files predate
// tokenizer.ggml.eot_token_id.
constexpr std::string_view kEndOfTurnTokens[] = {"<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>"};

Status read_special_id(const GgufFile& file, const std::string& key, size_t n_tokens, int32_t& out) {
    if (!file.has(key)) return {};
    auto id = file.get_u32(key);
    if (!id) return id.error();
    if (*id >= n_tokens)
        return make_error("gguf: " + file.name() + ": key '" + key + "' is token " + std::to_string(*id) +
                          " but the vocabulary has only " + std::to_string(n_tokens) + " tokens");
    out = int32_t(*id);
    return {};
}

}  // namespace

Result<TokenizerSpec> tokenizer_spec_from_gguf(const GgufFile& file) {
    const std::string where = "gguf: " + file.name() + ": ";
    TokenizerSpec spec;
    auto model = file.get_string("tokenizer.ggml.model");
    if (!model) return model.error();
    if (*model == "gpt2") {
        spec.model = TokenizerModel::BytePairEncoding;
    } else if (*model == "llama") {
        spec.model = TokenizerModel::SentencePiece;
    } else {
        return make_error(where + "tokenizer model '" + *model +
                          "' is not supported (only 'gpt2' byte-level BPE and 'llama' SentencePiece)");
    }
    const bool sentencepiece = spec.model == TokenizerModel::SentencePiece;

    auto pre = file.get_string_or("tokenizer.ggml.pre", "default");
    if (!pre) return pre.error();
    spec.pre = std::move(*pre);

    auto tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) return tokens.error();
    spec.tokens = std::move(*tokens);
    const size_t n = spec.tokens.size();
    if (n == 0 || n > size_t(INT32_MAX)) return make_error(where + "tokenizer.ggml.tokens holds " + std::to_string(n) + " tokens");

    if (file.has("tokenizer.ggml.scores")) {
        auto scores = file.get_f32_array("tokenizer.ggml.scores");
        if (!scores) return scores.error();
        if (scores->size() != n)
            return make_error(where + "tokenizer.ggml.scores has " + std::to_string(scores->size()) + " entries for " +
                              std::to_string(n) + " tokens");
        spec.scores = std::move(*scores);
    } else if (sentencepiece) {
        return make_error(where + "key 'tokenizer.ggml.scores' is missing (a SentencePiece tokenizer needs it)");
    }

    if (file.has("tokenizer.ggml.token_type")) {
        auto types = file.get_i32_array("tokenizer.ggml.token_type");
        if (!types) return types.error();
        if (types->size() != n)
            return make_error(where + "tokenizer.ggml.token_type has " + std::to_string(types->size()) + " entries for " +
                              std::to_string(n) + " tokens");
        spec.kinds.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            const int32_t t = (*types)[i];
            if (t < 0 || t > int32_t(TokenKind::Byte))
                return make_error(where + "tokenizer.ggml.token_type[" + std::to_string(i) + "] is " + std::to_string(t) +
                                  ", not a token type (1..6)");
            spec.kinds.push_back(t == 0 ? TokenKind::Normal : static_cast<TokenKind>(t));  // 0: "undefined"
        }
    } else {
        spec.kinds.assign(n, TokenKind::Normal);
    }

    if (file.has("tokenizer.ggml.merges")) {
        auto merges = file.get_string_array("tokenizer.ggml.merges");
        if (!merges) return merges.error();
        spec.merges = std::move(*merges);
    } else if (!sentencepiece) {
        return make_error(where + "key 'tokenizer.ggml.merges' is missing (a BPE tokenizer needs it)");
    }

    for (auto [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", &spec.bos_id},
                              std::pair{"tokenizer.ggml.eos_token_id", &spec.eos_id},
                              std::pair{"tokenizer.ggml.unknown_token_id", &spec.unk_id},
                              std::pair{"tokenizer.ggml.padding_token_id", &spec.pad_id},
                              std::pair{"tokenizer.ggml.eot_token_id", &spec.eot_id}}) {
        if (auto ok = read_special_id(file, key, n, *field); !ok) return ok.error();
    }
    if (spec.eot_id < 0) {
        for (std::string_view marker : kEndOfTurnTokens) {
            auto it = std::find(spec.tokens.begin(), spec.tokens.end(), marker);
            if (it != spec.tokens.end()) {
                spec.eot_id = int32_t(it - spec.tokens.begin());
                break;
            }
        }
    }

    // llama.cpp's defaults when the keys are absent: SentencePiece adds BOS and a space prefix.
    auto add_bos = file.get_bool_or("tokenizer.ggml.add_bos_token", sentencepiece);
    auto add_eos = file.get_bool_or("tokenizer.ggml.add_eos_token", false);
    auto add_space = file.get_bool_or("tokenizer.ggml.add_space_prefix", sentencepiece);
    for (const Result<bool>* r : {&add_bos, &add_eos, &add_space})
        if (!*r) return r->error();
    spec.add_bos = *add_bos;
    spec.add_eos = *add_eos;
    spec.add_space_prefix = *add_space;
    return spec;
}

}  // namespace folio
