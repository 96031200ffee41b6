#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace folio::tokenizer_detail {

ByteLevelAlphabet::ByteLevelAlphabet() {
    byte_of_code_point_.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the rest take code points
    // 256, 257, ... in byte order (bytes_to_unicode() in GPT-2's encoder.py).
    uint32_t next_extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const uint32_t cp = printable ? b : next_extra++;
        append_utf8(spelling_[b], cp);
        byte_of_code_point_[cp] = static_cast<int16_t>(b);
    }
}

const ByteLevelAlphabet& ByteLevelAlphabet::instance() {
    static const ByteLevelAlphabet alphabet;
    return alphabet;
}

std::string ByteLevelAlphabet::spell_all(std::string_view text) const {
    std::string out;
    out.reserve(text.size() * 2);
    for (char c : text) out += spelling_[static_cast<uint8_t>(c)];
    return out;
}

std::optional<std::string> ByteLevelAlphabet::unspell(std::string_view token) const {
    std::string out;
    out.reserve(token.size());
    for (size_t pos = 0; pos < token.size();) {
        const auto lead = static_cast<unsigned char>(token[pos]);
        uint32_t cp = 0;
        if (lead < 0x80) {
            cp = lead, pos += 1;
        } else if ((lead & 0xE0) == 0xC0 && pos + 1 < token.size()) {
            cp = ((lead & 0x1Fu) << 6) | (static_cast<unsigned char>(token[pos + 1]) & 0x3Fu), pos += 2;
        } else {
            return std::nullopt;  // every alphabet character is below U+0800
        }
        if (cp >= byte_of_code_point_.size() || byte_of_code_point_[cp] < 0) return std::nullopt;
        out += static_cast<char>(byte_of_code_point_[cp]);
    }
    return out;
}

}  // namespace folio::tokenizer_detail
