// The chat sessions and what happens to them: sending a message, streaming
// the reply into it, stop, regenerate, edit-and-resend. It lives on the UI
// thread, owns the sessions, receives the EngineBridge's updates (values, by
// queued signal) and saves the sessions (atomically; during a reply at most
// once a second, so a kill loses at most a second of text).
#pragma once

#include <QHash>
#include <QObject>
#include <QTimer>
#include <QVector>

#include "ui/chat_presets.h"
#include "ui/chat_session.h"
#include "ui/session_store.h"
#include "ui/studio_types.h"

namespace folio::ui {

class EngineBridge;

class ChatController : public QObject {
    Q_OBJECT
public:
    ChatController(EngineBridge* bridge, SessionStore store, QObject* parent = nullptr);
    ~ChatController() override;  // saves

    const QVector<ChatSession>& sessions() const { return sessions_; }
    const ChatSession* session(const QString& id) const;
    int indexOf(const QString& id) const;

    QString createSession(const QString& title = {});
    void removeSession(const QString& id);
    void renameSession(const QString& id, const QString& title);
    void setSystemPrompt(const QString& id, const QString& prompt);
    void setSampling(const QString& id, const SamplingSettings& sampling);
    void setOverflow(const QString& id, folio::ChatOverflow overflow);
    // The preset's system prompt, sampling and long-chat policy, in one change; the chat remembers its name.
    void applyPreset(const QString& id, const ChatPreset& preset);
    // Only the name of the preset the chat is said to follow ("" = none).
    void setPresetName(const QString& id, const QString& name);

    // False (and nothing changes) when the text is empty or the session is unknown.
    bool send(const QString& id, const QString& text);
    void stop(const QString& id);
    // Drops the last reply and asks again.
    bool regenerate(const QString& id);
    // Replaces user message `index`, drops everything after it and asks again.
    bool editAndResend(const QString& id, int index, const QString& text);

    bool isGenerating(const QString& id) const { return active_.contains(id); }
    int generatingCount() const { return static_cast<int>(active_.size()); }
    // The session a ticket belongs to ("" when none): the block map colours by it.
    QString sessionForTicket(quint64 ticket) const { return ticket_session_.value(ticket); }

    bool saveNow();
    const QString& lastError() const { return last_error_; }

signals:
    void sessionAdded(const QString& id);
    void sessionRemoved(const QString& id);
    void sessionChanged(const QString& id);            // title, prompt, sampling
    void messagesReset(const QString& id);             // messages added or removed
    void messageUpdated(const QString& id, int index); // one message's text or stats
    void generatingChanged(const QString& id, bool generating);
    void errorOccurred(const QString& message);

private:
    void onUpdate(const RequestUpdate& update);
    bool startReply(ChatSession& session);
    void scheduleSave(int delay_ms);
    ChatSession* find(const QString& id);

    EngineBridge* bridge_;
    SessionStore store_;
    QVector<ChatSession> sessions_;
    QHash<QString, quint64> active_;          // session -> ticket of its reply
    QHash<quint64, QString> ticket_session_;  // every ticket handed out this run
    QTimer save_timer_;
    QString last_error_;
    // The decode speed of the latest reply this run made without drafts (of
    // at least 8 tokens): what a speculative reply's speed-up is against.
    double plain_decode_tokens_per_s_ = 0;
};

}  // namespace folio::ui
