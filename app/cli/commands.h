// The folio verbs. Each takes the whole argv (argv[1] is the verb) and returns
// the process exit code; results go to stdout, errors and logs to stderr.
#pragma once

#include <string>

namespace folio::cli {

int run_inspect(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_run(int argc, char** argv);
int run_chat(int argc, char** argv);
int run_perplexity(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_quantize(int argc, char** argv);
int run_imatrix(int argc, char** argv);
int run_serve(int argc, char** argv);

// Prints "folio <verb>: <message>" to stderr and returns 1.
int fail(const char* verb, const std::string& message);

}  // namespace folio::cli
