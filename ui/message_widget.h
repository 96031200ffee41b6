// One message of a chat as the chat view shows it: who wrote it, the text
// (replies rendered as Markdown, line breaks kept), the reply's statistics
// and finish reason, a notice when older messages were left out to fit the
// context, an error card (what failed, what to do) for a failed reply, and
// its actions (copy; edit for the user's messages; regenerate for the last
// reply).
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
    // The notice above a reply (what was left out to fit the context); "" when none.
    QString noticeText() const;
    // A failed reply's card: what went wrong and what to do.
    bool isErrorCard() const;
    QString errorText() const;

signals:
    void copyRequested(int index);
    void editRequested(int index);
    void regenerateRequested();

private:
    int index_;
    QString content_;
    QString rendered_;
    QLabel* role_ = nullptr;
    QLabel* notice_ = nullptr;
    QLabel* body_ = nullptr;
    QLabel* error_ = nullptr;
    QLabel* stats_ = nullptr;
    QToolButton* copy_ = nullptr;
    QToolButton* edit_ = nullptr;
    QToolButton* regenerate_ = nullptr;
};

}  // namespace folio::ui
