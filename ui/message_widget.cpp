#include "ui/message_widget.h"

#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

namespace folio::ui {

namespace {

QToolButton* action_button(const QString& icon, const QString& tip, QWidget* parent) {
    auto* b = new QToolButton(parent);
    b->setIcon(QIcon(icon));
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
    copy_ = action_button(":/icons/copy.svg", tr("Copy the message"), this);
    edit_ = action_button(":/icons/edit.svg", tr("Edit and resend"), this);
    regenerate_ = action_button(":/icons/regenerate.svg", tr("Regenerate the reply"), this);
    header->addWidget(copy_);
    header->addWidget(edit_);
    header->addWidget(regenerate_);
    layout->addLayout(header);

    body_ = new QLabel(this);
    body_->setWordWrap(true);
    body_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    body_->setOpenExternalLinks(true);
    body_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    layout->addWidget(body_);

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

void MessageWidget::setMessage(const ChatMessageRecord& m, bool is_last_reply) {
    const bool user = m.role == "user";
    role_->setText(user ? tr("You") : tr("Assistant"));
    setProperty("role", m.role);
    // The user's messages stand apart from the replies by their background.
    setAutoFillBackground(true);
    setBackgroundRole(user ? QPalette::AlternateBase : QPalette::Base);
    edit_->setVisible(user);
    regenerate_->setVisible(!user && is_last_reply && !m.generating());
    content_ = m.content;

    QString shown = m.content;
    if (m.generating()) shown += QStringLiteral(" ▍");
    if (shown != rendered_) {
        rendered_ = shown;
        if (user) {
            body_->setTextFormat(Qt::PlainText);
            body_->setText(shown);
        } else {
            body_->setTextFormat(Qt::MarkdownText);
            body_->setText(shown.isEmpty() ? tr("…") : shown);
        }
    }

    QStringList footer;
    if (!user) {
        if (m.generating() && !m.has_stats) footer << tr("waiting for the engine…");
        if (m.has_stats) footer << m.stats.summary();
        const QString reason = reason_text(m.finish_reason);
        if (!reason.isEmpty()) footer << reason;
        if (!m.error.isEmpty()) footer << m.error;
    }
    stats_->setVisible(!footer.isEmpty());
    stats_->setText(footer.join(QStringLiteral(" · ")));
}

QString MessageWidget::statsText() const { return stats_->text(); }

}  // namespace folio::ui
