// The current session's system prompt, sampling and speculation settings,
// edited in place and saved with the session; a preset picker above them
// applies a named set of them (ChatPresets) to the chat, saves the chat's
// settings as a preset (Save As…) or deletes one. The speculation choices
// follow the engine: prompt lookup always, a draft-model method only where
// the engine holds that draft model (the others greyed, with the reason).
#pragma once

#include <QWidget>

#include "ui/studio_types.h"

class QComboBox;
class QInputDialog;
class QPushButton;
class QDoubleSpinBox;
class QPlainTextEdit;
class QSpinBox;

namespace folio::ui {

class ChatController;
class ChatPresets;

class SessionSettingsPanel : public QWidget {
    Q_OBJECT
public:
    SessionSettingsPanel(ChatController* chats, ChatPresets* presets, QWidget* parent = nullptr);
    void setSession(const QString& id);
    QComboBox* presetChoice() const { return preset_; }
    QComboBox* speculationChoice() const { return speculation_; }
    QSpinBox* draftLength() const { return draft_max_; }
    // The Save As… dialog while it is open (window-modal, open()), else null.
    QInputDialog* presetNameDialog() const;

public slots:
    // The chat's current settings as a preset of this name (replacing one of the same name); the chat follows it.
    bool savePresetAs(const QString& name);
    // Applies a preset to the chat ("" : the chat follows none, its settings stay).
    void applyPreset(const QString& name);
    void deleteCurrentPreset();
    // What the running engine can draft with (its settings; default: none loaded).
    void setEngineSpeculation(const folio::ui::EngineSettings& engine);

private:
    void load();
    void store();
    void rebuildPresets();
    void askPresetName();
    void rebuildSpeculation();
    bool speculates() const;  // the chosen method (or the engine's) is not off

    ChatController* chats_;
    ChatPresets* presets_;
    QString session_;
    bool loading_ = false;
    QPlainTextEdit* system_prompt_ = nullptr;
    QDoubleSpinBox* temperature_ = nullptr;
    QSpinBox* top_k_ = nullptr;
    QDoubleSpinBox* top_p_ = nullptr;
    QDoubleSpinBox* min_p_ = nullptr;
    QDoubleSpinBox* repetition_ = nullptr;
    QSpinBox* max_tokens_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QComboBox* overflow_ = nullptr;
    QComboBox* speculation_ = nullptr;
    QSpinBox* draft_max_ = nullptr;
    QString engine_method_ = "off";  // the engine's speculation method, and its K at most
    int engine_draft_max_ = 4;
    QComboBox* preset_ = nullptr;
    QPushButton* save_preset_ = nullptr;
    QPushButton* delete_preset_ = nullptr;
    QInputDialog* name_dialog_ = nullptr;
};

}  // namespace folio::ui
