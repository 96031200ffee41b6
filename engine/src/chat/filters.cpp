// jinja2's built-in filters that chat templates use, plus transformers'
// own tojson (json.dumps with ensure_ascii=False, no HTML escaping).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/strings.h"

namespace folio::chat {
namespace {

using FilterFn = Value (*)(Evaluator&, const Value&, const CallArgs&);

std::string text_of(const Value& v) { return to_display_string(v); }

const Value& arg_or(const CallArgs& args, size_t index, std::string_view name, const Value& fallback) {
    const Value* v = args.arg(index, name);
    return v ? *v : fallback;
}

int64_t int_arg(const CallArgs& args, size_t index, std::string_view name, int64_t fallback) {
    const Value* v = args.arg(index, name);
    if (!v || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool()) fail("argument '" + std::string(name) + "' must be an integer, not " + v->type_name());
    return v->as_int();
}

bool bool_arg(const CallArgs& args, size_t index, std::string_view name, bool fallback) {
    const Value* v = args.arg(index, name);
    return v ? v->truthy() : fallback;
}

// Dotted attribute path ("a.b" or "0") as jinja2's make_attrgetter follows it.
Value attribute_path(const Value& item, const std::string& path) {
    Value current = item;
    size_t start = 0;
    for (;;) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (current.is_object() || current.is_namespace()) {
            const Value* v = current.as_object().find(part);
            current = v ? *v : Value::undefined("'dict object' has no attribute '" + part + "'");
        } else if (current.is_array() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
            const size_t index = std::stoul(part);
            current = index < current.as_array().size() ? current.as_array()[index] : Value::undefined();
        } else {
            current = Value::undefined("'" + current.type_name() + " object' has no attribute '" + part + "'");
        }
        if (dot == std::string::npos) return current;
        start = dot + 1;
    }
}

std::string attribute_name(const Value& v) {
    if (v.is_int()) return std::to_string(v.as_int());
    if (!v.is_string()) fail("attribute name must be a string");
    return v.as_string();
}

// Sort key comparison: strings compare case-insensitively unless asked not to.
int compare_keys(const Value& a, const Value& b, bool case_sensitive) {
    if (!case_sensitive && a.is_string() && b.is_string())
        return compare_values(Value::string(to_lower(a.as_string())), Value::string(to_lower(b.as_string())));
    return compare_values(a, b);
}

size_t length_of(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return 0;
        case Value::Kind::String: return utf8_length(v.as_string());
        case Value::Kind::List: return v.as_array().size();
        case Value::Kind::Dict: return v.as_object().entries.size();
        default: fail("object of type '" + v.type_name() + "' has no len()");
    }
}

Value f_length(Evaluator&, const Value& v, const CallArgs&) { return Value::integer(static_cast<int64_t>(length_of(v))); }

Value f_trim(Evaluator&, const Value& v, const CallArgs& args) {
    const Value* chars = args.arg(0, "chars");
    std::optional<std::string> set;
    if (chars && !chars->is_none()) set = text_of(*chars);
    return Value::string(strip(text_of(v), set, StripSide::Both));
}

Value f_upper(Evaluator&, const Value& v, const CallArgs&) { return Value::string(to_upper(text_of(v))); }
Value f_lower(Evaluator&, const Value& v, const CallArgs&) { return Value::string(to_lower(text_of(v))); }
Value f_title(Evaluator&, const Value& v, const CallArgs&) { return Value::string(to_title(text_of(v))); }
Value f_capitalize(Evaluator&, const Value& v, const CallArgs&) { return Value::string(capitalize(text_of(v))); }
Value f_string(Evaluator&, const Value& v, const CallArgs&) { return Value::string(text_of(v)); }
Value f_safe(Evaluator&, const Value& v, const CallArgs&) { return v.is_string() ? v : Value::string(text_of(v)); }
Value f_escape(Evaluator&, const Value& v, const CallArgs&) { return Value::string(html_escape(text_of(v))); }

Value f_tojson(Evaluator&, const Value& v, const CallArgs& args) {
    // transformers' signature: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    JsonDumpOptions options;
    options.ensure_ascii = bool_arg(args, 0, "ensure_ascii", false);
    options.indent = static_cast<int>(std::clamp<int64_t>(int_arg(args, 1, "indent", -1), -1, 64));
    options.item_separator = options.indent >= 0 ? "," : ", ";
    options.key_separator = ": ";
    if (const Value* seps = args.arg(2, "separators"); seps && !seps->is_none()) {
        if (!seps->is_array() || seps->as_array().size() != 2 || !seps->as_array()[0].is_string() || !seps->as_array()[1].is_string())
            fail("tojson: separators must be a pair of strings");
        options.item_separator = seps->as_array()[0].as_string();
        options.key_separator = seps->as_array()[1].as_string();
    }
    options.sort_keys = bool_arg(args, 3, "sort_keys", false);
    return Value::string(to_json(v, options));
}

Value f_default(Evaluator&, const Value& v, const CallArgs& args) {
    static const Value empty = Value::string("");
    const bool boolean = bool_arg(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return arg_or(args, 0, "default_value", empty);
    return v;
}

Value f_first(Evaluator&, const Value& v, const CallArgs&) {
    Array items = iterate(v);
    return items.empty() ? Value::undefined("no first item, sequence was empty") : items.front();
}

Value f_last(Evaluator&, const Value& v, const CallArgs&) {
    Array items = iterate(v);
    return items.empty() ? Value::undefined("no last item, sequence was empty") : items.back();
}

Value f_join(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Value* separator = args.arg(0, "d");
    const Value* attribute = args.arg(1, "attribute");
    const std::string sep = separator ? text_of(*separator) : "";
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += text_of(attribute ? attribute_path(item, attribute_name(*attribute)) : item);
        ev.check_size(out.size());
    }
    return Value::string(std::move(out));
}

Value f_replace(Evaluator&, const Value& v, const CallArgs& args) {
    const Value* from = args.arg(0, "old");
    const Value* to = args.arg(1, "new");
    if (!from || !to) fail("replace() needs the old and the new string");
    return Value::string(replace_all(text_of(v), text_of(*from), text_of(*to), int_arg(args, 2, "count", -1)));
}

// Python's int(float); our ints are 64-bit where Python's are unbounded.
Value integer_from_double(double d) {
    if (!(d > -9.2e18 && d < 9.2e18)) fail("integer too large for the template interpreter");
    return Value::integer(static_cast<int64_t>(d));
}

Value f_int(Evaluator&, const Value& v, const CallArgs& args) {
    static const Value zero = Value::integer(0);
    const Value& fallback = arg_or(args, 0, "default", zero);
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    if (v.is_float()) return std::isfinite(v.as_double()) ? integer_from_double(v.as_double()) : fallback;
    if (v.is_string()) {
        const std::string s = strip(v.as_string(), std::nullopt, StripSide::Both);
        char* end = nullptr;
        errno = 0;
        const long long parsed = std::strtoll(s.c_str(), &end, static_cast<int>(std::clamp<int64_t>(int_arg(args, 1, "base", 10), 0, 36)));
        if (!s.empty() && end == s.c_str() + s.size()) {
            if (errno == ERANGE) fail("integer too large for the template interpreter");
            return Value::integer(parsed);
        }
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d)) return integer_from_double(d);
    }
    return fallback;
}

Value f_float(Evaluator&, const Value& v, const CallArgs& args) {
    static const Value zero = Value::number(0.0);
    const Value& fallback = arg_or(args, 0, "default", zero);
    if (v.is_number() || v.is_bool()) return Value::number(v.as_double());
    if (v.is_string()) {
        const std::string s = strip(v.as_string(), std::nullopt, StripSide::Both);
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size()) return Value::number(d);
    }
    return fallback;
}

Value f_list(Evaluator&, const Value& v, const CallArgs&) { return Value::array(iterate(v)); }

Value f_items(Evaluator&, const Value& v, const CallArgs&) {
    if (v.is_undefined()) return Value::array({});
    if (!v.is_object()) fail("can only get item pairs from a mapping, not " + v.type_name());
    Array pairs;
    for (const auto& [k, item] : v.as_object().entries) pairs.push_back(Value::array({Value::string(k), item}, true));
    return Value::array(std::move(pairs));
}

Value f_dictsort(Evaluator&, const Value& v, const CallArgs& args) {
    if (!v.is_object()) fail("dictsort expects a mapping, not " + v.type_name());
    const bool case_sensitive = bool_arg(args, 0, "case_sensitive", false);
    const bool by_value = args.arg(1, "by") && text_of(*args.arg(1, "by")) == "value";
    const bool reverse = bool_arg(args, 2, "reverse", false);
    Array pairs;
    for (const auto& [k, item] : v.as_object().entries) pairs.push_back(Value::array({Value::string(k), item}, true));
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
        const size_t i = by_value ? 1 : 0;
        const int c = compare_keys(a.as_array()[i], b.as_array()[i], case_sensitive);
        return reverse ? c > 0 : c < 0;
    });
    return Value::array(std::move(pairs));
}

Value f_reverse(Evaluator&, const Value& v, const CallArgs&) {
    if (v.is_string()) {
        std::vector<std::string> chars = utf8_code_points(v.as_string());
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
        return Value::string(std::move(out));
    }
    Array items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
}

Value f_sort(Evaluator&, const Value& v, const CallArgs& args) {
    const bool reverse = bool_arg(args, 0, "reverse", false);
    const bool case_sensitive = bool_arg(args, 1, "case_sensitive", false);
    const Value* attribute = args.arg(2, "attribute");
    Array items = iterate(v);
    auto key = [&](const Value& item) { return attribute ? attribute_path(item, attribute_name(*attribute)) : item; };
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
        const int c = compare_keys(key(a), key(b), case_sensitive);
        return reverse ? c > 0 : c < 0;
    });
    return Value::array(std::move(items));
}

Value f_unique(Evaluator& ev, const Value& v, const CallArgs& args) {
    const bool case_sensitive = bool_arg(args, 0, "case_sensitive", false);
    const Value* attribute = args.arg(1, "attribute");
    Array out, seen;
    for (const Value& item : iterate(v)) {
        Value key = attribute ? attribute_path(item, attribute_name(*attribute)) : item;
        if (!case_sensitive && key.is_string()) key = Value::string(to_lower(key.as_string()));
        bool duplicate = false;
        ev.spend(seen.size());
        for (const Value& s : seen) duplicate = duplicate || values_equal(s, key);
        if (duplicate) continue;
        seen.push_back(key);
        out.push_back(item);
    }
    return Value::array(std::move(out));
}

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Value select_items(Evaluator& ev, const Value& v, const CallArgs& args, bool by_attribute, bool keep_matches) {
    size_t next = 0;
    std::string attribute;
    if (by_attribute) {
        if (args.positional.empty()) fail("selectattr/rejectattr need an attribute name");
        attribute = attribute_name(args.positional[next++]);
    }
    std::string test;
    CallArgs test_args;
    if (next < args.positional.size()) {
        test = text_of(args.positional[next++]);
        if (!is_known_test(test)) fail("no test named '" + test + "'");
        test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
        test_args.keyword = args.keyword;
    }
    Array out;
    for (const Value& item : iterate(v)) {
        const Value subject = by_attribute ? attribute_path(item, attribute) : item;
        const bool passed = test.empty() ? subject.truthy() : apply_test(ev, test, subject, test_args);
        if (passed == keep_matches) out.push_back(item);
    }
    return Value::array(std::move(out));
}
Value f_select(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, false, true); }
Value f_reject(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, false, false); }
Value f_selectattr(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, true, true); }
Value f_rejectattr(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, true, false); }

Value f_map(Evaluator& ev, const Value& v, const CallArgs& args) {
    Array out;
    if (const Value* attribute = args.keyword_arg("attribute")) {
        const Value* fallback = args.keyword_arg("default");
        for (const Value& item : iterate(v)) {
            Value mapped = attribute_path(item, attribute_name(*attribute));
            out.push_back(mapped.is_undefined() && fallback ? *fallback : mapped);
        }
        return Value::array(std::move(out));
    }
    if (args.positional.empty()) fail("map() needs a filter name or attribute=");
    const std::string filter = text_of(args.positional[0]);
    if (!is_known_filter(filter)) fail("no filter named '" + filter + "'");
    CallArgs filter_args;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.keyword = args.keyword;
    for (const Value& item : iterate(v)) out.push_back(apply_filter(ev, filter, item, filter_args));
    return Value::array(std::move(out));
}

Value f_indent(Evaluator&, const Value& v, const CallArgs& args) {
    const Value* width = args.arg(0, "width");
    const std::string indention = width && width->is_string() ? width->as_string() : std::string(static_cast<size_t>(std::clamp<int64_t>(int_arg(args, 0, "width", 4), 0, 256)), ' ');
    const bool first = bool_arg(args, 1, "first", false);
    const bool blank = bool_arg(args, 2, "blank", false);
    // jinja2 appends a newline before splitting, so a trailing newline is not indented.
    std::vector<std::string> lines = split_lines(text_of(v) + "\n");
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) {
            out += "\n";
            if (blank || !lines[i].empty()) out += indention;
        }
        out += lines[i];
        if (out.size() > kMaxBuiltBytes) fail("indent() result too large");
    }
    if (first) out = indention + out;
    return Value::string(std::move(out));
}

Value f_abs(Evaluator&, const Value& v, const CallArgs&) {
    if (v.is_int() || v.is_bool()) {
        if (v.as_int() == INT64_MIN) fail("integer overflow in abs()");
        return Value::integer(std::llabs(v.as_int()));
    }
    if (v.is_float()) return Value::number(std::fabs(v.as_double()));
    fail("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Evaluator&, const Value& v, const CallArgs& args) {
    if (!v.is_number() && !v.is_bool()) fail("round() needs a number, not " + v.type_name());
    const int64_t precision = std::clamp<int64_t>(int_arg(args, 0, "precision", 0), -15, 15);
    const std::string method = args.arg(1, "method") ? text_of(*args.arg(1, "method")) : "common";
    if ((v.is_int() || v.is_bool()) && precision >= 0 && args.arg(1, "method") == nullptr) return Value::integer(v.as_int());
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_double() * scale;
    const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);  // Python rounds half to even
    return Value::number(r / scale);
}

Value f_sum(Evaluator&, const Value& v, const CallArgs& args) {
    const Value* attribute = args.arg(0, "attribute");
    Value total = args.arg(1, "start") ? *args.arg(1, "start") : Value::integer(0);
    for (const Value& item : iterate(v)) total = apply_binary("+", total, attribute ? attribute_path(item, attribute_name(*attribute)) : item);
    return total;
}

Value extreme(const Value& v, const CallArgs& args, bool want_max) {
    const bool case_sensitive = bool_arg(args, 0, "case_sensitive", false);
    const Value* attribute = args.arg(1, "attribute");
    Array items = iterate(v);
    if (items.empty()) return Value::undefined("no largest/smallest item, sequence was empty");
    auto key = [&](const Value& item) { return attribute ? attribute_path(item, attribute_name(*attribute)) : item; };
    Value best = items[0];
    for (const Value& item : items) {
        const int c = compare_keys(key(item), key(best), case_sensitive);
        if (want_max ? c > 0 : c < 0) best = item;
    }
    return best;
}
Value f_max(Evaluator&, const Value& v, const CallArgs& a) { return extreme(v, a, true); }
Value f_min(Evaluator&, const Value& v, const CallArgs& a) { return extreme(v, a, false); }

Value f_wordcount(Evaluator&, const Value& v, const CallArgs&) {
    return Value::integer(static_cast<int64_t>(split(text_of(v), std::nullopt).size()));
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
    static const std::unordered_map<std::string_view, FilterFn> table = {
        {"abs", f_abs}, {"capitalize", f_capitalize}, {"count", f_length}, {"d", f_default}, {"default", f_default},
        {"dictsort", f_dictsort}, {"e", f_escape}, {"escape", f_escape}, {"first", f_first}, {"float", f_float},
        {"forceescape", f_escape}, {"indent", f_indent}, {"int", f_int}, {"items", f_items}, {"join", f_join},
        {"last", f_last}, {"length", f_length}, {"list", f_list}, {"lower", f_lower}, {"map", f_map}, {"max", f_max},
        {"min", f_min}, {"reject", f_reject}, {"rejectattr", f_rejectattr}, {"replace", f_replace},
        {"reverse", f_reverse}, {"round", f_round}, {"safe", f_safe}, {"select", f_select},
        {"selectattr", f_selectattr}, {"sort", f_sort}, {"string", f_string}, {"sum", f_sum}, {"title", f_title},
        {"tojson", f_tojson}, {"trim", f_trim}, {"unique", f_unique}, {"upper", f_upper}, {"wordcount", f_wordcount},
    };
    return table;
}

}  // namespace

bool is_known_filter(std::string_view name) { return filters().count(name) != 0; }

Value apply_filter(Evaluator& evaluator, std::string_view name, const Value& value, const CallArgs& args) {
    auto it = filters().find(name);
    if (it == filters().end()) fail("no filter named '" + std::string(name) + "'");
    return it->second(evaluator, value, args);
}

}  // namespace folio::chat
