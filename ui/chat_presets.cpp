#include "ui/chat_presets.h"

#include <QJsonDocument>
#include <QSettings>

#include "ui/session_store.h"

namespace folio::ui {

ChatPreset ChatPreset::from_session(const QString& name, const ChatSession& session) {
    return ChatPreset{name.trimmed(), session.system_prompt, session.sampling, session.overflow};
}

bool ChatPreset::matches(const ChatSession& session) const {
    return system_prompt == session.system_prompt && sampling == session.sampling && overflow == session.overflow;
}

ChatPresets::ChatPresets(QObject* parent) : QObject(parent) { reload(); }

void ChatPresets::reload() {
    presets_.clear();
    auto settings = studio_settings();
    const int n = settings->beginReadArray("chatPresets");
    for (int i = 0; i < n; ++i) {
        settings->setArrayIndex(i);
        ChatPreset p;
        p.name = settings->value("name").toString().trimmed();
        if (p.name.isEmpty() || find(p.name)) continue;
        p.system_prompt = settings->value("systemPrompt").toString();
        // The sampling settings in the sessions' JSON form, so that a key added later keeps its default.
        p.sampling = sampling_from_json(QJsonDocument::fromJson(settings->value("sampling").toByteArray()).object());
        p.overflow = overflow_from_string(settings->value("overflow").toString());
        presets_.push_back(p);
    }
    settings->endArray();
    emit changed();
}

void ChatPresets::write() const {
    auto settings = studio_settings();
    settings->remove("chatPresets");
    settings->beginWriteArray("chatPresets", static_cast<int>(presets_.size()));
    for (int i = 0; i < presets_.size(); ++i) {
        settings->setArrayIndex(i);
        const ChatPreset& p = presets_[i];
        settings->setValue("name", p.name);
        settings->setValue("systemPrompt", p.system_prompt);
        settings->setValue("sampling", QJsonDocument(sampling_to_json(p.sampling)).toJson(QJsonDocument::Compact));
        settings->setValue("overflow", overflow_to_string(p.overflow));
    }
    settings->endArray();
    settings->sync();
}

const ChatPreset* ChatPresets::find(const QString& name) const {
    for (const ChatPreset& p : presets_)
        if (p.name == name) return &p;
    return nullptr;
}

QStringList ChatPresets::names() const {
    QStringList out;
    for (const ChatPreset& p : presets_) out << p.name;
    return out;
}

bool ChatPresets::save(const ChatPreset& preset) {
    ChatPreset p = preset;
    p.name = p.name.trimmed();
    if (p.name.isEmpty()) return false;
    bool replaced = false;
    for (ChatPreset& existing : presets_)
        if (existing.name == p.name) {
            existing = p;
            replaced = true;
        }
    if (!replaced) presets_.push_back(p);
    write();
    emit changed();
    return true;
}

bool ChatPresets::remove(const QString& name) {
    const auto before = presets_.size();
    presets_.removeIf([&](const ChatPreset& p) { return p.name == name; });
    if (presets_.size() == before) return false;
    write();
    emit changed();
    return true;
}

}  // namespace folio::ui
