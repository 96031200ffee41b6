// folio imatrix: the importance matrix of a model over a calibration text,
// in llama.cpp's imatrix GGUF format (llama-quantize --imatrix reads it, and
// folio quantize --imatrix reads llama-imatrix's).
#include <chrono>
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "folio/imatrix.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

std::vector<FlagSpec> imatrix_flags() {
    return {
        {"-m", "--model", "MODEL", "a GGUF file or a Hugging Face folder"},
        {"-f", "--file", "TEXT", "the calibration text (default: the licence texts of /usr/share/common-licenses)"},
        {"-o", "--output", "FILE", "the imatrix file to write (GGUF)"},
        {"-c", "--ctx-size", "N", "tokens per chunk (default 512)"},
        {"", "--chunks", "N", "use at most N chunks (default: all)"},
        {"-t", "--threads", "N", "CPU threads (default: physical cores)"},
        {"", "--device", "DEV", "cpu, cuda or cuda:N: where the model runs (default cpu; cuda without a usable GPU "
                                "falls back to cpu)"},
        {"", "--load-format", "F", "auto (a file or folder) or dummy: -m names a shape, weights are random "
                                   "(for timing)"},
        {"", "--dummy-type", "T", "weight type of a dummy model (default f16)"},
        {"", "--awq", "", "also store what folio quantize --awq needs (mean |x| and sampled input rows)"},
        {"", "--awq-rows", "N", "with --awq: input rows sampled per scaled input (default 512)"},
        {"-h", "--help", "", "this help"},
    };
}

}  // namespace

int run_imatrix(int argc, char** argv) {
    const std::vector<FlagSpec> flags = imatrix_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("imatrix", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("imatrix", "-m MODEL [-f TEXT] -o FILE [-c 512] [--chunks N] [-t N] [--device cuda] [--awq [--awq-rows N]]", flags).c_str());
        return 0;
    }
    auto model_path = args->get("--model");
    auto output = args->get("--output");
    if (!model_path) return fail("imatrix", "no model given (-m MODEL)");
    if (!output) return fail("imatrix", "no output file given (-o FILE)");
    auto ctx = args->get_int("--ctx-size", 512, 2, 1 << 20);
    auto chunks = args->get_int("--chunks", -1, -1, 1 << 30);
    auto threads = args->get_int("--threads", 0, 0, 1024);
    auto awq_rows = args->get_int("--awq-rows", 512, 1, 1 << 20);
    for (const auto* r : {&ctx, &chunks, &threads, &awq_rows})
        if (!*r) return fail("imatrix", r->error().message);
    if (args->has("--awq-rows") && !args->has("--awq")) return fail("imatrix", "--awq-rows sets up --awq; give --awq too");
    const std::vector<std::string> files =
        args->has("--file") ? std::vector<std::string>{*args->get("--file")} : default_calibration_files();
    auto text = read_calibration_text(files);
    if (!text) return fail("imatrix", text.error().message);
    ImatrixOptions options;
    options.device = chosen_device(*args);
    auto model = load_model(*args, *model_path, options.device != "cpu");
    if (!model) return fail("imatrix", model.error().message);

    options.n_ctx = int32_t(*ctx);
    options.n_chunks = *chunks;
    options.threads = int(*threads);
    options.dataset_name = args->has("--file") ? files[0] : "folio-default-calibration";
    options.on_chunk = [](int64_t c, int64_t n) {
        std::fprintf(stderr, "folio imatrix: chunk %lld/%lld\n", static_cast<long long>(c), static_cast<long long>(n));
    };
    ActivationStats activations;
    activations.max_rows = *awq_rows;
    if (args->has("--awq")) options.activations = &activations;
    const auto start = std::chrono::steady_clock::now();
    auto matrix = collect_imatrix(*model, *text, options);
    if (!matrix) return fail("imatrix", matrix.error().message);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (Status s = matrix->write(*output, options.activations); !s) return fail("imatrix", s.error().message);
    std::printf("wrote %s: %zu matrices, %u chunks of %u tokens", output->c_str(), matrix->entries.size(),
                matrix->chunk_count, matrix->chunk_size);
    if (options.activations)
        std::printf(", AWQ activations of %zu inputs (up to %lld rows each)", activations.inputs.size(),
                    static_cast<long long>(activations.max_rows));
    std::printf(" in %.1f s (%s)\n", seconds, options.device.c_str());
    return 0;
}

}  // namespace folio::cli
