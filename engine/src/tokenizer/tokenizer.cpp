// Tokenizer: encoding, decoding and the vocabulary accessors.
#include "folio/tokenizer.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_state.h"
#include "tokenizer/utf8.h"

namespace folio {

using namespace tokenizer_detail;

namespace {

void encode_byte_level(const TokenizerState& state, std::string_view text, std::vector<int32_t>& out) {
    std::vector<int32_t> symbols;
    for (const Piece& piece : state.pre->split(text)) {
        symbols.clear();
        for (size_t i = 0; i < piece.length; ++i) {
            // Without an unknown token Hugging Face drops a byte the vocabulary lacks; so do we.
            const int32_t id = state.byte_ids[static_cast<uint8_t>(text[piece.offset + i])];
            if (id >= 0) symbols.push_back(id);
        }
        apply_merges(symbols, state.merges);
        out.insert(out.end(), symbols.begin(), symbols.end());
    }
}

// SentencePiece-style: spaces become "▁", the whole segment is one word,
// characters outside the vocabulary fall back to <0xXX> byte tokens.
void encode_sentencepiece(const TokenizerState& state, std::string_view text, bool at_start,
                          std::vector<int32_t>& out) {
    std::string normalized;
    normalized.reserve(text.size() + 8);
    if (state.spec.add_space_prefix && at_start) normalized += kSentencePieceSpace;
    for (char c : text) {
        if (c == ' ') {
            normalized += kSentencePieceSpace;
        } else {
            normalized += c;
        }
    }
    std::vector<int32_t> symbols;
    symbols.reserve(normalized.size());
    const int32_t unk = state.spec.unk_id;
    bool last_was_unk = false;
    for (size_t pos = 0; pos < normalized.size();) {
        const size_t length = next_utf8(normalized, pos).length;
        const std::string_view character(normalized.data() + pos, length);
        pos += length;
        if (const int32_t id = state.lookup(character); id >= 0) {
            symbols.push_back(id);
            last_was_unk = false;
            continue;
        }
        bool all_bytes = true;
        for (char c : character) all_bytes = all_bytes && state.byte_ids[static_cast<uint8_t>(c)] >= 0;
        if (all_bytes) {
            for (char c : character) symbols.push_back(state.byte_ids[static_cast<uint8_t>(c)]);
            last_was_unk = false;
        } else if (unk >= 0 && !last_was_unk) {  // consecutive unknowns fuse into one
            symbols.push_back(unk);
            last_was_unk = true;
        }
    }
    if (state.piece_rank.empty()) {
        apply_merges(symbols, state.merges);
    } else {
        std::string joined;
        apply_merges(symbols, [&](int32_t left, int32_t right) -> MergeCandidate {
            const std::string& left_text = state.spec.tokens[static_cast<size_t>(left)];
            joined.assign(left_text);
            joined += state.spec.tokens[static_cast<size_t>(right)];
            const int32_t merged = state.lookup(joined);
            if (merged < 0) return {};
            // The piece's rank, then the split with the longer left part.
            const uint64_t rank = (static_cast<uint64_t>(state.piece_rank[static_cast<size_t>(merged)]) << 32) |
                                  (0xFFFFFFFFu - static_cast<uint32_t>(left_text.size()));
            return {rank, merged};
        });
    }
    out.insert(out.end(), symbols.begin(), symbols.end());
}

// The bytes one token contributes to decoded text.
void append_token_bytes(const TokenizerState& state, int32_t id, std::string& out) {
    const std::string& text = state.spec.tokens[static_cast<size_t>(id)];
    const TokenKind kind = state.spec.kinds[static_cast<size_t>(id)];
    if (kind == TokenKind::Control || kind == TokenKind::Unknown) {
        out += text;
        return;
    }
    if (state.byte_level()) {
        if (kind == TokenKind::UserDefined) {
            out += text;
        } else if (auto bytes = ByteLevelAlphabet::instance().unspell(text)) {
            out += *bytes;
        } else {
            out += text;
        }
        return;
    }
    if (kind == TokenKind::Byte && text.size() == 6) {
        out += static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16));
        return;
    }
    for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSentencePieceSpace.size(), kSentencePieceSpace) == 0) {
            out += ' ';
            pos += kSentencePieceSpace.size();
        } else {
            out += text[pos++];
        }
    }
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    const TokenizerState& state = *state_;
    std::string repaired;
    if (!is_valid_utf8(text)) {
        repaired = repair_utf8(text);
        text = repaired;
    }
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    if (add_special && state.spec.add_bos) ids.push_back(state.spec.bos_id);
    bool at_start = true;
    for (const TextSegment& segment : state.added.split(text, parse_special)) {
        if (segment.token >= 0) {
            ids.push_back(segment.token);
        } else if (state.byte_level()) {
            encode_byte_level(state, text.substr(segment.offset, segment.length), ids);
        } else {
            encode_sentencepiece(state, text.substr(segment.offset, segment.length), at_start, ids);
        }
        at_start = false;
    }
    if (add_special && state.spec.add_eos) ids.push_back(state.spec.eos_id);
    return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_control) const {
    std::string bytes;
    bool first = true;
    for (int32_t id : ids) {
        if (id < 0 || id >= vocab_size()) continue;
        if (skip_control && is_control(id)) continue;
        const size_t before = bytes.size();
        append_token_bytes(*state_, id, bytes);
        // SentencePiece's prefix space is not part of the text.
        if (first && !state_->byte_level() && state_->spec.add_space_prefix && bytes.size() > before &&
            bytes[before] == ' ') {
            bytes.erase(before, 1);
        }
        first = false;
    }
    return is_valid_utf8(bytes) ? bytes : repair_utf8(bytes);
}

std::string Tokenizer::token_bytes(int32_t id) const {
    std::string out;
    if (id >= 0 && id < vocab_size()) append_token_bytes(*state_, id, out);
    return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
    static const std::string empty;
    return id >= 0 && id < vocab_size() ? state_->spec.tokens[static_cast<size_t>(id)] : empty;
}

TokenKind Tokenizer::token_kind(int32_t id) const {
    return id >= 0 && id < vocab_size() ? state_->spec.kinds[static_cast<size_t>(id)] : TokenKind::Unused;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(state_->spec.tokens.size()); }
TokenizerModel Tokenizer::model() const { return state_->spec.model; }
int32_t Tokenizer::bos_id() const { return state_->spec.bos_id; }
int32_t Tokenizer::eos_id() const { return state_->spec.eos_id; }
int32_t Tokenizer::eot_id() const { return state_->spec.eot_id; }
bool Tokenizer::add_bos() const { return state_->spec.add_bos; }
bool Tokenizer::is_end_of_generation(int32_t id) const { return state_->end_of_generation.count(id) > 0; }
bool Tokenizer::is_control(int32_t id) const { return token_kind(id) == TokenKind::Control; }

}  // namespace folio
