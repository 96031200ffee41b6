// Runs the folio CLI as a user would, capturing exit code, stdout and stderr.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace folio_test {

struct CliRun {
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream b;
    b << in.rdbuf();
    return b.str();
}

// `args` is already shell-quoted where needed.
inline CliRun run_folio(const std::string& args) {
    const auto dir = std::filesystem::temp_directory_path();
    const std::string tag = std::to_string(::getpid());
    const auto out_path = dir / ("folio_cli_out_" + tag);
    const auto err_path = dir / ("folio_cli_err_" + tag);
    const std::string cmd = shell_quote(FOLIO_CLI_PATH) + " " + args + " >" + shell_quote(out_path.string()) +
                            " 2>" + shell_quote(err_path.string()) + " </dev/null";
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    std::filesystem::remove(out_path);
    std::filesystem::remove(err_path);
    return r;
}

}  // namespace folio_test
