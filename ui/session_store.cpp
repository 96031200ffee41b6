#include "ui/session_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QObject>
#include <QSaveFile>
#include <QSettings>
#include <QStandardPaths>

namespace folio::ui {

QString studio_data_dir() {
    const QByteArray env = qgetenv("FOLIO_STUDIO_DATA");
    QString dir = env.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)
                                : QString::fromLocal8Bit(env);
    if (dir.isEmpty()) dir = QDir::homePath() + "/.local/share/folio-studio";
    QDir().mkpath(dir);
    return dir;
}

std::unique_ptr<QSettings> studio_settings() {
    if (!qEnvironmentVariableIsEmpty("FOLIO_STUDIO_DATA"))
        return std::make_unique<QSettings>(studio_data_dir() + "/settings.ini", QSettings::IniFormat);
    return std::make_unique<QSettings>();
}

SessionStore::SessionStore(QString path) : path_(std::move(path)) {}

QVector<ChatSession> SessionStore::load(QString* error) const {
    QVector<ChatSession> sessions;
    QFile file(path_);
    if (!file.exists()) return sessions;
    if (!file.open(QIODevice::ReadOnly)) {
        if (error) *error = QObject::tr("Cannot read %1: %2").arg(path_, file.errorString());
        return sessions;
    }
    QJsonParseError parse;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parse);
    if (doc.isNull()) {
        if (error) *error = QObject::tr("%1 is not valid JSON (%2 at byte %3)").arg(path_, parse.errorString()).arg(parse.offset);
        return sessions;
    }
    for (const QJsonValue& v : doc.object().value("sessions").toArray()) sessions.push_back(ChatSession::from_json(v.toObject()));
    return sessions;
}

bool SessionStore::save(const QVector<ChatSession>& sessions, QString* error) const {
    QJsonArray list;
    for (const ChatSession& s : sessions) list.append(s.to_json());
    const QJsonDocument doc(QJsonObject{{"format", "folio-studio-sessions"}, {"version", 1}, {"sessions", list}});
    QDir().mkpath(QFileInfo(path_).absolutePath());
    QSaveFile file(path_);
    if (!file.open(QIODevice::WriteOnly) || file.write(doc.toJson(QJsonDocument::Indented)) < 0 || !file.commit()) {
        if (error) *error = QObject::tr("Cannot write %1: %2").arg(path_, file.errorString());
        return false;
    }
    return true;
}

}  // namespace folio::ui
