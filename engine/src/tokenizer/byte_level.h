// GPT-2's reversible byte <-> printable-character mapping. Byte-level BPE
// vocabularies spell every byte as one visible character (space is "Ġ",
// newline "Ċ") so that merges never see raw whitespace or control bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace folio::tokenizer_detail {

class ByteLevelAlphabet {
public:
    static const ByteLevelAlphabet& instance();

    // The UTF-8 spelling of the character that stands for `byte`.
    const std::string& spell(uint8_t byte) const { return spelling_[byte]; }
    // `text` with every byte spelled.
    std::string spell_all(std::string_view text) const;
    // The bytes a byte-level token stands for; nullopt if it holds a
    // character outside the alphabet.
    std::optional<std::string> unspell(std::string_view token) const;

private:
    ByteLevelAlphabet();
    std::array<std::string, 256> spelling_;
    std::array<int16_t, 324> byte_of_code_point_{};  // -1 where no byte maps
};

}  // namespace folio::tokenizer_detail
