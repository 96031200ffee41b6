// The current session's system prompt and sampling settings, edited in
// place and saved with the session.
#pragma once

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QPlainTextEdit;
class QSpinBox;

namespace folio::ui {

class ChatController;

class SessionSettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit SessionSettingsPanel(ChatController* chats, QWidget* parent = nullptr);
    void setSession(const QString& id);

private:
    void load();
    void store();

    ChatController* chats_;
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
};

}  // namespace folio::ui
