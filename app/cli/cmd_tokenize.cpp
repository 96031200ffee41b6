// folio tokenize: text to token ids, with each token's piece.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "args.h"
#include "commands.h"
#include "folio/model.h"
#include "folio/tokenizer.h"

namespace folio::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {"-m", "--model", "PATH", "GGUF file or Hugging Face folder"},
    {"-p", "--prompt", "TEXT", "text to tokenize"},
    {"-f", "--file", "FILE", "read the text from a file"},
    {"", "--ids", "", "print only the ids, space-separated on one line"},
    {"", "--no-bos", "", "do not add the model's BOS token"},
    {"", "--no-parse-special", "", "treat special-token text (<|im_start|>) as plain text"},
    {"-h", "--help", "", "this help"},
};

// A piece as a quoted, printable string: control bytes escaped.
std::string printable(const std::string& piece) {
    std::string out = "'";
    for (unsigned char c : piece) {
        switch (c) {
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            case '\'': out += "\\'"; break;
            case '\\': out += "\\\\"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\x%02x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "'";
}

}  // namespace

int run_tokenize(int argc, char** argv) {
    auto args = Args::parse(argc, argv, 2, kFlags);
    if (!args) return fail("tokenize", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("tokenize", "-m MODEL (-p TEXT | -f FILE) [--ids] [--no-bos]", kFlags).c_str());
        return 0;
    }
    auto path = args->get("--model");
    if (!path) return fail("tokenize", "no model given (-m PATH)");
    if (args->has("--prompt") == args->has("--file")) return fail("tokenize", "give the text with either -p TEXT or -f FILE");

    std::string text;
    if (auto file = args->get("--file")) {
        std::ifstream in(*file, std::ios::binary);
        if (!in) return fail("tokenize", "cannot read '" + *file + "'");
        std::ostringstream buf;
        buf << in.rdbuf();
        text = buf.str();
    } else {
        text = *args->get("--prompt");
    }

    auto model = load_model_description(*path);
    if (!model) return fail("tokenize", model.error().message);
    auto tokenizer = Tokenizer::create(model->tokenizer);
    if (!tokenizer) return fail("tokenize", tokenizer.error().message);

    const bool add_special = !args->has("--no-bos");
    const bool parse_special = !args->has("--no-parse-special");
    const std::vector<int32_t> ids = tokenizer->encode(text, add_special, parse_special);

    if (args->has("--ids")) {
        std::string line;
        for (size_t i = 0; i < ids.size(); ++i) {
            if (i) line += ' ';  // (not `(i ? " " : "") + ...`: g++ 12 -O3 -Wrestrict false positive, GCC PR 105329)
            line += std::to_string(ids[i]);
        }
        std::printf("%s\n", line.c_str());
        return 0;
    }
    for (int32_t id : ids) std::printf("%6d -> %s\n", id, printable(tokenizer->token_bytes(id)).c_str());
    std::fprintf(stderr, "%zu tokens\n", ids.size());
    return 0;
}

}  // namespace folio::cli
