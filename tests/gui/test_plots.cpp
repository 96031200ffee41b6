// The live plots as a person reads them: legends above the plot area (never
// over the newest data), the time axis in seconds before now, whole-number
// ticks for request counts, a KV axis that fits low usage, gaps (not lines)
// across idle periods and pauses in the samples, a chooser that hides plots,
// and each shown plot tall enough to read at the studio's window sizes.
#include <cmath>

#include <qcustomplot.h>

#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/plot_axes.h"
#include "ui/plots_panel.h"

using namespace folio::ui;

namespace {

EngineSample sample(double t, int running, int waiting, double kv, double gen_tps) {
    EngineSample s;
    s.time_s = t;
    s.running = running;
    s.waiting = waiting;
    s.kv_usage = kv;
    s.generation_tokens_per_s = gen_tps;
    s.prompt_tokens_per_s = gen_tps > 0 ? 3 * gen_tps : 0;
    if (gen_tps > 0) s.inter_token_s = 1.0 / gen_tps;
    return s;
}

// Busy 0-5 s, idle 5-10 s, busy 10-15 s, no samples 15-25 s (engine unloaded), busy 25-30 s.
void feed(PlotsPanel& panel) {
    for (int i = 0; i <= 300; ++i) {
        const double t = i * 0.1;
        if (t > 15.0 && t < 25.0) continue;
        const bool busy = t < 5.0 || (t >= 10.0 && t <= 15.0) || t >= 25.0;
        panel.addSample(busy ? sample(t, 2 + (i % 2), i % 3, 0.03, 40) : sample(t, 0, 0, 0.0, 0));
    }
}

int nan_breaks(const QCPGraph* g) {
    int n = 0;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
        if (std::isnan(it->value)) ++n;
    return n;
}

}  // namespace

class PlotsTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void legends_sit_outside_the_plot_area() {
        PlotsPanel panel;
        panel.resize(1400, 300);
        panel.show();
        feed(panel);
        for (QCustomPlot* plot : panel.plots()) {
            plot->replot(QCustomPlot::rpImmediateRefresh);
            QVERIFY(plot->legend->visible());
            QVERIFY(plot->legend->layout() != plot->axisRect()->insetLayout());
            const QRect legend = plot->legend->outerRect();
            const QRect data = plot->axisRect()->rect();
            QVERIFY2(!legend.intersects(data), qPrintable(QString("legend %1,%2 %3x%4 over the data %5,%6 %7x%8")
                                                              .arg(legend.x()).arg(legend.y()).arg(legend.width()).arg(legend.height())
                                                              .arg(data.x()).arg(data.y()).arg(data.width()).arg(data.height())));
            QVERIFY(legend.width() > 0);
        }
    }

    void time_axis_reads_seconds_before_now() {
        PlotsPanel panel;
        panel.resize(1400, 300);
        panel.show();
        feed(panel);
        panel.setWindowSeconds(30);
        QCustomPlot* plot = panel.plots()[0];
        plot->replot(QCustomPlot::rpImmediateRefresh);
        QCOMPARE(plot->xAxis->range().upper, 0.0);
        QCOMPARE(plot->xAxis->range().lower, -30.0);
        const QVector<QString> labels = plot->xAxis->tickVectorLabels();
        QVERIFY(labels.contains("now"));
        QVERIFY2(labels.contains("-10 s") || labels.contains("-5 s"), qPrintable(QStringList(labels.begin(), labels.end()).join(",")));
        panel.setWindowSeconds(900);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        const QVector<QString> minutes = plot->xAxis->tickVectorLabels();
        QVERIFY2(std::any_of(minutes.begin(), minutes.end(), [](const QString& l) { return l.endsWith(" min"); }),
                 qPrintable(QStringList(minutes.begin(), minutes.end()).join(",")));
    }

    void counts_have_whole_ticks_and_kv_fits_its_data() {
        PlotsPanel panel;
        panel.resize(1400, 300);
        panel.show();
        feed(panel);
        QCustomPlot* requests = panel.plots()[2];
        requests->replot(QCustomPlot::rpImmediateRefresh);
        const QVector<double> ticks = requests->yAxis->tickVector();
        QVERIFY(!ticks.isEmpty());
        for (double t : ticks) QVERIFY2(t == std::floor(t), qPrintable(QString::number(t)));
        // 3 % usage: an axis to 5 %, not a flat line on 0-100.
        QCustomPlot* kv = panel.plots()[1];
        QCOMPARE(kv->yAxis->range().upper, 5.0);
        QCOMPARE(percent_axis_top(42), 50.0);
        QCOMPARE(percent_axis_top(95), 100.0);
    }

    void idle_periods_and_pauses_are_gaps() {
        PlotsPanel panel;
        panel.resize(1400, 300);
        panel.show();
        feed(panel);
        QCustomPlot* throughput = panel.plots()[0];
        // Two breaks: the idle 5-10 s and the silence 15-25 s.
        QVERIFY2(nan_breaks(throughput->graph(1)) >= 2, qPrintable(QString::number(nan_breaks(throughput->graph(1)))));
        QVERIFY(nan_breaks(panel.plots()[3]->graph(1)) >= 2);  // inter-token latency
        // The gauges break only at the silence, not while idle (their value is known then).
        QCOMPARE(nan_breaks(panel.plots()[1]->graph(0)), 1);
        QVector<double> t, v;
        append_point(t, v, 0, 1, 1.0);
        append_point(t, v, 0.1, 1, 1.0);
        append_point(t, v, 5.0, 1, 1.0);
        QCOMPARE(t.size(), 4);
        QVERIFY(std::isnan(v[2]));
    }

    void chooser_hides_plots_and_plots_stay_readable() {
        folio_gui_test::DataDir data;
        for (QSize size : {QSize(1500, 950), QSize(1024, 700)}) {
            MainWindowOptions options;
            options.load_model = false;
            MainWindow window(options);
            window.resize(size);
            window.show();
            QTest::qWait(100);
            window.raisePanel(window.plots());
            QTest::qWait(50);
            int shown = 0;
            for (QCustomPlot* plot : window.plots()->plots()) {
                if (!plot->isVisible()) continue;
                ++shown;
                QVERIFY2(plot->height() >= 130 && plot->width() >= 200,
                         qPrintable(QString("%1x%2 window: a plot of %3x%4").arg(size.width()).arg(size.height())
                                        .arg(plot->width()).arg(plot->height())));
            }
            QCOMPARE(shown, 4);
        }
        PlotsPanel panel;
        panel.resize(900, 300);
        panel.show();
        QTest::qWait(20);
        const int before = panel.plots()[0]->height();
        panel.setPlotVisible(2, false);
        panel.setPlotVisible(3, false);
        QTest::qWait(20);
        QVERIFY(!panel.plots()[2]->isVisible() && !panel.plots()[3]->isVisible());
        QVERIFY(panel.plots()[0]->isVisible());
        QVERIFY(panel.plots()[0]->width() >= 300);
        QVERIFY(panel.plots()[0]->height() >= before);
    }
};

QTEST_MAIN(PlotsTest)
#include "test_plots.moc"
