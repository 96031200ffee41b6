// Splits template source into tokens the way jinja2's lexer does under the
// settings transformers uses: trim_blocks and lstrip_blocks on, trailing
// newline dropped, {%- -%} {{- -}} {#- -#} whitespace control, {% raw %}.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/value.h"

namespace folio::chat {

struct Token {
    enum class Kind {
        Text, VariableBegin, VariableEnd, BlockBegin, BlockEnd,
        Name, String, Integer, Float, Operator, End
    };
    Kind kind = Kind::End;
    std::string text;  // text data, name, decoded string literal, number spelling, operator
    SourcePos pos;
};

// Throws TemplateError (with position) on malformed input.
std::vector<Token> tokenize(std::string_view source);

}  // namespace folio::chat
