// Engine > Connect to Server…: a saved profile or a new one (URL, optional
// API key, request timeout), "List Models" asks the server's /v1/models
// (asynchronously: the dialog stays live, a failure says why in it), and
// Connect hands the profile with the chosen model to the caller.
#pragma once

#include <QDialog>
#include <QVector>

#include "ui/remote_engine.h"

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace folio::ui {

class RemoteDialog : public QDialog {
    Q_OBJECT
public:
    RemoteDialog(const QVector<RemoteProfile>& profiles, QWidget* parent = nullptr);

    RemoteProfile profile() const;
    void setProfile(const RemoteProfile& profile);
    // Asks /v1/models with the fields as they are; the model list and the status line answer.
    void listModels();
    QString statusText() const;
    QStringList listedModels() const;

private:
    void updateButtons();

    QVector<RemoteProfile> profiles_;
    QComboBox* saved_ = nullptr;
    QLineEdit* name_ = nullptr;
    QLineEdit* url_ = nullptr;
    QLineEdit* key_ = nullptr;
    QSpinBox* timeout_ = nullptr;
    QComboBox* model_ = nullptr;
    QPushButton* list_ = nullptr;
    QLabel* status_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
    RemoteEngine* probe_ = nullptr;  // the List Models request's engine
};

}  // namespace folio::ui
