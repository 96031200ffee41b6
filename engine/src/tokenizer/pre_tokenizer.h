// Splits text into the pieces BPE merges within ("words"), with a sequence of
// regexes as Hugging Face's Split(behavior="isolated") and llama.cpp apply
// them: each regex runs over every piece the previous one left, and both the
// matches and the gaps between them become pieces. PCRE2 (UTF + UCP, JIT)
// supplies \p{L}, \p{N} and friends.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "folio/error.h"

namespace folio::tokenizer_detail {

// The regexes llama.cpp uses for a tokenizer.ggml.pre name ("gpt2",
// "smollm", "llama-bpe", "qwen2", "default", ...); an error for names we do
// not know. "none" means no split.
Result<std::vector<std::string>> pre_tokenizer_regexes(const std::string& pre_name);

inline constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Piece {
    size_t offset;
    size_t length;
};

class PreTokenizer {
public:
    static Result<PreTokenizer> create(const std::vector<std::string>& regexes);
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;
    ~PreTokenizer();

    // Pieces of `text` (valid UTF-8), in order, covering it without gaps.
    std::vector<Piece> split(std::string_view text) const;

private:
    struct CompiledRegex;
    PreTokenizer() = default;
    std::vector<std::unique_ptr<CompiledRegex>> regexes_;
};

}  // namespace folio::tokenizer_detail
