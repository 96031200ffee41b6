// The engine's metrics as Prometheus exposes them (folio:* with vLLM's
// names), refreshed every second while the dialog is open, for a user who
// wants the exact counters and histogram buckets behind the plots.
#pragma once

#include <QDialog>
#include <QTimer>

class QPlainTextEdit;

namespace folio::ui {

class EngineBridge;

class MetricsDialog : public QDialog {
    Q_OBJECT
public:
    explicit MetricsDialog(EngineBridge* bridge, QWidget* parent = nullptr);
    QString text() const;

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    EngineBridge* bridge_;
    QPlainTextEdit* text_ = nullptr;
    QTimer refresh_;
};

}  // namespace folio::ui
