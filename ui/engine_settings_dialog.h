// Engine settings: KV block size and budget, context length, the
// scheduler's budgets, prefix caching, threads and device. Applying them
// restarts the engine on the loaded model; the chats stay as they are.
#pragma once

#include <QDialog>

#include "ui/studio_types.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace folio::ui {

class EngineSettingsDialog : public QDialog {
    Q_OBJECT
public:
    EngineSettingsDialog(const EngineSettings& settings, const ModelSummary& model, QWidget* parent = nullptr);
    EngineSettings settings() const;
    // The warning shown when the KV budget holds less than one full context ("" when it holds one).
    QString contextWarning() const;

private:
    void updateEstimate();

    ModelSummary model_;
    QSpinBox* block_size_ = nullptr;
    QSpinBox* kv_budget_ = nullptr;
    QSpinBox* max_context_ = nullptr;
    QSpinBox* max_seqs_ = nullptr;
    QSpinBox* max_batched_ = nullptr;
    QCheckBox* prefix_caching_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QComboBox* device_ = nullptr;
    QLabel* estimate_ = nullptr;
    QLabel* warning_ = nullptr;
};

}  // namespace folio::ui
