// Builds the syntax tree from tokens, following jinja2's grammar and operator
// precedence. Unknown filters and tests are rejected here, as jinja2 rejects
// them when it compiles a template.
#pragma once

#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace folio::chat {

// Throws TemplateError (with position) on a syntax error.
Body parse_template(const std::vector<Token>& tokens);

}  // namespace folio::chat
