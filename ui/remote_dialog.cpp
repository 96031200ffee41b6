#include "ui/remote_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace folio::ui {

RemoteDialog::RemoteDialog(const QVector<RemoteProfile>& profiles, QWidget* parent)
    : QDialog(parent), profiles_(profiles) {
    setWindowTitle(tr("Connect to Server"));
    setObjectName("remoteDialog");
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Chat with a model served elsewhere over the OpenAI API: folio serve, llama.cpp's "
                                "llama-server, vLLM or SGLang. The studio's own model is unloaded while connected."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* form = new QFormLayout;
    saved_ = new QComboBox(this);
    saved_->setObjectName("remoteSaved");
    saved_->addItem(tr("New server"));
    for (const RemoteProfile& p : profiles_) saved_->addItem(p.display_name());
    form->addRow(tr("&Profile:"), saved_);
    name_ = new QLineEdit(this);
    name_->setPlaceholderText(tr("host:port"));
    form->addRow(tr("&Name:"), name_);
    url_ = new QLineEdit(this);
    url_->setObjectName("remoteUrl");
    url_->setPlaceholderText("http://127.0.0.1:8000");
    form->addRow(tr("&URL:"), url_);
    key_ = new QLineEdit(this);
    key_->setObjectName("remoteKey");
    key_->setEchoMode(QLineEdit::Password);
    key_->setPlaceholderText(tr("none"));
    key_->setToolTip(tr("Sent as \"Authorization: Bearer KEY\"; saved with the profile in the studio's settings, "
                        "in plain text"));
    form->addRow(tr("API &key:"), key_);
    timeout_ = new QSpinBox(this);
    timeout_->setRange(1, 3600);
    timeout_->setSuffix(tr(" s"));
    timeout_->setValue(60);
    timeout_->setToolTip(tr("A reply that gets no data from the server for this long ends with an error"));
    form->addRow(tr("&Timeout:"), timeout_);
    auto* model_row = new QHBoxLayout;
    model_ = new QComboBox(this);
    model_->setObjectName("remoteModel");
    model_->setEditable(true);
    model_->setMinimumWidth(220);
    model_->lineEdit()->setPlaceholderText(tr("the first the server lists"));
    list_ = new QPushButton(tr("&List Models"), this);
    list_->setObjectName("remoteList");
    model_row->addWidget(model_, 1);
    model_row->addWidget(list_);
    form->addRow(tr("&Model:"), model_row);
    layout->addLayout(form);

    status_ = new QLabel(this);
    status_->setObjectName("remoteStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons_->button(QDialogButtonBox::Ok)->setText(tr("&Connect"));
    layout->addWidget(buttons_);

    connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
        const QString bad = profile().validate();
        if (!bad.isEmpty()) {
            status_->setText(bad);
            return;
        }
        accept();
    });
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(list_, &QPushButton::clicked, this, &RemoteDialog::listModels);
    connect(url_, &QLineEdit::textChanged, this, &RemoteDialog::updateButtons);
    connect(saved_, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index > 0 && index <= profiles_.size()) setProfile(profiles_[index - 1]);
    });
    if (!profiles_.isEmpty()) {
        saved_->setCurrentIndex(1);
        setProfile(profiles_.front());
    }
    updateButtons();
}

RemoteProfile RemoteDialog::profile() const {
    RemoteProfile p;
    p.name = name_->text().trimmed();
    p.url = url_->text().trimmed();
    p.api_key = key_->text();
    p.model = model_->currentText().trimmed();
    p.timeout_s = timeout_->value();
    return p;
}

void RemoteDialog::setProfile(const RemoteProfile& p) {
    name_->setText(p.name);
    url_->setText(p.url);
    key_->setText(p.api_key);
    timeout_->setValue(p.timeout_s);
    model_->clear();
    if (!p.model.isEmpty()) model_->addItem(p.model);
    model_->setCurrentText(p.model);
    status_->clear();
}

void RemoteDialog::updateButtons() {
    const bool usable = !url_->text().trimmed().isEmpty();
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(usable);
    list_->setEnabled(usable);
}

void RemoteDialog::listModels() {
    RemoteProfile p = profile();
    p.model.clear();  // any: the point is to see them
    if (const QString bad = p.validate(); !bad.isEmpty()) {
        status_->setText(bad);
        return;
    }
    if (probe_) probe_->deleteLater();
    probe_ = new RemoteEngine(this);
    status_->setText(tr("Asking %1 for its models…").arg(p.base().toString()));
    list_->setEnabled(false);
    RemoteEngine* probe = probe_;
    connect(probe, &RemoteEngine::connected, this, [this, probe] {
        const QString keep = model_->currentText();
        model_->clear();
        model_->addItems(probe->models());
        model_->setCurrentText(probe->models().contains(keep) ? keep : probe->models().front());
        status_->setText(tr("%n model(s) served.", nullptr, static_cast<int>(probe->models().size())));
        probe->disconnectFromServer();
        updateButtons();
    });
    connect(probe, &RemoteEngine::connectFailed, this, [this](const QString&, const QString& message) {
        status_->setText(tr("Cannot list the models: %1").arg(message));
        updateButtons();
    });
    probe->connectTo(p);
}

QString RemoteDialog::statusText() const { return status_->text(); }

QStringList RemoteDialog::listedModels() const {
    QStringList out;
    for (int i = 0; i < model_->count(); ++i) out << model_->itemText(i);
    return out;
}

}  // namespace folio::ui
