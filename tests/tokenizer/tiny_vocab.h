// Small hand-made vocabularies whose tokenizations can be worked out by hand.
#pragma once

#include <cstdio>
#include <string>

#include "folio/tokenizer_spec.h"

namespace tiny_vocab {

// Byte-level BPE over "low lower newest": every byte has its GPT-2 character,
// then a few merges in rank order.
inline folio::TokenizerSpec byte_level() {
    folio::TokenizerSpec spec;
    spec.model = folio::TokenizerModel::BytePairEncoding;
    spec.pre = "gpt2";
    // Ids 0..255: the byte alphabet in byte order (ASCII printable stand for themselves).
    unsigned extra = 256;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const unsigned cp = printable ? unsigned(b) : unsigned(extra++);
        std::string s;
        if (cp < 0x80) {
            s += char(cp);
        } else {
            s += char(0xC0 | (cp >> 6));
            s += char(0x80 | (cp & 0x3F));
        }
        spec.tokens.push_back(s);
    }
    // 256 "lo", 257 "low", 258 "Ġl", 259 "Ġlow", 260 "er", 261 "Ġlower", 262 "es", 263 "est"
    for (const char* t : {"lo", "low", "\xC4\xA0l", "\xC4\xA0low", "er", "\xC4\xA0lower", "es", "est"})
        spec.tokens.push_back(t);
    spec.merges = {"l o", "lo w", "\xC4\xA0 l", "\xC4\xA0l ow", "e r", "\xC4\xA0low er", "e s", "es t"};
    // 264 "ow" ranks last: "l o" beats it, so " low" never becomes "Ġl"+"ow".
    spec.tokens.push_back("ow");
    spec.merges.push_back("o w");
    spec.tokens.push_back("<|end|>");  // 265
    spec.tokens.push_back("12");       // 266: shows whether digits are split one by one
    spec.merges.push_back("1 2");
    spec.kinds.assign(spec.tokens.size(), folio::TokenKind::Normal);
    spec.kinds[265] = folio::TokenKind::Control;
    spec.eos_id = 265;
    return spec;
}

// SentencePiece-style: "▁" for space, scores decide merges, <0xXX> bytes.
inline folio::TokenizerSpec sentencepiece() {
    folio::TokenizerSpec spec;
    spec.model = folio::TokenizerModel::SentencePiece;
    auto add = [&](const std::string& t, float score, folio::TokenKind kind = folio::TokenKind::Normal) {
        spec.tokens.push_back(t);
        spec.scores.push_back(score);
        spec.kinds.push_back(kind);
    };
    add("<pad>", 0, folio::TokenKind::Control);  // 0
    add("<eos>", 0, folio::TokenKind::Control);  // 1
    add("<bos>", 0, folio::TokenKind::Control);  // 2
    add("<unk>", 0, folio::TokenKind::Control);  // 3
    for (int b = 0; b < 256; ++b) {              // 4..259
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        add(hex, 0, folio::TokenKind::Byte);
    }
    const std::string sp = "\xE2\x96\x81";
    add(sp, -1);                  // 260 ▁
    add("a", -2);                 // 261
    add("b", -3);                 // 262
    add("c", -4);                 // 263
    add("ab", -5);                // 264
    add("bc", -6);                // 265
    add(sp + "a", -7);            // 266 ▁a
    add("abc", -8);               // 267
    add(sp + "ab", -9);           // 268 ▁ab
    add("<start_of_turn>", 0, folio::TokenKind::Control);  // 269
    add("\n", 0, folio::TokenKind::UserDefined);           // 270
    spec.bos_id = 2;
    spec.eos_id = 1;
    spec.unk_id = 3;
    spec.add_bos = true;
    return spec;
}

}  // namespace tiny_vocab
