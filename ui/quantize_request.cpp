#include "ui/quantize_request.h"

#include <QDir>
#include <QFileInfo>

#include "folio/imatrix.h"
#include "folio/quant_recipe.h"

namespace folio::ui {

namespace {
const char* kDefaultValidationText = "/usr/share/common-licenses/GPL-3";
}  // namespace

folio::Result<folio::QuantizeOptions> QuantizeRequest::toOptions() const {
    folio::QuantizeOptions o;
    const std::optional<folio::QuantPreset> p = folio::parse_preset(preset.toStdString());
    if (!p) return folio::make_error("unknown type '" + preset.toStdString() + "'; the presets are " + folio::preset_names());
    if (source.isEmpty()) return folio::make_error("no source model");
    if (output.isEmpty()) return folio::make_error("no output file");
    if (QFileInfo(output).absoluteFilePath() == QFileInfo(source).absoluteFilePath())
        return folio::make_error("the output is the source itself; choose another file");
    o.source = source.toStdString();
    o.output = output.toStdString();
    o.preset = *p;
    o.threads = threads;
    o.device = device.toStdString();
    switch (calibration) {
        case CalibrationSource::BuiltIn:
            o.calibration_files = folio::default_calibration_files();
            if (o.calibration_files.empty())
                return folio::make_error("the built-in calibration text (/usr/share/common-licenses) is not on this "
                                         "system; choose a text file, an imatrix file or none");
            break;
        case CalibrationSource::TextFile:
            if (!QFileInfo(calibration_path).isReadable())
                return folio::make_error("cannot read the calibration text '" + calibration_path.toStdString() + "'");
            o.calibration_files = {calibration_path.toStdString()};
            break;
        case CalibrationSource::ImatrixFile:
            if (!QFileInfo(calibration_path).isReadable())
                return folio::make_error("cannot read the imatrix file '" + calibration_path.toStdString() + "'");
            o.imatrix_path = calibration_path.toStdString();
            break;
        case CalibrationSource::None: break;
    }
    o.calibration_chunks = calibration_chunks;
    if (awq && calibration == CalibrationSource::None)
        return folio::make_error("AWQ searches its scales on calibration activations: choose a calibration text "
                                 "(or an imatrix file made by folio imatrix --awq)");
    o.awq = awq;
    if (!validation_text.isEmpty() && validation_chunks > 0) {
        o.validation_text = validation_text.toStdString();
        o.validation_chunks = validation_chunks;
        o.validation_ctx = validation_ctx;
    }
    return o;
}

QString default_validation_text() {
    return QFileInfo(kDefaultValidationText).isReadable() ? QString(kDefaultValidationText) : QString();
}

QString default_quantize_output(const QString& source, const QString& preset) {
    const QFileInfo info(QDir::cleanPath(source));  // "folder/" names the folder
    // A folder's name may hold dots ("SmolLM2-1.7B"): the whole name is its stem.
    const QString stem = info.isDir() ? info.fileName() : info.completeBaseName();
    const QDir beside = info.absoluteDir();
    return beside.filePath(stem + "." + preset + ".gguf");
}

QStringList quantize_preset_names() {
    QStringList names;
    for (const QString& n : QString::fromStdString(folio::preset_names()).split(", ")) names << n.trimmed();
    return names;
}

QString quantize_job_state_name(QuantizeJobState state) {
    switch (state) {
        case QuantizeJobState::Queued: return "queued";
        case QuantizeJobState::Running: return "running";
        case QuantizeJobState::Done: return "done";
        case QuantizeJobState::Cancelled: return "cancelled";
        case QuantizeJobState::Failed: return "failed";
    }
    return {};
}

QString format_eta(double seconds) {
    if (seconds < 0) return "?";
    const int s = static_cast<int>(seconds + 0.5);
    return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
}

void register_quantize_types() {
    qRegisterMetaType<QuantizeJobProgress>();
    qRegisterMetaType<QuantizeJobOutcome>();
}

}  // namespace folio::ui
