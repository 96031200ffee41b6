// jinja2's tests: the right-hand side of `value is name(args)`.
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/strings.h"

namespace folio::chat {
namespace {

using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& first_arg(const CallArgs& args, std::string_view test) {
    if (args.positional.empty()) fail("test '" + std::string(test) + "' needs an argument");
    return args.positional[0];
}

bool t_defined(const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, const CallArgs&) { return v.is_undefined(); }
bool t_none(const Value& v, const CallArgs&) { return v.is_none(); }
bool t_boolean(const Value& v, const CallArgs&) { return v.is_bool(); }
bool t_true(const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_string(const Value& v, const CallArgs&) { return v.is_string(); }
bool t_number(const Value& v, const CallArgs&) { return v.is_number() || v.is_bool(); }
bool t_integer(const Value& v, const CallArgs&) { return v.is_int(); }
bool t_float(const Value& v, const CallArgs&) { return v.is_float(); }
bool t_mapping(const Value& v, const CallArgs&) { return v.is_object(); }
bool t_callable(const Value& v, const CallArgs&) { return v.is_callable(); }
// Undefined counts: jinja2's Undefined has __len__, __getitem__ and __iter__.
bool t_iterable(const Value& v, const CallArgs&) { return v.is_string() || v.is_array() || v.is_object() || v.is_undefined(); }
bool t_sequence(const Value& v, const CallArgs&) { return v.is_string() || v.is_array() || v.is_object() || v.is_undefined(); }
bool t_lower(const Value& v, const CallArgs&) { return v.is_string() && to_lower(v.as_string()) == v.as_string() && to_upper(v.as_string()) != v.as_string(); }
bool t_upper(const Value& v, const CallArgs&) { return v.is_string() && to_upper(v.as_string()) == v.as_string() && to_lower(v.as_string()) != v.as_string(); }

int64_t integer_of(const Value& v, std::string_view test) {
    if (!v.is_int() && !v.is_bool()) fail("test '" + std::string(test) + "' needs an integer, not " + v.type_name());
    return v.as_int();
}
bool t_odd(const Value& v, const CallArgs&) { return integer_of(v, "odd") % 2 != 0; }
bool t_even(const Value& v, const CallArgs&) { return integer_of(v, "even") % 2 == 0; }
bool t_divisibleby(const Value& v, const CallArgs& a) {
    const int64_t d = integer_of(first_arg(a, "divisibleby"), "divisibleby");
    if (d == 0) fail("integer division or modulo by zero");
    return integer_of(v, "divisibleby") % d == 0;
}

bool t_eq(const Value& v, const CallArgs& a) { return values_equal(v, first_arg(a, "eq")); }
bool t_ne(const Value& v, const CallArgs& a) { return !values_equal(v, first_arg(a, "ne")); }
bool t_lt(const Value& v, const CallArgs& a) { return compare_values(v, first_arg(a, "lt")) < 0; }
bool t_le(const Value& v, const CallArgs& a) { return compare_values(v, first_arg(a, "le")) <= 0; }
bool t_gt(const Value& v, const CallArgs& a) { return compare_values(v, first_arg(a, "gt")) > 0; }
bool t_ge(const Value& v, const CallArgs& a) { return compare_values(v, first_arg(a, "ge")) >= 0; }
bool t_in(const Value& v, const CallArgs& a) { return apply_binary("in", v, first_arg(a, "in")).as_bool(); }
bool t_sameas(const Value& v, const CallArgs& a) {
    const Value& other = first_arg(a, "sameas");
    return v.kind() == other.kind() && values_equal(v, other);
}
bool t_filter(const Value& v, const CallArgs&) { return v.is_string() && is_known_filter(v.as_string()); }
bool t_test(const Value& v, const CallArgs&) { return v.is_string() && is_known_test(v.as_string()); }

const std::unordered_map<std::string_view, TestFn>& tests() {
    static const std::unordered_map<std::string_view, TestFn> table = {
        {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined}, {"divisibleby", t_divisibleby},
        {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"even", t_even}, {"false", t_false}, {"filter", t_filter},
        {"float", t_float}, {"ge", t_ge}, {">=", t_ge}, {"gt", t_gt}, {"greaterthan", t_gt}, {">", t_gt},
        {"in", t_in}, {"integer", t_integer}, {"iterable", t_iterable}, {"le", t_le}, {"<=", t_le},
        {"lower", t_lower}, {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"mapping", t_mapping}, {"ne", t_ne},
        {"!=", t_ne}, {"none", t_none}, {"number", t_number}, {"odd", t_odd}, {"sameas", t_sameas},
        {"sequence", t_sequence}, {"string", t_string}, {"test", t_test}, {"true", t_true},
        {"undefined", t_undefined}, {"upper", t_upper},
    };
    return table;
}

}  // namespace

bool is_known_test(std::string_view name) { return tests().count(name) != 0; }

bool apply_test(Evaluator&, std::string_view name, const Value& value, const CallArgs& args) {
    auto it = tests().find(name);
    if (it == tests().end()) fail("no test named '" + std::string(name) + "'");
    return it->second(value, args);
}

}  // namespace folio::chat
