#include "ui/plot_axes.h"

#include <algorithm>
#include <cmath>

namespace folio::ui {

double RelativeTimeTicker::getTickStep(const QCPRange& range) {
    static const double kSteps[] = {1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800};
    const double wanted = range.size() / std::max(1, tickCount());
    step_ = kSteps[std::size(kSteps) - 1];
    for (double s : kSteps)
        if (s >= wanted) {
            step_ = s;
            break;
        }
    return step_;
}

QString RelativeTimeTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    if (std::abs(tick) < 1e-6) return QObject::tr("now");
    const double ago = -tick;
    if (step_ >= 60) return QObject::tr("-%1 min").arg(QString::number(ago / 60.0, 'g', 3));
    return QObject::tr("-%1 s").arg(QString::number(ago, 'g', 4));
}

QSharedPointer<QCPAxisTicker> count_ticker() {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // 1, 2, 3 ... or 5, 10 ...: never 0.5
    return ticker;
}

double percent_axis_top(double max_percent) {
    for (double top : {5.0, 10.0, 20.0, 25.0, 50.0, 75.0})
        if (max_percent * 1.15 <= top) return top;
    return 100.0;
}

void append_point(QVector<double>& t, QVector<double>& v, double time_s, double value, double max_gap_s) {
    if (!t.isEmpty() && time_s - t.back() > max_gap_s && !std::isnan(v.back())) {
        t << t.back() + max_gap_s / 2;
        v << std::nan("");
    }
    t << time_s;
    v << value;
}

QCPGraph* add_graph(QCustomPlot* plot, const QString& name, const QColor& color, QCPAxis* y) {
    QCPGraph* g = plot->addGraph(plot->xAxis, y ? y : plot->yAxis);
    g->setName(name);
    g->setPen(QPen(color, 1.6));
    return g;
}

void style_plot_for_palette(QCustomPlot* plot, const QPalette& pal) {
    plot->setBackground(pal.base());
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setBasePen(QPen(pal.text().color()));
        axis->setTickPen(QPen(pal.text().color()));
        axis->setSubTickPen(QPen(pal.text().color()));
        axis->setTickLabelColor(pal.text().color());
        axis->setLabelColor(pal.text().color());
        axis->grid()->setPen(QPen(pal.mid().color(), 0, Qt::DotLine));
    }
    plot->legend->setBrush(pal.base());
    plot->legend->setTextColor(pal.text().color());
    plot->legend->setBorderPen(Qt::NoPen);
    if (auto* header = qobject_cast<QCPLayoutGrid*>(plot->plotLayout()->element(0, 0)))
        if (auto* title = qobject_cast<QCPTextElement*>(header->element(0, 0))) title->setTextColor(pal.text().color());
}

QCustomPlot* make_titled_plot(QWidget* parent, const QString& title, const QString& y_label) {
    auto* plot = new QCustomPlot(parent);
    const QFont font = parent->font();
    plot->setMinimumSize(160, 100);
    // A header row above the plot area: the title, then the legend in one row,
    // so that the legend never covers the newest data at the right edge.
    auto* header = new QCPLayoutGrid;
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, header);
    plot->plotLayout()->setRowStretchFactor(0, 0.001);
    header->addElement(0, 0, new QCPTextElement(plot, title, QFont(font.family(), font.pointSize(), QFont::Bold)));
    plot->axisRect()->insetLayout()->take(plot->legend);
    plot->axisRect()->insetLayout()->simplify();
    header->addElement(0, 1, plot->legend);
    header->setColumnStretchFactor(0, 1);
    header->setColumnStretchFactor(1, 0.001);
    plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot->legend->setWrap(0);
    plot->legend->setVisible(true);
    plot->legend->setFont(QFont(font.family(), std::max(7, font.pointSize() - 2)));
    plot->legend->setBorderPen(Qt::NoPen);
    plot->legend->setColumnSpacing(8);
    plot->yAxis->setLabel(y_label);
    plot->yAxis->ticker()->setTickCount(4);
    style_plot_for_palette(plot, parent->palette());
    return plot;
}

}  // namespace folio::ui
