// The live plots' axes, chosen for reading at a glance: time as seconds (or
// minutes) before now, with "now" at the right edge; whole numbers for
// counts; a percentage axis that fits the data (3 % KV usage is not a flat
// line on 0-100); and series broken where there is nothing to draw (idle,
// or a pause in the samples) instead of lines drawn across the gap.
#pragma once

#include <QVector>

#include <qcustomplot.h>

namespace folio::ui {

// Ticks at round steps (1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10 min) on an axis
// whose 0 is now; labels "now", "-30 s", "-2 min".
class RelativeTimeTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override;

private:
    double step_ = 10;
};

// Whole-number ticks (1, 2, 5, 10, ... apart) for counts.
QSharedPointer<QCPAxisTicker> count_ticker();

// The top of a 0-100 % axis for data peaking at `max_percent`: the smallest
// of 5, 10, 20, 25, 50, 75, 100 that leaves a little headroom.
double percent_axis_top(double max_percent);

// Appends (t, v) to a series, first breaking it (a NaN point) when more
// than `max_gap_s` passed since its last point: QCustomPlot draws no line
// through a NaN.
void append_point(QVector<double>& t, QVector<double>& v, double time_s, double value, double max_gap_s);

// A series of the plot against its x axis and `y` (default: its y axis), pen 1.6 px.
QCPGraph* add_graph(QCustomPlot* plot, const QString& name, const QColor& color, QCPAxis* y = nullptr);

// A plot with a header row above its area: the title, then the legend in
// one row (so the legend never covers the newest data), styled for the
// parent's palette; y labelled, 4 ticks.
QCustomPlot* make_titled_plot(QWidget* parent, const QString& title, const QString& y_label);
// Background, axes, grid, legend and title in the palette's colours (call again on a palette change).
void style_plot_for_palette(QCustomPlot* plot, const QPalette& palette);

}  // namespace folio::ui
