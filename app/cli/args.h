// Command-line arguments for the folio verbs: llama.cpp-style flags
// (-m, -p, -n, -t, -c, -f, --temp, --seed), each with a short and/or long
// spelling, parsed into typed values with errors a user can act on.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "folio/error.h"

namespace folio::cli {

struct FlagSpec {
    std::string short_name;   // "-m" (may be empty)
    std::string long_name;    // "--model"
    std::string value_name;   // "PATH"; empty for a switch
    std::string help;
};

class Args {
public:
    // Parses argv[first..argc) against `specs`. Unknown flags, a missing value
    // or a stray positional argument are errors. --version, which every verb
    // takes, prints the version and exits, as getopt tools and
    // QCommandLineParser do.
    static Result<Args> parse(int argc, char** argv, int first, const std::vector<FlagSpec>& specs);

    bool has(const std::string& long_name) const { return values_.count(long_name) > 0; }
    std::optional<std::string> get(const std::string& long_name) const;
    std::string get_or(const std::string& long_name, const std::string& fallback) const;
    // Integer flag within [min, max]; the error names the flag.
    Result<int64_t> get_int(const std::string& long_name, int64_t fallback, int64_t min, int64_t max) const;
    // The flag as the user typed it, for errors: "-n (--n-predict)" after -n, else the long name.
    std::string display_name(const std::string& long_name) const;

private:
    std::map<std::string, std::string> values_;  // long name -> value ("" for switches)
    std::map<std::string, std::string> typed_;   // long name -> the spelling used, when it was the short one
};

std::string usage(const std::string& verb, const std::string& synopsis, const std::vector<FlagSpec>& specs);

}  // namespace folio::cli
