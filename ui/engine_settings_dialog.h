// Engine settings: KV block size and budget, context length, the
// scheduler's budgets, prefix caching, threads and device, and speculative
// decoding (method, draft model, K, adaptive K). Applying them
// restarts the engine on the loaded model; the chats stay as they are.
#pragma once

#include <QDialog>

#include <memory>

#include "ui/studio_types.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace folio {
class Tokenizer;
}

namespace folio::ui {

class EngineSettingsDialog : public QDialog {
    Q_OBJECT
public:
    EngineSettingsDialog(const EngineSettings& settings, const ModelSummary& model, QWidget* parent = nullptr);
    EngineSettings settings() const;
    // The warning shown when the KV budget holds less than one full context ("" when it holds one).
    QString contextWarning() const;
    // Why the chosen draft model cannot draft for the loaded one ("" when it
    // can, or when the method needs no draft model): its vocabulary must be
    // the target's (folio::check_draft_vocabulary); Apply stays disabled meanwhile.
    QString draftProblem() const { return draft_problem_; }
    ~EngineSettingsDialog() override;

private:
    void updateEstimate();
    void updateSpeculation();  // checks the draft model, enables its fields

    ModelSummary model_;
    QSpinBox* block_size_ = nullptr;
    QSpinBox* kv_budget_ = nullptr;
    QSpinBox* max_context_ = nullptr;
    QSpinBox* max_seqs_ = nullptr;
    QSpinBox* max_batched_ = nullptr;
    QCheckBox* prefix_caching_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QComboBox* device_ = nullptr;
    QComboBox* kv_type_ = nullptr;
    QComboBox* spec_method_ = nullptr;
    QLineEdit* draft_model_ = nullptr;
    QPushButton* draft_browse_ = nullptr;
    QLabel* draft_status_ = nullptr;
    QSpinBox* draft_max_ = nullptr;
    QCheckBox* draft_adaptive_ = nullptr;
    QPushButton* apply_ = nullptr;
    QString draft_problem_;
    QString checked_path_, checked_status_, checked_problem_;  // the last draft read, so typing reads none twice
    std::unique_ptr<folio::Tokenizer> target_tokenizer_;  // read once, for the vocabulary check
    QLabel* estimate_ = nullptr;
    QLabel* warning_ = nullptr;
};

}  // namespace folio::ui
