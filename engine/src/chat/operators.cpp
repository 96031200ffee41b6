// Python's arithmetic, concatenation and comparison rules, as jinja2
// inherits them: int stays int until "/" or a float joins in, "//" and "%"
// round towards negative infinity, str and list concatenate and repeat.
#include <cmath>
#include <limits>
#include <string>

#include "chat/value.h"

namespace folio::chat {
namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
    if (a.is_undefined()) fail(a.undefined_hint().empty() ? "operand is undefined" : a.undefined_hint());
    if (b.is_undefined()) fail(b.undefined_hint().empty() ? "operand is undefined" : b.undefined_hint());
    // A str, list or tuple on the left concatenates only with its own kind, and says so (Python's words).
    if (op == "+" && (a.is_string() || a.is_array()))
        fail("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
    fail("unsupported operand type(s) for " + std::string(op) + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }
bool integral(const Value& v) { return v.is_int() || v.is_bool(); }

Value repeat(const Value& sequence, int64_t times) {
    if (times <= 0 || (sequence.is_string() ? sequence.as_string().empty() : sequence.as_array().empty())) return sequence.is_string() ? Value::string("") : Value::array({}, sequence.is_tuple());
    // The evaluator checks results against the output cap; refuse before allocating a monster
    // (64 MiB of text, or a million list elements).
    const size_t unit = sequence.is_string() ? sequence.as_string().size() : sequence.as_array().size();
    const uint64_t most = sequence.is_string() ? kMaxBuiltBytes : 1'000'000;
    if (unit != 0 && static_cast<uint64_t>(times) > most / unit) fail("repetition result too large");
    if (sequence.is_string()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
        return Value::string(std::move(out));
    }
    Array out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), sequence.as_array().begin(), sequence.as_array().end());
    return Value::array(std::move(out), sequence.is_tuple());
}

int64_t floor_div(int64_t a, int64_t b) {
    if (a == INT64_MIN && b == -1) fail("integer overflow in //");
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

bool contains(const Value& haystack, const Value& needle) {
    if (haystack.is_string()) {
        if (!needle.is_string()) fail("'in <string>' requires string as left operand, not " + needle.type_name());
        return haystack.as_string().find(needle.as_string()) != std::string::npos;
    }
    if (haystack.is_array()) {
        for (const Value& item : haystack.as_array())
            if (values_equal(item, needle)) return true;
        return false;
    }
    if (haystack.is_object() || haystack.is_namespace())
        return needle.is_string() && haystack.as_object().find(needle.as_string()) != nullptr;
    if (haystack.is_undefined()) return false;
    fail("argument of type '" + haystack.type_name() + "' is not iterable");
}

}  // namespace

Value apply_binary(std::string_view op, const Value& a, const Value& b) {
    if (op == "~") {
        std::string joined = to_display_string(a);
        joined += to_display_string(b);
        if (joined.size() > kMaxBuiltBytes) fail("string result too large");
        return Value::string(std::move(joined));
    }
    if (op == "==") return Value::boolean(values_equal(a, b));
    if (op == "!=") return Value::boolean(!values_equal(a, b));
    if (op == "in") return Value::boolean(contains(b, a));
    if (op == "not in") return Value::boolean(!contains(b, a));
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
        if (a.is_undefined() || b.is_undefined()) unsupported(op, a, b);
        const int c = compare_values(a, b);
        if (op == "<") return Value::boolean(c < 0);
        if (op == ">") return Value::boolean(c > 0);
        if (op == "<=") return Value::boolean(c <= 0);
        return Value::boolean(c >= 0);
    }
    if (op == "+") {
        if (a.is_string() && b.is_string()) {
            if (a.as_string().size() + b.as_string().size() > kMaxBuiltBytes) fail("string result too large");
            return Value::string(a.as_string() + b.as_string());
        }
        if (a.is_array() && b.is_array() && a.is_tuple() == b.is_tuple()) {
            Array out = a.as_array();
            out.insert(out.end(), b.as_array().begin(), b.as_array().end());
            return Value::array(std::move(out), a.is_tuple());
        }
    }
    if (op == "*") {
        if ((a.is_string() || a.is_array()) && integral(b)) return repeat(a, b.as_int());
        if (integral(a) && (b.is_string() || b.is_array())) return repeat(b, a.as_int());
    }
    if (!numeric(a) || !numeric(b)) unsupported(op, a, b);

    const bool ints = integral(a) && integral(b);
    const double x = a.as_double(), y = b.as_double();
    int64_t exact = 0;
    if (op == "+") {
        if (!ints) return Value::number(x + y);
        if (__builtin_add_overflow(a.as_int(), b.as_int(), &exact)) fail("integer overflow in +");
        return Value::integer(exact);
    }
    if (op == "-") {
        if (!ints) return Value::number(x - y);
        if (__builtin_sub_overflow(a.as_int(), b.as_int(), &exact)) fail("integer overflow in -");
        return Value::integer(exact);
    }
    if (op == "*") {
        if (!ints) return Value::number(x * y);
        if (__builtin_mul_overflow(a.as_int(), b.as_int(), &exact)) fail("integer overflow in *");
        return Value::integer(exact);
    }
    if (op == "/") {
        if (y == 0.0) fail("division by zero");
        return Value::number(x / y);
    }
    if (op == "//") {
        if (y == 0.0) fail("integer division or modulo by zero");
        return ints ? Value::integer(floor_div(a.as_int(), b.as_int())) : Value::number(std::floor(x / y));
    }
    if (op == "%") {
        if (y == 0.0) fail("integer division or modulo by zero");
        if (ints) {
            // Python's sign (the divisor's), from C++'s truncated remainder:
            // never overflows, unlike a - (a // b) * b near the int64 limits.
            const int64_t n = a.as_int(), d = b.as_int();
            if (d == -1) return Value::integer(0);  // INT64_MIN % -1 is undefined in C++
            int64_t r = n % d;
            if (r != 0 && ((r < 0) != (d < 0))) r += d;
            return Value::integer(r);
        }
        double r = std::fmod(x, y);
        if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
        return Value::number(r);
    }
    if (op == "**") {
        if (ints && b.as_int() >= 0) {
            // Square-and-multiply: a huge exponent of 0, 1 or -1 must not loop for ages.
            int64_t result = 1, base = a.as_int();
            for (int64_t e = b.as_int(); e > 0; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(result, base, &result)) fail("integer power too large");
                if (e > 1 && __builtin_mul_overflow(base, base, &base)) fail("integer power too large");
            }
            return Value::integer(result);
        }
        return Value::number(std::pow(x, y));
    }
    fail("unknown operator '" + std::string(op) + "'");
}

}  // namespace folio::chat
