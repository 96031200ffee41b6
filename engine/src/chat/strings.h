// Python str methods on UTF-8 text, as chat templates call them. Case
// mapping covers ASCII only; other characters pass through unchanged.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace folio::chat {

// Python's str.isspace() set, ASCII part.
bool is_python_space(char c);

enum class StripSide { Both, Left, Right };
// `chars` absent: whitespace, as str.strip() with no argument.
std::string strip(std::string_view text, const std::optional<std::string>& chars, StripSide side);
std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);
std::string to_title(std::string_view text);
std::string capitalize(std::string_view text);
std::string replace_all(std::string_view text, std::string_view from, std::string_view to, long long count = -1);
// str.split(sep, maxsplit); `sep` absent splits on runs of whitespace.
std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep, long long maxsplit = -1);
// str.splitlines() for \n, \r\n and \r.
std::vector<std::string> split_lines(std::string_view text);
std::string html_escape(std::string_view text);

}  // namespace folio::chat
