// "Quantize to INT4": the source (the loaded model), the output (beside it,
// "<stem>.Q4_K_M.gguf", following the type until edited), and one button
// that runs the default: Q4_K_M with the built-in calibration text. The
// Advanced disclosure holds the type, the calibration (built-in, a text
// file, an imatrix file or none) and its chunks, AWQ, threads, device and
// validation chunks. An output equal to the source is refused; an existing
// one is replaced only after a question.
#pragma once

#include <QDialog>

#include "ui/quantize_request.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QToolButton;
class QWidget;

namespace folio::ui {

class QuantizeDialog : public QDialog {
    Q_OBJECT
public:
    explicit QuantizeDialog(const QString& source, QWidget* parent = nullptr);

    QuantizeRequest request() const;
    // Why the request cannot run as filled in ("" when it can).
    QString problem() const;
    QString outputPath() const;
    void setOutputPath(const QString& path);
    void setPreset(const QString& preset);
    void setCalibration(CalibrationSource source, const QString& path = {});
    void setCalibrationChunks(int chunks);   // -1: all
    void setValidationChunks(int chunks);    // 0: block checks only
    void setThreads(int threads);
    bool advancedShown() const;
    void setAdvancedShown(bool shown);

public slots:
    // Checks the output (refused when it is the source; asks before replacing a file), then accepts.
    void accept() override;

private:
    void updateCalibration();
    void updateProblem();

    QString source_;
    QString default_output_;  // the output for the current type, while the user has not edited it
    QLineEdit* output_ = nullptr;
    QLabel* summary_ = nullptr;
    QToolButton* advanced_toggle_ = nullptr;
    QWidget* advanced_ = nullptr;
    QComboBox* preset_ = nullptr;
    QComboBox* calibration_ = nullptr;
    QLineEdit* calibration_path_ = nullptr;
    QPushButton* calibration_browse_ = nullptr;
    QSpinBox* calibration_chunks_ = nullptr;
    QCheckBox* awq_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QComboBox* device_ = nullptr;
    QSpinBox* validation_chunks_ = nullptr;
    QLabel* problem_ = nullptr;
    QPushButton* run_ = nullptr;
};

}  // namespace folio::ui
