// The values a chat template computes with, shaped like the Python objects
// jinja2 sees when transformers renders a template: None, bool, int, float,
// str, list/tuple, dict (insertion-ordered), namespace, callables, and
// jinja2's Undefined. Containers are shared and immutable (the sandbox jinja2
// runs in forbids mutation); only a namespace can be assigned to.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace folio::chat {

struct SourcePos {
    int line = 1;
    int column = 1;
};

// Raised inside the interpreter and turned into a folio::Error at the API
// boundary; never escapes the chat library.
struct TemplateError {
    std::string message;
    SourcePos pos;
    bool has_pos = false;
};

// No single string the interpreter builds (printed value, JSON, replace,
// indent) may exceed this, whatever the render limits say: a guard against
// allocating gigabytes before the output cap gets a chance to look.
constexpr size_t kMaxBuiltBytes = size_t{64} << 20;

[[noreturn]] void fail(std::string message);
[[noreturn]] void fail_at(SourcePos pos, std::string message);

class Value;
class Evaluator;
using Array = std::vector<Value>;

struct Object {
    std::vector<std::pair<std::string, Value>> entries;  // insertion order, like a Python dict

    const Value* find(std::string_view key) const;
    void set(std::string key, Value value);
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;

    const Value* keyword_arg(std::string_view name) const;
    // The argument at `index`, or the keyword `name`, or nullptr.
    const Value* arg(size_t index, std::string_view name) const;
};

using NativeFunction = std::function<Value(Evaluator&, const CallArgs&)>;

struct Callable {
    std::string name;
    NativeFunction function;
};

class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

    Value() = default;  // undefined
    static Value undefined(std::string hint = {});
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double f);
    static Value string(std::string s);
    static Value array(Array items, bool tuple = false);
    static Value object(Object obj);
    static Value new_namespace(Object attributes);
    static Value callable(std::string name, NativeFunction function);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_array() const { return kind_ == Kind::List; }
    bool is_tuple() const { return kind_ == Kind::List && tuple_; }
    bool is_object() const { return kind_ == Kind::Dict; }
    bool is_namespace() const { return kind_ == Kind::Namespace; }
    bool is_callable() const { return kind_ == Kind::Function; }

    bool as_bool() const { return bool_; }
    int64_t as_int() const { return int_; }
    double as_double() const { return kind_ == Kind::Int ? static_cast<double>(int_) : float_; }
    const std::string& as_string() const { return string_; }
    const Array& as_array() const { return *array_; }
    const Object& as_object() const { return kind_ == Kind::Namespace ? *namespace_ : *object_; }
    Object& namespace_attributes() const { return *namespace_; }
    const Callable& as_callable() const { return *callable_; }
    // For undefined values: what was missing, for error messages ("'x' is undefined").
    const std::string& undefined_hint() const { return string_; }

    // Levels of containers below this value (0 for scalars). Capped so that
    // printing, comparing and destroying a value can never exhaust the stack.
    uint32_t depth() const { return depth_; }
    static constexpr uint32_t kMaxDepth = 512;

    bool truthy() const;
    // Python's type name, for error messages: "str", "int", "dict", ...
    std::string type_name() const;

private:
    Kind kind_ = Kind::Undefined;
    bool bool_ = false;
    bool tuple_ = false;
    uint32_t depth_ = 0;
    int64_t int_ = 0;
    double float_ = 0.0;
    std::string string_;
    std::shared_ptr<const Array> array_;
    std::shared_ptr<const Object> object_;
    std::shared_ptr<Object> namespace_;
    std::shared_ptr<const Callable> callable_;
};

// Python's == between values (1 == 1.0 == True).
bool values_equal(const Value& a, const Value& b);
// Python's <, or an error for unorderable types. Returns -1, 0, 1.
int compare_values(const Value& a, const Value& b);

// Python's binary operators as jinja2 applies them: + - * / // % ** ~, the
// comparisons, "in" and "not in".
Value apply_binary(std::string_view op, const Value& left, const Value& right);

// str(value) as Python prints it into the output.
std::string to_display_string(const Value& value);
// repr(value): strings quoted the way Python quotes them.
std::string to_repr(const Value& value);
// Python's repr of a float: shortest round-trip digits, "1.0", "1e+20".
std::string format_python_float(double f);

struct JsonDumpOptions {
    int indent = -1;  // < 0: single line
    std::string item_separator;
    std::string key_separator;
    bool sort_keys = false;
    bool ensure_ascii = false;
};
// json.dumps(value, ...) with Python's formatting.
std::string to_json(const Value& value, const JsonDumpOptions& options);

// Text is UTF-8; Python indexes strings by code point.
std::vector<std::string> utf8_code_points(std::string_view text);
size_t utf8_length(std::string_view text);

}  // namespace folio::chat
