// The model library and metadata inspector: the model being looked at (the
// one loaded, or one picked but not yet loaded), its architecture,
// parameters, quantization mix, tokenizer and chat template, and the memory
// a load will take with the current engine settings, with a warning when it
// will not fit; Quantize to INT4… for the loaded one.
#pragma once

#include <QWidget>

#include "ui/studio_types.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTreeWidget;

namespace folio::ui {

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);

    void showSummary(const ModelSummary& summary, const EngineSettings& settings, bool loaded);
    void setState(const QString& text);
    QString stateText() const;
    const ModelSummary& summary() const { return summary_; }
    QString estimateText() const;
    bool estimateFits() const { return fits_; }

signals:
    void openRequested();
    void loadRequested(const QString& path);
    void unloadRequested();
    void quantizeRequested();

private:
    ModelSummary summary_;
    bool fits_ = true;
    QLabel* state_ = nullptr;
    QTreeWidget* tree_ = nullptr;
    QLabel* estimate_ = nullptr;
    QPlainTextEdit* template_ = nullptr;
    QPushButton* load_ = nullptr;
    QPushButton* unload_ = nullptr;
    QPushButton* quantize_ = nullptr;
};

}  // namespace folio::ui
