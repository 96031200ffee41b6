#include "ui/plot_axes.h"

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

}  // namespace folio::ui
