// folio quantize: a model Folio loads -> a quantized GGUF v3 file under a
// preset, through the engine's QuantizeJob. Progress is a bar on a terminal
// and one line per tenth of the work otherwise (logs stay readable); the
// summary gives sizes, bits per weight and time. Ctrl-C cancels the job, so
// nothing is left under the output name.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "folio/quantize_job.h"
#include "inference_common.h"

namespace folio::cli {
namespace {

// On every Debian-family system (base-files); not a text the benchmarks calibrate on.
constexpr const char* kDefaultValidationText = "/usr/share/common-licenses/GPL-3";

std::vector<FlagSpec> quantize_flags() {
    return {
        {"-m", "--model", "SRC", "the source: a GGUF file (F32 / F16 / BF16, or quantized) or a Hugging Face folder"},
        {"-o", "--output", "OUT.gguf", "the file to write"},
        {"", "--type", "PRESET", "Q4_K_M (default), Q4_K_S, Q4_0, Q5_K_M, Q6_K or Q8_0"},
        {"-t", "--threads", "N", "CPU threads (default: physical cores)"},
        {"", "--device", "DEV", "cpu, cuda or cuda:N: where calibration and validation run the model (default cpu)"},
        {"", "--imatrix", "FILE", "weigh the K-quant search by this importance matrix (folio imatrix / llama-imatrix)"},
        {"", "--calibrate", "TEXT", "collect the importance matrix on TEXT first ('default': the licence texts)"},
        {"", "--calibrate-chunks", "N", "chunks of 512 tokens of the calibration text to use (default: all)"},
        {"", "--awq", "", "activation-aware scales (AWQ) searched on the calibration text, folded into the norms"},
        {"", "--awq-rows", "N", "AWQ: input rows sampled per scaled input (default 512)"},
        {"", "--awq-grid", "N", "AWQ: alpha points searched in [0, 1) (default 20)"},
        {"", "--awq-clip", "", "AWQ: then a clip search per matrix (each block's range shrunk where that lowers the output error)"},
        {"", "--awq-groups", "LIST", "AWQ: which groups to scale, of qkv,gate_up,down,v_out (default: all)"},
        {"", "--validate", "TEXT", "compare result and source on TEXT (default: " + std::string(kDefaultValidationText) + ")"},
        {"", "--validate-chunks", "N", "chunks of 512 tokens to compare on (default 4; 0: block checks only)"},
        {"-h", "--help", "", "this help"},
    };
}

std::atomic<QuantizeJob*> g_job{nullptr};

extern "C" void cancel_on_signal(int) {
    if (QuantizeJob* job = g_job.load()) job->cancel();
}

double mib(uint64_t bytes) { return double(bytes) / double(1 << 20); }

// A bar redrawn in place on a terminal; otherwise a line at each tenth.
class ProgressPrinter {
public:
    explicit ProgressPrinter(bool terminal) : terminal_(terminal) {}
    void operator()(const QuantizeProgress& p) {
        const double fraction = p.bytes_total ? double(p.bytes_done) / double(p.bytes_total) : 0.0;
        if (p.phase == QuantizePhase::Validating || p.phase == QuantizePhase::Calibrating) {  // chunk by chunk
            if (p.tensor_index == last_chunk_ && last_phase_ == p.phase) return;
            last_phase_ = p.phase;
            last_chunk_ = p.tensor_index;
            std::fprintf(stderr, "%sfolio quantize: %s, %s %zu/%zu (%.1f s)%s", terminal_ ? "\r" : "",
                         std::string(quantize_phase_name(p.phase)).c_str(), p.tensor_name.c_str(), p.tensor_index,
                         p.n_tensors, p.elapsed_s, terminal_ ? "   " : "\n");
            return;
        }
        if (terminal_) {
            const int width = 30, filled = int(fraction * width);
            std::fprintf(stderr, "\r%-11s [%.*s%*s] %3d%%  tensor %zu/%zu  %.0f/%.0f MiB  ETA %s   ",
                         std::string(quantize_phase_name(p.phase)).c_str(), filled,
                         "==============================", width - filled, "", int(fraction * 100), p.tensor_index,
                         p.n_tensors, mib(p.bytes_done), mib(p.bytes_total), eta(p.eta_s).c_str());
            if (p.phase == QuantizePhase::Done) std::fprintf(stderr, "\n");
            return;
        }
        const int tenth = int(fraction * 10);
        if (p.phase == last_phase_ && tenth == last_tenth_) return;
        last_phase_ = p.phase;
        last_tenth_ = tenth;
        std::fprintf(stderr, "folio quantize: %s %d%% (tensor %zu/%zu, %.0f/%.0f MiB, %.1f s, ETA %s)\n",
                     std::string(quantize_phase_name(p.phase)).c_str(), tenth * 10, p.tensor_index, p.n_tensors,
                     mib(p.bytes_done), mib(p.bytes_total), p.elapsed_s, eta(p.eta_s).c_str());
    }

private:
    static std::string eta(double s) {
        if (s < 0) return "?";
        char text[32];
        std::snprintf(text, sizeof text, "%d:%02d", int(s) / 60, int(s) % 60);
        return text;
    }
    bool terminal_;
    QuantizePhase last_phase_ = QuantizePhase::Done;
    int last_tenth_ = -1;
    size_t last_chunk_ = size_t(-1);
};

void print_summary(const QuantizeReport& r) {
    std::printf("quantized %s -> %s (%s)\n", r.source.c_str(), r.output.c_str(), r.preset.c_str());
    std::printf("  size      %.1f MiB -> %.1f MiB\n", mib(r.source_bytes), mib(r.output_bytes));
    std::printf("  weights   %.1f M parameters, %.3f bits per weight\n", double(r.n_parameters) / 1e6, r.bits_per_weight);
    std::printf("  time      %.1f s\n", r.seconds);
    size_t fallbacks = 0;
    for (const QuantizedTensor& t : r.tensors) fallbacks += !t.fallback.empty();
    if (r.quality_measured) {
        const KldSummary& q = r.quality;
        std::printf("  quality   on %lld tokens of %s: PPL %.4f -> %.4f (x%.4f), mean KLD %.5f, p99 KLD %.5f, "
                    "same top token %.2f %%\n", static_cast<long long>(q.n_tokens), r.validation_text.c_str(), q.ppl_base,
                    q.ppl, q.ppl_ratio, q.mean_kld, q.p99_kld, 100.0 * q.same_top);
    } else if (r.blocks_checked) {
        std::printf("  checked   every block's scales are finite (quality not measured)\n");
    }
    if (r.awq) {
        size_t scaled = 0;
        double error = 0, unscaled = 0, alpha = 0, clipped_error = 0;
        int clipped = 0;
        for (const AwqGroupSummary& g : r.awq_groups) {
            scaled += g.alpha > 0;
            clipped += g.clipped_matrices;
            clipped_error += g.error_clipped;
            error += g.error;
            unscaled += g.error_unscaled;
            alpha += g.alpha;
        }
        std::printf("  awq       %zu/%zu groups scaled (mean alpha %.2f), output error on the sample %.4g -> %.4g (%+.1f %%)\n",
                    scaled, r.awq_groups.size(), r.awq_groups.empty() ? 0.0 : alpha / double(r.awq_groups.size()),
                    unscaled, error, unscaled > 0 ? 100.0 * (error - unscaled) / unscaled : 0.0);
        if (clipped_error != error)
            std::printf("  awq clip  %d matrices clipped, output error on the sample %.4g -> %.4g\n", clipped, error,
                        clipped_error);
        for (const std::string& why : r.awq_skipped) std::printf("  awq skip  %s\n", why.c_str());
    }
    if (!r.report_path.empty()) std::printf("  report    %s\n", r.report_path.c_str());
    if (fallbacks)
        std::printf("  fallbacks %zu tensors whose rows are not whole blocks of the preset's type "
                    "(e.g. %s)\n", fallbacks, [&] {
                        for (const QuantizedTensor& t : r.tensors)
                            if (!t.fallback.empty()) return (t.name + ": " + t.fallback);
                        return std::string();
                    }().c_str());
}

}  // namespace

int run_quantize(int argc, char** argv) {
    const std::vector<FlagSpec> flags = quantize_flags();
    auto args = Args::parse(argc, argv, 2, flags);
    if (!args) return fail("quantize", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("quantize", "-m SRC -o OUT.gguf [--type Q4_K_M] [--imatrix FILE | --calibrate TEXT] [--awq] [-t N] [--device cuda] [--validate TEXT]", flags).c_str());
        return 0;
    }
    auto source = args->get("--model");
    auto output = args->get("--output");
    if (!source) return fail("quantize", "no source model given (-m SRC)");
    if (!output) return fail("quantize", "no output file given (-o OUT.gguf)");
    const std::string type = args->get_or("--type", "Q4_K_M");
    const std::optional<QuantPreset> preset = parse_preset(type);
    if (!preset) return fail("quantize", "unknown --type '" + type + "'; the presets are " + preset_names());
    auto threads = args->get_int("--threads", 0, 0, 1024);
    if (!threads) return fail("quantize", threads.error().message);

    auto chunks = args->get_int("--validate-chunks", 4, 0, 1 << 20);
    if (!chunks) return fail("quantize", chunks.error().message);
    const std::string validation_text = args->get_or("--validate", kDefaultValidationText);
    if (args->has("--validate") && ::access(validation_text.c_str(), R_OK) != 0)
        return fail("quantize", "cannot read the validation text '" + validation_text + "'");

    auto calibrate_chunks = args->get_int("--calibrate-chunks", -1, -1, 1 << 30);
    if (!calibrate_chunks) return fail("quantize", calibrate_chunks.error().message);
    if (args->has("--imatrix") && args->has("--calibrate"))
        return fail("quantize", "give either --imatrix FILE or --calibrate TEXT, not both");

    QuantizeOptions options;
    options.imatrix_path = args->get_or("--imatrix", "");
    if (auto text = args->get("--calibrate"))
        options.calibration_files = *text == "default" ? default_calibration_files() : std::vector<std::string>{*text};
    if (args->has("--calibrate") && options.calibration_files.empty())
        return fail("quantize", "--calibrate default: /usr/share/common-licenses has none of its texts");
    options.calibration_chunks = *calibrate_chunks;
    auto awq_rows = args->get_int("--awq-rows", 512, 1, 1 << 20);
    if (!awq_rows) return fail("quantize", awq_rows.error().message);
    auto awq_grid = args->get_int("--awq-grid", 20, 1, 1000);
    if (!awq_grid) return fail("quantize", awq_grid.error().message);
    options.awq = args->has("--awq");
    if (!options.awq && (args->has("--awq-rows") || args->has("--awq-grid") || args->has("--awq-groups") || args->has("--awq-clip")))
        return fail("quantize", "--awq-rows, --awq-grid, --awq-groups and --awq-clip set up --awq; give --awq too");
    options.awq_clip = args->has("--awq-clip");
    options.awq_groups = args->get_or("--awq-groups", "");
    if (options.awq && !args->has("--calibrate") && !args->has("--imatrix"))
        return fail("quantize", "--awq searches its scales on calibration activations: give --calibrate TEXT "
                                "(or 'default'), or --imatrix FILE made by folio imatrix --awq");
    options.awq_rows = *awq_rows;
    options.awq_grid = int(*awq_grid);
    if (*chunks > 0 && ::access(validation_text.c_str(), R_OK) == 0) {
        options.validation_text = validation_text;
        options.validation_chunks = *chunks;
    }
    options.source = *source;
    options.output = *output;
    options.preset = *preset;
    options.threads = int(*threads);
    options.device = chosen_device(*args);
    ProgressPrinter printer(::isatty(STDERR_FILENO) == 1);
    options.on_progress = [&](const QuantizeProgress& p) { printer(p); };

    QuantizeJob job(std::move(options));
    g_job.store(&job);
    std::signal(SIGINT, cancel_on_signal);
    std::signal(SIGTERM, cancel_on_signal);
    Result<QuantizeReport> report = job.run();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    g_job.store(nullptr);
    if (!report) return fail("quantize", report.error().message);
    for (const std::string& w : report->warnings) std::fprintf(stderr, "folio quantize: warning: %s\n", w.c_str());
    print_summary(*report);
    return 0;
}

}  // namespace folio::cli
