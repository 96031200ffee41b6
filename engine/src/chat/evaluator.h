// Walks the syntax tree and writes the rendered text, with jinja2's scoping
// (a for-loop iteration is its own scope; namespace() objects carry values
// out of it), Python value semantics, and hard limits so that a hostile or
// broken template ends in an error instead of a hang or an exhausted memory.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "folio/chat_template.h"
#include "chat/value.h"

namespace folio::chat {

using RenderLimits = ChatTemplateLimits;

class Evaluator {
public:
    // `variables` are what the template sees at top level (messages, bos_token, ...).
    Evaluator(Object variables, RenderLimits limits);
    ~Evaluator();
    Evaluator(const Evaluator&) = delete;
    Evaluator& operator=(const Evaluator&) = delete;

    // namespace(): the only mutable value, so the only one that can be made to
    // contain itself; the evaluator empties them all at the end to break such cycles.
    Value make_namespace(Object attributes);

    // Throws TemplateError.
    std::string render(const Body& body);

    Value call(const Value& function, const CallArgs& args);
    // Guards against a single string outgrowing the output cap.
    void check_size(size_t size) const;
    // Counts the bytes and elements built while rendering: a loop that grows a
    // string or list one piece at a time copies quadratically, and must end in
    // an error before it turns into a hang.
    void charge(const Value& result);
    // Work that reads (rather than builds) a value: scanning a list for `in`, a string for find().
    void spend(uint64_t units);
    static uint64_t units_of(const Value& value);
    const RenderLimits& limits() const { return limits_; }

private:
    enum class Flow { Normal, Break, Continue };
    using Scope = std::unordered_map<std::string, Value>;

    Object variables_;
    Object globals_;
    RenderLimits limits_;
    std::vector<Scope> scopes_;
    std::string out_;
    uint64_t loop_iterations_ = 0;
    uint64_t work_ = 0;
    std::vector<Value> namespaces_;
    int call_depth_ = 0;

    Flow exec_body(const Body& body);
    Flow exec(const Stmt& stmt);
    void exec_for(const Stmt& stmt);
    void exec_set(const Stmt& stmt);
    std::string capture(const Body& body);
    Value make_macro(const Stmt& stmt);
    Value invoke_macro(const Stmt& macro, const CallArgs& args);
    void write(const std::string& text);

    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value value);

    Value eval(const Expr& expr);
    Value eval_inner(const Expr& expr);
    Value eval_binary(const Expr& expr);
    CallArgs eval_args(const Expr& expr);
    Value attribute(const Value& object, const std::string& name);
    Value subscript(const Value& object, const Value& key);
    Value slice(const Value& object, const Expr& expr);
};

// Python iteration: list items, dict keys, string characters; undefined is empty.
Array iterate(const Value& value);

}  // namespace folio::chat
