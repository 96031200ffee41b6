// Recursive descent over jinja2's grammar (jinja2/parser.py): the same
// precedence ladder from conditional expressions down to filters and
// postfix lookups, and the statement set chat templates use.
#include "chat/parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "chat/builtins.h"

namespace folio::chat {
namespace {

constexpr int kMaxNesting = 200;

class Parser {
public:
    explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

    Body parse_all() {
        std::string stopped;
        Body body = parse_body({}, stopped);
        return body;
    }

private:
    const std::vector<Token>& tokens_;
    size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser, SourcePos pos) : p(parser) {
            if (++p.depth_ > kMaxNesting) fail_at(pos, "template nested too deeply");
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token& peek(size_t ahead = 0) const { return tokens_[std::min(i_ + ahead, tokens_.size() - 1)]; }
    const Token& next() {
        const Token& t = peek();
        if (i_ < tokens_.size() - 1) ++i_;
        return t;
    }
    bool at_op(std::string_view op, size_t ahead = 0) const {
        return peek(ahead).kind == Token::Kind::Operator && peek(ahead).text == op;
    }
    bool at_name(std::string_view name, size_t ahead = 0) const {
        return peek(ahead).kind == Token::Kind::Name && peek(ahead).text == name;
    }
    bool accept_op(std::string_view op) {
        if (!at_op(op)) return false;
        next();
        return true;
    }
    bool accept_name(std::string_view name) {
        if (!at_name(name)) return false;
        next();
        return true;
    }
    static std::string describe(const Token& t) {
        switch (t.kind) {
            case Token::Kind::End: return "end of template";
            case Token::Kind::BlockEnd: return "end of statement block";
            case Token::Kind::VariableEnd: return "end of print statement";
            case Token::Kind::String: return "string";
            default: return "'" + t.text + "'";
        }
    }
    void expect_op(std::string_view op) {
        if (!accept_op(op)) fail_at(peek().pos, "expected '" + std::string(op) + "', got " + describe(peek()));
    }
    std::string expect_name() {
        if (peek().kind != Token::Kind::Name) fail_at(peek().pos, "expected a name, got " + describe(peek()));
        return next().text;
    }
    void expect_block_end() {
        if (peek().kind != Token::Kind::BlockEnd) fail_at(peek().pos, "expected end of statement block, got " + describe(peek()));
        next();
    }

    // ---- statements ----------------------------------------------------------

    Body parse_body(std::initializer_list<std::string_view> stops, std::string& stopped_at) {
        Body body;
        for (;;) {
            const Token& t = peek();
            switch (t.kind) {
                case Token::Kind::Text: {
                    Stmt s;
                    s.kind = Stmt::Kind::Text;
                    s.pos = t.pos;
                    s.text = next().text;
                    body.push_back(std::move(s));
                    break;
                }
                case Token::Kind::VariableBegin: {
                    Stmt s;
                    s.kind = Stmt::Kind::Output;
                    s.pos = next().pos;
                    s.expr = parse_tuple(true);
                    if (peek().kind != Token::Kind::VariableEnd)
                        fail_at(peek().pos, "expected end of print statement '}}', got " + describe(peek()));
                    next();
                    body.push_back(std::move(s));
                    break;
                }
                case Token::Kind::BlockBegin: {
                    const Token& keyword = peek(1);
                    if (keyword.kind != Token::Kind::Name) fail_at(keyword.pos, "expected a statement name after '{%'");
                    for (std::string_view stop : stops) {
                        if (keyword.text == stop) {
                            next();
                            next();
                            stopped_at = keyword.text;
                            return body;
                        }
                    }
                    next();
                    body.push_back(parse_statement());
                    break;
                }
                case Token::Kind::End: {
                    if (stops.size() == 0) return body;
                    std::string expected;
                    for (std::string_view stop : stops) expected += (expected.empty() ? "'" : " or '") + std::string(stop) + "'";
                    fail_at(t.pos, "unexpected end of template: expected " + expected);
                }
                default: fail_at(t.pos, "unexpected " + describe(t));
            }
        }
    }

    Stmt parse_statement() {
        const Token& keyword = next();
        DepthGuard guard(*this, keyword.pos);
        Stmt s;
        s.pos = keyword.pos;
        const std::string& k = keyword.text;
        std::string stopped;
        if (k == "for") {
            s.kind = Stmt::Kind::For;
            do {
                s.targets.push_back(expect_name());
            } while (accept_op(","));
            if (!accept_name("in")) fail_at(peek().pos, "expected 'in' in for loop, got " + describe(peek()));
            s.expr = parse_tuple(false);
            if (accept_name("if")) s.condition = parse_expression(true);
            if (at_name("recursive")) fail_at(peek().pos, "recursive for loops are not supported");
            expect_block_end();
            ++loop_depth_;
            s.body = parse_body({"endfor", "else"}, stopped);
            --loop_depth_;
            if (stopped == "else") {
                expect_block_end();
                s.else_body = parse_body({"endfor"}, stopped);
            }
            expect_block_end();
        } else if (k == "if") {
            s.kind = Stmt::Kind::If;
            s.conditions.push_back(parse_tuple(false));
            expect_block_end();
            for (;;) {
                s.bodies.push_back(parse_body({"elif", "else", "endif"}, stopped));
                if (stopped == "elif") {
                    s.conditions.push_back(parse_tuple(false));
                    expect_block_end();
                    continue;
                }
                if (stopped == "else") {
                    expect_block_end();
                    s.else_body = parse_body({"endif"}, stopped);
                }
                break;
            }
            expect_block_end();
        } else if (k == "set") {
            s.targets.push_back(expect_name());
            if (accept_op(".")) {
                s.attribute = expect_name();
            } else {
                while (accept_op(",")) s.targets.push_back(expect_name());
            }
            if (accept_op("=")) {
                s.kind = Stmt::Kind::Set;
                s.expr = parse_tuple(true);
                expect_block_end();
            } else {
                if (s.targets.size() != 1 || !s.attribute.empty()) fail_at(peek().pos, "expected '=' in set statement");
                s.kind = Stmt::Kind::SetBlock;
                if (at_op("|")) s.expr = parse_filter_chain(nullptr);
                expect_block_end();
                s.body = parse_body({"endset"}, stopped);
                expect_block_end();
            }
        } else if (k == "macro") {
            s.kind = Stmt::Kind::Macro;
            s.text = expect_name();
            parse_params(s.params);
            expect_block_end();
            const int saved = loop_depth_;
            loop_depth_ = 0;
            s.body = parse_body({"endmacro"}, stopped);
            loop_depth_ = saved;
            expect_block_end();
        } else if (k == "call") {
            s.kind = Stmt::Kind::CallBlock;
            if (at_op("(")) parse_params(s.params);
            s.expr = parse_expression(true);
            if (s.expr->kind != Expr::Kind::Call) fail_at(s.expr->pos, "expected a call in the call block");
            expect_block_end();
            s.body = parse_body({"endcall"}, stopped);
            expect_block_end();
        } else if (k == "filter") {
            s.kind = Stmt::Kind::FilterBlock;
            s.expr = parse_filter_chain(nullptr, false);
            expect_block_end();
            s.body = parse_body({"endfilter"}, stopped);
            expect_block_end();
        } else if (k == "break" || k == "continue") {
            if (loop_depth_ == 0) fail_at(keyword.pos, "'" + k + "' outside of a loop");
            s.kind = k == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
            expect_block_end();
        } else if (k == "generation") {
            s.kind = Stmt::Kind::Scope;
            expect_block_end();
            s.body = parse_body({"endgeneration"}, stopped);
            expect_block_end();
        } else {
            fail_at(keyword.pos, "unknown or unexpected tag '" + k + "'");
        }
        return s;
    }

    void parse_params(std::vector<MacroParam>& params) {
        expect_op("(");
        while (!at_op(")")) {
            if (!params.empty()) expect_op(",");
            if (at_op(")")) break;
            MacroParam p;
            p.name = expect_name();
            if (accept_op("=")) p.default_value = parse_expression(true);
            params.push_back(std::move(p));
        }
        expect_op(")");
    }

    // ---- expressions ---------------------------------------------------------

    ExprPtr make(Expr::Kind kind, SourcePos pos) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->pos = pos;
        return e;
    }

    ExprPtr parse_tuple(bool with_condexpr) {
        const SourcePos pos = peek().pos;
        ExprPtr first = parse_expression(with_condexpr);
        if (!at_op(",")) return first;
        auto tuple = make(Expr::Kind::Tuple, pos);
        tuple->args.push_back(std::move(first));
        while (accept_op(",")) {
            if (peek().kind == Token::Kind::VariableEnd || peek().kind == Token::Kind::BlockEnd || at_op(")")) break;
            tuple->args.push_back(parse_expression(with_condexpr));
        }
        return tuple;
    }

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this, peek().pos);
        if (!with_condexpr) return parse_or();
        ExprPtr expr = parse_or();
        while (at_name("if")) {
            const SourcePos pos = next().pos;
            auto cond = make(Expr::Kind::Conditional, pos);
            cond->args.push_back(std::move(expr));
            cond->args.push_back(parse_or());
            cond->args.push_back(accept_name("else") ? parse_expression(true) : nullptr);
            expr = std::move(cond);
        }
        return expr;
    }

    ExprPtr binary(Expr::Kind kind, std::string op, ExprPtr left, ExprPtr right, SourcePos pos) {
        auto e = make(kind, pos);
        e->name = std::move(op);
        e->args.push_back(std::move(left));
        e->args.push_back(std::move(right));
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (at_name("or")) {
            const SourcePos pos = next().pos;
            left = binary(Expr::Kind::Or, "or", std::move(left), parse_and(), pos);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (at_name("and")) {
            const SourcePos pos = next().pos;
            left = binary(Expr::Kind::And, "and", std::move(left), parse_not(), pos);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (at_name("not")) {
            DepthGuard guard(*this, peek().pos);
            auto e = make(Expr::Kind::Unary, next().pos);
            e->name = "not";
            e->args.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        ExprPtr left = parse_math1();
        for (;;) {
            const SourcePos pos = peek().pos;
            std::string op;
            if (peek().kind == Token::Kind::Operator &&
                (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
                 peek().text == "<=" || peek().text == ">=")) {
                op = next().text;
            } else if (at_name("in")) {
                next();
                op = "in";
            } else if (at_name("not") && at_name("in", 1)) {
                next();
                next();
                op = "not in";
            } else {
                return left;
            }
            left = binary(Expr::Kind::Binary, op, std::move(left), parse_math1(), pos);
        }
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (at_op("+") || at_op("-")) {
            const Token& op = next();
            left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_concat(), op.pos);
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (at_op("~")) {
            const SourcePos pos = next().pos;
            left = binary(Expr::Kind::Binary, "~", std::move(left), parse_math2(), pos);
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
            const Token& op = next();
            left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_pow(), op.pos);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (at_op("**")) {
            const SourcePos pos = next().pos;
            left = binary(Expr::Kind::Binary, "**", std::move(left), parse_unary(true), pos);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this, peek().pos);
        ExprPtr node;
        if (at_op("-") || at_op("+")) {
            const Token& op = next();
            node = make(Expr::Kind::Unary, op.pos);
            node->name = op.text;
            node->args.push_back(parse_unary(false));
        } else {
            node = parse_postfix(parse_primary());
        }
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        const Token& t = peek();
        switch (t.kind) {
            case Token::Kind::Name: {
                next();
                auto e = make(Expr::Kind::Literal, t.pos);
                if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
                else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
                else if (t.text == "none" || t.text == "None") e->literal = Value::none();
                else {
                    e->kind = Expr::Kind::Name;
                    e->name = t.text;
                }
                return e;
            }
            case Token::Kind::String: {
                std::string text = next().text;
                while (peek().kind == Token::Kind::String) text += next().text;
                auto e = make(Expr::Kind::Literal, t.pos);
                e->literal = Value::string(std::move(text));
                return e;
            }
            case Token::Kind::Integer: {
                next();
                int64_t v = 0;
                auto res = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
                if (res.ec != std::errc()) fail_at(t.pos, "integer literal out of range: " + t.text);
                auto e = make(Expr::Kind::Literal, t.pos);
                e->literal = Value::integer(v);
                return e;
            }
            case Token::Kind::Float: {
                next();
                auto e = make(Expr::Kind::Literal, t.pos);
                e->literal = Value::number(std::strtod(t.text.c_str(), nullptr));
                return e;
            }
            case Token::Kind::Operator:
                if (t.text == "(") {
                    next();
                    if (accept_op(")")) return make(Expr::Kind::Tuple, t.pos);
                    ExprPtr inner = parse_tuple(true);
                    expect_op(")");
                    return inner;
                }
                if (t.text == "[") {
                    next();
                    auto e = make(Expr::Kind::List, t.pos);
                    while (!at_op("]")) {
                        if (!e->args.empty()) expect_op(",");
                        if (at_op("]")) break;
                        e->args.push_back(parse_expression(true));
                    }
                    expect_op("]");
                    return e;
                }
                if (t.text == "{") {
                    next();
                    auto e = make(Expr::Kind::Dict, t.pos);
                    while (!at_op("}")) {
                        if (!e->args.empty()) expect_op(",");
                        if (at_op("}")) break;
                        e->args.push_back(parse_expression(true));
                        expect_op(":");
                        e->args.push_back(parse_expression(true));
                    }
                    expect_op("}");
                    return e;
                }
                break;
            default: break;
        }
        fail_at(t.pos, "unexpected " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr node) {
        for (;;) {
            if (at_op(".")) {
                const SourcePos pos = next().pos;
                if (peek().kind == Token::Kind::Integer) {
                    auto index = make(Expr::Kind::Literal, peek().pos);
                    index->literal = Value::integer(std::strtoll(next().text.c_str(), nullptr, 10));
                    auto e = make(Expr::Kind::Subscript, pos);
                    e->target = std::move(node);
                    e->args.push_back(std::move(index));
                    node = std::move(e);
                } else {
                    auto e = make(Expr::Kind::Attribute, pos);
                    e->name = expect_name();
                    e->target = std::move(node);
                    node = std::move(e);
                }
            } else if (at_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const SourcePos pos = next().pos;
        ExprPtr parts[3];
        int colons = 0;
        for (;;) {
            if (at_op(":")) {
                next();
                if (++colons > 2) fail_at(peek().pos, "too many ':' in slice");
                continue;
            }
            if (at_op("]")) break;
            if (parts[colons]) fail_at(peek().pos, "expected ']' or ':', got " + describe(peek()));
            parts[colons] = parse_expression(true);
        }
        expect_op("]");
        auto e = make(colons ? Expr::Kind::Slice : Expr::Kind::Subscript, pos);
        e->target = std::move(node);
        if (colons == 0) {
            if (!parts[0]) fail_at(pos, "empty subscript");
            e->args.push_back(std::move(parts[0]));
        } else {
            for (auto& p : parts) e->args.push_back(std::move(p));
        }
        return e;
    }

    void parse_call_args(Expr& call) {
        expect_op("(");
        while (!at_op(")")) {
            if (!call.args.empty() || !call.kwargs.empty()) expect_op(",");
            if (at_op(")")) break;
            if (at_op("*") || at_op("**")) fail_at(peek().pos, "*args and **kwargs in calls are not supported");
            if (peek().kind == Token::Kind::Name && at_op("=", 1)) {
                std::string name = next().text;
                next();
                call.kwargs.emplace_back(std::move(name), parse_expression(true));
            } else {
                if (!call.kwargs.empty()) fail_at(peek().pos, "positional argument after keyword argument");
                call.args.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr node) {
        auto e = make(Expr::Kind::Call, peek().pos);
        e->target = std::move(node);
        parse_call_args(*e);
        return e;
    }

    // "|f1(args)|f2": each filter wraps the previous; `first_bar` is false in {% filter f %}.
    ExprPtr parse_filter_chain(ExprPtr node, bool first_bar = true) {
        bool need_bar = first_bar;
        while (!need_bar || at_op("|")) {
            if (need_bar) next();
            need_bar = true;
            const Token& name = peek();
            auto e = make(Expr::Kind::Filter, name.pos);
            e->name = expect_name();
            if (!is_known_filter(e->name)) fail_at(name.pos, "no filter named '" + e->name + "'");
            e->target = std::move(node);
            if (at_op("(")) parse_call_args(*e);
            node = std::move(e);
        }
        return node;
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        for (;;) {
            if (at_op("|")) {
                node = parse_filter_chain(std::move(node));
            } else if (at_name("is")) {
                node = parse_test(std::move(node));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_test(ExprPtr node) {
        const SourcePos pos = next().pos;
        auto e = make(Expr::Kind::Test, pos);
        e->negated = accept_name("not");
        const Token& name = peek();
        e->name = expect_name();
        // Dotted test names are not used by chat templates; "is none"/"is true" are names here.
        if (!is_known_test(e->name)) fail_at(name.pos, "no test named '" + e->name + "'");
        e->target = std::move(node);
        const Token& t = peek();
        if (at_op("(")) {
            parse_call_args(*e);
        } else if ((t.kind == Token::Kind::Name || t.kind == Token::Kind::String || t.kind == Token::Kind::Integer ||
                    t.kind == Token::Kind::Float || at_op("[") || at_op("{")) &&
                   !at_name("else") && !at_name("or") && !at_name("and")) {
            if (at_name("is")) fail_at(t.pos, "you cannot chain multiple tests with 'is'");
            e->args.push_back(parse_postfix(parse_primary()));
        }
        return e;
    }
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens) { return Parser(tokens).parse_all(); }

}  // namespace folio::chat
