// What a built Tokenizer holds: the spec with its vocabulary indexed, the
// merge table, the added-token matcher and the pre-tokenizer. Immutable once
// built, so copies of a Tokenizer share one.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "folio/tokenizer_spec.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/merge_table.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab_index.h"

namespace folio::tokenizer_detail {

inline constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";  // U+2581 "▁"

struct TokenizerState {
    TokenizerSpec spec;  // tokens as the model looks them up (see respell in tokenizer_build.cpp)
    VocabIndex vocab;                      // over spec.tokens
    MergeTable merges;                     // listed merges (byte-level BPE, tokenizer.json)
    std::vector<uint32_t> piece_rank;      // SentencePiece from scores: merge priority of each piece
    AddedTokenMatcher added;
    std::optional<PreTokenizer> pre;       // byte-level BPE only
    std::array<int32_t, 256> byte_ids{};   // byte-level: the token of each byte's character;
                                           // SentencePiece: the <0xXX> fallback token, -1 if none
    std::unordered_set<int32_t> end_of_generation;

    bool byte_level() const { return spec.model == TokenizerModel::BytePairEncoding; }
    int32_t lookup(std::string_view piece) const { return vocab.find(piece); }
};

}  // namespace folio::tokenizer_detail
