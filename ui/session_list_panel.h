// The list of chat sessions: pick one, start a new one, rename or delete
// it; a session that is generating shows it.
#pragma once

#include <QWidget>

class QListWidget;
class QListWidgetItem;

namespace folio::ui {

class ChatController;

class SessionListPanel : public QWidget {
    Q_OBJECT
public:
    explicit SessionListPanel(ChatController* chats, QWidget* parent = nullptr);

    QString currentSession() const;
    void setCurrentSession(const QString& id);
    QListWidget* list() const { return list_; }

public slots:
    void newSession();
    void deleteCurrent();

signals:
    void currentSessionChanged(const QString& id);

private:
    QListWidgetItem* item(const QString& id) const;
    void refresh(const QString& id);

    ChatController* chats_;
    QListWidget* list_ = nullptr;
};

}  // namespace folio::ui
