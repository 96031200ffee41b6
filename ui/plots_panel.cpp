#include "ui/plots_panel.h"
#include "ui/resources.h"

#include <QComboBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QTextStream>
#include <QToolButton>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "ui/plot_axes.h"

namespace folio::ui {

namespace {

constexpr size_t kMaxSamples = 36000;
constexpr double kMaxSampleGap = 1.0;      // samples come every 0.1 s: a longer silence is a gap

QString csv_number(double v) { return std::isnan(v) ? QString() : QString::number(v, 'g', 8); }

}  // namespace

PlotsPanel::PlotsPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    // The columns follow the width (arrangePlots), so the columns of the
    // moment must not hold the panel at their width: it may always narrow.
    layout->setSizeConstraint(QLayout::SetNoConstraint);
    auto* bar = new QHBoxLayout;
    window_ = new QComboBox(this);
    window_->setToolTip(tr("The time the plots span, up to now"));
    for (int s : {30, 60, 300, 900}) window_->addItem(s < 60 ? tr("%1 s").arg(s) : tr("%1 min").arg(s / 60), s);
    window_->setCurrentIndex(1);
    bar->addWidget(window_);
    pause_ = new QToolButton(this);
    pause_->setCheckable(true);
    pause_->setIcon(studio_icon("pause"));
    pause_->setText(tr("Pause"));
    pause_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addWidget(pause_);
    throughput_ = makePlot(tr("Throughput"), tr("tokens/s"));
    add_graph(throughput_, tr("prompt"), QColor(0x4f, 0x7c, 0xff));
    add_graph(throughput_, tr("generation"), QColor(0xf2, 0x8c, 0x28));
    kv_ = makePlot(tr("KV cache usage"), tr("%"));
    add_graph(kv_, tr("usage"), QColor(0x2e, 0xa0, 0x6b))->setBrush(QColor(0x2e, 0xa0, 0x6b, 50));
    kv_->yAxis->setRange(0, percent_axis_top(0));
    requests_ = makePlot(tr("Requests"), tr("count"));
    add_graph(requests_, tr("running"), QColor(0x4f, 0x7c, 0xff))->setLineStyle(QCPGraph::lsStepLeft);
    add_graph(requests_, tr("waiting"), QColor(0xd6, 0x45, 0x45))->setLineStyle(QCPGraph::lsStepLeft);
    requests_->yAxis->setTicker(count_ticker());
    requests_->yAxis->setNumberFormat("f");
    requests_->yAxis->setNumberPrecision(0);
    latency_ = makePlot(tr("Latency"), tr("ms"));
    add_graph(latency_, tr("TTFT"), QColor(0x9b, 0x59, 0xb6))->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
    latency_->graph(0)->setLineStyle(QCPGraph::lsNone);
    add_graph(latency_, tr("inter-token"), QColor(0xf2, 0x8c, 0x28));

    // The chooser: a menu of the plots, so that the bar stays narrow enough for a side panel.
    auto* show = new QToolButton(this);
    show->setObjectName("plotChooser");
    show->setText(tr("Plots"));
    show->setToolTip(tr("Choose the plots shown (fewer plots, each larger); export them"));
    show->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(show);
    const QStringList names{tr("Throughput"), tr("KV cache usage"), tr("Requests"), tr("Latency")};
    for (int i = 0; i < names.size(); ++i) {
        QAction* a = menu->addAction(names[i]);
        a->setCheckable(true);
        a->setChecked(true);
        connect(a, &QAction::toggled, this, [this, i](bool on) { setPlotVisible(i, on); });
        choosers_ << a;
    }
    menu->addSeparator();
    menu->addAction(studio_icon("export"), tr("Export as PNG…"), this, &PlotsPanel::exportPngInteractive);
    menu->addAction(studio_icon("export"), tr("Export Samples as CSV…"), this, &PlotsPanel::exportCsvInteractive);
    show->setMenu(menu);
    bar->addWidget(show);
    bar->addStretch(1);
    layout->addLayout(bar);

    grid_ = new QGridLayout;
    grid_->setSpacing(4);
    layout->addLayout(grid_, 1);
    arrangePlots();

    connect(window_, &QComboBox::currentIndexChanged, this, [this](int) { setWindowSeconds(window_->currentData().toInt()); });
    connect(pause_, &QToolButton::toggled, this, &PlotsPanel::setPaused);
}

void PlotsPanel::setPlotVisible(int index, bool visible) {
    const QVector<QCustomPlot*> all = plots();
    if (index < 0 || index >= all.size()) return;
    if (choosers_[index]->isChecked() != visible) choosers_[index]->setChecked(visible);  // comes back here
    all[index]->setVisible(visible);
    columns_ = 0;  // rearrange
    arrangePlots();
}

void PlotsPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    arrangePlots();
}

// The shown plots in the number of columns that makes each one most
// readable: plots read best about twice as wide as tall.
void PlotsPanel::arrangePlots() {
    QVector<QCustomPlot*> shown;
    for (int i = 0; i < plots().size(); ++i)
        if (choosers_.isEmpty() || choosers_[i]->isChecked()) shown << plots()[i];
    const int n = static_cast<int>(shown.size());
    const int w = std::max(1, width() - 8), h = std::max(1, height() - 40);
    int best = 1;
    double best_score = -1;
    for (int c = 1; c <= std::max(1, n); ++c) {
        const int rows = (n + c - 1) / std::max(1, c);
        const double cw = double(w) / c, ch = double(h) / std::max(1, rows);
        const double score = std::min(cw, 2.0 * ch);
        if (score > best_score + 1e-9) {
            best_score = score;
            best = c;
        }
    }
    if (best == columns_ && grid_->count() == n) return;
    columns_ = best;
    while (grid_->count() > 0) grid_->takeAt(0);
    for (int i = 0; i < n; ++i) grid_->addWidget(shown[i], i / best, i % best);
    for (int c = 0; c < 4; ++c) grid_->setColumnStretch(c, c < best ? 1 : 0);
    for (int r = 0; r < 4; ++r) grid_->setRowStretch(r, r < (n + best - 1) / best ? 1 : 0);
}

QCustomPlot* PlotsPanel::makePlot(const QString& title, const QString& y_label) {
    QCustomPlot* plot = make_titled_plot(this, title, y_label);
    plot->xAxis->setTicker(QSharedPointer<RelativeTimeTicker>::create());
    plot->xAxis->ticker()->setTickCount(5);
    return plot;
}

void PlotsPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        for (QCustomPlot* plot : plots()) style_plot_for_palette(plot, palette());
        replot();
    }
}

void PlotsPanel::addSample(const EngineSample& s) {
    samples_.push_back(s);
    while (samples_.size() > kMaxSamples) samples_.pop_front();
    if (!paused_) replot();
}

void PlotsPanel::clear() {
    samples_.clear();
    replot();
}

void PlotsPanel::setPaused(bool paused) {
    paused_ = paused;
    if (pause_->isChecked() != paused) pause_->setChecked(paused);
    pause_->setText(paused ? tr("Resume") : tr("Pause"));
    pause_->setIcon(paused ? studio_icon("play") : studio_icon("pause"));
    if (!paused) replot();
}

void PlotsPanel::setWindowSeconds(int seconds) {
    window_s_ = std::max(5, seconds);
    replot();
}

void PlotsPanel::replot() {
    const double now = samples_.empty() ? 0.0 : samples_.back().time_s;
    const double start = now - window_s_;
    // Times relative to now (the newest sample), so the axis reads "-30 s ... now".
    QVector<double> t, kv, running, waiting, prompt_t, prompt, gen_t, gen, ttft_t, ttft, itl_t, itl;
    double max_tps = 1, max_req = 1, max_ms = 1, max_kv = 0;
    const double nan = std::nan("");
    for (auto it = std::lower_bound(samples_.begin(), samples_.end(), start,
                                    [](const EngineSample& s, double v) { return s.time_s < v; });
         it != samples_.end(); ++it) {
        const double x = it->time_s - now;
        // Idle (nothing running or waiting, no tokens): a gap, not a line along zero between two bursts.
        const bool idle = it->running == 0 && it->waiting == 0 && it->prompt_tokens_per_s == 0 &&
                          it->generation_tokens_per_s == 0;
        append_point(prompt_t, prompt, x, idle ? nan : it->prompt_tokens_per_s, kMaxSampleGap);
        append_point(gen_t, gen, x, idle ? nan : it->generation_tokens_per_s, kMaxSampleGap);
        append_point(itl_t, itl, x, std::isnan(it->inter_token_s) ? nan : it->inter_token_s * 1000.0, kMaxSampleGap);
        // The gauges are defined even when idle; only a silence in the samples breaks them.
        if (!t.isEmpty() && x - t.back() > kMaxSampleGap) {
            t << t.back() + kMaxSampleGap / 2;
            kv << nan;
            running << nan;
            waiting << nan;
        }
        t << x;
        kv << it->kv_usage * 100.0;
        running << it->running;
        waiting << it->waiting;
        max_tps = std::max({max_tps, it->prompt_tokens_per_s, it->generation_tokens_per_s});
        max_req = std::max({max_req, double(it->running), double(it->waiting)});
        max_kv = std::max(max_kv, it->kv_usage * 100.0);
        if (!std::isnan(it->ttft_s)) {
            ttft_t << x;
            ttft << it->ttft_s * 1000.0;
            max_ms = std::max(max_ms, it->ttft_s * 1000.0);
        }
        if (!std::isnan(it->inter_token_s)) max_ms = std::max(max_ms, it->inter_token_s * 1000.0);
    }
    throughput_->graph(0)->setData(prompt_t, prompt, true);
    throughput_->graph(1)->setData(gen_t, gen, true);
    kv_->graph(0)->setData(t, kv, true);
    requests_->graph(0)->setData(t, running, true);
    requests_->graph(1)->setData(t, waiting, true);
    latency_->graph(0)->setData(ttft_t, ttft, true);
    latency_->graph(1)->setData(itl_t, itl, true);
    throughput_->yAxis->setRange(0, max_tps * 1.1);
    kv_->yAxis->setRange(0, percent_axis_top(max_kv));
    requests_->yAxis->setRange(0, std::ceil(max_req) + 1);
    latency_->yAxis->setRange(0, max_ms * 1.1);
    for (QCustomPlot* plot : plots()) {
        plot->xAxis->setRange(-window_s_, 0);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

bool PlotsPanel::exportPng(const QString& path) {
    for (QCustomPlot* plot : plots()) plot->replot(QCustomPlot::rpImmediateRefresh);
    return grab().save(path, "PNG");
}

bool PlotsPanel::exportCsv(const QString& path) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) return false;
    QTextStream out(&file);
    out << "time_s,prompt_tokens_per_s,generation_tokens_per_s,kv_usage_perc,running,waiting,ttft_s,inter_token_s,"
           "preemptions_total\n";
    for (const EngineSample& s : samples_)
        out << csv_number(s.time_s) << ',' << csv_number(s.prompt_tokens_per_s) << ','
            << csv_number(s.generation_tokens_per_s) << ',' << csv_number(s.kv_usage * 100.0) << ',' << s.running << ','
            << s.waiting << ',' << csv_number(s.ttft_s) << ',' << csv_number(s.inter_token_s) << ','
            << s.preemptions_total << '\n';
    out.flush();
    return file.commit();
}

void PlotsPanel::exportPngInteractive() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export plots"), "folio-plots.png", tr("PNG images (*.png)"));
    if (!path.isEmpty() && !exportPng(path)) QMessageBox::warning(this, tr("Export failed"), tr("Could not write %1.").arg(path));
}

void PlotsPanel::exportCsvInteractive() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export samples"), "folio-samples.csv", tr("CSV files (*.csv)"));
    if (!path.isEmpty() && !exportCsv(path)) QMessageBox::warning(this, tr("Export failed"), tr("Could not write %1.").arg(path));
}

}  // namespace folio::ui
