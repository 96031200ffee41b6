// Chat presets: named sets of a system prompt, sampling settings and the
// long-chat policy that a chat can take in one step. They live in the
// studio's settings (QSettings, the `chatPresets` array), so they outlast
// the chats that used them; ChatPresets is the UI thread's list of them
// and tells its panels when it changes.
#pragma once

#include <QObject>
#include <QVector>

#include "ui/chat_session.h"

namespace folio::ui {

struct ChatPreset {
    QString name;
    QString system_prompt;
    SamplingSettings sampling;
    folio::ChatOverflow overflow = folio::ChatOverflow::DropOldestTurns;

    static ChatPreset from_session(const QString& name, const ChatSession& session);
    // Whether the chat's settings are still the preset's.
    bool matches(const ChatSession& session) const;
    bool operator==(const ChatPreset&) const = default;
};

class ChatPresets : public QObject {
    Q_OBJECT
public:
    // Reads the presets from studio_settings().
    explicit ChatPresets(QObject* parent = nullptr);

    const QVector<ChatPreset>& presets() const { return presets_; }
    const ChatPreset* find(const QString& name) const;
    QStringList names() const;
    // Adds a preset, or replaces the one of that name; saved at once. False for an empty name.
    bool save(const ChatPreset& preset);
    bool remove(const QString& name);
    // Re-reads the settings (another studio may have written them).
    void reload();

signals:
    void changed();

private:
    void write() const;
    QVector<ChatPreset> presets_;
};

}  // namespace folio::ui
