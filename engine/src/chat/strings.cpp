// String helpers with Python's semantics for the cases templates rely on
// (strip with a character set, split with and without a separator, title).
#include "chat/strings.h"

#include "chat/value.h"

namespace folio::chat {

bool is_python_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= '\x1c' && c <= '\x1f');
}

std::string strip(std::string_view text, const std::optional<std::string>& chars, StripSide side) {
    auto drop = [&](char c) { return chars ? chars->find(c) != std::string::npos : is_python_space(c); };
    size_t begin = 0, end = text.size();
    if (side != StripSide::Right)
        while (begin < end && drop(text[begin])) ++begin;
    if (side != StripSide::Left)
        while (end > begin && drop(text[end - 1])) --end;
    return std::string(text.substr(begin, end - begin));
}

std::string to_upper(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
}

std::string to_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

static bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string to_title(std::string_view text) {
    std::string out(text);
    bool previous_cased = false;
    for (char& c : out) {
        const bool non_ascii = static_cast<unsigned char>(c) >= 0x80;
        if (is_ascii_letter(c)) {
            c = previous_cased ? static_cast<char>(c | 0x20) : static_cast<char>(c & ~0x20);
            previous_cased = true;
        } else {
            // Non-ASCII bytes are most often letters; treating them as cased keeps "héllo" -> "Héllo".
            previous_cased = non_ascii;
        }
    }
    return out;
}

std::string capitalize(std::string_view text) {
    std::string out = to_lower(text);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
    return out;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to, long long count) {
    std::string out;
    if (from.empty()) {
        // Python inserts `to` between every character (and at both ends).
        long long done = 0;
        size_t i = 0;
        while (i <= text.size()) {
            if (count < 0 || done < count) {
                out += to;
                ++done;
                if (out.size() > kMaxBuiltBytes) fail("replace() result too large");
            }
            if (i == text.size()) break;
            size_t n = 1;
            while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xc0) == 0x80) ++n;
            out += text.substr(i, n);
            i += n;
        }
        return out;
    }
    size_t pos = 0;
    long long done = 0;
    while (count < 0 || done < count) {
        const size_t found = text.find(from, pos);
        if (found == std::string_view::npos) break;
        out += text.substr(pos, found - pos);
        out += to;
        pos = found + from.size();
        ++done;
        if (out.size() > kMaxBuiltBytes) fail("replace() result too large");
    }
    out += text.substr(pos);
    return out;
}

std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep, long long maxsplit) {
    std::vector<std::string> parts;
    if (sep) {
        size_t pos = 0;
        while (maxsplit < 0 || static_cast<long long>(parts.size()) < maxsplit) {
            const size_t found = text.find(*sep, pos);
            if (found == std::string_view::npos) break;
            parts.emplace_back(text.substr(pos, found - pos));
            pos = found + sep->size();
        }
        parts.emplace_back(text.substr(pos));
        return parts;
    }
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && is_python_space(text[i])) ++i;
        if (i >= text.size()) break;
        if (maxsplit >= 0 && static_cast<long long>(parts.size()) >= maxsplit) {
            size_t end = text.size();
            while (end > i && is_python_space(text[end - 1])) --end;
            parts.emplace_back(text.substr(i, end - i));
            break;
        }
        size_t j = i;
        while (j < text.size() && !is_python_space(text[j])) ++j;
        parts.emplace_back(text.substr(i, j - i));
        i = j;
    }
    return parts;
}

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\n' || text[i] == '\r') {
            lines.emplace_back(text.substr(start, i - start));
            if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
            start = i + 1;
        }
    }
    if (start < text.size()) lines.emplace_back(text.substr(start));
    return lines;
}

std::string html_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace folio::chat
