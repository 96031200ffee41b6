#include "ui/chat_export.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QObject>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStringList>

namespace folio::ui {

namespace {

QString role_heading(const QString& role) {
    return role == "user" ? QObject::tr("User") : role == "assistant" ? QObject::tr("Assistant") : role;
}

QString sampling_line(const SamplingSettings& s) {
    QStringList parts;
    parts << QObject::tr("temperature %1").arg(s.temperature) << QObject::tr("top-k %1").arg(s.top_k)
          << QObject::tr("top-p %1").arg(s.top_p) << QObject::tr("min-p %1").arg(s.min_p)
          << QObject::tr("repetition penalty %1").arg(s.repetition_penalty)
          << QObject::tr("max tokens %1").arg(s.max_tokens)
          << (s.seed < 0 ? QObject::tr("random seed") : QObject::tr("seed %1").arg(s.seed));
    return parts.join(QStringLiteral(", "));
}

// A reply's finish, as the chat view says it (nothing for an ordinary stop).
QString finish_note(const ChatMessageRecord& m) {
    if (m.role != "assistant") return {};
    if (!m.error.isEmpty()) return QObject::tr("failed: %1").arg(m.error);
    if (m.finish_reason == "length") return QObject::tr("stopped at the token limit");
    if (m.finish_reason == "abort") return QObject::tr("stopped");
    if (m.finish_reason == "interrupted") return QObject::tr("interrupted");
    return {};
}

}  // namespace

QString chat_to_markdown(const ChatSession& session) {
    QString md;
    md += "# " + (session.title.isEmpty() ? QObject::tr("Chat") : session.title) + "\n\n";
    QStringList about;
    if (session.created.isValid()) about << QObject::tr("Started %1").arg(session.created.toString(Qt::ISODate));
    if (!session.preset.isEmpty()) about << QObject::tr("preset \"%1\"").arg(session.preset);
    if (!about.isEmpty()) md += "*" + about.join(QStringLiteral(" · ")) + "*\n\n";
    md += QObject::tr("Sampling: %1.").arg(sampling_line(session.sampling)) + "\n\n";
    if (!session.system_prompt.isEmpty()) {
        md += "## " + QObject::tr("System prompt") + "\n\n";
        md += session.system_prompt + "\n\n";
    }
    for (const ChatMessageRecord& m : session.messages) {
        md += "## " + role_heading(m.role) + "\n\n";
        md += m.content + "\n\n";
        QStringList notes;
        const QString finish = finish_note(m);
        if (!finish.isEmpty()) notes << finish;
        if (m.has_stats) notes << m.stats.summary();
        if (m.dropped_messages > 0)
            notes << QObject::tr("%n earlier message(s) left out to fit the context", nullptr, m.dropped_messages);
        if (!notes.isEmpty()) md += "> " + notes.join(QStringLiteral(" · ")) + "\n\n";
    }
    return md;
}

QJsonObject chat_to_export_json(const ChatSession& session) {
    return QJsonObject{{"format", "folio-chat"},
                       {"version", 1},
                       {"exported", QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs)},
                       {"chat", session.to_json()}};
}

bool chat_from_export_json(const QJsonObject& document, ChatSession* session) {
    if (document.value("format").toString() != "folio-chat" || !document.value("chat").isObject()) return false;
    *session = ChatSession::from_json(document.value("chat").toObject());
    return true;
}

ChatExportFormat chat_export_format_for(const QString& path) {
    return QFileInfo(path).suffix().compare("json", Qt::CaseInsensitive) == 0 ? ChatExportFormat::Json
                                                                              : ChatExportFormat::Markdown;
}

QString chat_export_file_name(const ChatSession& session, ChatExportFormat format) {
    QString stem = session.title.simplified();
    stem.replace(QRegularExpression(QStringLiteral("[/\\\\:*?\"<>|\\x00-\\x1f]")), QStringLiteral("_"));
    if (stem.isEmpty() || stem.startsWith('.')) stem = QObject::tr("chat") + stem;
    return stem.left(80) + (format == ChatExportFormat::Json ? ".json" : ".md");
}

bool write_chat_export(const QString& path, const ChatSession& session, ChatExportFormat format, QString* error) {
    const QByteArray bytes = format == ChatExportFormat::Json
                                 ? QJsonDocument(chat_to_export_json(session)).toJson(QJsonDocument::Indented)
                                 : chat_to_markdown(session).toUtf8();
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        if (error)
            *error = QObject::tr("Cannot write %1: %2. Nothing was changed there; choose another folder or free some "
                                 "space and export again.")
                         .arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return true;
}

}  // namespace folio::ui
