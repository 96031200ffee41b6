#include "ui/chat_view.h"
#include "ui/resources.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>

#include "ui/chat_controller.h"
#include "ui/message_widget.h"

namespace folio::ui {

namespace {

// The messages' column. QScrollArea sizes its widget by sizeHint(), which
// for word-wrapped text is far taller than the text at the actual width;
// answering with the height for the current width keeps the column tight,
// so "scrolled to the bottom" means the newest text is in view.
class MessageColumn : public QWidget {
public:
    using QWidget::QWidget;
    QSize sizeHint() const override {
        const QSize hint = QWidget::sizeHint();
        if (!layout() || width() <= 0) return hint;
        return {hint.width(), layout()->totalHeightForWidth(width())};
    }
    // Word-wrapped labels report a minimum height for a narrow width; the
    // scroll area would make the column at least that tall.
    QSize minimumSizeHint() const override { return {0, 0}; }
};

}  // namespace

ChatView::ChatView(ChatController* chats, QWidget* parent) : QWidget(parent), chats_(chats) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    title_ = new QLabel(this);
    QFont f = title_->font();
    f.setPointSizeF(f.pointSizeF() * 1.2);
    f.setBold(true);
    title_->setFont(f);
    draft_legend_ = new QLabel(this);
    draft_legend_->setObjectName("draftLegend");
    draft_legend_->setTextFormat(Qt::RichText);
    draft_legend_->setText(QStringLiteral("<span style=\"background-color: %1\">&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;")
                               .arg(MessageWidget::draftTintCss()) +
                           tr("text from accepted drafts").toHtmlEscaped());
    draft_legend_->setToolTip(tr("Speculative decoding: tinted text came with draft tokens the model accepted; "
                                 "the rest with its own (View > Tint Accepted Drafts)"));
    QFont small = draft_legend_->font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    draft_legend_->setFont(small);
    draft_legend_->setVisible(false);
    auto* header = new QHBoxLayout;
    header->addWidget(title_, 1);
    header->addWidget(draft_legend_, 0, Qt::AlignRight | Qt::AlignVCenter);
    layout->addLayout(header);

    scroll_ = new QScrollArea(this);
    scroll_->setWidgetResizable(true);
    scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    list_ = new MessageColumn(scroll_);
    list_layout_ = new QVBoxLayout(list_);
    list_layout_->setSpacing(8);
    list_layout_->setSizeConstraint(QLayout::SetNoConstraint);
    list_layout_->addStretch(1);
    scroll_->setWidget(list_);
    layout->addWidget(scroll_, 1);

    QScrollBar* bar = scroll_->verticalScrollBar();
    connect(bar, &QScrollBar::valueChanged, this, [this, bar](int v) { follow_ = v >= bar->maximum() - 24; });
    connect(bar, &QScrollBar::rangeChanged, this, [this, bar](int, int max) {
        if (follow_) bar->setValue(max);
    });

    edit_banner_ = new QLabel(this);
    edit_banner_->setText(tr("Editing a message: Send resends the conversation from there; Esc cancels."));
    edit_banner_->setVisible(false);
    layout->addWidget(edit_banner_);

    auto* row = new QHBoxLayout;
    composer_ = new QPlainTextEdit(this);
    composer_->setPlaceholderText(tr("Message (Enter sends, Shift+Enter for a new line)"));
    composer_->setMaximumHeight(110);
    composer_->setTabChangesFocus(true);  // Tab leaves the box (keyboard users); a tab character is rarely meant
    composer_->installEventFilter(this);
    row->addWidget(composer_, 1);
    auto* buttons = new QVBoxLayout;
    send_ = new QPushButton(studio_icon("send"), tr("Send"), this);
    stop_ = new QPushButton(studio_icon("stop"), tr("Stop"), this);
    send_->setToolTip(tr("Send (Enter)"));
    stop_->setToolTip(tr("Stop the reply (Esc)"));
    buttons->addWidget(send_);
    buttons->addWidget(stop_);
    buttons->addStretch(1);
    row->addLayout(buttons);
    layout->addLayout(row);

    connect(send_, &QPushButton::clicked, this, &ChatView::sendComposer);
    connect(stop_, &QPushButton::clicked, this, &ChatView::stopGeneration);

    render_timer_.setInterval(50);  // at most 20 redraws a second
    render_timer_.setSingleShot(true);
    connect(&render_timer_, &QTimer::timeout, this, &ChatView::renderPending);

    connect(chats_, &ChatController::messagesReset, this, [this](const QString& id) {
        if (id == session_) rebuild();
    });
    connect(chats_, &ChatController::messageUpdated, this, [this](const QString& id, int index) {
        if (id != session_) return;
        pending_.insert(index);
        if (!render_timer_.isActive()) render_timer_.start();
    });
    connect(chats_, &ChatController::sessionChanged, this, [this](const QString& id) {
        if (id != session_) return;
        if (const ChatSession* s = chats_->session(id)) title_->setText(s->title);
    });
    connect(chats_, &ChatController::generatingChanged, this, [this](const QString& id, bool) {
        if (id != session_) return;
        flushPendingUpdates();
        refreshButtons();
    });
    connect(chats_, &ChatController::sessionRemoved, this, [this](const QString& id) {
        if (id == session_) setSession({});
    });
    refreshButtons();
}

void ChatView::setSession(const QString& id) {
    if (id == session_ && !widgets_.isEmpty()) return;
    session_ = id;
    cancelEdit();
    follow_ = true;
    rebuild();
}

void ChatView::setTintDrafts(bool on) {
    if (on == tint_drafts_) return;
    tint_drafts_ = on;
    draft_legend_->setVisible(on);
    pending_.clear();
    for (int i = 0; i < widgets_.size(); ++i) showMessage(i);
}

void ChatView::showMessage(int index) {
    const ChatSession* s = chats_->session(session_);
    if (!s || index < 0 || index >= widgets_.size() || index >= s->messages.size()) return;
    const ChatMessageRecord& m = s->messages[index];
    const bool last_reply = index == s->messages.size() - 1 && m.role == "assistant";
    widgets_[index]->setMessage(m, last_reply, tint_drafts_);
}

void ChatView::rebuild() {
    pending_.clear();
    for (MessageWidget* w : widgets_) w->deleteLater();
    widgets_.clear();
    const ChatSession* s = chats_->session(session_);
    title_->setText(s ? s->title : tr("No chat selected"));
    if (s) {
        for (int i = 0; i < s->messages.size(); ++i) {
            auto* w = new MessageWidget(i, list_);
            connect(w, &MessageWidget::copyRequested, this, &ChatView::copyMessage);
            connect(w, &MessageWidget::editRequested, this, &ChatView::beginEdit);
            connect(w, &MessageWidget::regenerateRequested, this, &ChatView::regenerate);
            list_layout_->insertWidget(list_layout_->count() - 1, w);
            widgets_.push_back(w);
            showMessage(i);
        }
    }
    refreshButtons();
}

void ChatView::renderPending() {
    for (int index : std::as_const(pending_)) showMessage(index);
    pending_.clear();
}

void ChatView::flushPendingUpdates() {
    render_timer_.stop();
    renderPending();
}

void ChatView::refreshButtons() {
    const bool has = chats_->session(session_) != nullptr;
    const bool generating = has && chats_->isGenerating(session_);
    send_->setEnabled(has);
    composer_->setEnabled(has);
    stop_->setEnabled(generating);
}

QString ChatView::messageText(int index) const {
    return index >= 0 && index < widgets_.size() ? widgets_[index]->text() : QString();
}

MessageWidget* ChatView::messageWidget(int index) const {
    return index >= 0 && index < widgets_.size() ? widgets_[index] : nullptr;
}

void ChatView::sendComposer() {
    const QString text = composer_->toPlainText();
    if (text.trimmed().isEmpty() || !chats_->session(session_)) return;
    const bool ok = editing_ >= 0 ? chats_->editAndResend(session_, editing_, text) : chats_->send(session_, text);
    if (ok) {
        composer_->clear();
        cancelEdit();
        follow_ = true;
    }
}

void ChatView::stopGeneration() { chats_->stop(session_); }

void ChatView::regenerate() { chats_->regenerate(session_); }

void ChatView::beginEdit(int index) {
    const ChatSession* s = chats_->session(session_);
    if (!s || index < 0 || index >= s->messages.size()) return;
    editing_ = index;
    composer_->setPlainText(s->messages[index].content);
    edit_banner_->setVisible(true);
    composer_->setFocus();
}

void ChatView::cancelEdit() {
    editing_ = -1;
    edit_banner_->setVisible(false);
}

void ChatView::copyMessage(int index) {
    QApplication::clipboard()->setText(messageText(index));
}

bool ChatView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == composer_ && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && !(key->modifiers() & Qt::ShiftModifier)) {
            sendComposer();
            return true;
        }
        if (key->key() == Qt::Key_Escape) {
            if (editing_ >= 0) {
                cancelEdit();
                composer_->clear();
            } else {
                stopGeneration();
            }
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace folio::ui
