// Value construction, Python truthiness/equality/ordering, and the two ways a
// value becomes text: str() (what {{ x }} prints) and json.dumps (tojson).
#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace folio::chat {

void fail(std::string message) { throw TemplateError{std::move(message), {}, false}; }
void fail_at(SourcePos pos, std::string message) { throw TemplateError{std::move(message), pos, true}; }

const Value* Object::find(std::string_view key) const {
    for (const auto& [k, v] : entries)
        if (k == key) return &v;
    return nullptr;
}

void Object::set(std::string key, Value value) {
    for (auto& [k, v] : entries) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    entries.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::keyword_arg(std::string_view name) const {
    for (const auto& [k, v] : keyword)
        if (k == name) return &v;
    return nullptr;
}

const Value* CallArgs::arg(size_t index, std::string_view name) const {
    if (index < positional.size()) return &positional[index];
    return keyword_arg(name);
}

Value Value::undefined(std::string hint) {
    Value v;
    v.string_ = std::move(hint);
    return v;
}
Value Value::none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}
Value Value::boolean(bool b) {
    Value v;
    v.kind_ = Kind::Bool;
    v.bool_ = b;
    v.int_ = b ? 1 : 0;
    return v;
}
Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = Kind::Int;
    v.int_ = i;
    return v;
}
Value Value::number(double f) {
    Value v;
    v.kind_ = Kind::Float;
    v.float_ = f;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.kind_ = Kind::String;
    v.string_ = std::move(s);
    return v;
}
static uint32_t nesting_of(uint32_t deepest_child) {
    if (deepest_child + 1 > Value::kMaxDepth)
        fail("value nested more than " + std::to_string(Value::kMaxDepth) + " levels deep");
    return deepest_child + 1;
}

Value Value::array(Array items, bool tuple) {
    Value v;
    uint32_t deepest = 0;
    for (const Value& item : items) deepest = std::max(deepest, item.depth_);
    v.depth_ = nesting_of(deepest);
    v.kind_ = Kind::List;
    v.tuple_ = tuple;
    v.array_ = std::make_shared<const Array>(std::move(items));
    return v;
}
Value Value::object(Object obj) {
    Value v;
    uint32_t deepest = 0;
    for (const auto& entry : obj.entries) deepest = std::max(deepest, entry.second.depth_);
    v.depth_ = nesting_of(deepest);
    v.kind_ = Kind::Dict;
    v.object_ = std::make_shared<const Object>(std::move(obj));
    return v;
}
Value Value::new_namespace(Object attributes) {
    Value v;
    uint32_t deepest = 0;
    for (const auto& entry : attributes.entries) deepest = std::max(deepest, entry.second.depth_);
    v.depth_ = nesting_of(deepest);
    v.kind_ = Kind::Namespace;
    v.namespace_ = std::make_shared<Object>(std::move(attributes));
    return v;
}
Value Value::callable(std::string name, NativeFunction function) {
    Value v;
    v.kind_ = Kind::Function;
    v.callable_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(function)});
    return v;
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return bool_;
        case Kind::Int: return int_ != 0;
        case Kind::Float: return float_ != 0.0;
        case Kind::String: return !string_.empty();
        case Kind::List: return !array_->empty();
        case Kind::Dict: return !object_->entries.empty();
        case Kind::Namespace:
        case Kind::Function: return true;
    }
    return false;
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return tuple_ ? "tuple" : "list";
        case Kind::Dict: return "dict";
        case Kind::Namespace: return "Namespace";
        case Kind::Function: return "function";
    }
    return "object";
}

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() || a.is_bool()) {
        if (!(b.is_number() || b.is_bool())) return false;
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None: return true;
        case Value::Kind::String: return a.as_string() == b.as_string();
        case Value::Kind::List: {
            if (a.is_tuple() != b.is_tuple()) return false;
            const Array& x = a.as_array();
            const Array& y = b.as_array();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!values_equal(x[i], y[i])) return false;
            return true;
        }
        case Value::Kind::Dict: {
            const Object& x = a.as_object();
            const Object& y = b.as_object();
            if (x.entries.size() != y.entries.size()) return false;
            for (const auto& [k, v] : x.entries) {
                const Value* other = y.find(k);
                if (!other || !values_equal(v, *other)) return false;
            }
            return true;
        }
        case Value::Kind::Namespace: return &a.namespace_attributes() == &b.namespace_attributes();
        case Value::Kind::Function: return &a.as_callable() == &b.as_callable();
        default: return false;
    }
}

int compare_values(const Value& a, const Value& b) {
    const bool a_num = a.is_number() || a.is_bool();
    const bool b_num = b.is_number() || b.is_bool();
    if (a_num && b_num) {
        if (a.is_float() || b.is_float()) {
            const double x = a.as_double(), y = b.as_double();
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        // UTF-8 byte order is code point order, which is what Python compares.
        const int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_array() && b.is_array() && a.is_tuple() == b.is_tuple()) {
        const Array& x = a.as_array();
        const Array& y = b.as_array();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (values_equal(x[i], y[i])) continue;
            return compare_values(x[i], y[i]);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

std::string format_python_float(double f) {
    if (std::isnan(f)) return "nan";
    if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    // sci looks like "-1.2345e+02": split into sign, digits and exponent.
    std::string sign;
    if (!sci.empty() && sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (sci[i] != '.') digits += sci[i];
    const int exponent = std::stoi(sci.substr(e + 1));
    // Python's repr switches to exponent form outside 1e-4 <= |f| < 1e16.
    if (exponent < -4 || exponent >= 16) {
        std::string out = sign + digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp_buf;
    }
    std::string out;
    if (exponent < 0) {
        out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else {
        const size_t int_len = static_cast<size_t>(exponent) + 1;
        if (digits.size() <= int_len) {
            out = digits + std::string(int_len - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, int_len) + "." + digits.substr(int_len);
        }
    }
    return sign + out;
}

static std::string repr_string(const std::string& s) {
    const bool has_single = s.find('\'') != std::string::npos;
    const bool has_double = s.find('"') != std::string::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == quote) out += std::string("\\") + static_cast<char>(c);
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += static_cast<char>(c);
    }
    out += quote;
    return out;
}

static std::string display(const Value& value, int level);

static std::string repr(const Value& value, int level) {
    if (value.is_string()) return repr_string(value.as_string());
    if (value.is_undefined()) return "Undefined";
    return display(value, level);
}

std::string to_repr(const Value& value) { return repr(value, 0); }
std::string to_display_string(const Value& value) { return display(value, 0); }

static std::string display(const Value& value, int level) {
    // A namespace can be made to contain itself; stop instead of recursing forever.
    if (level > static_cast<int>(Value::kMaxDepth) + 8) fail("cannot print a value that contains itself");
    switch (value.kind()) {
        case Value::Kind::Undefined: return "";
        case Value::Kind::None: return "None";
        case Value::Kind::Bool: return value.as_bool() ? "True" : "False";
        case Value::Kind::Int: return std::to_string(value.as_int());
        case Value::Kind::Float: return format_python_float(value.as_double());
        case Value::Kind::String: return value.as_string();
        case Value::Kind::List: {
            const Array& items = value.as_array();
            std::string out = value.is_tuple() ? "(" : "[";
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += ", ";
                out += repr(items[i], level + 1);
                if (out.size() > kMaxBuiltBytes) fail("printed value too large");
            }
            if (value.is_tuple() && items.size() == 1) out += ",";
            return out + (value.is_tuple() ? ")" : "]");
        }
        case Value::Kind::Dict:
        case Value::Kind::Namespace: {
            std::string out = value.is_namespace() ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& [k, v] : value.as_object().entries) {
                if (!first) out += ", ";
                first = false;
                out += repr_string(k) + ": " + repr(v, level + 1);
                if (out.size() > kMaxBuiltBytes) fail("printed value too large");
            }
            return out + (value.is_namespace() ? "}>" : "}");
        }
        case Value::Kind::Function: return "<function " + value.as_callable().name + ">";
    }
    return "";
}

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        char buf[16];
        if (c < 0x20) {
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else if (c >= 0x80 && ensure_ascii) {
            // Decode one UTF-8 sequence and write it as \uXXXX (surrogate pair above the BMP).
            int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
            uint32_t cp = c & (0x3f >> extra);
            for (int k = 0; k < extra && i + 1 < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
            } else {
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            }
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
}

static void json_value(std::string& out, const Value& v, const JsonDumpOptions& o, int depth) {
    if (depth > 256) fail("tojson: value nested too deeply");
    if (out.size() > kMaxBuiltBytes) fail("tojson: result too large");
    auto newline = [&](int level) {
        if (o.indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(o.indent) * static_cast<size_t>(level), ' ');
    };
    switch (v.kind()) {
        case Value::Kind::None: out += "null"; return;
        case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Value::Kind::Int: out += std::to_string(v.as_int()); return;
        case Value::Kind::Float: {
            const double f = v.as_double();
            if (std::isnan(f)) out += "NaN";
            else if (std::isinf(f)) out += f > 0 ? "Infinity" : "-Infinity";
            else out += format_python_float(f);
            return;
        }
        case Value::Kind::String: json_string(out, v.as_string(), o.ensure_ascii); return;
        case Value::Kind::List: {
            const Array& items = v.as_array();
            if (items.empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += o.item_separator;
                newline(depth + 1);
                json_value(out, items[i], o, depth + 1);
            }
            newline(depth);
            out += ']';
            return;
        }
        case Value::Kind::Dict: {
            std::vector<const std::pair<std::string, Value>*> entries;
            for (const auto& e : v.as_object().entries) entries.push_back(&e);
            if (entries.empty()) {
                out += "{}";
                return;
            }
            if (o.sort_keys)
                std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
            out += '{';
            for (size_t i = 0; i < entries.size(); ++i) {
                if (i) out += o.item_separator;
                newline(depth + 1);
                json_string(out, entries[i]->first, o.ensure_ascii);
                out += o.key_separator;
                json_value(out, entries[i]->second, o, depth + 1);
            }
            newline(depth);
            out += '}';
            return;
        }
        default: fail("Object of type " + v.type_name() + " is not JSON serializable");
    }
}

std::string to_json(const Value& value, const JsonDumpOptions& options) {
    std::string out;
    json_value(out, value, options, 0);
    return out;
}

std::vector<std::string> utf8_code_points(std::string_view text) {
    std::vector<std::string> out;
    for (size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        n = std::min(n, text.size() - i);
        out.emplace_back(text.substr(i, n));
        i += n;
    }
    return out;
}

size_t utf8_length(std::string_view text) {
    size_t n = 0;
    for (unsigned char c : text)
        if ((c & 0xc0) != 0x80) ++n;
    return n;
}

}  // namespace folio::chat
