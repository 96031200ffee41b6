// One quantization job in the Jobs panel: source → output, its phase, tensor
// i / N, bytes written of the total, ETA and a progress bar while it runs,
// with Cancel; when it is done, its report (size before and after, bits per
// weight, ΔPPL, mean and p99 KLD, top-token agreement, time, warnings) with
// a small chart of the sizes beside the numbers, and Load; when cancelled
// or failed, why.
#pragma once

#include <QFrame>

#include "ui/quantize_request.h"

class QBoxLayout;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;

namespace folio::ui {

class QuantizeJobCard : public QFrame {
    Q_OBJECT
public:
    QuantizeJobCard(quint64 id, const QuantizeRequest& request, QWidget* parent = nullptr);

    quint64 jobId() const { return id_; }
    void setStarted();
    void setProgress(const QuantizeJobProgress& progress);
    void setOutcome(const QuantizeJobOutcome& outcome);
    // The panel's width: narrow (a compact window's column), the chart goes under the numbers.
    void setAvailableWidth(int width);

    QString stateText() const;
    QString progressText() const;
    QString reportText() const;   // plain text of the report's numbers
    QString messageText() const;
    QPushButton* cancelButton() const { return cancel_; }
    QPushButton* loadButton() const { return load_; }
    QPushButton* draftButton() const { return draft_; }
    QCustomPlot* chart() const { return chart_; }

signals:
    void cancelRequested(quint64 id);
    void loadRequested(const QString& path);
    // "Use as Draft": speculative decoding of `source` drafted by its quantization `output`.
    void useAsDraftRequested(const QString& source, const QString& output);

protected:
    void changeEvent(QEvent* event) override;

private:
    void showReport(const folio::QuantizeReport& report);
    void styleChart();

    quint64 id_;
    QuantizeRequest request_;
    QLabel* title_ = nullptr;
    QLabel* state_ = nullptr;
    QProgressBar* bar_ = nullptr;
    QLabel* progress_ = nullptr;
    QWidget* report_box_ = nullptr;
    QBoxLayout* report_layout_ = nullptr;
    QLabel* report_ = nullptr;
    QCustomPlot* chart_ = nullptr;
    QLabel* message_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QPushButton* load_ = nullptr;
    QPushButton* draft_ = nullptr;
};

}  // namespace folio::ui
