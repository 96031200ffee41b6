// StreamingDecoder: characters split over byte tokens come out whole, every
// chunk is valid UTF-8, and the chunks add up to decode() of all ids.
#include <folio_test.h>

#include <string>
#include <vector>

#include "folio/tokenizer.h"
#include "tiny_vocab.h"

namespace {

using Ids = std::vector<int32_t>;

bool valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        }
        i += n;
    }
    return true;
}

// Pushes every id; returns the chunks, the flush last.
std::vector<std::string> stream(const folio::Tokenizer& tok, const Ids& ids) {
    folio::StreamingDecoder decoder(tok);
    std::vector<std::string> chunks;
    for (int32_t id : ids) chunks.push_back(decoder.push(id));
    chunks.push_back(decoder.flush());
    return chunks;
}

std::string joined(const std::vector<std::string>& chunks) {
    std::string out;
    for (const auto& c : chunks) out += c;
    return out;
}

int32_t spm_byte(unsigned b) { return static_cast<int32_t>(4 + b); }

}  // namespace

class TokenizerStreamTest : public QObject {
    Q_OBJECT
private slots:
    void emojiOverByteFallbackTokensComesOutWhole() {
        const auto tok = folio::Tokenizer::create(tiny_vocab::sentencepiece()).value();
        // 🤖 = F0 9F A4 96, then "a".
        const Ids ids{spm_byte(0xF0), spm_byte(0x9F), spm_byte(0xA4), spm_byte(0x96), 261};
        const auto chunks = stream(tok, ids);
        QCOMPARE(chunks[0], std::string());
        QCOMPARE(chunks[1], std::string());
        QCOMPARE(chunks[2], std::string());
        QCOMPARE(chunks[3], std::string("\xF0\x9F\xA4\x96"));
        QCOMPARE(chunks[4], std::string("a"));
        QCOMPARE(joined(chunks), tok.decode(ids));
    }

    void cjkOverByteLevelTokensComesOutWhole() {
        const auto tok = folio::Tokenizer::create(tiny_vocab::byte_level()).value();
        // 日本 = E6 97 A5 E6 9C AC; in the tiny vocabulary id == byte.
        const Ids ids{0xE6, 0x97, 0xA5, 0xE6, 0x9C, 0xAC};
        const auto chunks = stream(tok, ids);
        QCOMPARE(chunks[2], std::string("\xE6\x97\xA5"));
        QCOMPARE(chunks[5], std::string("\xE6\x9C\xAC"));
        QCOMPARE(joined(chunks), std::string("\xE6\x97\xA5\xE6\x9C\xAC"));
        QCOMPARE(joined(chunks), tok.decode(ids));
    }

    void invalidBytesBecomeReplacementCharacters() {
        const auto tok = folio::Tokenizer::create(tiny_vocab::sentencepiece()).value();
        folio::StreamingDecoder decoder(tok);
        // FF can never start a character: replaced at once.
        QCOMPARE(decoder.push(spm_byte(0xFF)), std::string("\xEF\xBF\xBD"));
        // E2 may start one; "a" proves it will not.
        QCOMPARE(decoder.push(spm_byte(0xE2)), std::string());
        QCOMPARE(decoder.push(261), std::string("\xEF\xBF\xBD" "a"));
        // A truncated character at the end is one U+FFFD at flush.
        QCOMPARE(decoder.push(spm_byte(0xF0)), std::string());
        QCOMPARE(decoder.push(spm_byte(0x9F)), std::string());
        QCOMPARE(decoder.flush(), std::string("\xEF\xBF\xBD"));
        QCOMPARE(decoder.flush(), std::string());
    }

    void chunksAlwaysAddUpToDecode() {
        // A deterministic jumble of byte tokens, pieces and controls.
        const auto spm = folio::Tokenizer::create(tiny_vocab::sentencepiece()).value();
        const auto bpe = folio::Tokenizer::create(tiny_vocab::byte_level()).value();
        uint32_t state = 12345;
        const auto next = [&] { return state = state * 1103515245u + 12345u, (state >> 8) & 0xFFFF; };
        for (int round = 0; round < 300; ++round) {
            Ids spm_ids, bpe_ids;
            const int length = 1 + static_cast<int>(next() % 12);
            for (int i = 0; i < length; ++i) {
                spm_ids.push_back(static_cast<int32_t>(next() % spm.vocab_size()));
                bpe_ids.push_back(static_cast<int32_t>(next() % bpe.vocab_size()));
            }
            for (const auto& [tok, ids] : {std::pair{&spm, &spm_ids}, std::pair{&bpe, &bpe_ids}}) {
                const auto chunks = stream(*tok, *ids);
                for (const auto& c : chunks) QVERIFY2(valid_utf8(c), "a chunk is not valid UTF-8");
                QCOMPARE(joined(chunks), tok->decode(*ids));
            }
        }
    }

    void controlTokensCanBeSkipped() {
        const auto tok = folio::Tokenizer::create(tiny_vocab::sentencepiece()).value();
        folio::StreamingDecoder shown(tok), hidden(tok, true);
        QCOMPARE(shown.push(2), std::string("<bos>"));
        QCOMPARE(hidden.push(2), std::string());
        QCOMPARE(hidden.push(264), std::string("ab"));
    }
};

FOLIO_TEST_MAIN(TokenizerStreamTest)
#include "tokenizer_stream_test.moc"
