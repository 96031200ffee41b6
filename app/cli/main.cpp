// folio: the engine from the terminal.
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"

namespace {

struct Verb {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

constexpr Verb kVerbs[] = {
    {"inspect", folio::cli::run_inspect, "architecture, hyper-parameters, tensors, tokenizer, template, memory"},
    {"tokenize", folio::cli::run_tokenize, "text to token ids (and pieces)"},
    {"run", folio::cli::run_run, "generate from a prompt, streamed to stdout"},
    {"chat", folio::cli::run_chat, "interactive multi-turn chat through the model's template"},
    {"perplexity", folio::cli::run_perplexity, "perplexity of a text file (llama.cpp's protocol)"},
    {"bench", folio::cli::run_bench, "prompt processing and generation throughput"},
    {"quantize", folio::cli::run_quantize, "a model -> a quantized GGUF (Q4_K_M, Q4_0, ...), streamed, atomic"},
    {"imatrix", folio::cli::run_imatrix, "importance matrix over a calibration text (llama.cpp's format)"},
    {"serve", folio::cli::run_serve, "an OpenAI-compatible HTTP server (chat, completions, metrics)"},
};

void print_help() {
    std::printf("folio %s — the Folio inference engine from the terminal\n\nusage: folio <verb> [options]\n\nverbs:\n",
                FOLIO_VERSION);
    for (const auto& verb : kVerbs) std::printf("  %-10s %s\n", verb.name, verb.summary);
    std::printf("\n'folio <verb> --help' lists a verb's options.\n");
}

}  // namespace

namespace folio::cli {
int fail(const char* verb, const std::string& message) {
    std::fprintf(stderr, "folio %s: %s\n", verb, message.c_str());
    return 1;
}
}  // namespace folio::cli

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        print_help();
        return argc < 2 ? 1 : 0;
    }
    if (!std::strcmp(argv[1], "--version")) {
        std::printf("folio %s\n", FOLIO_VERSION);
        return 0;
    }
    for (const auto& verb : kVerbs)
        if (!std::strcmp(argv[1], verb.name)) return verb.run(argc, argv);
    std::fprintf(stderr, "folio: unknown verb '%s' (try 'folio --help')\n", argv[1]);
    return 1;
}
