// A chat written out for people and for programs: Markdown (the title, the
// system prompt, the sampling settings, then each message under its role,
// with a reply's numbers under it) and JSON (the session's own form: the
// messages with roles and per-reply stats, the sampling settings, under a
// format tag). Files are written whole or not at all (QSaveFile: a
// temporary file renamed over the target), so a failed export never
// damages an earlier one.
#pragma once

#include <QJsonObject>
#include <QString>

#include "ui/chat_session.h"

namespace folio::ui {

enum class ChatExportFormat { Markdown, Json };

QString chat_to_markdown(const ChatSession& session);
// {"format": "folio-chat", "version": 1, "exported": ..., "chat": ChatSession::to_json()}
QJsonObject chat_to_export_json(const ChatSession& session);
// The chat in an export document (ChatSession::from_json of its "chat"); false when it is not one.
bool chat_from_export_json(const QJsonObject& document, ChatSession* session);

// The format a file name asks for: .json is JSON, anything else Markdown.
ChatExportFormat chat_export_format_for(const QString& path);
// A file name for the chat's title: "Trip plans.md" (characters a file system refuses replaced).
QString chat_export_file_name(const ChatSession& session, ChatExportFormat format);

// Writes atomically; false with a message naming the file and the reason.
bool write_chat_export(const QString& path, const ChatSession& session, ChatExportFormat format, QString* error);

}  // namespace folio::ui
