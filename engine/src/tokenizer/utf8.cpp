#include "tokenizer/utf8.h"

namespace folio::tokenizer_detail {

Utf8Step next_utf8(std::string_view text, size_t pos) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(pos);
    if (lead < 0x80) return {Utf8Step::Valid, 1};
    // Continuation bytes needed, and the allowed range of the first one: the
    // narrow ranges after E0, ED, F0 and F4 exclude overlong forms,
    // surrogates and code points above U+10FFFF.
    size_t needed = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        needed = 1;
    } else if (lead == 0xE0) {
        needed = 2, low = 0xA0;
    } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
        needed = 2;
    } else if (lead == 0xED) {
        needed = 2, high = 0x9F;
    } else if (lead == 0xF0) {
        needed = 3, low = 0x90;
    } else if (lead >= 0xF1 && lead <= 0xF3) {
        needed = 3;
    } else if (lead == 0xF4) {
        needed = 3, high = 0x8F;
    } else {
        return {Utf8Step::Invalid, 1};
    }
    for (size_t i = 1; i <= needed; ++i) {
        if (pos + i >= text.size()) return {Utf8Step::Incomplete, i};
        const unsigned char b = byte(pos + i);
        if (b < low || b > high) return {Utf8Step::Invalid, i};
        low = 0x80, high = 0xBF;
    }
    return {Utf8Step::Valid, needed + 1};
}

bool is_valid_utf8(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        const Utf8Step step = next_utf8(text, pos);
        if (step.kind != Utf8Step::Valid) return false;
        pos += step.length;
    }
    return true;
}

std::string repair_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const Utf8Step step = next_utf8(text, pos);
        if (step.kind == Utf8Step::Valid) {
            out.append(text.substr(pos, step.length));
        } else {
            out.append(kReplacementChar);
        }
        pos += step.length;
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

}  // namespace folio::tokenizer_detail
