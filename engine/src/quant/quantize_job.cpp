// QuantizeJob::run(): plan, check the disk, then stream tensor by tensor —
// read as float32, quantize its rows on the thread pool, append to the
// temporary file — and commit. The memory held at once is one tensor in
// float32 plus its quantized bytes.
#include "folio/quantize_job.h"


#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "cpu/thread_pool.h"
#include "folio/backend.h"
#include "folio/gguf.h"
#include "folio/imatrix.h"
#include "folio/quant.h"
#include "quant/awq.h"
#include "quant/output_metadata.h"
#include "quant/source_tensor.h"
#include "quant/validation.h"

namespace folio {

namespace {

using Clock = std::chrono::steady_clock;

// Room kept free beyond the file itself (the filesystem's own bookkeeping).
constexpr uint64_t kDiskMargin = 64ull << 20;
// Values per quantization task: small enough that cancel is seen within
// milliseconds, large enough that the pool's overhead does not show.
constexpr int64_t kValuesPerTask = 1 << 16;

bool is_float_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

Status check_architecture(const ModelDescription& model) {
    const std::string known = supported_architectures();
    const std::string arch = model.hparams.architecture;
    size_t pos = 0;
    while (pos <= known.size()) {
        const size_t end = std::min(known.find(',', pos), known.size());
        std::string item = known.substr(pos, end - pos);
        item.erase(0, item.find_first_not_of(' '));
        if (item == arch) return {};
        pos = end + 1;
    }
    return make_error("'" + model.path + "' is a " + arch + " model; Folio quantizes the architectures it runs (" +
                      known + ")");
}

std::string gib(uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(1ull << 30));
    return text;
}

}  // namespace

// Reports progress at most 10 times a second, and at every phase change.
class ProgressReporter {
public:
    ProgressReporter(const QuantizeOptions& options, Clock::time_point start) : options_(options), start_(start) {}
    void report(QuantizeProgress p, bool force) {
        if (!options_.on_progress) return;
        const Clock::time_point now = Clock::now();
        if (!force && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        p.elapsed_s = std::chrono::duration<double>(now - start_).count();
        if (p.bytes_done > 0 && p.bytes_total >= p.bytes_done)
            p.eta_s = p.elapsed_s * double(p.bytes_total - p.bytes_done) / double(p.bytes_done);
        options_.on_progress(p);
    }

private:
    const QuantizeOptions& options_;
    Clock::time_point start_;
    Clock::time_point last_{};
};

std::string_view quantize_phase_name(QuantizePhase phase) {
    switch (phase) {
        case QuantizePhase::Planning: return "planning";
        case QuantizePhase::Calibrating: return "calibrating";
        case QuantizePhase::Quantizing: return "quantizing";
        case QuantizePhase::Validating: return "validating";
        case QuantizePhase::Done: return "done";
    }
    return "?";
}

Result<uint64_t> free_disk_bytes(const std::string& path) {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code error;
    const std::filesystem::space_info space = std::filesystem::space(dir, error);
    if (error) return make_error("cannot write into '" + dir.string() + "': " + error.message());
    return uint64_t(space.available);
}

QuantizeJob::QuantizeJob(QuantizeOptions options) : options_(std::move(options)) {}

// The importance matrix the options ask for: read, collected, or none (empty).
Result<ImportanceMatrix> QuantizeJob::calibrate(const ModelDescription& model, ProgressReporter& progress,
                                                QuantizeProgress p, ActivationStats* activations) {
    if (!options_.imatrix_path.empty()) {
        auto read = ImportanceMatrix::read(options_.imatrix_path, activations);
        if (read && activations && activations->inputs.empty())
            return make_error("'" + options_.imatrix_path + "' holds no AWQ activations: make it with folio imatrix --awq, "
                              "or give a calibration text (--calibrate TEXT) to collect them");
        return read;
    }
    if (options_.calibration_files.empty()) return ImportanceMatrix{};
    auto text = read_calibration_text(options_.calibration_files);
    if (!text) return text.error();
    p.phase = QuantizePhase::Calibrating;
    progress.report(p, true);
    ImatrixOptions imatrix;
    imatrix.n_chunks = options_.calibration_chunks;
    imatrix.threads = options_.threads;
    imatrix.device = options_.device;
    imatrix.dataset_name = options_.calibration_files.front();
    imatrix.cancel = &cancelled_;
    imatrix.activations = activations;
    imatrix.on_chunk = [&](int64_t chunk, int64_t n) {
        p.tensor_index = size_t(chunk);
        p.n_tensors = size_t(n);
        p.tensor_name = "calibration chunk";
        progress.report(p, true);
    };
    auto collected = collect_imatrix(model, *text, imatrix);
    if (!collected && was_cancelled()) return make_error("quantization cancelled while calibrating; nothing was written");
    return collected;
}

// A file that fails the block check is removed: nothing broken stays under
// the name. A cancel while measuring quality keeps the (complete) file.
Status QuantizeJob::validate(const ModelDescription& source, QuantizeReport& report, ProgressReporter& progress,
                             QuantizeProgress p) {
    p.phase = QuantizePhase::Validating;
    p.tensor_index = 0;
    p.n_tensors = 0;
    progress.report(p, true);
    if (Status s = quant::check_written_file(options_.output, report.tensors.size()); !s) {
        std::filesystem::remove(options_.output);
        return s;
    }
    report.blocks_checked = true;
    if (options_.validation_text.empty()) return {};
    quant::QualityOptions quality;
    quality.text_path = options_.validation_text;
    quality.n_chunks = options_.validation_chunks;
    quality.n_ctx = options_.validation_ctx;
    quality.threads = options_.threads;
    quality.device = options_.device;
    quality.cancel = &cancelled_;
    quality.on_chunk = [&](int64_t chunk, int64_t n) {
        p.tensor_index = size_t(chunk);
        p.n_tensors = size_t(n);
        p.tensor_name = "validation chunk";
        progress.report(p, true);
    };
    auto measured = quant::measure_quality(source, options_.output, quality);
    if (!measured) {
        report.warnings.push_back("quality not measured: " + measured.error().message);
        return {};
    }
    report.quality = *measured;
    report.quality_measured = true;
    report.validation_text = options_.validation_text;
    return {};
}

Result<QuantizeReport> QuantizeJob::run() {
    const Clock::time_point start = Clock::now();
    ProgressReporter progress(options_, start);
    QuantizeProgress p;
    progress.report(p, true);

    auto model = load_model_description(options_.source);
    if (!model) return model.error();
    if (Status s = check_architecture(*model); !s) return s.error();
    if (options_.awq && options_.calibration_files.empty() && options_.imatrix_path.empty())
        return make_error("AWQ searches its scales on calibration activations: give a calibration text "
                          "(--calibrate TEXT or 'default') or an imatrix file made by folio imatrix --awq");
    if (options_.awq && (options_.awq_rows < 1 || options_.awq_grid < 1))
        return make_error("AWQ needs at least 1 sampled row and 1 alpha grid point (got " +
                          std::to_string(options_.awq_rows) + " and " + std::to_string(options_.awq_grid) + ")");
    ActivationStats activations;
    activations.max_rows = options_.awq_rows;
    auto imatrix = calibrate(*model, progress, p, options_.awq ? &activations : nullptr);
    if (!imatrix) return imatrix.error();
    const bool has_imatrix = !imatrix->entries.empty();
    QuantPlanOptions plan_options;
    plan_options.has_imatrix = has_imatrix;
    auto plan = plan_quantization(*model, options_.preset, plan_options);
    if (!plan) return plan.error();

    cpu::ThreadPool pool(options_.threads);
    quant::AwqFolds folds;
    QuantizeReport report;
    if (options_.awq) {
        p.phase = QuantizePhase::Calibrating;
        quant::AwqOptions awq_options;
        awq_options.grid = options_.awq_grid;
        awq_options.clip = options_.awq_clip;
        if (!options_.awq_groups.empty()) {
            auto kinds = quant::parse_awq_group_kinds(options_.awq_groups);
            if (!kinds) return kinds.error();
            awq_options.kinds = std::move(*kinds);
        }
        auto outcome = quant::search_awq(*model, *plan, *imatrix, activations, awq_options, pool, &cancelled_,
                                         [&](size_t group, size_t n) {
                                             p.tensor_index = group;
                                             p.n_tensors = n;
                                             p.tensor_name = "AWQ group";
                                             progress.report(p, true);
                                         });
        if (!outcome && was_cancelled()) return make_error("quantization cancelled during the AWQ search; nothing was written");
        if (!outcome) return outcome.error();
        folds = std::move(outcome->folds);
        report.awq = true;
        report.awq_groups = std::move(outcome->groups);
        report.awq_skipped = std::move(outcome->skipped);
        activations = {};  // the sample is not needed any more
    }
    report.source = options_.source;
    report.output = options_.output;
    report.preset = std::string(preset_info(options_.preset).name);
    std::vector<GgufTensorHeader> headers;
    bool requantizing = false;
    for (TensorPlan& t : *plan) {
        const TensorView& src = model->tensors[t.source_index];
        // A converted tensor (Q/K reordered, norm offset) is written from its float values.
        // So is a norm that takes an AWQ scale: F32, so that the fold stays exact.
        if (!t.quantized && (quant::source_tensor_is_converted(*model, src) || folds.touches(t.name)))
            t.type = TensorType::F32;
        if (t.quantized && !is_float_type(t.source_type)) requantizing = true;
        headers.push_back({t.name, t.type, t.shape});
        report.source_bytes += src.nbytes;
        report.n_parameters += uint64_t(src.n_elements());
    }
    if (requantizing)
        report.warnings.push_back("'" + options_.source + "' is already quantized; its weights are dequantized "
                                  "and quantized again, which loses more quality than quantizing the original");

    quant::QuantizeSettings settings;
    settings.preset = options_.preset;
    settings.has_imatrix = has_imatrix;
    settings.imatrix_file = options_.imatrix_path.empty() ? "(collected by this job)" : options_.imatrix_path;
    settings.imatrix_datasets = imatrix->datasets;
    settings.imatrix_entries = uint32_t(imatrix->entries.size());
    settings.imatrix_chunks = imatrix->chunk_count;
    if (report.awq) {
        size_t scaled = 0;
        for (const AwqGroupSummary& g : report.awq_groups) scaled += g.alpha > 0;
        settings.awq = "alpha grid " + std::to_string(options_.awq_grid) + ", " + std::to_string(options_.awq_rows) +
                       " sampled rows per input, " + std::to_string(scaled) + "/" +
                       std::to_string(report.awq_groups.size()) + " groups scaled";
    }
    auto metadata = quant::output_metadata(*model, settings);
    if (!metadata) return metadata.error();
    auto planned = GgufStreamWriter::planned_size(*metadata, headers);
    if (!planned) return planned.error();
    auto free_bytes = free_disk_bytes(options_.output);
    if (!free_bytes) return free_bytes.error();
    if (*free_bytes < *planned + kDiskMargin)
        return make_error("not enough disk space for '" + options_.output + "': it needs " + gib(*planned) + ", " +
                          gib(*free_bytes) + " are free");

    auto writer = GgufStreamWriter::create(options_.output, *metadata, headers);
    if (!writer) return writer.error();
    p.phase = QuantizePhase::Quantizing;
    p.n_tensors = plan->size();
    p.bytes_total = (*writer)->file_size();
    std::vector<float> values;
    std::vector<std::byte> bytes;
    for (size_t i = 0; i < plan->size(); ++i) {
        const TensorPlan& t = (*plan)[i];
        const TensorView& src = model->tensors[t.source_index];
        p.tensor_index = i;
        p.tensor_name = t.name;
        progress.report(p, i == 0);
        if (was_cancelled()) return make_error("quantization cancelled; nothing was written to '" + options_.output + "'");

        if (t.type == src.type && !quant::source_tensor_is_converted(*model, src) && !folds.touches(t.name)) {
            bytes.assign(src.data, src.data + src.nbytes);  // kept as it is
            if (!model->random_weights) quant::release_pages(src.data, src.nbytes);
        } else {
            if (Status s = quant::read_source_tensor(*model, src, values); !s) return s.error();
            if (Status s = folds.apply(t.name, t.shape, values); !s) return s.error();
            std::vector<float> importance;
            if (t.quantized && has_imatrix) {
                auto w = imatrix->weights_for(t.name, t.shape[0]);
                if (!w) return w.error();
                importance = std::move(*w);
                folds.adjust_importance(t.name, importance);  // the input is x / s now
            }
            const int64_t row = t.shape[0];
            const int64_t n_rows = src.n_elements() / row;
            const uint64_t row_bytes = quantized_size(t.type, row);
            bytes.resize(size_t(row_bytes * uint64_t(n_rows)));
            const int64_t rows_per_task = std::max<int64_t>(1, kValuesPerTask / row);
            const int64_t n_tasks = (n_rows + rows_per_task - 1) / rows_per_task;
            std::mutex error_mutex;
            std::optional<Error> error;
            pool.parallel_for(n_tasks, [&](int64_t task, int) {
                if (was_cancelled()) return;
                for (int64_t r = task * rows_per_task; r < std::min(n_rows, (task + 1) * rows_per_task); ++r) {
                    Status s = quantize_row(t.type, std::span<const float>(values.data() + r * row, size_t(row)),
                                            std::span<std::byte>(bytes.data() + uint64_t(r) * row_bytes, row_bytes),
                                            importance);
                    if (!s) {
                        std::lock_guard<std::mutex> lock(error_mutex);
                        if (!error) error = make_error("tensor '" + t.name + "' row " + std::to_string(r) + ": " + s.error().message);
                        return;
                    }
                }
            });
            if (error) return *error;
            if (was_cancelled()) return make_error("quantization cancelled; nothing was written to '" + options_.output + "'");
        }
        if (Status s = (*writer)->write_next(bytes); !s) return s.error();
        p.bytes_done += bytes.size();
        report.tensors.push_back({t.name, std::string(traits(t.source_type).name), std::string(traits(t.type).name),
                                  t.shape, bytes.size(), t.fallback});
    }
    if (was_cancelled()) return make_error("quantization cancelled; nothing was written to '" + options_.output + "'");
    if (Status s = (*writer)->commit(); !s) return s.error();
    std::vector<float>().swap(values);  // the largest tensor in F32: not kept through validation
    std::vector<std::byte>().swap(bytes);

    report.output_bytes = (*writer)->file_size();
    uint64_t data_bytes = 0;
    for (const QuantizedTensor& t : report.tensors) data_bytes += t.bytes;
    report.bits_per_weight = report.n_parameters ? 8.0 * double(data_bytes) / double(report.n_parameters) : 0;
    if (Status s = validate(*model, report, progress, p); !s) return s.error();
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    report.report_path = options_.output + ".quality.json";
    if (Status s = quant::write_report_json(report, report.report_path); !s) {
        report.warnings.push_back(s.error().message);
        report.report_path.clear();
    }
    p.phase = QuantizePhase::Done;
    p.tensor_index = plan->size();
    p.bytes_done = p.bytes_total;
    progress.report(p, true);
    return report;
}

}  // namespace folio
