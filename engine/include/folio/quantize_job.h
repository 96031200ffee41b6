// QuantizeJob: turns a model Folio can load (GGUF F32 / F16 / BF16, an
// already quantized GGUF, dequantized first, or a Hugging Face folder) into
// a quantized GGUF v3 file under a preset (folio/quant_recipe.h), streaming
// one tensor at a time. The studio runs a job on its own thread; progress
// arrives through a callback on that thread, and cancel() from any thread
// takes effect within a second. The output is atomic: it appears under its
// name only when complete and fsynced; a cancel, an error or a full disk
// leaves nothing there (GgufStreamWriter).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "folio/error.h"
#include "folio/imatrix.h"
#include "folio/quant_quality.h"
#include "folio/quant_recipe.h"

namespace folio {

enum class QuantizePhase { Planning, Calibrating, Quantizing, Validating, Done };
std::string_view quantize_phase_name(QuantizePhase phase);  // "quantizing"

struct QuantizeProgress {
    QuantizePhase phase = QuantizePhase::Planning;
    size_t tensor_index = 0;      // tensors finished in this phase
    size_t n_tensors = 0;
    std::string tensor_name;      // the one being worked on
    uint64_t bytes_done = 0;      // of the output file
    uint64_t bytes_total = 0;
    double elapsed_s = 0;
    double eta_s = -1;            // < 0 while unknown
};

struct QuantizeOptions {
    std::string source;           // a GGUF file or a Hugging Face folder
    std::string output;           // the .gguf to write (replaced if it exists)
    QuantPreset preset = QuantPreset::Q4_K_M;
    int threads = 0;              // 0: the physical cores
    std::string device = "cpu";   // where calibration and validation run the model: cpu, cuda or cuda:N
    // Calibration: an importance matrix from a file (llama.cpp's imatrix
    // GGUF), or collected first on `calibration_files` (the Calibrating
    // phase; "default" files: default_calibration_files()). Neither: plain
    // (reference) quantization.
    std::string imatrix_path;
    std::vector<std::string> calibration_files;
    int64_t calibration_chunks = -1;  // -1: all of the text
    // AWQ (quant/awq.h, docs/quantization.md): activation-aware input scales
    // searched on the calibration activations and folded into the norms and
    // ffn_up. Needs calibration_files (the activations are collected there)
    // or an imatrix_path written by folio imatrix --awq (they are stored in it).
    bool awq = false;
    int64_t awq_rows = 512;           // sampled input rows per scaled input
    int awq_grid = 20;                // alpha points in [0, 1)
    std::string awq_groups;           // which groups, e.g. "qkv,down" (qkv gate_up down v_out); empty: all
    bool awq_clip = false;            // then a clip search per matrix (quant/awq.h)
    // Validation after writing: every block's scales are always checked;
    // with a text, source and result are also compared on its first
    // `validation_chunks` chunks of `validation_ctx` tokens (PPL, KLD, top
    // token), and the report is written beside the output as
    // "<output>.quality.json". Empty: structural checks only.
    std::string validation_text;
    int64_t validation_chunks = 8;
    int32_t validation_ctx = 512;
    // Called on the job's thread, at most ~10 times a second plus once per phase change.
    std::function<void(const QuantizeProgress&)> on_progress;
};

// One AWQ group's outcome (QuantizeOptions::awq): the matrices that read one
// input, the alpha chosen for their scales, and their output error on the
// sampled calibration rows with and without the scales.
struct AwqGroupSummary {
    std::string input;            // the group's first matrix ("blk.3.attn_q.weight")
    float alpha = 0;              // 0: left unscaled
    double error = 0;
    double error_unscaled = 0;
    double error_clipped = 0;     // after the clip search (= error without it)
    int clipped_matrices = 0;     // members whose clipping lowered their error
};

// One tensor as written.
struct QuantizedTensor {
    std::string name;
    std::string source_type;      // "F32"
    std::string type;             // "Q4_K"
    std::vector<int64_t> shape;
    uint64_t bytes = 0;
    std::string fallback;         // why the preset's type did not fit, or empty
};

struct QuantizeReport {
    std::string source;
    std::string output;
    std::string preset;
    uint64_t source_bytes = 0;    // the source's tensor data
    uint64_t output_bytes = 0;    // the whole output file
    uint64_t n_parameters = 0;
    double bits_per_weight = 0;   // tensor data bits / parameters
    double seconds = 0;
    std::vector<std::string> warnings;  // e.g. requantizing an already quantized source
    std::vector<QuantizedTensor> tensors;
    bool awq = false;
    std::vector<AwqGroupSummary> awq_groups;
    std::vector<std::string> awq_skipped;  // what AWQ could not fold, and why
    bool blocks_checked = false;  // every block's scales were reopened and found finite
    bool quality_measured = false;
    KldSummary quality;           // result vs source on the validation text (when measured)
    std::string validation_text;
    std::string report_path;      // the JSON report beside the output, when written
};

class ProgressReporter;  // quantize_job.cpp: throttles on_progress

class QuantizeJob {
public:
    explicit QuantizeJob(QuantizeOptions options);

    // Runs the whole job on the calling thread. A cancelled job returns an
    // Error whose message says so (was_cancelled() is then true).
    Result<QuantizeReport> run();
    // Any thread; the job stops at its next check (each few rows of a tensor).
    void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
    bool was_cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

private:
    Result<ImportanceMatrix> calibrate(const ModelDescription& model, ProgressReporter& progress, QuantizeProgress p,
                                       ActivationStats* activations);
    Status validate(const ModelDescription& source, QuantizeReport& report, ProgressReporter& progress,
                    QuantizeProgress p);

    QuantizeOptions options_;
    std::atomic<bool> cancelled_{false};
};

// Bytes free for an unprivileged writer in the folder that holds `path`; an
// Error when the folder does not exist.
Result<uint64_t> free_disk_bytes(const std::string& path);

}  // namespace folio
