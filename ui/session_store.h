// Where Folio Studio keeps its files, and the chat sessions on disk: one
// JSON document written atomically (QSaveFile), so a crash or a kill
// mid-write leaves the previous version whole. The data folder is
// QStandardPaths::AppDataLocation, or $FOLIO_STUDIO_DATA (tests).
#pragma once

#include <QString>
#include <QVector>

#include <memory>

#include "ui/chat_session.h"

class QSettings;

namespace folio::ui {

QString studio_data_dir();
// The studio's settings: an INI file in the data folder when $FOLIO_STUDIO_DATA is set, else the platform's.
std::unique_ptr<QSettings> studio_settings();

class SessionStore {
public:
    explicit SessionStore(QString path = studio_data_dir() + "/sessions.json");

    // Empty with an error message when the file exists but cannot be read.
    QVector<ChatSession> load(QString* error = nullptr) const;
    bool save(const QVector<ChatSession>& sessions, QString* error = nullptr) const;
    const QString& path() const { return path_; }

private:
    QString path_;
};

}  // namespace folio::ui
