// Live plots of the engine (QCustomPlot): prompt and generation throughput,
// KV cache usage, running and waiting requests, time to first token and
// inter-token latency, over a rolling window that ends at "now". Legends sit
// above the plot area, never over the newest data; the plots shown (a
// chooser) share the panel in as many columns as keep each one readable.
// Pause freezes the view (the samples keep coming); export writes the plots
// as PNG and every sample as CSV.
#pragma once

#include <QVector>
#include <QWidget>

#include <deque>

#include "ui/studio_types.h"

class QCustomPlot;
class QAction;
class QComboBox;
class QGridLayout;
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
    // Shows or hides one of plots() (the chooser's buttons do this).
    void setPlotVisible(int index, bool visible);
    int columns() const { return columns_; }

public slots:
    void exportPngInteractive();
    void exportCsvInteractive();

protected:
    void changeEvent(QEvent* event) override;  // follows the theme
    void resizeEvent(QResizeEvent* event) override;
    QSize minimumSizeHint() const override { return {200, 180}; }

private:
    void replot();
    void arrangePlots();
    QCustomPlot* makePlot(const QString& title, const QString& y_label);

    std::deque<EngineSample> samples_;  // everything, up to an hour at 10 Hz
    QCustomPlot* throughput_ = nullptr;
    QCustomPlot* kv_ = nullptr;
    QCustomPlot* requests_ = nullptr;
    QCustomPlot* latency_ = nullptr;
    QComboBox* window_ = nullptr;
    QToolButton* pause_ = nullptr;
    QVector<QAction*> choosers_;  // one per plot, checked when shown
    QGridLayout* grid_ = nullptr;
    int columns_ = 0;
    bool paused_ = false;
    int window_s_ = 60;
};

}  // namespace folio::ui
