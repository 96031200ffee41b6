// Live plots of the engine (QCustomPlot): prompt and generation throughput,
// KV cache usage, running and waiting requests, time to first token and
// inter-token latency, over a rolling window. Pause freezes the view (the
// samples keep coming); export writes the plots as PNG and every sample as CSV.
#pragma once

#include <QVector>
#include <QWidget>

#include <deque>

#include "ui/studio_types.h"

class QCustomPlot;
class QComboBox;
class QToolButton;

namespace folio::ui {

class PlotsPanel : public QWidget {
    Q_OBJECT
public:
    explicit PlotsPanel(QWidget* parent = nullptr);

    void addSample(const EngineSample& sample);
    void clear();
    void setPaused(bool paused);
    bool isPaused() const { return paused_; }
    void setWindowSeconds(int seconds);

    bool exportPng(const QString& path);
    bool exportCsv(const QString& path) const;
    size_t sampleCount() const { return samples_.size(); }
    QVector<QCustomPlot*> plots() const { return {throughput_, kv_, requests_, latency_}; }

public slots:
    void exportPngInteractive();
    void exportCsvInteractive();

protected:
    void changeEvent(QEvent* event) override;  // follows the theme

private:
    void replot();
    QCustomPlot* makePlot(const QString& title, const QString& y_label);

    std::deque<EngineSample> samples_;  // everything, up to an hour at 10 Hz
    QCustomPlot* throughput_ = nullptr;
    QCustomPlot* kv_ = nullptr;
    QCustomPlot* requests_ = nullptr;
    QCustomPlot* latency_ = nullptr;
    QComboBox* window_ = nullptr;
    QToolButton* pause_ = nullptr;
    bool paused_ = false;
    int window_s_ = 60;
};

}  // namespace folio::ui
