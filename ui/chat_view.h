// The conversation of the current session and the composer under it.
// Streaming replies are redrawn at most 20 times a second; the view follows
// the newest text unless the user has scrolled up to read. With drafts
// tinted (View > Tint Accepted Drafts), replies show which of their text came
// from accepted speculative drafts, and a legend above the messages says so.
#pragma once

#include <QPointer>
#include <QSet>
#include <QTimer>
#include <QVector>
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QVBoxLayout;

namespace folio::ui {

class ChatController;
class MessageWidget;

class ChatView : public QWidget {
    Q_OBJECT
public:
    explicit ChatView(ChatController* chats, QWidget* parent = nullptr);

    void setSession(const QString& id);
    const QString& sessionId() const { return session_; }
    void setTintDrafts(bool on);
    bool tintDrafts() const { return tint_drafts_; }

    // For tests and screenshots.
    int messageCount() const { return static_cast<int>(widgets_.size()); }
    QString messageText(int index) const;
    MessageWidget* messageWidget(int index) const;
    QPlainTextEdit* composer() const { return composer_; }
    QPushButton* sendButton() const { return send_; }
    QPushButton* stopButton() const { return stop_; }
    QLabel* draftLegend() const { return draft_legend_; }
    void flushPendingUpdates();

public slots:
    void sendComposer();
    void stopGeneration();
    void regenerate();
    void beginEdit(int index);
    void cancelEdit();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    void showMessage(int index);
    void refreshButtons();
    void renderPending();
    void copyMessage(int index);

    ChatController* chats_;
    QString session_;
    QLabel* title_ = nullptr;
    QLabel* draft_legend_ = nullptr;  // shown while drafts are tinted
    bool tint_drafts_ = false;
    QScrollArea* scroll_ = nullptr;
    QWidget* list_ = nullptr;
    QVBoxLayout* list_layout_ = nullptr;
    QVector<MessageWidget*> widgets_;
    QLabel* edit_banner_ = nullptr;
    QPlainTextEdit* composer_ = nullptr;
    QPushButton* send_ = nullptr;
    QPushButton* stop_ = nullptr;
    int editing_ = -1;
    QSet<int> pending_;   // messages changed since the last redraw
    QTimer render_timer_;
    bool follow_ = true;  // keep the newest text in view
};

}  // namespace folio::ui
