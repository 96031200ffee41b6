// The syntax tree of a chat template: expressions and statements, each
// carrying the line and column it came from so errors can point at it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace folio::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,    // literal
        Name,       // name
        List,       // args
        Tuple,      // args
        Dict,       // args: key, value, key, value, ...
        Attribute,  // target.name
        Subscript,  // target[args[0]]
        Slice,      // target[args[0]:args[1]:args[2]], missing parts null
        Call,       // target(args, kwargs)
        Filter,     // target|name(args, kwargs); target null inside {% filter %}
        Test,       // target is [not] name(args)
        Unary,      // name ("-", "+", "not") args[0]
        Binary,     // args[0] name args[1]: arithmetic, comparison, "in", "not in", "~"
        And,        // args[0] and args[1]
        Or,         // args[0] or args[1]
        Conditional // args[0] if args[1] else args[2] (args[2] may be null)
    };
    Kind kind = Kind::Literal;
    SourcePos pos;
    Value literal;
    std::string name;
    ExprPtr target;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    bool negated = false;  // "is not"
};

struct Stmt;
using Body = std::vector<Stmt>;

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // may be null
};

struct Stmt {
    enum class Kind {
        Text,      // text
        Output,    // {{ expr }}
        If,        // conditions[i] -> bodies[i]; else_body
        For,       // targets in expr [if condition]: body, else_body
        Set,       // targets = expr, or namespace_name.attribute = expr
        SetBlock,  // {% set targets[0] %}body{% endset %} (optional filter chain in expr)
        Macro,     // name(params): body
        CallBlock, // {% call(params) expr %}body{% endcall %}
        FilterBlock, // {% filter expr %}body{% endfilter %}
        Break,
        Continue,
        Scope      // a body rendered in place ({% generation %})
    };
    Kind kind = Kind::Text;
    SourcePos pos;
    std::string text;
    ExprPtr expr;
    ExprPtr condition;
    std::vector<ExprPtr> conditions;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    std::vector<std::string> targets;
    std::string attribute;  // set ns.attribute
    std::vector<MacroParam> params;
};

}  // namespace folio::chat
