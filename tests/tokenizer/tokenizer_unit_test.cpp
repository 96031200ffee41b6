// Byte-level BPE and SentencePiece on tiny vocabularies whose answers were
// worked out by hand (see tiny_vocab.h), special-token splitting and
// invalid UTF-8.
#include <folio_test.h>

#include <algorithm>
#include <string>
#include <vector>

#include "folio/tokenizer.h"
#include "tiny_vocab.h"

namespace {

using Ids = std::vector<int32_t>;

folio::Tokenizer make(const folio::TokenizerSpec& spec) {
    auto tok = folio::Tokenizer::create(spec);
    if (!tok) std::fprintf(stderr, "Tokenizer::create: %s\n", tok.error().message.c_str());
    return std::move(tok.value());
}

const std::string kSpace = "\xE2\x96\x81";

}  // namespace

class TokenizerUnitTest : public QObject {
    Q_OBJECT
private slots:
    void byteLevelMergesFollowRankNotPosition() {
        const folio::Tokenizer tok = make(tiny_vocab::byte_level());
        // "low": l+o (rank 0) then lo+w. " lower": l+o wins over Ġ+l, so "Ġl ow" never fires.
        QCOMPARE(tok.encode("low lower newest", false), (Ids{257, 32, 257, 260, 32, 110, 101, 119, 263}));
        QCOMPARE(tok.encode(" l", false), (Ids{258}));
        QCOMPARE(tok.encode(" ow", false), (Ids{32, 264}));
        QCOMPARE(tok.decode(Ids{257, 32, 257, 260, 32, 110, 101, 119, 263}), std::string("low lower newest"));
    }

    void byteLevelPreTokenizerIsChosenBySpec() {
        folio::TokenizerSpec spec = tiny_vocab::byte_level();
        // GPT-2 keeps " 123" one piece, so "1 2" merges; smollm splits every digit first.
        QCOMPARE(make(spec).encode("x 123", false), (Ids{120, 32, 266, 51}));
        spec.pre = "smollm";
        QCOMPARE(make(spec).encode("x 123", false), (Ids{120, 32, 49, 50, 51}));
        spec.pre = "";
        spec.pre_regexes = {R"(\p{N})", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"};
        QCOMPARE(make(spec).encode("x 123", false), (Ids{120, 32, 49, 50, 51}));
        spec.pre_regexes.clear();
        spec.pre = "no-such-pre";
        auto bad = folio::Tokenizer::create(spec);
        QVERIFY(!bad);
        QVERIFY2(bad.error().message.find("no-such-pre") != std::string::npos, bad.error().message.c_str());
    }

    void namedPreTokenizersSplitDigitsTheirWay() {
        folio::TokenizerSpec spec = tiny_vocab::byte_level();
        // "1 2" merges within a piece only: GPT-2 keeps the run whole, Llama 3 cuts
        // it in threes, Qwen 2 and smollm into single digits.
        const std::pair<const char*, Ids> expected[] = {
            {"gpt2", {266, 266, 266}},
            {"llama-bpe", {266, 49, 50, 266}},
            {"qwen2", {49, 50, 49, 50, 49, 50}},
            {"smollm", {49, 50, 49, 50, 49, 50}},
            {"default", {266, 49, 50, 266}},
        };
        for (const auto& [pre, ids] : expected) {
            spec.pre = pre;
            const folio::Tokenizer tok = make(spec);
            QCOMPARE(tok.encode("121212", false), ids);
            const std::string mixed = "I'M here, it's 2024!\n\t  x\xC3\xA9\xE6\x97\xA5 ";
            QCOMPARE(tok.decode(tok.encode(mixed, false)), mixed);
        }
    }

    void randomBytesNeverBreakEncoding() {
        const folio::Tokenizer bpe = make(tiny_vocab::byte_level());
        const folio::Tokenizer spm = make(tiny_vocab::sentencepiece());
        uint32_t state = 7;
        const auto next = [&] { return state = state * 1664525u + 1013904223u, state >> 24; };
        for (int round = 0; round < 500; ++round) {
            std::string text;
            const int length = static_cast<int>(next() % 40);
            for (int i = 0; i < length; ++i) text += static_cast<char>(next());
            for (const folio::Tokenizer* tok : {&bpe, &spm}) {
                const Ids ids = tok->encode(text, true);
                for (int32_t id : ids) QVERIFY(id >= 0 && id < tok->vocab_size());
                // Whatever came in, what comes out is the text with bad bytes as U+FFFD.
                const std::string decoded = tok->decode(ids, true);
                QCOMPARE(tok->decode(tok->encode(decoded, false), true), decoded);
            }
        }
    }

    void byteLevelSpecialTokensAreSplitOut() {
        const folio::Tokenizer tok = make(tiny_vocab::byte_level());
        QCOMPARE(tok.encode("low<|end|>low", false), (Ids{257, 265, 257}));
        // Without parse_special the text is ordinary bytes.
        const Ids plain = tok.encode("<|end|>", false, false);
        QCOMPARE(plain, (Ids{60, 124, 101, 110, 100, 124, 62}));
        // A partial special is plain text.
        QCOMPARE(tok.encode("<|end", false), (Ids{60, 124, 101, 110, 100}));
        QCOMPARE(tok.decode(Ids{257, 265}), std::string("low<|end|>"));
        QCOMPARE(tok.decode(Ids{257, 265}, true), std::string("low"));
        QVERIFY(tok.is_end_of_generation(265));
        QVERIFY(!tok.is_end_of_generation(257));
    }

    void invalidUtf8IsReplacedNotFatal() {
        const folio::Tokenizer tok = make(tiny_vocab::byte_level());
        const Ids replaced = tok.encode("a\xEF\xBF\xBD" "b", false);
        QCOMPARE(tok.encode("a\xFF" "b", false), replaced);
        QCOMPARE(tok.encode("a\xC0\x80" "b", false).size(), tok.encode("a\xEF\xBF\xBD\xEF\xBF\xBD" "b", false).size());
        QCOMPARE(tok.decode(tok.encode("\xE2\x96", false)), std::string("\xEF\xBF\xBD"));
        // A lone byte token decodes to U+FFFD, never to a broken string.
        QCOMPARE(tok.decode(Ids{0xE2}), std::string("\xEF\xBF\xBD"));  // id 0xE2 is the byte 0xE2
        const folio::Tokenizer spm = make(tiny_vocab::sentencepiece());
        QCOMPARE(spm.encode("\xFF", false), (Ids{4 + 0xEF, 4 + 0xBF, 4 + 0xBD}));  // U+FFFD as three byte tokens
        QCOMPARE(spm.decode(Ids{4 + 0xE2}), std::string("\xEF\xBF\xBD"));
    }

    void sentencePieceMergesByScore() {
        const folio::Tokenizer tok = make(tiny_vocab::sentencepiece());
        // "ab c" -> a b ▁ c: ab (best score) forms, nothing joins ▁ with c.
        QCOMPARE(tok.encode("ab c", true), (Ids{2, 264, 260, 263}));
        // " abc": ab first, then ab+c beats ▁+ab.
        QCOMPARE(tok.encode(" abc", false), (Ids{260, 267}));
        QCOMPARE(tok.encode(" ab", false), (Ids{268}));
        QCOMPARE(tok.encode("bc", false), (Ids{265}));
        QCOMPARE(tok.decode(Ids{2, 264, 260, 263}), std::string("<bos>ab c"));
        QCOMPARE(tok.decode(Ids{2, 264, 260, 263}, true), std::string("ab c"));
        QCOMPARE(tok.token_text(266), kSpace + "a");
        QCOMPARE(tok.bos_id(), 2);
        QVERIFY(tok.add_bos());
    }

    void sentencePieceByteFallback() {
        const folio::Tokenizer tok = make(tiny_vocab::sentencepiece());
        // é is not in the vocabulary: its bytes C3 A9 as <0xC3> <0xA9>.
        QCOMPARE(tok.encode("a\xC3\xA9", false), (Ids{261, 4 + 0xC3, 4 + 0xA9}));
        QCOMPARE(tok.decode(Ids{261, 4 + 0xC3, 4 + 0xA9}), std::string("a\xC3\xA9"));
        QCOMPARE(tok.token_bytes(4 + 0x41), std::string("A"));
    }

    void sentencePieceSpecialsAndUserDefined() {
        const folio::Tokenizer tok = make(tiny_vocab::sentencepiece());
        QCOMPARE(tok.encode("<start_of_turn>a\nb", false), (Ids{269, 261, 270, 262}));
        const Ids plain = tok.encode("<start_of_turn>a\nb", false, false);
        // The control token is text now; the user-defined "\n" is still matched.
        QVERIFY(std::find(plain.begin(), plain.end(), 269) == plain.end());
        QVERIFY(std::find(plain.begin(), plain.end(), 270) != plain.end());
        QCOMPARE(tok.decode(plain), std::string("<start_of_turn>a\nb"));
    }

    void sentencePieceSpacePrefix() {
        folio::TokenizerSpec spec = tiny_vocab::sentencepiece();
        spec.add_space_prefix = true;
        const folio::Tokenizer tok = make(spec);
        QCOMPARE(tok.encode("abc", false), (Ids{260, 267}));
        QCOMPARE(tok.decode(Ids{260, 267}), std::string("abc"));  // the prefix is not text
    }

    void badSpecsAreErrors() {
        folio::TokenizerSpec spec = tiny_vocab::sentencepiece();
        spec.scores.pop_back();
        QVERIFY(!folio::Tokenizer::create(spec));
        spec = tiny_vocab::sentencepiece();
        spec.bos_id = 100000;
        auto bad = folio::Tokenizer::create(spec);
        QVERIFY(!bad);
        QVERIFY2(bad.error().message.find("BOS") != std::string::npos, bad.error().message.c_str());
        QVERIFY(!folio::Tokenizer::create(folio::TokenizerSpec{}));
        folio::TokenizerSpec no_merges = tiny_vocab::byte_level();
        no_merges.merges.clear();
        QVERIFY(!folio::Tokenizer::create(no_merges));
        // Out-of-range ids decode to nothing rather than crash.
        QCOMPARE(make(tiny_vocab::byte_level()).decode(Ids{-5, 1 << 30}), std::string());
    }
};

FOLIO_TEST_MAIN(TokenizerUnitTest)
#include "tokenizer_unit_test.moc"
