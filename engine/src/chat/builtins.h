// The filters, tests, value methods and global functions a chat template can
// call: the subset of jinja2's (and transformers' additions) that real chat
// templates use.
#pragma once

#include <string_view>

#include "chat/value.h"

namespace folio::chat {

class Evaluator;

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

// `value|name(args)`. The name has been checked by is_known_filter.
Value apply_filter(Evaluator& evaluator, std::string_view name, const Value& value, const CallArgs& args);
// `value is name(args)`.
bool apply_test(Evaluator& evaluator, std::string_view name, const Value& value, const CallArgs& args);
// `value.name` when it names a method of a str or dict (strip, items, get, ...):
// the bound method, or undefined when there is none.
Value find_method(const Value& value, std::string_view name);
// raise_exception, range, namespace, dict, strftime_now.
Object global_functions();

}  // namespace folio::chat
