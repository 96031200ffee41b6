// One message of a chat as the chat view shows it: who wrote it, the text
// (replies rendered as Markdown, line breaks kept; or, with drafts tinted,
// as the plain text with the ranges that came from accepted drafts on a
// green background), the reply's statistics
// and finish reason, a notice when older messages were left out to fit the
// context, an error card (what failed, what to do) for a failed reply, and
// its actions (copy; edit for the user's messages; regenerate for the last
// reply).
#pragma once

#include <QColor>
#include <QFrame>

#include "ui/chat_session.h"

class QLabel;
class QToolButton;

namespace folio::ui {

class MessageWidget : public QFrame {
    Q_OBJECT
public:
    MessageWidget(int index, QWidget* parent = nullptr);

    // tint_drafts: a reply is its plain text with ChatMessageRecord::draft_ranges tinted, not Markdown.
    void setMessage(const ChatMessageRecord& message, bool is_last_reply, bool tint_drafts = false);
    int index() const { return index_; }
    QString text() const { return content_; }
    // The text as the body label holds it (Markdown, or rich text when tinted), and its format.
    QString bodyText() const;
    Qt::TextFormat bodyFormat() const;
    // The background of text from accepted drafts: translucent, so it reads on light and dark palettes.
    static QColor draftTint();
    // The tint as rich text's CSS: "rgba(46, 160, 67, 0.35)".
    static QString draftTintCss();
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
    QString rendered_;          // the text the body label was last given (with the typing cursor)
    bool rendered_tinted_ = false;
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
