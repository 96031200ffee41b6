// Statement execution and expression evaluation. Errors raised without a
// position pick up the position of the innermost expression or statement
// that was being evaluated, so every message can point at the template text.
#include "chat/evaluator.h"

#include "chat/builtins.h"

namespace folio::chat {

Array iterate(const Value& value) {
    switch (value.kind()) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::List: return value.as_array();
        case Value::Kind::Dict:
        case Value::Kind::Namespace: {
            Array keys;
            for (const auto& entry : value.as_object().entries) keys.push_back(Value::string(entry.first));
            return keys;
        }
        case Value::Kind::String: {
            Array chars;
            for (auto& c : utf8_code_points(value.as_string())) chars.push_back(Value::string(std::move(c)));
            return chars;
        }
        default: fail("'" + value.type_name() + "' object is not iterable");
    }
}

Evaluator::Evaluator(Object variables, RenderLimits limits)
    : variables_(std::move(variables)), globals_(global_functions()), limits_(limits) {}

Evaluator::~Evaluator() {
    for (Value& ns : namespaces_) ns.namespace_attributes().entries.clear();
}

Value Evaluator::make_namespace(Object attributes) {
    namespaces_.push_back(Value::new_namespace(std::move(attributes)));
    return namespaces_.back();
}

std::string Evaluator::render(const Body& body) {
    scopes_.assign(1, Scope{});
    out_.clear();
    exec_body(body);
    return std::move(out_);
}

void Evaluator::check_size(size_t size) const {
    if (size > limits_.max_output_bytes)
        fail("output too large (over " + std::to_string(limits_.max_output_bytes) + " bytes): runaway template?");
}

uint64_t Evaluator::units_of(const Value& value) {
    // A byte of text is one unit; a list element or dict entry, which costs a Value copy, is 16.
    if (value.is_string()) return value.as_string().size();
    if (value.is_array()) return value.as_array().size() * 16;
    if (value.is_object() || value.is_namespace()) return value.as_object().entries.size() * 16;
    return 1;
}

void Evaluator::spend(uint64_t units) {
    work_ += units;
    const uint64_t budget = static_cast<uint64_t>(limits_.max_output_bytes) * 16;
    if (work_ > budget) fail("too much work (over " + std::to_string(budget) + " units of values built or scanned): runaway template?");
}

void Evaluator::charge(const Value& result) {
    if (result.is_string()) check_size(result.as_string().size());
    else if (result.is_array()) check_size(result.as_array().size() * 16);
    spend(units_of(result));
}

void Evaluator::write(const std::string& text) {
    check_size(out_.size() + text.size());
    out_ += text;
}

Value Evaluator::lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
        auto found = it->find(name);
        if (found != it->end()) return found->second;
    }
    if (const Value* v = variables_.find(name)) return *v;
    if (const Value* v = globals_.find(name)) return *v;
    return Value::undefined("'" + name + "' is undefined");
}

void Evaluator::assign(const std::string& name, Value value) { scopes_.back()[name] = std::move(value); }

// ---- statements ------------------------------------------------------------

Evaluator::Flow Evaluator::exec_body(const Body& body) {
    for (const Stmt& stmt : body) {
        const Flow flow = exec(stmt);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

Evaluator::Flow Evaluator::exec(const Stmt& stmt) {
    try {
        switch (stmt.kind) {
            case Stmt::Kind::Text: write(stmt.text); break;
            case Stmt::Kind::Output: write(to_display_string(eval(*stmt.expr))); break;
            case Stmt::Kind::If:
                for (size_t i = 0; i < stmt.conditions.size(); ++i)
                    if (eval(*stmt.conditions[i]).truthy()) return exec_body(stmt.bodies[i]);
                return exec_body(stmt.else_body);
            case Stmt::Kind::For: exec_for(stmt); break;
            case Stmt::Kind::Set: exec_set(stmt); break;
            case Stmt::Kind::SetBlock: {
                Value text = Value::string(capture(stmt.body));
                if (stmt.expr) {
                    // The filter chain bottoms out in a null target: the captured text.
                    std::vector<const Expr*> chain;
                    for (const Expr* e = stmt.expr.get(); e; e = e->target.get()) chain.push_back(e);
                    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
                        text = apply_filter(*this, (*it)->name, text, eval_args(**it));
                }
                assign(stmt.targets[0], std::move(text));
                break;
            }
            case Stmt::Kind::Macro: assign(stmt.text, make_macro(stmt)); break;
            case Stmt::Kind::CallBlock: {
                const Stmt* block = &stmt;
                const std::vector<Scope> call_site = scopes_;
                Value caller = Value::callable("caller", [this, block, call_site](Evaluator&, const CallArgs& args) {
                    std::vector<Scope> saved = std::move(scopes_);
                    scopes_ = call_site;
                    scopes_.emplace_back();
                    for (size_t i = 0; i < block->params.size(); ++i) {
                        const Value* v = args.arg(i, block->params[i].name);
                        assign(block->params[i].name, v ? *v : Value::undefined("'" + block->params[i].name + "' is undefined"));
                    }
                    std::string text;
                    try {
                        text = capture(block->body);
                    } catch (...) {
                        scopes_ = std::move(saved);
                        throw;
                    }
                    scopes_ = std::move(saved);
                    return Value::string(std::move(text));
                });
                const Expr& call_expr = *stmt.expr;
                Value function = eval(*call_expr.target);
                CallArgs args = eval_args(call_expr);
                args.keyword.emplace_back("caller", std::move(caller));
                write(to_display_string(call(function, args)));
                break;
            }
            case Stmt::Kind::FilterBlock: {
                Value text = Value::string(capture(stmt.body));
                std::vector<const Expr*> chain;
                for (const Expr* e = stmt.expr.get(); e; e = e->target.get()) chain.push_back(e);
                for (auto it = chain.rbegin(); it != chain.rend(); ++it)
                    text = apply_filter(*this, (*it)->name, text, eval_args(**it));
                write(to_display_string(text));
                break;
            }
            case Stmt::Kind::Break: return Flow::Break;
            case Stmt::Kind::Continue: return Flow::Continue;
            case Stmt::Kind::Scope: return exec_body(stmt.body);
        }
    } catch (TemplateError& e) {
        if (!e.has_pos) {
            e.pos = stmt.pos;
            e.has_pos = true;
        }
        throw;
    }
    return Flow::Normal;
}

std::string Evaluator::capture(const Body& body) {
    std::string saved = std::move(out_);
    out_.clear();
    try {
        exec_body(body);
    } catch (...) {
        out_ = std::move(saved);
        throw;
    }
    std::string captured = std::move(out_);
    out_ = std::move(saved);
    return captured;
}

void Evaluator::exec_for(const Stmt& stmt) {
    const Value iterable = eval(*stmt.expr);
    spend(units_of(iterable));
    Array source = iterate(iterable);
    auto bind_targets = [&](Scope& scope, const Value& item) {
        if (stmt.targets.size() == 1) {
            scope[stmt.targets[0]] = item;
            return;
        }
        if (!item.is_array()) fail("cannot unpack non-sequence " + item.type_name() + " into " + std::to_string(stmt.targets.size()) + " names");
        const Array& parts = item.as_array();
        if (parts.size() != stmt.targets.size())
            fail(std::string(parts.size() > stmt.targets.size() ? "too many" : "not enough") + " values to unpack (expected " +
                 std::to_string(stmt.targets.size()) + ", got " + std::to_string(parts.size()) + ")");
        for (size_t i = 0; i < parts.size(); ++i) scope[stmt.targets[i]] = parts[i];
    };
    auto count_iteration = [&] {
        if (++loop_iterations_ > limits_.max_loop_iterations)
            fail("loop limit reached (" + std::to_string(limits_.max_loop_iterations) + " iterations): runaway template?");
    };

    Array items;
    if (stmt.condition) {
        for (const Value& item : source) {
            count_iteration();
            scopes_.emplace_back();
            bind_targets(scopes_.back(), item);
            const bool keep = eval(*stmt.condition).truthy();
            scopes_.pop_back();
            if (keep) items.push_back(item);
        }
    } else {
        items = std::move(source);
    }
    if (items.empty()) {
        exec_body(stmt.else_body);
        return;
    }

    const int64_t length = static_cast<int64_t>(items.size());
    // One cycle() per loop, reading the iteration it was called in.
    auto position = std::make_shared<int64_t>(0);
    const Value cycle = Value::callable("loop.cycle", [position](Evaluator&, const CallArgs& args) {
        if (args.positional.empty()) fail("no items for cycling given");
        return args.positional[static_cast<size_t>(*position) % args.positional.size()];
    });
    for (int64_t i = 0; i < length; ++i) {
        count_iteration();
        *position = i;
        const size_t at = static_cast<size_t>(i);
        Object loop;
        loop.entries.reserve(12);
        loop.entries.emplace_back("index", Value::integer(i + 1));
        loop.entries.emplace_back("index0", Value::integer(i));
        loop.entries.emplace_back("revindex", Value::integer(length - i));
        loop.entries.emplace_back("revindex0", Value::integer(length - i - 1));
        loop.entries.emplace_back("first", Value::boolean(i == 0));
        loop.entries.emplace_back("last", Value::boolean(i == length - 1));
        loop.entries.emplace_back("length", Value::integer(length));
        loop.entries.emplace_back("depth", Value::integer(1));
        loop.entries.emplace_back("depth0", Value::integer(0));
        loop.entries.emplace_back("previtem", i > 0 ? items[at - 1] : Value::undefined("there is no previous item"));
        loop.entries.emplace_back("nextitem", i + 1 < length ? items[at + 1] : Value::undefined("there is no next item"));
        loop.entries.emplace_back("cycle", cycle);
        scopes_.emplace_back();
        scopes_.back()["loop"] = Value::object(std::move(loop));
        bind_targets(scopes_.back(), items[at]);
        Flow flow;
        try {
            flow = exec_body(stmt.body);
        } catch (...) {
            scopes_.pop_back();
            throw;
        }
        scopes_.pop_back();
        if (flow == Flow::Break) break;
    }
}

void Evaluator::exec_set(const Stmt& stmt) {
    Value value = eval(*stmt.expr);
    if (!stmt.attribute.empty()) {
        Value target = lookup(stmt.targets[0]);
        if (!target.is_namespace()) fail("cannot assign attribute on non-namespace object '" + stmt.targets[0] + "'");
        if (!stmt.attribute.empty() && stmt.attribute[0] == '_')
            fail("chat templates cannot store underscore-prefixed attributes on a namespace");
        target.namespace_attributes().set(stmt.attribute, std::move(value));
        return;
    }
    if (stmt.targets.size() == 1) {
        assign(stmt.targets[0], std::move(value));
        return;
    }
    if (!value.is_array() || value.as_array().size() != stmt.targets.size())
        fail("cannot unpack value into " + std::to_string(stmt.targets.size()) + " names");
    for (size_t i = 0; i < stmt.targets.size(); ++i) assign(stmt.targets[i], value.as_array()[i]);
}

Value Evaluator::make_macro(const Stmt& stmt) {
    const Stmt* macro = &stmt;
    return Value::callable(stmt.text, [macro](Evaluator& self, const CallArgs& args) { return self.invoke_macro(*macro, args); });
}

Value Evaluator::invoke_macro(const Stmt& macro, const CallArgs& args) {
    if (args.positional.size() > macro.params.size())
        fail("macro '" + macro.text + "' takes not more than " + std::to_string(macro.params.size()) + " argument(s)");
    if (call_depth_ >= limits_.max_call_depth)
        fail("macro call depth limit reached (" + std::to_string(limits_.max_call_depth) + "): runaway recursion?");
    // A macro sees the template's top-level names and its own arguments.
    std::vector<Scope> saved = std::move(scopes_);
    scopes_.clear();
    scopes_.push_back(saved.front());
    scopes_.emplace_back();
    ++call_depth_;
    std::string text;
    try {
        for (size_t i = 0; i < macro.params.size(); ++i) {
            const MacroParam& p = macro.params[i];
            const Value* given = args.arg(i, p.name);
            if (given) assign(p.name, *given);
            else if (p.default_value) assign(p.name, eval(*p.default_value));
            else assign(p.name, Value::undefined("'" + p.name + "' is undefined"));
        }
        for (const auto& [name, value] : args.keyword) {
            bool declared = false;
            for (const MacroParam& p : macro.params) declared = declared || p.name == name;
            if (!declared && name != "caller") fail("macro '" + macro.text + "' takes no keyword argument '" + name + "'");
            if (!declared) assign(name, value);
        }
        text = capture(macro.body);
    } catch (...) {
        --call_depth_;
        scopes_ = std::move(saved);
        throw;
    }
    --call_depth_;
    scopes_ = std::move(saved);
    return Value::string(std::move(text));
}

Value Evaluator::call(const Value& function, const CallArgs& args) {
    if (function.is_undefined()) fail(function.undefined_hint().empty() ? "call of an undefined value" : function.undefined_hint());
    if (!function.is_callable()) fail("'" + function.type_name() + "' object is not callable");
    Value result = function.as_callable().function(*this, args);
    charge(result);
    return result;
}

// ---- expressions -----------------------------------------------------------

Value Evaluator::eval(const Expr& expr) {
    try {
        return eval_inner(expr);
    } catch (TemplateError& e) {
        if (!e.has_pos) {
            e.pos = expr.pos;
            e.has_pos = true;
        }
        throw;
    }
}

CallArgs Evaluator::eval_args(const Expr& expr) {
    CallArgs args;
    for (const auto& a : expr.args) args.positional.push_back(eval(*a));
    for (const auto& [name, e] : expr.kwargs) args.keyword.emplace_back(name, eval(*e));
    return args;
}

Value Evaluator::eval_inner(const Expr& expr) {
    switch (expr.kind) {
        case Expr::Kind::Literal: return expr.literal;
        case Expr::Kind::Name: return lookup(expr.name);
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
            Array items;
            for (const auto& a : expr.args) items.push_back(eval(*a));
            return Value::array(std::move(items), expr.kind == Expr::Kind::Tuple);
        }
        case Expr::Kind::Dict: {
            Object obj;
            for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
                Value key = eval(*expr.args[i]);
                if (!key.is_string()) fail("only string keys are supported in dict literals");
                obj.set(key.as_string(), eval(*expr.args[i + 1]));
            }
            return Value::object(std::move(obj));
        }
        case Expr::Kind::Attribute: return attribute(eval(*expr.target), expr.name);
        case Expr::Kind::Subscript: return subscript(eval(*expr.target), eval(*expr.args[0]));
        case Expr::Kind::Slice: return slice(eval(*expr.target), expr);
        case Expr::Kind::Call: {
            Value function = eval(*expr.target);
            return call(function, eval_args(expr));
        }
        case Expr::Kind::Filter: {
            Value input = eval(*expr.target);
            spend(units_of(input));
            Value result = apply_filter(*this, expr.name, input, eval_args(expr));
            charge(result);
            return result;
        }
        case Expr::Kind::Test: {
            Value input = eval(*expr.target);
            CallArgs args = eval_args(expr);
            spend(units_of(input));
            for (const Value& a : args.positional) spend(units_of(a));
            const bool passed = apply_test(*this, expr.name, input, args);
            return Value::boolean(passed != expr.negated);
        }
        case Expr::Kind::Unary: {
            Value operand = eval(*expr.args[0]);
            if (expr.name == "not") return Value::boolean(!operand.truthy());
            if (operand.is_undefined()) fail(operand.undefined_hint());
            if (operand.is_bool() || operand.is_int()) {
                if (expr.name == "-" && operand.as_int() == INT64_MIN) fail("integer overflow in unary -");
                return Value::integer(expr.name == "-" ? -operand.as_int() : operand.as_int());
            }
            if (operand.is_float()) return Value::number(expr.name == "-" ? -operand.as_double() : operand.as_double());
            fail("bad operand type for unary " + expr.name + ": '" + operand.type_name() + "'");
        }
        case Expr::Kind::Binary: return eval_binary(expr);
        case Expr::Kind::And: {
            Value left = eval(*expr.args[0]);
            return left.truthy() ? eval(*expr.args[1]) : left;
        }
        case Expr::Kind::Or: {
            Value left = eval(*expr.args[0]);
            return left.truthy() ? left : eval(*expr.args[1]);
        }
        case Expr::Kind::Conditional:
            if (eval(*expr.args[1]).truthy()) return eval(*expr.args[0]);
            if (expr.args[2]) return eval(*expr.args[2]);
            return Value::undefined("the inline if expression evaluated to false and no else section was defined");
    }
    fail("unsupported expression");
}

Value Evaluator::eval_binary(const Expr& expr) {
    Value left = eval(*expr.args[0]);
    Value right = eval(*expr.args[1]);
    spend(units_of(left) + units_of(right));
    Value result = apply_binary(expr.name, left, right);
    charge(result);
    return result;
}

Value Evaluator::attribute(const Value& object, const std::string& name) {
    if (object.is_undefined()) fail(object.undefined_hint().empty() ? "attribute '" + name + "' of an undefined value" : object.undefined_hint());
    if (object.is_object() || object.is_namespace()) {
        if (object.is_object()) {
            Value method = find_method(object, name);
            if (!method.is_undefined()) return method;
        }
        if (const Value* v = object.as_object().find(name)) return *v;
        return Value::undefined("'" + std::string(object.is_namespace() ? "Namespace" : "dict object") + "' has no attribute '" + name + "'");
    }
    Value method = find_method(object, name);
    if (!method.is_undefined()) {
        spend(units_of(object));  // str methods scan their receiver
        return method;
    }
    return Value::undefined("'" + object.type_name() + " object' has no attribute '" + name + "'");
}

Value Evaluator::subscript(const Value& object, const Value& key) {
    if (object.is_undefined()) fail(object.undefined_hint().empty() ? "subscript of an undefined value" : object.undefined_hint());
    if (object.is_object() || object.is_namespace()) {
        if (key.is_string()) {
            if (const Value* v = object.as_object().find(key.as_string())) return *v;
            if (object.is_object()) return attribute(object, key.as_string());
        }
        return Value::undefined("'dict object' has no attribute " + to_repr(key));
    }
    if ((object.is_array() || object.is_string()) && (key.is_int() || key.is_bool())) {
        int64_t index = key.as_int();
        if (object.is_array()) {
            const Array& items = object.as_array();
            const int64_t n = static_cast<int64_t>(items.size());
            if (index < 0) index += n;
            if (index < 0 || index >= n) return Value::undefined(object.type_name() + " object has no element " + std::to_string(key.as_int()));
            return items[static_cast<size_t>(index)];
        }
        spend(units_of(object));
        std::vector<std::string> chars = utf8_code_points(object.as_string());
        const int64_t n = static_cast<int64_t>(chars.size());
        if (index < 0) index += n;
        if (index < 0 || index >= n) return Value::undefined("str object has no element " + std::to_string(key.as_int()));
        return Value::string(chars[static_cast<size_t>(index)]);
    }
    if (key.is_string()) return attribute(object, key.as_string());
    return Value::undefined(object.type_name() + " object has no element " + to_repr(key));
}

Value Evaluator::slice(const Value& object, const Expr& expr) {
    if (object.is_undefined()) fail(object.undefined_hint().empty() ? "slice of an undefined value" : object.undefined_hint());
    int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
        if (!expr.args[static_cast<size_t>(k)]) continue;
        Value v = eval(*expr.args[static_cast<size_t>(k)]);
        if (v.is_none()) continue;
        if (!v.is_int() && !v.is_bool()) fail("slice indices must be integers or None");
        bounds[k] = v.as_int();
        given[k] = true;
    }
    const int64_t step = bounds[2];
    if (step == 0) fail("slice step cannot be zero");
    std::vector<std::string> chars;
    int64_t n = 0;
    spend(units_of(object));
    if (object.is_string()) {
        chars = utf8_code_points(object.as_string());
        n = static_cast<int64_t>(chars.size());
    } else if (object.is_array()) {
        n = static_cast<int64_t>(object.as_array().size());
    } else {
        fail("'" + object.type_name() + "' object is not subscriptable");
    }
    // Python's slice.indices().
    auto clamp = [&](int64_t v, bool present, int64_t fallback) {
        if (!present) return fallback;
        if (v < 0) v += n;
        if (step > 0) return std::min(std::max<int64_t>(v, 0), n);
        return std::min(std::max<int64_t>(v, -1), n - 1);
    };
    const int64_t start = clamp(bounds[0], given[0], step > 0 ? 0 : n - 1);
    const int64_t stop = clamp(bounds[1], given[1], step > 0 ? n : -1);
    Array items;
    std::string text;
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
        if (object.is_string()) text += chars[static_cast<size_t>(i)];
        else items.push_back(object.as_array()[static_cast<size_t>(i)]);
        if (__builtin_add_overflow(i, step, &i)) break;
    }
    if (object.is_string()) return Value::string(std::move(text));
    return Value::array(std::move(items), object.is_tuple());
}

}  // namespace folio::chat
