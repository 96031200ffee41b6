#include "ui/session_list_panel.h"
#include "ui/resources.h"

#include <QHBoxLayout>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include "ui/chat_controller.h"

namespace folio::ui {

SessionListPanel::SessionListPanel(ChatController* chats, QWidget* parent) : QWidget(parent), chats_(chats) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    list_ = new QListWidget(this);
    list_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    layout->addWidget(list_, 1);
    auto* row = new QHBoxLayout;
    auto* add = new QPushButton(studio_icon("new-chat"), tr("New"), this);
    auto* remove = new QPushButton(studio_icon("delete"), tr("Delete"), this);
    add->setToolTip(tr("New chat (Ctrl+N)"));
    remove->setToolTip(tr("Delete the selected chat"));
    row->addWidget(add);
    row->addWidget(remove);
    layout->addLayout(row);

    for (const ChatSession& s : chats_->sessions()) {
        auto* it = new QListWidgetItem(s.title, list_);
        it->setData(Qt::UserRole, s.id);
        it->setFlags(it->flags() | Qt::ItemIsEditable);
        refresh(s.id);
    }
    list_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(list_, &QListWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QListWidgetItem* it = list_->itemAt(pos);
        if (!it) return;
        list_->setCurrentItem(it);
        QMenu menu(this);
        menu.addAction(tr("Rename"), this, [this, it] { list_->editItem(it); });
        menu.addAction(studio_icon("stop"), tr("Stop Reply"), this, [this, it] { chats_->stop(it->data(Qt::UserRole).toString()); })
            ->setEnabled(chats_->isGenerating(it->data(Qt::UserRole).toString()));
        menu.addSeparator();
        menu.addAction(studio_icon("delete"), tr("Delete"), this, &SessionListPanel::deleteCurrent);
        menu.exec(list_->viewport()->mapToGlobal(pos));
    });
    connect(add, &QPushButton::clicked, this, &SessionListPanel::newSession);
    connect(remove, &QPushButton::clicked, this, &SessionListPanel::deleteCurrent);
    connect(list_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* current) {
        emit currentSessionChanged(current ? current->data(Qt::UserRole).toString() : QString());
    });
    connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* it) {
        const QString id = it->data(Qt::UserRole).toString();
        const ChatSession* s = chats_->session(id);
        if (s && it->text() != s->title) chats_->renameSession(id, it->text());
    });
    connect(chats_, &ChatController::sessionAdded, this, [this](const QString& id) {
        const ChatSession* s = chats_->session(id);
        auto* it = new QListWidgetItem(s ? s->title : id, list_);
        it->setData(Qt::UserRole, id);
        it->setFlags(it->flags() | Qt::ItemIsEditable);
        refresh(id);
    });
    connect(chats_, &ChatController::sessionRemoved, this, [this](const QString& id) { delete item(id); });
    connect(chats_, &ChatController::sessionChanged, this, &SessionListPanel::refresh);
    connect(chats_, &ChatController::generatingChanged, this, [this](const QString& id, bool) { refresh(id); });
}

QListWidgetItem* SessionListPanel::item(const QString& id) const {
    for (int i = 0; i < list_->count(); ++i)
        if (list_->item(i)->data(Qt::UserRole).toString() == id) return list_->item(i);
    return nullptr;
}

void SessionListPanel::refresh(const QString& id) {
    QListWidgetItem* it = item(id);
    const ChatSession* s = chats_->session(id);
    if (!it || !s) return;
    const QSignalBlocker block(list_);
    it->setText(s->title);
    const bool generating = chats_->isGenerating(id);
    it->setIcon(generating ? studio_icon("generating") : studio_icon("chat"));
    it->setToolTip(generating ? tr("%1 — generating").arg(s->title) : s->title);
}

QString SessionListPanel::currentSession() const {
    QListWidgetItem* it = list_->currentItem();
    return it ? it->data(Qt::UserRole).toString() : QString();
}

void SessionListPanel::setCurrentSession(const QString& id) {
    if (QListWidgetItem* it = item(id)) list_->setCurrentItem(it);
}

void SessionListPanel::newSession() { setCurrentSession(chats_->createSession()); }

void SessionListPanel::deleteCurrent() {
    const QString id = currentSession();
    const ChatSession* s = chats_->session(id);
    if (!s) return;
    if (!s->messages.isEmpty() &&
        QMessageBox::question(this, tr("Delete chat"), tr("Delete \"%1\" and its %2 messages?").arg(s->title).arg(s->messages.size())) !=
            QMessageBox::Yes)
        return;
    chats_->removeSession(id);
}

}  // namespace folio::ui
