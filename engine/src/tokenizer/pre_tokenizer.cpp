#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace folio::tokenizer_detail {

namespace {

// From llama.cpp's llama_vocab::impl::load (src/llama-vocab.cpp).
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace

Result<std::vector<std::string>> pre_tokenizer_regexes(const std::string& pre_name) {
    if (pre_name == "none") return std::vector<std::string>{};
    if (pre_name == "gpt2" || pre_name == "gpt-2" || pre_name == "starcoder" || pre_name == "refact" ||
        pre_name == "olmo" || pre_name == "jais") {
        return std::vector<std::string>{kGpt2Regex};
    }
    if (pre_name == "smollm" || pre_name == "falcon" || pre_name == "mpt") {
        // A digit is always a piece of its own, then GPT-2's split.
        return std::vector<std::string>{R"(\p{N})", kGpt2Regex};
    }
    if (pre_name == "llama-bpe" || pre_name == "llama3" || pre_name == "llama-v3" || pre_name == "dbrx" ||
        pre_name == "smaug-bpe" || pre_name == "falcon3" || pre_name == "pixtral") {
        return std::vector<std::string>{kLlama3Regex};
    }
    if (pre_name == "qwen2" || pre_name == "deepseek-r1-qwen" || pre_name == "megrez") {
        return std::vector<std::string>{kQwen2Regex};
    }
    if (pre_name == "default" || pre_name.empty()) {
        return std::vector<std::string>{
            R"([\p{P}\$\+<=>\^~\|]+)",
            kGpt2Regex,
            R"(\p{N}+)",
            R"([0-9][0-9][0-9])",
        };
    }
    return make_error("unknown pre-tokenizer '" + pre_name +
                      "' (tokenizer.ggml.pre); known: gpt2, smollm, llama-bpe, qwen2, default");
}

struct PreTokenizer::CompiledRegex {
    pcre2_code* code = nullptr;
    bool jit = false;
    ~CompiledRegex() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

Result<PreTokenizer> PreTokenizer::create(const std::vector<std::string>& regexes) {
    PreTokenizer pre;
    for (const std::string& pattern : regexes) {
        int error_code = 0;
        PCRE2_SIZE error_offset = 0;
        auto compiled = std::make_unique<CompiledRegex>();
        compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                       PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
        if (!compiled->code) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error_code, message, sizeof message);
            return make_error("pre-tokenizer regex /" + pattern + "/ does not compile at offset " +
                              std::to_string(error_offset) + ": " + reinterpret_cast<const char*>(message));
        }
        // JIT is a speed-up only; the interpreter gives the same matches.
        compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
        pre.regexes_.push_back(std::move(compiled));
    }
    return pre;
}

std::vector<Piece> PreTokenizer::split(std::string_view text) const {
    std::vector<Piece> pieces;
    if (text.empty()) return pieces;
    pieces.push_back({0, text.size()});
    if (regexes_.empty()) return pieces;

    std::vector<Piece> next;
    for (const auto& regex : regexes_) {
        pcre2_match_data* match = pcre2_match_data_create_from_pattern(regex->code, nullptr);
        next.clear();
        for (const Piece& piece : pieces) {
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + piece.offset);
            size_t pos = 0;  // within the piece
            size_t start = 0;
            while (start < piece.length) {
                // Valid UTF-8 was checked once for the whole text.
                const int rc = regex->jit ? pcre2_jit_match(regex->code, subject, piece.length, start,
                                                            PCRE2_NO_UTF_CHECK, match, nullptr)
                                          : pcre2_match(regex->code, subject, piece.length, start,
                                                        PCRE2_NO_UTF_CHECK, match, nullptr);
                if (rc < 0) break;
                const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
                const size_t match_begin = ovector[0], match_end = ovector[1];
                if (match_end == match_begin) {
                    // An empty match: step over one character and look again.
                    start = match_end + 1;
                    while (start < piece.length && (static_cast<unsigned char>(subject[start]) & 0xC0) == 0x80) ++start;
                    continue;
                }
                if (match_begin > pos) next.push_back({piece.offset + pos, match_begin - pos});
                next.push_back({piece.offset + match_begin, match_end - match_begin});
                pos = start = match_end;
            }
            if (pos < piece.length) next.push_back({piece.offset + pos, piece.length - pos});
        }
        pcre2_match_data_free(match);
        pieces.swap(next);
    }
    return pieces;
}

}  // namespace folio::tokenizer_detail
