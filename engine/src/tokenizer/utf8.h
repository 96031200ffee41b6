// UTF-8 stepping and repair. Tokenizers see arbitrary bytes (user input,
// byte-fallback tokens, half-generated characters); these helpers decide
// what is a character, what may still become one, and what never will.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace folio::tokenizer_detail {

struct Utf8Step {
    enum Kind { Valid, Incomplete, Invalid } kind;
    size_t length;  // Valid: the character; Incomplete: bytes so far; Invalid: the maximal bad subpart
};

// The character starting at `pos` (pos < text.size()). Invalid lengths follow
// the "maximal subpart" rule (Unicode §3.9, WHATWG, Rust's from_utf8_lossy):
// one U+FFFD replaces each maximal prefix of a would-be valid sequence.
Utf8Step next_utf8(std::string_view text, size_t pos);

bool is_valid_utf8(std::string_view text);

// `text` with every invalid or truncated sequence replaced by U+FFFD.
std::string repair_utf8(std::string_view text);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Appends the UTF-8 encoding of `code_point` (< 0x110000) to `out`.
void append_utf8(std::string& out, uint32_t code_point);

}  // namespace folio::tokenizer_detail
