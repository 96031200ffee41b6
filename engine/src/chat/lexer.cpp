// The lexer mirrors jinja2/lexer.py rule by rule where whitespace is
// concerned, because a chat template's output is compared byte for byte with
// what transformers renders: one stray newline changes the prompt tokens.
#include "chat/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace folio::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

class Lexer {
public:
    explicit Lexer(std::string_view raw) {
        // Like jinja2: every newline form becomes "\n", and one trailing newline is dropped
        // (keep_trailing_newline=False).
        src_.reserve(raw.size());
        for (size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '\r') {
                src_ += '\n';
                if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
            } else {
                src_ += raw[i];
            }
        }
        if (!src_.empty() && src_.back() == '\n') src_.pop_back();
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i)
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }

    std::vector<Token> run() {
        bool line_starting = true;
        size_t pos = 0;
        while (pos < src_.size()) {
            const size_t open = find_tag(pos);
            if (open == std::string::npos) {
                emit(Token::Kind::Text, src_.substr(pos), pos);
                break;
            }
            const char kind = src_[open + 1];  // '{', '%' or '#'
            const char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
            std::string text = src_.substr(pos, open - pos);
            if (sign == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (sign != '+' && kind != '{') {
                // lstrip_blocks: drop the indentation of a line that holds only this tag.
                const size_t line_begin = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
                if (line_begin > 0 || line_starting) {
                    bool blank = std::all_of(text.begin() + static_cast<std::ptrdiff_t>(line_begin), text.end(), is_space);
                    if (blank) text.resize(line_begin);
                }
            }
            if (!text.empty()) emit(Token::Kind::Text, std::move(text), pos);
            size_t after = open + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
            if (kind == '#') {
                pos = lex_comment(open, after);
            } else if (kind == '%' && is_raw_begin(after)) {
                pos = lex_raw(open, after);
            } else {
                pos = lex_tag(kind == '{', open, after);
            }
            line_starting = pos > 0 && src_[pos - 1] == '\n';
        }
        emit(Token::Kind::End, "", src_.size());
        return std::move(tokens_);
    }

private:
    std::string src_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;

    SourcePos pos_of(size_t offset) const {
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const size_t line = static_cast<size_t>(it - line_starts_.begin());
        return SourcePos{static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
    }

    void emit(Token::Kind kind, std::string text, size_t offset) {
        tokens_.push_back(Token{kind, std::move(text), pos_of(offset)});
    }

    size_t find_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return std::string::npos;
    }

    // After a block or comment end: trim_blocks eats one newline, "-" eats all whitespace.
    size_t after_block_end(size_t end, bool minus) const {
        if (minus) {
            while (end < src_.size() && is_space(src_[end])) ++end;
        } else if (end < src_.size() && src_[end] == '\n') {
            ++end;
        }
        return end;
    }

    size_t lex_comment(size_t open, size_t from) {
        const size_t close = src_.find("#}", from);
        if (close == std::string::npos) fail_at(pos_of(open), "missing end of comment tag '#}'");
        const char before = close > from ? src_[close - 1] : '\0';
        if (before == '+') return close + 2;
        return after_block_end(close + 2, before == '-');
    }

    size_t skip_spaces(size_t i) const {
        while (i < src_.size() && is_space(src_[i])) ++i;
        return i;
    }

    bool is_raw_begin(size_t i) const {
        i = skip_spaces(i);
        if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && is_name_char(src_[i + 3]))) return false;
        i = skip_spaces(i + 3);
        if (i < src_.size() && src_[i] == '-') ++i;
        return src_.compare(i, 2, "%}") == 0;
    }

    size_t lex_raw(size_t open, size_t from) {
        size_t i = skip_spaces(skip_spaces(from) + 3);
        const bool minus = src_[i] == '-';
        size_t body = minus ? skip_spaces(i + 3) : i + 2;
        for (size_t at = src_.find("{%", body); at != std::string::npos; at = src_.find("{%", at + 1)) {
            size_t j = at + 2;
            const char sign = j < src_.size() ? src_[j] : '\0';
            if (sign == '-' || sign == '+') ++j;
            j = skip_spaces(j);
            if (src_.compare(j, 6, "endraw") != 0) continue;
            j = skip_spaces(j + 6);
            char end_sign = '\0';
            if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) end_sign = src_[j++];
            if (src_.compare(j, 2, "%}") != 0) continue;
            std::string text = src_.substr(body, at - body);
            if (sign == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (sign != '+') {
                const size_t line_begin = text.rfind('\n') == std::string::npos ? std::string::npos : text.rfind('\n') + 1;
                if (line_begin != std::string::npos &&
                    std::all_of(text.begin() + static_cast<std::ptrdiff_t>(line_begin), text.end(), is_space))
                    text.resize(line_begin);
            }
            if (!text.empty()) emit(Token::Kind::Text, std::move(text), body);
            if (end_sign == '+') return j + 2;
            return after_block_end(j + 2, end_sign == '-');
        }
        fail_at(pos_of(open), "missing end of raw directive '{% endraw %}'");
    }

    size_t lex_tag(bool variable, size_t open, size_t i) {
        emit(variable ? Token::Kind::VariableBegin : Token::Kind::BlockBegin, "", open);
        std::vector<char> brackets;
        for (;;) {
            i = skip_spaces(i);
            if (i >= src_.size())
                fail_at(pos_of(open), variable ? "unexpected end of template: missing '}}'" : "unexpected end of template: missing '%}'");
            if (brackets.empty()) {
                if (variable) {
                    if (src_.compare(i, 3, "-}}") == 0) {
                        emit(Token::Kind::VariableEnd, "", i);
                        return skip_spaces(i + 3);
                    }
                    if (src_.compare(i, 2, "}}") == 0) {
                        emit(Token::Kind::VariableEnd, "", i);
                        return i + 2;
                    }
                } else {
                    if (src_.compare(i, 3, "-%}") == 0) {
                        emit(Token::Kind::BlockEnd, "", i);
                        return after_block_end(i + 3, true);
                    }
                    if (src_.compare(i, 3, "+%}") == 0) {
                        emit(Token::Kind::BlockEnd, "", i);
                        return i + 3;
                    }
                    if (src_.compare(i, 2, "%}") == 0) {
                        emit(Token::Kind::BlockEnd, "", i);
                        return after_block_end(i + 2, false);
                    }
                }
            }
            i = lex_expression_token(i, brackets);
        }
    }

    size_t lex_expression_token(size_t i, std::vector<char>& brackets) {
        const char c = src_[i];
        if (is_name_start(c)) {
            size_t j = i;
            while (j < src_.size() && is_name_char(src_[j])) ++j;
            emit(Token::Kind::Name, src_.substr(i, j - i), i);
            return j;
        }
        const bool after_dot = !tokens_.empty() && tokens_.back().kind == Token::Kind::Operator && tokens_.back().text == ".";
        if (is_digit(c)) return lex_number(i, after_dot);
        if (c == '\'' || c == '"') return lex_string(i);
        static const char* const operators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                                ">", "=", ".", ",", ":", "|", "(", ")", "[", "]", "{", "}"};
        for (const char* op : operators) {
            const std::string_view o(op);
            if (src_.compare(i, o.size(), o) != 0) continue;
            if (o == "(" || o == "[" || o == "{") brackets.push_back(op[0]);
            if (o == ")" || o == "]" || o == "}") {
                const char expected = o == ")" ? '(' : o == "]" ? '[' : '{';
                if (brackets.empty() || brackets.back() != expected)
                    fail_at(pos_of(i), "unexpected '" + std::string(o) + "'");
                brackets.pop_back();
            }
            emit(Token::Kind::Operator, std::string(o), i);
            return i + o.size();
        }
        fail_at(pos_of(i), std::string("unexpected character '") + c + "' in tag");
    }

    size_t lex_number(size_t i, bool after_dot) {
        size_t j = i;
        auto digits = [&] {
            while (j < src_.size() && (is_digit(src_[j]) || (src_[j] == '_' && j + 1 < src_.size() && is_digit(src_[j + 1])))) ++j;
        };
        digits();
        bool is_float = false;
        // "x.0.1" is two attribute lookups, as in jinja2 (no float right after a dot).
        if (!after_dot && j + 1 < src_.size() && src_[j] == '.' && is_digit(src_[j + 1])) {
            ++j;
            digits();
            is_float = true;
        }
        if (!after_dot && j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
            size_t k = j + 1;
            if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
            if (k < src_.size() && is_digit(src_[k])) {
                j = k;
                digits();
                is_float = true;
            }
        }
        std::string text;
        for (size_t k = i; k < j; ++k)
            if (src_[k] != '_') text += src_[k];
        emit(is_float ? Token::Kind::Float : Token::Kind::Integer, std::move(text), i);
        return j;
    }

    // Python's "unicode-escape" decoding, which is what jinja2 applies to string literals.
    size_t lex_string(size_t i) {
        const char quote = src_[i];
        std::string out;
        size_t j = i + 1;
        while (j < src_.size() && src_[j] != quote) {
            if (src_[j] != '\\' || j + 1 >= src_.size()) {
                out += src_[j++];
                continue;
            }
            const char e = src_[j + 1];
            j += 2;
            auto hex = [&](int n) -> bool {
                uint32_t cp = 0;
                for (int k = 0; k < n; ++k) {
                    if (j + static_cast<size_t>(k) >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[j + static_cast<size_t>(k)]))) return false;
                    const char h = src_[j + static_cast<size_t>(k)];
                    cp = cp * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                if (cp > 0x10ffff) return false;
                append_utf8(out, cp);
                j += static_cast<size_t>(n);
                return true;
            };
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'v': out += '\v'; break;
                case '\n': break;  // line continuation
                case 'x': if (!hex(2)) fail_at(pos_of(j - 2), "invalid \\x escape in string literal"); break;
                case 'u': if (!hex(4)) fail_at(pos_of(j - 2), "invalid \\u escape in string literal"); break;
                case 'U': if (!hex(8)) fail_at(pos_of(j - 2), "invalid \\U escape in string literal"); break;
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t cp = static_cast<uint32_t>(e - '0');
                        for (int k = 0; k < 2 && j < src_.size() && src_[j] >= '0' && src_[j] <= '7'; ++k)
                            cp = cp * 8 + static_cast<uint32_t>(src_[j++] - '0');
                        append_utf8(out, cp);
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        if (j >= src_.size()) fail_at(pos_of(i), "unterminated string literal");
        emit(Token::Kind::String, std::move(out), i);
        return j + 1;
    }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace folio::chat
