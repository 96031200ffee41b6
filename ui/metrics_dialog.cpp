#include "ui/metrics_dialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QVBoxLayout>

#include "ui/engine_bridge.h"

namespace folio::ui {

MetricsDialog::MetricsDialog(EngineBridge* bridge, QWidget* parent) : QDialog(parent), bridge_(bridge) {
    setWindowTitle(tr("Engine Metrics (Prometheus)"));
    setObjectName("metricsDialog");
    resize(720, 560);
    auto* layout = new QVBoxLayout(this);
    text_ = new QPlainTextEdit(this);
    text_->setReadOnly(true);
    text_->setLineWrapMode(QPlainTextEdit::NoWrap);
    QFont mono("monospace");
    mono.setStyleHint(QFont::Monospace);
    text_->setFont(mono);
    layout->addWidget(text_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton* copy = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(text_->toPlainText()); });
    connect(bridge_, &EngineBridge::prometheusText, this, [this](const QString& text) {
        if (text == text_->toPlainText()) return;
        const int scroll = text_->verticalScrollBar()->value();
        text_->setPlainText(text);
        text_->verticalScrollBar()->setValue(scroll);
    });
    refresh_.setInterval(1000);
    connect(&refresh_, &QTimer::timeout, bridge_, &EngineBridge::requestPrometheusText);
}

QString MetricsDialog::text() const { return text_->toPlainText(); }

void MetricsDialog::showEvent(QShowEvent* event) {
    QDialog::showEvent(event);
    bridge_->requestPrometheusText();
    refresh_.start();
}

void MetricsDialog::hideEvent(QHideEvent* event) {
    refresh_.stop();
    QDialog::hideEvent(event);
}

}  // namespace folio::ui
