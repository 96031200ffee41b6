// Methods on str and dict values (`message.content.strip()`,
// `message.get('tool_calls')`) and the global functions transformers puts
// in a chat template's environment. Nothing here mutates a value: jinja2's
// ImmutableSandboxedEnvironment forbids list.append and dict.update too.
#include <chrono>
#include <ctime>

#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/strings.h"

namespace folio::chat {
namespace {

std::string string_arg(const CallArgs& args, size_t index, std::string_view name, std::string_view method) {
    const Value* v = args.arg(index, name);
    if (!v || !v->is_string()) fail(std::string(method) + "() argument '" + std::string(name) + "' must be a string");
    return v->as_string();
}

std::optional<std::string> optional_string(const CallArgs& args, size_t index, std::string_view name) {
    const Value* v = args.arg(index, name);
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_string()) fail("argument '" + std::string(name) + "' must be a string or None");
    return v->as_string();
}

int64_t optional_int(const CallArgs& args, size_t index, std::string_view name, int64_t fallback) {
    const Value* v = args.arg(index, name);
    if (!v || v->is_none()) return fallback;
    if (!v->is_int()) fail("argument '" + std::string(name) + "' must be an integer");
    return v->as_int();
}

bool affix_matches(const std::string& text, const Value& affix, bool prefix) {
    auto one = [&](const Value& a) {
        if (!a.is_string()) fail(std::string(prefix ? "startswith" : "endswith") + "() argument must be str or a tuple of str");
        const std::string& s = a.as_string();
        if (s.size() > text.size()) return false;
        return prefix ? text.compare(0, s.size(), s) == 0 : text.compare(text.size() - s.size(), s.size(), s) == 0;
    };
    if (affix.is_array()) {
        for (const Value& a : affix.as_array())
            if (one(a)) return true;
        return false;
    }
    return one(affix);
}

// str.format with automatic ({}), numbered ({0}) and named ({name}) fields; no format specs.
std::string python_format(const std::string& pattern, const CallArgs& args) {
    std::string out;
    size_t automatic = 0;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '}' ) {
            if (i + 1 < pattern.size() && pattern[i + 1] == '}') ++i;
            else fail("single '}' encountered in format string");
            out += '}';
            continue;
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        const size_t close = pattern.find('}', i);
        if (close == std::string::npos) fail("single '{' encountered in format string");
        const std::string field = pattern.substr(i + 1, close - i - 1);
        if (field.find_first_of(":!") != std::string::npos) fail("format specifications in str.format are not supported");
        const Value* v = nullptr;
        if (field.empty()) {
            v = automatic < args.positional.size() ? &args.positional[automatic] : nullptr;
            ++automatic;
        } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
            const size_t index = std::stoul(field);
            v = index < args.positional.size() ? &args.positional[index] : nullptr;
        } else {
            v = args.keyword_arg(field);
        }
        if (!v) fail("str.format: no value for field '{" + field + "}'");
        out += to_display_string(*v);
        if (out.size() > kMaxBuiltBytes) fail("str.format result too large");
        i = close;
    }
    return out;
}

Value string_method(const Value& self, std::string_view name, const CallArgs& args) {
    const std::string& s = self.as_string();
    if (name == "strip") return Value::string(strip(s, optional_string(args, 0, "chars"), StripSide::Both));
    if (name == "lstrip") return Value::string(strip(s, optional_string(args, 0, "chars"), StripSide::Left));
    if (name == "rstrip") return Value::string(strip(s, optional_string(args, 0, "chars"), StripSide::Right));
    if (name == "upper") return Value::string(to_upper(s));
    if (name == "lower") return Value::string(to_lower(s));
    if (name == "title") return Value::string(to_title(s));
    if (name == "capitalize") return Value::string(capitalize(s));
    if (name == "split") {
        std::optional<std::string> sep = optional_string(args, 0, "sep");
        if (sep && sep->empty()) fail("empty separator");
        Array parts;
        for (auto& p : split(s, sep, optional_int(args, 1, "maxsplit", -1))) parts.push_back(Value::string(std::move(p)));
        return Value::array(std::move(parts));
    }
    if (name == "splitlines") {
        Array lines;
        for (auto& l : split_lines(s)) lines.push_back(Value::string(std::move(l)));
        return Value::array(std::move(lines));
    }
    if (name == "startswith" || name == "endswith") {
        if (args.positional.empty()) fail(std::string(name) + "() takes at least 1 argument");
        return Value::boolean(affix_matches(s, args.positional[0], name == "startswith"));
    }
    if (name == "replace")
        return Value::string(replace_all(s, string_arg(args, 0, "old", name), string_arg(args, 1, "new", name), optional_int(args, 2, "count", -1)));
    if (name == "find" || name == "rfind") {
        const std::string sub = string_arg(args, 0, "sub", name);
        const size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
        return Value::integer(at == std::string::npos ? -1 : static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, at))));
    }
    if (name == "count") {
        const std::string sub = string_arg(args, 0, "sub", name);
        if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s) + 1));
        int64_t n = 0;
        for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
        return Value::integer(n);
    }
    if (name == "join") {
        if (args.positional.empty()) fail("join() takes exactly one argument");
        std::string out;
        bool first = true;
        for (const Value& item : iterate(args.positional[0])) {
            if (!item.is_string()) fail("sequence item: expected str instance, " + item.type_name() + " found");
            if (!first) out += s;
            first = false;
            out += item.as_string();
            if (out.size() > kMaxBuiltBytes) fail("str.join result too large");
        }
        return Value::string(std::move(out));
    }
    if (name == "format") return Value::string(python_format(s, args));
    if (name == "removeprefix" || name == "removesuffix") {
        const std::string affix = string_arg(args, 0, "affix", name);
        if (affix_matches(s, Value::string(affix), name == "removeprefix"))
            return Value::string(name == "removeprefix" ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size()));
        return self;
    }
    auto all_of = [&](auto predicate) {
        if (s.empty()) return Value::boolean(false);
        for (char c : s)
            if (!predicate(static_cast<unsigned char>(c))) return Value::boolean(false);
        return Value::boolean(true);
    };
    if (name == "isdigit") return all_of([](unsigned char c) { return std::isdigit(c) != 0; });
    if (name == "isalpha") return all_of([](unsigned char c) { return std::isalpha(c) != 0; });
    if (name == "isalnum") return all_of([](unsigned char c) { return std::isalnum(c) != 0; });
    if (name == "isspace") return all_of([](unsigned char c) { return is_python_space(static_cast<char>(c)); });
    if (name == "islower") return Value::boolean(to_lower(s) == s && to_upper(s) != s);
    if (name == "isupper") return Value::boolean(to_upper(s) == s && to_lower(s) != s);
    fail("'str' object has no method '" + std::string(name) + "'");
}

Value dict_method(const Value& self, std::string_view name, const CallArgs& args) {
    const Object& obj = self.as_object();
    if (name == "items") {
        Array pairs;
        for (const auto& [k, v] : obj.entries) pairs.push_back(Value::array({Value::string(k), v}, true));
        return Value::array(std::move(pairs));
    }
    if (name == "keys") {
        Array keys;
        for (const auto& entry : obj.entries) keys.push_back(Value::string(entry.first));
        return Value::array(std::move(keys));
    }
    if (name == "values") {
        Array values;
        for (const auto& entry : obj.entries) values.push_back(entry.second);
        return Value::array(std::move(values));
    }
    if (name == "get") {
        if (args.positional.empty()) fail("get expected at least 1 argument, got 0");
        const Value& key = args.positional[0];
        if (key.is_string())
            if (const Value* v = obj.find(key.as_string())) return *v;
        return args.positional.size() > 1 ? args.positional[1] : Value::none();
    }
    fail("'dict' object has no method '" + std::string(name) + "'");
}

bool is_string_method(std::string_view n) {
    static const std::string_view names[] = {
        "strip", "lstrip", "rstrip", "upper", "lower", "title", "capitalize", "split", "splitlines", "startswith",
        "endswith", "replace", "find", "rfind", "count", "join", "format", "removeprefix", "removesuffix",
        "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper"};
    for (std::string_view name : names)
        if (name == n) return true;
    return false;
}

bool is_dict_method(std::string_view n) { return n == "items" || n == "keys" || n == "values" || n == "get"; }

Value make_range(Evaluator&, const CallArgs& args) {
    int64_t bounds[3] = {0, 0, 1};
    if (args.positional.empty() || args.positional.size() > 3) fail("range expected 1 to 3 integer arguments");
    for (const Value& v : args.positional)
        if (!v.is_int() && !v.is_bool()) fail("'" + v.type_name() + "' object cannot be interpreted as an integer");
    if (args.positional.size() == 1) {
        bounds[1] = args.positional[0].as_int();
    } else {
        bounds[0] = args.positional[0].as_int();
        bounds[1] = args.positional[1].as_int();
        if (args.positional.size() == 3) bounds[2] = args.positional[2].as_int();
    }
    const int64_t start = bounds[0], stop = bounds[1], step = bounds[2];
    if (step == 0) fail("range() arg 3 must not be zero");
    // The same cap jinja2's sandbox puts on range(); checked in floating point so
    // extreme bounds cannot overflow.
    const double span = (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
    if (span > 100000.0) fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    Array items;
    for (int64_t v = start; step > 0 ? v < stop : v > stop;) {
        items.push_back(Value::integer(v));
        if (__builtin_add_overflow(v, step, &v)) break;
    }
    return Value::array(std::move(items));
}

Object object_from_args(const CallArgs& args, std::string_view function) {
    Object obj;
    if (args.positional.size() > 1) fail(std::string(function) + "() takes at most one positional argument");
    if (!args.positional.empty()) {
        if (!args.positional[0].is_object()) fail(std::string(function) + "() positional argument must be a dict");
        obj = args.positional[0].as_object();
    }
    for (const auto& [k, v] : args.keyword) obj.set(k, v);
    return obj;
}

}  // namespace

Value find_method(const Value& value, std::string_view name) {
    if (value.is_string() && is_string_method(name)) {
        return Value::callable("str." + std::string(name), [value, method = std::string(name)](Evaluator&, const CallArgs& args) {
            return string_method(value, method, args);
        });
    }
    if (value.is_object() && is_dict_method(name)) {
        return Value::callable("dict." + std::string(name), [value, method = std::string(name)](Evaluator&, const CallArgs& args) {
            return dict_method(value, method, args);
        });
    }
    return Value::undefined();
}

Object global_functions() {
    Object g;
    g.set("range", Value::callable("range", make_range));
    g.set("raise_exception", Value::callable("raise_exception", [](Evaluator&, const CallArgs& args) -> Value {
              fail(args.positional.empty() ? std::string("raise_exception() called") : to_display_string(args.positional[0]));
          }));
    g.set("namespace", Value::callable("namespace", [](Evaluator& ev, const CallArgs& args) {
              Object attributes = object_from_args(args, "namespace");
              for (const auto& entry : attributes.entries)
                  if (!entry.first.empty() && entry.first[0] == '_')
                      fail("chat templates cannot store underscore-prefixed attributes on a namespace");
              return ev.make_namespace(std::move(attributes));
          }));
    g.set("dict", Value::callable("dict", [](Evaluator&, const CallArgs& args) { return Value::object(object_from_args(args, "dict")); }));
    g.set("strftime_now", Value::callable("strftime_now", [](Evaluator&, const CallArgs& args) {
              if (args.positional.empty() || !args.positional[0].is_string()) fail("strftime_now() needs a format string");
              const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
              std::tm local{};
#ifdef _WIN32
              localtime_s(&local, &now);
#else
              localtime_r(&now, &local);
#endif
              char buf[256];
              const size_t n = std::strftime(buf, sizeof buf, args.positional[0].as_string().c_str(), &local);
              return Value::string(std::string(buf, n));
          }));
    return g;
}

}  // namespace folio::chat
