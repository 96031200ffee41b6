// The values a quantization job is made of in the studio: what the quantize
// dialog asks for (QuantizeRequest, turned into folio::QuantizeOptions), and
// what crosses from the job's thread to the UI thread in queued signals:
// its progress (QuantizeJobProgress) and its end (QuantizeJobOutcome, with
// the engine's QuantizeReport when it finished).
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <memory>

#include "folio/quantize_job.h"

namespace folio::ui {

// Where calibration comes from: llama.cpp's words are "imatrix" and "calibration text".
enum class CalibrationSource { BuiltIn, TextFile, ImatrixFile, None };

struct QuantizeRequest {
    QString source;                 // a GGUF file or a Hugging Face folder
    QString output;                 // the .gguf to write
    QString preset = "Q4_K_M";
    CalibrationSource calibration = CalibrationSource::BuiltIn;
    QString calibration_path;       // the text file or the imatrix file
    int calibration_chunks = -1;    // -1: all of the text
    bool awq = false;
    int threads = 0;                // 0: the physical cores
    QString device = "cpu";
    QString validation_text;        // "" : block checks only
    int validation_chunks = 4;
    int validation_ctx = 512;

    // The engine's options (without on_progress), or why this request cannot run.
    folio::Result<folio::QuantizeOptions> toOptions() const;
};

// The built-in validation text, as `folio quantize` uses: GPL-3 from Debian's
// base-files (not among the calibration texts); "" when it is not readable.
QString default_validation_text();

// The output a request writes by default: "<stem>.<PRESET>.gguf" beside a
// GGUF source, "<folder>.<PRESET>.gguf" beside a Hugging Face folder.
QString default_quantize_output(const QString& source, const QString& preset);

// The presets the engine has, in its order ("Q4_K_M", ...).
QStringList quantize_preset_names();

struct QuantizeJobProgress {
    quint64 job = 0;
    QString phase;                  // "quantizing" (folio::quantize_phase_name)
    folio::QuantizePhase phase_id = folio::QuantizePhase::Planning;
    qint64 tensor_index = 0;        // tensors (or chunks) finished in this phase
    qint64 n_tensors = 0;
    QString tensor_name;
    quint64 bytes_done = 0;
    quint64 bytes_total = 0;
    double elapsed_s = 0;
    double eta_s = -1;              // < 0 while unknown
};

enum class QuantizeJobState { Queued, Running, Done, Cancelled, Failed };
QString quantize_job_state_name(QuantizeJobState state);

struct QuantizeJobOutcome {
    quint64 job = 0;
    QuantizeJobState state = QuantizeJobState::Failed;
    QString message;                // why it was cancelled or failed; "" when done
    std::shared_ptr<const folio::QuantizeReport> report;  // when done
};

// "1:05"; "?" when unknown.
QString format_eta(double seconds);

void register_quantize_types();

}  // namespace folio::ui

Q_DECLARE_METATYPE(folio::ui::QuantizeJobProgress)
Q_DECLARE_METATYPE(folio::ui::QuantizeJobOutcome)
