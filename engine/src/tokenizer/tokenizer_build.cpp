// Tokenizer::create: validates a TokenizerSpec and indexes it.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "folio/tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_state.h"
#include "tokenizer/utf8.h"

namespace folio {

using namespace tokenizer_detail;

namespace {

bool is_matched_as_added(TokenKind kind) {
    return kind == TokenKind::Control || kind == TokenKind::UserDefined || kind == TokenKind::Unknown;
}

// GGUF files of SentencePiece models store pieces made only of spaces with
// real spaces ("  "), where the model (after its " " -> "▁" normalizer)
// looks up "▁▁". Hugging Face's GGUF converter respells them the same way.
bool respell_space_piece(std::string& token) {
    if (token.find(' ') == std::string::npos) return false;
    for (char c : token) {
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') return false;
    }
    std::string respelled;
    for (size_t i = 0; i < token.size(); ++i) respelled += kSentencePieceSpace;
    token = std::move(respelled);
    return true;
}

// SentencePiece vocabularies carry scores, not merges. Two symbols merge
// when their texts join into a piece; pieces rank as Hugging Face's
// converters order the merges they derive: control and user-defined pieces
// first (by id; SentencePiece keeps them whole), then by score, best first,
// then by id. (Within one piece the longer left part goes first; see
// encode_sentencepiece.)
void rank_sentencepiece_pieces(TokenizerState& state) {
    const TokenizerSpec& spec = state.spec;
    std::vector<int32_t> order(spec.tokens.size());
    std::iota(order.begin(), order.end(), 0);
    const auto atomic = [&](int32_t id) { return is_matched_as_added(spec.kinds[static_cast<size_t>(id)]); };
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const bool atomic_a = atomic(a), atomic_b = atomic(b);
        if (atomic_a != atomic_b) return atomic_a;
        if (atomic_a) return a < b;
        const float score_a = spec.scores[static_cast<size_t>(a)], score_b = spec.scores[static_cast<size_t>(b)];
        if (score_a != score_b) return score_a > score_b;
        return a < b;
    });
    state.piece_rank.resize(order.size());
    for (size_t rank = 0; rank < order.size(); ++rank) {
        state.piece_rank[static_cast<size_t>(order[rank])] = static_cast<uint32_t>(rank);
    }
}

Status add_listed_merges(TokenizerState& state) {
    const TokenizerSpec& spec = state.spec;
    state.merges.reserve(spec.merges.size());
    std::string joined;
    for (size_t i = 0; i < spec.merges.size(); ++i) {
        const std::string& merge = spec.merges[i];
        const size_t space = merge.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == merge.size()) {
            return make_error("tokenizer merge #" + std::to_string(i) + " '" + merge +
                              "' is not two tokens separated by a space");
        }
        const std::string_view left(merge.data(), space), right(merge.data() + space + 1, merge.size() - space - 1);
        joined.assign(left);
        joined += right;
        const int32_t left_id = state.lookup(left), right_id = state.lookup(right), merged = state.lookup(joined);
        // Hugging Face refuses such files; llama.cpp skips the merge. A merge
        // that can never fire changes no output, so skip it.
        if (left_id < 0 || right_id < 0 || merged < 0) continue;
        state.merges.add(left_id, right_id, merged, static_cast<uint32_t>(i));
    }
    return {};
}

int32_t guess_end_of_turn(const TokenizerState& state) {
    for (const char* text : {"<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>", "<|endoftext|>"}) {
        const int32_t id = state.lookup(text);
        if (id >= 0 && state.spec.kinds[static_cast<size_t>(id)] == TokenKind::Control) return id;
    }
    return -1;
}

}  // namespace

Result<Tokenizer> Tokenizer::create(const TokenizerSpec& spec) {
    const size_t n = spec.tokens.size();
    if (n == 0) return make_error("tokenizer has an empty vocabulary");
    if (n > static_cast<size_t>(INT32_MAX)) return make_error("tokenizer vocabulary is too large");
    if (!spec.kinds.empty() && spec.kinds.size() != n) {
        return make_error("tokenizer has " + std::to_string(n) + " tokens but " + std::to_string(spec.kinds.size()) +
                          " token types");
    }
    const bool sentencepiece = spec.model == TokenizerModel::SentencePiece;
    if (sentencepiece && spec.merges.empty() && spec.scores.size() != n) {
        return make_error("SentencePiece tokenizer has " + std::to_string(n) + " tokens but " +
                          std::to_string(spec.scores.size()) + " scores (and no merges)");
    }
    if (!sentencepiece && spec.merges.empty()) return make_error("byte-level BPE tokenizer has no merges");
    for (const auto& [name, id] : {std::pair{"BOS", spec.bos_id}, std::pair{"EOS", spec.eos_id},
                                   std::pair{"end-of-turn", spec.eot_id}, std::pair{"unknown", spec.unk_id},
                                   std::pair{"padding", spec.pad_id}}) {
        if (id < -1 || id >= static_cast<int64_t>(n)) {
            return make_error(std::string("tokenizer ") + name + " token id " + std::to_string(id) +
                              " is outside the vocabulary of " + std::to_string(n));
        }
    }
    if (spec.add_bos && spec.bos_id < 0) return make_error("tokenizer adds BOS but has no BOS token");
    if (spec.add_eos && spec.eos_id < 0) return make_error("tokenizer adds EOS but has no EOS token");

    auto state = std::make_shared<TokenizerState>();
    state->spec = spec;
    TokenizerSpec& own = state->spec;
    if (own.kinds.empty()) own.kinds.assign(n, TokenKind::Normal);
    std::vector<bool> respelled(n, false);
    if (sentencepiece) {
        for (size_t id = 0; id < n; ++id) respelled[id] = respell_space_piece(own.tokens[id]);
    }
    state->vocab.build(own.tokens);

    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::instance();
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        state->byte_ids[static_cast<size_t>(b)] =
            sentencepiece ? state->lookup(hex) : state->lookup(alphabet.spell(static_cast<uint8_t>(b)));
    }

    if (!own.merges.empty()) {
        if (Status status = add_listed_merges(*state); !status) return status.error();
    } else {
        rank_sentencepiece_pieces(*state);
    }

    for (size_t id = 0; id < n; ++id) {
        // A respelled piece is reached through the normalizer, not by its raw text.
        if (is_matched_as_added(own.kinds[id]) && !respelled[id]) {
            state->added.add(spec.tokens[id], static_cast<int32_t>(id), own.kinds[id] != TokenKind::UserDefined);
        }
    }

    if (!sentencepiece) {
        std::vector<std::string> regexes = own.pre_regexes;
        if (regexes.empty()) {
            auto named = pre_tokenizer_regexes(own.pre);
            if (!named) return named.error();
            regexes = std::move(*named);
        }
        auto pre = PreTokenizer::create(regexes);
        if (!pre) return pre.error();
        state->pre.emplace(std::move(*pre));
    }

    if (own.eot_id < 0) own.eot_id = guess_end_of_turn(*state);
    for (int32_t id : {own.eos_id, own.eot_id}) {
        if (id >= 0) state->end_of_generation.insert(id);
    }
    for (const char* text : {"<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "<|eom_id|>"}) {
        const int32_t id = state->lookup(text);
        if (id >= 0 && own.kinds[static_cast<size_t>(id)] == TokenKind::Control) state->end_of_generation.insert(id);
    }
    return Tokenizer(std::move(state));
}

}  // namespace folio
