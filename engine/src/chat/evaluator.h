// Walks the syntax tree and writes the rendered text, with jinja2's scoping
// (a for-loop iteration is its own scope; namespace() objects carry values
// out of it), Python value semantics, and hard limits so that a hostile or
// broken template ends in an error instead of a hang or an exhausted memory.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "chat/value.h"

namespace folio::chat {

struct RenderLimits {
    size_t max_output_bytes = 16u << 20;        // also caps every string and list built on the way
    uint64_t max_loop_iterations = 1'000'000;    // all loops of one render together
    int max_call_depth = 64;                     // nested macro calls
};

class Evaluator {
public:
    // `variables` are what the template sees at top level (messages, bos_token, ...).
    Evaluator(Object variables, RenderLimits limits);

    // Throws TemplateError.
    std::string render(const Body& body);

    Value call(const Value& function, const CallArgs& args);
    // Guards against a single value outgrowing the output cap.
    void check_size(size_t size) const;
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
