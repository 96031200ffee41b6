// One message of a chat as the chat view shows it: who wrote it, the text
// (replies rendered as Markdown), the reply's statistics and finish reason,
// and its actions (copy; edit for the user's messages; regenerate for the
// last reply).
#pragma once

#include <QFrame>

#include "ui/chat_session.h"

class QLabel;
class QToolButton;

namespace folio::ui {

class MessageWidget : public QFrame {
    Q_OBJECT
public:
    MessageWidget(int index, QWidget* parent = nullptr);

    void setMessage(const ChatMessageRecord& message, bool is_last_reply);
    int index() const { return index_; }
    QString text() const { return content_; }
    QString statsText() const;

signals:
    void copyRequested(int index);
    void editRequested(int index);
    void regenerateRequested();

private:
    int index_;
    QString content_;
    QString rendered_;
    QLabel* role_ = nullptr;
    QLabel* body_ = nullptr;
    QLabel* stats_ = nullptr;
    QToolButton* copy_ = nullptr;
    QToolButton* edit_ = nullptr;
    QToolButton* regenerate_ = nullptr;
};

}  // namespace folio::ui
