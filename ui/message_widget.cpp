#include "ui/message_widget.h"
#include "ui/resources.h"

#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "ui/chat_markdown.h"

namespace folio::ui {

namespace {

QToolButton* action_button(const char* icon, const QString& tip, QWidget* parent) {
    auto* b = new QToolButton(parent);
    b->setIcon(studio_icon(icon));
    b->setToolTip(tip);
    b->setAutoRaise(true);
    b->setIconSize(QSize(16, 16));
    return b;
}

QString reason_text(const QString& reason) {
    if (reason == "stop" || reason == "stop_string") return {};
    if (reason == "length") return QObject::tr("stopped at the token limit");
    if (reason == "abort") return QObject::tr("stopped");
    if (reason == "interrupted") return QObject::tr("interrupted (the studio closed mid-reply)");
    if (reason == "error") return QObject::tr("failed");
    return reason;
}

// What the user can do about a failed reply, from what failed.
QString advice_for(const QString& error) {
    if (error.contains("No model"))
        return QObject::tr("Open a model with File > Open Model… (Ctrl+O), or drop a GGUF file or a model folder on the window.");
    if (error.contains("context") || error.contains("KV cache") || error.contains("does not fit"))
        return QObject::tr("Choose “Drop oldest turns” under Chat Settings > When the chat is too long, start a new chat "
                           "(Ctrl+N), or raise the context length or the KV cache budget in Engine > Settings (Ctrl+,).");
    if (error.contains("speculative decoding by"))
        return QObject::tr("Choose another Speculation under Chat Settings, or that method in Engine > Settings (Ctrl+,).");
    return QObject::tr("Regenerate (Ctrl+R) tries again; Engine > Restart starts the engine afresh.");
}

// A reply as rich text: its characters as they are (escaped, whitespace
// kept) with the ranges that came from accepted drafts on the tint.
QString tinted_html(const QString& text, const QVector<QPair<int, int>>& ranges, const QString& tail) {
    const QString open = QStringLiteral("<span style=\"background-color: %1\">").arg(MessageWidget::draftTintCss());
    const int n = static_cast<int>(text.size());
    QString html = QStringLiteral("<div style=\"white-space: pre-wrap\">");
    int at = 0;
    for (const auto& [first, second] : ranges) {
        const int begin = std::clamp(first, at, n);
        const int end = std::clamp(second, begin, n);
        html += text.mid(at, begin - at).toHtmlEscaped();
        if (end > begin) html += open + text.mid(begin, end - begin).toHtmlEscaped() + QStringLiteral("</span>");
        at = end;
    }
    html += (text.mid(at) + tail).toHtmlEscaped();
    return html + QStringLiteral("</div>");
}

QString waiting_text(const ChatMessageRecord& m) {
    using W = ChatMessageRecord::Waiting;
    switch (m.waiting) {
        case W::Model: return QObject::tr("waiting for the model to load…");
        case W::Queue:
            if (m.waiting_ahead == 1) return QObject::tr("queued behind 1 request…");
            if (m.waiting_ahead > 1) return QObject::tr("queued behind %1 requests…").arg(m.waiting_ahead);
            return QObject::tr("queued…");
        case W::Prompt: return QObject::tr("reading the prompt…");
        case W::Engine: break;
    }
    return QObject::tr("waiting for the engine…");
}

}  // namespace

MessageWidget::MessageWidget(int index, QWidget* parent) : QFrame(parent), index_(index) {
    setFrameShape(QFrame::StyledPanel);
    setObjectName("message");
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 6, 10, 6);
    layout->setSpacing(4);

    auto* header = new QHBoxLayout;
    role_ = new QLabel(this);
    QFont bold = role_->font();
    bold.setBold(true);
    role_->setFont(bold);
    header->addWidget(role_);
    header->addStretch(1);
    copy_ = action_button("copy", tr("Copy the message"), this);
    edit_ = action_button("edit", tr("Edit and resend"), this);
    regenerate_ = action_button("regenerate", tr("Regenerate the reply"), this);
    header->addWidget(copy_);
    header->addWidget(edit_);
    header->addWidget(regenerate_);
    layout->addLayout(header);

    notice_ = new QLabel(this);
    notice_->setObjectName("contextNotice");
    notice_->setWordWrap(true);
    notice_->setForegroundRole(QPalette::PlaceholderText);
    notice_->setVisible(false);
    layout->addWidget(notice_);

    body_ = new QLabel(this);
    body_->setWordWrap(true);
    body_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    body_->setOpenExternalLinks(true);
    body_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    layout->addWidget(body_);

    error_ = new QLabel(this);
    error_->setObjectName("errorCard");
    error_->setWordWrap(true);
    error_->setTextFormat(Qt::RichText);
    error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_->setStyleSheet("QLabel#errorCard { border: 1px solid #d04030; border-radius: 4px; padding: 6px; }");
    error_->setVisible(false);
    layout->addWidget(error_);

    stats_ = new QLabel(this);
    stats_->setWordWrap(true);
    QFont small = stats_->font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    stats_->setFont(small);
    stats_->setForegroundRole(QPalette::PlaceholderText);
    layout->addWidget(stats_);

    connect(copy_, &QToolButton::clicked, this, [this] { emit copyRequested(index_); });
    connect(edit_, &QToolButton::clicked, this, [this] { emit editRequested(index_); });
    connect(regenerate_, &QToolButton::clicked, this, [this] { emit regenerateRequested(); });
}

QColor MessageWidget::draftTint() { return QColor(46, 160, 67, 89); }

QString MessageWidget::draftTintCss() {
    const QColor c = draftTint();
    return QStringLiteral("rgba(%1, %2, %3, %4)").arg(c.red()).arg(c.green()).arg(c.blue()).arg(c.alphaF(), 0, 'f', 2);
}

void MessageWidget::setMessage(const ChatMessageRecord& m, bool is_last_reply, bool tint_drafts) {
    const bool user = m.role == "user";
    role_->setText(user ? tr("You") : tr("Assistant"));
    setProperty("role", m.role);
    // The user's messages stand apart from the replies by their background.
    setAutoFillBackground(true);
    setBackgroundRole(user ? QPalette::AlternateBase : QPalette::Base);
    edit_->setVisible(user);
    regenerate_->setVisible(!user && is_last_reply && !m.generating());
    content_ = m.content;

    const bool failed = !user && m.finish_reason == "error";
    const QString cursor = m.generating() ? QStringLiteral(" ▍") : QString();
    const QString shown = m.content + cursor;
    const bool tinted = tint_drafts && !user;
    // The drafted ranges only grow with the text: the same text is the same picture.
    if (shown != rendered_ || tinted != rendered_tinted_) {
        rendered_ = shown;
        rendered_tinted_ = tinted;
        if (user) {
            body_->setTextFormat(Qt::PlainText);
            body_->setText(shown);
        } else if (tinted && !shown.isEmpty()) {
            body_->setTextFormat(Qt::RichText);
            body_->setText(tinted_html(m.content, m.draft_ranges, cursor));
        } else {
            body_->setTextFormat(Qt::MarkdownText);
            body_->setText(shown.isEmpty() ? tr("…") : chat_markdown(shown));
        }
    }
    // A failed reply with no text is the error card alone, not "…".
    body_->setVisible(user || !failed || !m.content.isEmpty());
    error_->setVisible(failed);
    if (failed) {
        const QString what = m.error.isEmpty() ? tr("The engine gave no reason.") : m.error;
        error_->setText(tr("<b>The reply failed.</b> %1<br>%2").arg(what.toHtmlEscaped(), advice_for(what).toHtmlEscaped()));
    }

    QString notice;
    if (!user && m.dropped_messages > 0)
        notice = (m.dropped_messages == 1 ? tr("The oldest message was left out")
                                          : tr("The %1 oldest messages were left out").arg(m.dropped_messages)) +
                 tr(": the conversation (%1 tokens) is longer than the context holds (%2 tokens). The system prompt "
                    "and the latest messages were sent.").arg(m.full_prompt_tokens).arg(m.context_tokens);
    notice_->setText(notice);
    notice_->setVisible(!notice.isEmpty());

    QStringList footer;
    if (!user) {
        if (m.generating() && !m.has_stats) footer << waiting_text(m);
        // A failed reply's numbers are empty: the card says what happened.
        if (m.has_stats && !failed) footer << m.stats.summary();
        const QString reason = failed ? QString() : reason_text(m.finish_reason);
        if (!reason.isEmpty()) footer << reason;
    }
    stats_->setVisible(!footer.isEmpty());
    stats_->setText(footer.join(QStringLiteral(" · ")));
}

QString MessageWidget::bodyText() const { return body_->text(); }

Qt::TextFormat MessageWidget::bodyFormat() const { return body_->textFormat(); }

QString MessageWidget::statsText() const { return stats_->text(); }

QString MessageWidget::noticeText() const { return notice_->text(); }

bool MessageWidget::isErrorCard() const { return !error_->isHidden(); }

QString MessageWidget::errorText() const { return error_->text(); }

}  // namespace folio::ui
