#include "ui/quantize_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QToolButton>
#include <QVBoxLayout>

#include "folio/backend.h"
#include "folio/imatrix.h"

namespace folio::ui {

QuantizeDialog::QuantizeDialog(const QString& source, QWidget* parent) : QDialog(parent), source_(source) {
    setObjectName("quantizeDialog");
    setWindowTitle(tr("Quantize to INT4"));
    setMinimumWidth(560);  // room for a whole output path
    auto* layout = new QVBoxLayout(this);

    auto* form = new QFormLayout;
    auto* source_label = new QLabel(QDir::toNativeSeparators(source), this);
    source_label->setObjectName("quantizeSource");
    source_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    source_label->setWordWrap(true);
    form->addRow(tr("Source"), source_label);
    auto* output_row = new QHBoxLayout;
    output_ = new QLineEdit(this);
    output_->setObjectName("quantizeOutput");
    auto* browse = new QPushButton(tr("Browse…"), this);
    output_row->addWidget(output_, 1);
    output_row->addWidget(browse);
    form->addRow(tr("Output"), output_row);
    layout->addLayout(form);

    summary_ = new QLabel(this);
    summary_->setObjectName("quantizeSummary");
    summary_->setWordWrap(true);
    layout->addWidget(summary_);

    advanced_toggle_ = new QToolButton(this);
    advanced_toggle_->setObjectName("quantizeAdvancedToggle");
    advanced_toggle_->setText(tr("Advanced"));
    advanced_toggle_->setCheckable(true);
    advanced_toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    advanced_toggle_->setArrowType(Qt::RightArrow);
    advanced_toggle_->setAutoRaise(true);
    layout->addWidget(advanced_toggle_);

    advanced_ = new QWidget(this);
    advanced_->setObjectName("quantizeAdvanced");
    auto* advanced_form = new QFormLayout(advanced_);
    advanced_form->setContentsMargins(16, 0, 0, 0);
    preset_ = new QComboBox(advanced_);
    preset_->setObjectName("quantizePreset");
    preset_->addItems(quantize_preset_names());
    preset_->setCurrentText("Q4_K_M");
    advanced_form->addRow(tr("Type"), preset_);

    calibration_ = new QComboBox(advanced_);
    calibration_->setObjectName("quantizeCalibration");
    calibration_->addItem(tr("Built-in text (licence texts)"), int(CalibrationSource::BuiltIn));
    calibration_->addItem(tr("A text file"), int(CalibrationSource::TextFile));
    calibration_->addItem(tr("An imatrix file"), int(CalibrationSource::ImatrixFile));
    calibration_->addItem(tr("None (plain quantization)"), int(CalibrationSource::None));
    if (folio::default_calibration_files().empty()) {
        // base-files' licence texts are missing (not a Debian-family system): the choice is disabled and says why.
        calibration_->setItemData(0, tr("/usr/share/common-licenses has none of the built-in texts"), Qt::ToolTipRole);
        if (auto* items = qobject_cast<QStandardItemModel*>(calibration_->model())) items->item(0)->setEnabled(false);
        calibration_->setCurrentIndex(3);
    }
    advanced_form->addRow(tr("Calibration"), calibration_);
    auto* path_row = new QHBoxLayout;
    calibration_path_ = new QLineEdit(advanced_);
    calibration_path_->setObjectName("quantizeCalibrationPath");
    calibration_browse_ = new QPushButton(tr("Browse…"), advanced_);
    path_row->addWidget(calibration_path_, 1);
    path_row->addWidget(calibration_browse_);
    advanced_form->addRow(tr("File"), path_row);
    calibration_chunks_ = new QSpinBox(advanced_);
    calibration_chunks_->setObjectName("quantizeCalibrationChunks");
    calibration_chunks_->setRange(0, 1 << 20);
    calibration_chunks_->setSpecialValueText(tr("all of the text"));
    calibration_chunks_->setSuffix(tr(" × 512 tokens"));
    calibration_chunks_->setValue(0);
    advanced_form->addRow(tr("Calibration chunks"), calibration_chunks_);
    awq_ = new QCheckBox(tr("Activation-aware scales (AWQ), searched on the calibration text"), advanced_);
    awq_->setObjectName("quantizeAwq");
    advanced_form->addRow(tr("AWQ"), awq_);
    threads_ = new QSpinBox(advanced_);
    threads_->setObjectName("quantizeThreads");
    threads_->setRange(0, 1024);
    threads_->setSpecialValueText(tr("physical cores"));
    advanced_form->addRow(tr("Threads"), threads_);
    device_ = new QComboBox(advanced_);
    device_->setObjectName("quantizeDevice");
    device_->addItem(tr("CPU"), "cpu");
    const int gpus = folio::cuda_device_count();
    const QStringList gpu_names = QString::fromStdString(folio::describe_cuda_devices()).split('\n');
    for (int i = 0; i < gpus; ++i)
        device_->addItem(i < gpu_names.size() ? gpu_names[i] : QStringLiteral("cuda:%1").arg(i), QStringLiteral("cuda:%1").arg(i));
    device_->setEnabled(gpus > 0);
    device_->setToolTip(gpus ? tr("Where calibration and validation run the model")
                             : tr("CPU only: %1").arg(QString::fromStdString(folio::describe_cuda_devices())));
    auto* device_row = new QVBoxLayout;
    device_row->addWidget(device_);
    if (gpus == 0) {
        // Disabled, and why, where it can be read.
        auto* why = new QLabel(QString::fromStdString(folio::describe_cuda_devices()), advanced_);
        why->setObjectName("quantizeDeviceReason");
        why->setWordWrap(true);
        why->setEnabled(false);
        device_row->addWidget(why);
    }
    advanced_form->addRow(tr("Device"), device_row);
    validation_chunks_ = new QSpinBox(advanced_);
    validation_chunks_->setObjectName("quantizeValidationChunks");
    validation_chunks_->setRange(0, 1 << 16);
    validation_chunks_->setValue(4);
    validation_chunks_->setSuffix(tr(" × 512 tokens"));
    validation_chunks_->setSpecialValueText(tr("none (block checks only)"));
    if (default_validation_text().isEmpty()) {
        validation_chunks_->setValue(0);
        validation_chunks_->setEnabled(false);
        validation_chunks_->setToolTip(tr("The validation text (/usr/share/common-licenses/GPL-3) is not on this system"));
    } else {
        validation_chunks_->setToolTip(tr("Result and source compared on %1: PPL, KL divergence, top token")
                                           .arg(default_validation_text()));
    }
    advanced_form->addRow(tr("Validation chunks"), validation_chunks_);
    advanced_->setVisible(false);
    layout->addWidget(advanced_);

    problem_ = new QLabel(this);
    problem_->setObjectName("quantizeProblem");
    problem_->setWordWrap(true);
    QPalette warn = problem_->palette();
    warn.setColor(QPalette::WindowText, QColor(0xd0, 0x40, 0x30));
    problem_->setPalette(warn);
    problem_->setVisible(false);
    layout->addWidget(problem_);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    run_ = buttons->addButton(tr("Quantize"), QDialogButtonBox::AcceptRole);
    run_->setObjectName("quantizeRun");
    run_->setDefault(true);
    layout->addWidget(buttons);

    default_output_ = default_quantize_output(source, preset_->currentText());
    output_->setText(default_output_);

    connect(buttons, &QDialogButtonBox::accepted, this, &QuantizeDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(advanced_toggle_, &QToolButton::toggled, this, &QuantizeDialog::setAdvancedShown);
    connect(preset_, &QComboBox::currentTextChanged, this, [this](const QString& preset) {
        // The output follows the type until the user edits it.
        const QString next = default_quantize_output(source_, preset);
        if (output_->text() == default_output_) output_->setText(next);
        default_output_ = next;
        updateProblem();
    });
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Quantized model"), output_->text(), tr("GGUF models (*.gguf)"),
                                                          nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty()) output_->setText(path);
    });
    connect(calibration_browse_, &QPushButton::clicked, this, [this] {
        const bool imatrix = calibration_->currentData().toInt() == int(CalibrationSource::ImatrixFile);
        const QString path = QFileDialog::getOpenFileName(this, imatrix ? tr("Importance matrix") : tr("Calibration text"),
                                                          QFileInfo(source_).absolutePath(),
                                                          imatrix ? tr("imatrix (*.gguf *.dat);;All files (*)")
                                                                  : tr("Text (*.txt *.md);;All files (*)"));
        if (!path.isEmpty()) calibration_path_->setText(path);
    });
    connect(calibration_, &QComboBox::currentIndexChanged, this, &QuantizeDialog::updateCalibration);
    connect(output_, &QLineEdit::textChanged, this, &QuantizeDialog::updateProblem);
    connect(calibration_path_, &QLineEdit::textChanged, this, &QuantizeDialog::updateProblem);
    connect(awq_, &QCheckBox::toggled, this, &QuantizeDialog::updateProblem);
    connect(validation_chunks_, &QSpinBox::valueChanged, this, &QuantizeDialog::updateProblem);
    updateCalibration();
    adjustSize();
}

void QuantizeDialog::updateCalibration() {
    const auto source = CalibrationSource(calibration_->currentData().toInt());
    const bool file = source == CalibrationSource::TextFile || source == CalibrationSource::ImatrixFile;
    calibration_path_->setEnabled(file);
    calibration_browse_->setEnabled(file);
    // Chunks are of a text the job reads; an imatrix file is already collected.
    calibration_chunks_->setEnabled(source == CalibrationSource::BuiltIn || source == CalibrationSource::TextFile);
    awq_->setEnabled(source != CalibrationSource::None);
    if (source == CalibrationSource::None) awq_->setChecked(false);
    updateProblem();
}

QuantizeRequest QuantizeDialog::request() const {
    QuantizeRequest r;
    r.source = source_;
    r.output = output_->text().trimmed();
    r.preset = preset_->currentText();
    r.calibration = CalibrationSource(calibration_->currentData().toInt());
    r.calibration_path = calibration_path_->text().trimmed();
    r.calibration_chunks = calibration_chunks_->value() == 0 ? -1 : calibration_chunks_->value();
    r.awq = awq_->isChecked();
    r.threads = threads_->value();
    r.device = device_->currentData().toString();
    r.validation_chunks = validation_chunks_->value();
    r.validation_text = r.validation_chunks > 0 ? default_validation_text() : QString();
    return r;
}

QString QuantizeDialog::problem() const {
    const QuantizeRequest r = request();
    if (!r.output.endsWith(".gguf", Qt::CaseInsensitive) && !r.output.isEmpty())
        return tr("The output is a GGUF file: give it a .gguf name.");
    if (QFileInfo(r.output).isDir()) return tr("The output is a folder; give a file name.");
    if (!r.output.isEmpty() && !QFileInfo(QFileInfo(r.output).absolutePath()).isDir())
        return tr("The output's folder %1 does not exist.").arg(QFileInfo(r.output).absolutePath());
    folio::Result<folio::QuantizeOptions> options = r.toOptions();
    if (!options) {
        QString message = QString::fromStdString(options.error().message);
        message[0] = message[0].toUpper();
        return message + ".";
    }
    return {};
}

void QuantizeDialog::updateProblem() {
    const QuantizeRequest r = request();
    QString what;
    switch (r.calibration) {
        case CalibrationSource::BuiltIn: what = tr("an importance matrix collected on the built-in calibration text"); break;
        case CalibrationSource::TextFile: what = tr("an importance matrix collected on %1").arg(QFileInfo(r.calibration_path).fileName()); break;
        case CalibrationSource::ImatrixFile: what = tr("the importance matrix %1").arg(QFileInfo(r.calibration_path).fileName()); break;
        case CalibrationSource::None: what = tr("no calibration"); break;
    }
    summary_->setText(tr("%1 with %2%3%4.").arg(r.preset, what, r.awq ? tr(" and AWQ scales") : QString(),
                                                r.validation_chunks == 1 ? tr(", then compared with the source on a chunk of 512 "
                                                                              "tokens of a validation text")
                                                : r.validation_chunks > 1 ? tr(", then compared with the source on %1 chunks of "
                                                                               "512 tokens of a validation text")
                                                                                .arg(r.validation_chunks)
                                                                          : QString()));
    const QString p = problem();
    problem_->setText(p);
    problem_->setVisible(!p.isEmpty());
    run_->setEnabled(p.isEmpty());
}

void QuantizeDialog::accept() {
    updateProblem();
    if (!problem().isEmpty()) return;
    const QString output = outputPath();
    if (QFileInfo::exists(output)) {
        const auto answer = QMessageBox::warning(this, tr("Replace the file?"),
            tr("%1 exists. Replace it when the new file is complete?").arg(output), QMessageBox::Yes | QMessageBox::Cancel,
            QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) return;
    }
    QDialog::accept();
}

QString QuantizeDialog::outputPath() const { return output_->text().trimmed(); }
void QuantizeDialog::setOutputPath(const QString& path) { output_->setText(path); }
void QuantizeDialog::setPreset(const QString& preset) { preset_->setCurrentText(preset); }

void QuantizeDialog::setCalibration(CalibrationSource source, const QString& path) {
    calibration_->setCurrentIndex(calibration_->findData(int(source)));
    calibration_path_->setText(path);
}

void QuantizeDialog::setCalibrationChunks(int chunks) { calibration_chunks_->setValue(chunks < 0 ? 0 : chunks); }
void QuantizeDialog::setValidationChunks(int chunks) { validation_chunks_->setValue(chunks); }
void QuantizeDialog::setThreads(int threads) { threads_->setValue(threads); }
bool QuantizeDialog::advancedShown() const { return advanced_->isVisibleTo(this); }

void QuantizeDialog::setAdvancedShown(bool shown) {
    advanced_toggle_->setChecked(shown);
    advanced_toggle_->setArrowType(shown ? Qt::DownArrow : Qt::RightArrow);
    advanced_->setVisible(shown);
    adjustSize();
}

}  // namespace folio::ui
