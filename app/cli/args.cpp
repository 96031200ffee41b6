#include "args.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace folio::cli {

Result<Args> Args::parse(int argc, char** argv, int first, const std::vector<FlagSpec>& specs) {
    Args args;
    for (int i = first; i < argc; ++i) {
        const std::string token = argv[i];
        std::string name = token;
        std::optional<std::string> inline_value;
        if (token.rfind("--", 0) == 0) {
            if (auto eq = token.find('='); eq != std::string::npos) {
                name = token.substr(0, eq);
                inline_value = token.substr(eq + 1);
            }
        }
        if (token == "--version") {
            std::printf("folio %s\n", FOLIO_VERSION);
            std::exit(0);
        }
        const FlagSpec* spec = nullptr;
        for (const auto& s : specs) {
            if ((!s.short_name.empty() && s.short_name == name) || s.long_name == name) {
                spec = &s;
                break;
            }
        }
        if (!spec) {
            if (token.empty() || token[0] != '-') return make_error("unexpected argument '" + token + "'");
            return make_error("unknown option '" + name + "' (see --help)");
        }
        if (name != spec->long_name) args.typed_[spec->long_name] = name;
        if (spec->value_name.empty()) {
            if (inline_value) return make_error("option " + spec->long_name + " takes no value");
            args.values_[spec->long_name] = "";
            continue;
        }
        if (inline_value) {
            args.values_[spec->long_name] = *inline_value;
        } else if (i + 1 < argc) {
            args.values_[spec->long_name] = argv[++i];
        } else {
            return make_error("option " + name + " needs a value (" + spec->value_name + ")");
        }
    }
    return args;
}

std::optional<std::string> Args::get(const std::string& long_name) const {
    auto it = values_.find(long_name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::string Args::get_or(const std::string& long_name, const std::string& fallback) const {
    return get(long_name).value_or(fallback);
}

Result<int64_t> Args::get_int(const std::string& long_name, int64_t fallback, int64_t min, int64_t max) const {
    auto text = get(long_name);
    if (!text) return fallback;
    int64_t value = 0;
    const char* end = text->data() + text->size();
    auto [ptr, ec] = std::from_chars(text->data(), end, value);
    if (ec != std::errc() || ptr != end)
        return make_error("option " + display_name(long_name) + " expects an integer, got '" + *text + "'");
    if (value < min || value > max)
        return make_error("option " + display_name(long_name) + " must be between " + std::to_string(min) + " and " +
                          std::to_string(max) + ", got " + *text);
    return value;
}

std::string Args::display_name(const std::string& long_name) const {
    auto it = typed_.find(long_name);
    return it == typed_.end() ? long_name : it->second + " (" + long_name + ")";
}

std::string usage(const std::string& verb, const std::string& synopsis, const std::vector<FlagSpec>& specs) {
    std::string out = "usage: folio " + verb + " " + synopsis + "\n\noptions:\n";
    for (const auto& s : specs) {
        std::string left = "  " + (s.short_name.empty() ? std::string("    ") : s.short_name + ", ") + s.long_name;
        if (!s.value_name.empty()) left += " " + s.value_name;
        if (left.size() < 30) left.resize(30, ' ');
        else left += "  ";
        out += left + s.help + "\n";
    }
    return out;
}

}  // namespace folio::cli
