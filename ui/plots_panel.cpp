#include "ui/plots_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QSaveFile>
#include <QTextStream>
#include <QToolButton>
#include <QVBoxLayout>

#include <qcustomplot.h>

namespace folio::ui {

namespace {

constexpr size_t kMaxSamples = 36000;

QCPGraph* add_graph(QCustomPlot* plot, const QString& name, const QColor& color) {
    QCPGraph* g = plot->addGraph();
    g->setName(name);
    g->setPen(QPen(color, 1.6));
    return g;
}

void style_for_palette(QCustomPlot* plot, const QPalette& pal) {
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
    plot->legend->setBorderPen(QPen(pal.mid().color()));
    if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) title->setTextColor(pal.text().color());
}

QString csv_number(double v) { return std::isnan(v) ? QString() : QString::number(v, 'g', 8); }

}  // namespace

PlotsPanel::PlotsPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Window"), this));
    window_ = new QComboBox(this);
    for (int s : {30, 60, 300, 900}) window_->addItem(s < 60 ? tr("%1 s").arg(s) : tr("%1 min").arg(s / 60), s);
    window_->setCurrentIndex(1);
    bar->addWidget(window_);
    pause_ = new QToolButton(this);
    pause_->setCheckable(true);
    pause_->setIcon(QIcon(":/icons/pause.svg"));
    pause_->setText(tr("Pause"));
    pause_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addWidget(pause_);
    bar->addStretch(1);
    auto* png = new QToolButton(this);
    png->setIcon(QIcon(":/icons/export.svg"));
    png->setText(tr("PNG…"));
    png->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    auto* csv = new QToolButton(this);
    csv->setIcon(QIcon(":/icons/export.svg"));
    csv->setText(tr("CSV…"));
    csv->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addWidget(png);
    bar->addWidget(csv);
    layout->addLayout(bar);

    auto* grid = new QGridLayout;
    throughput_ = makePlot(tr("Throughput"), tr("tokens/s"));
    add_graph(throughput_, tr("prompt"), QColor(0x4f, 0x7c, 0xff));
    add_graph(throughput_, tr("generation"), QColor(0xf2, 0x8c, 0x28));
    kv_ = makePlot(tr("KV cache usage"), tr("%"));
    add_graph(kv_, tr("usage"), QColor(0x2e, 0xa0, 0x6b))->setBrush(QColor(0x2e, 0xa0, 0x6b, 50));
    kv_->yAxis->setRange(0, 100);
    requests_ = makePlot(tr("Requests"), tr("count"));
    add_graph(requests_, tr("running"), QColor(0x4f, 0x7c, 0xff))->setLineStyle(QCPGraph::lsStepLeft);
    add_graph(requests_, tr("waiting"), QColor(0xd6, 0x45, 0x45))->setLineStyle(QCPGraph::lsStepLeft);
    latency_ = makePlot(tr("Latency"), tr("ms"));
    add_graph(latency_, tr("TTFT"), QColor(0x9b, 0x59, 0xb6))->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
    latency_->graph(0)->setLineStyle(QCPGraph::lsNone);
    add_graph(latency_, tr("inter-token"), QColor(0xf2, 0x8c, 0x28));
    grid->addWidget(throughput_, 0, 0);
    grid->addWidget(kv_, 0, 1);
    grid->addWidget(requests_, 1, 0);
    grid->addWidget(latency_, 1, 1);
    layout->addLayout(grid, 1);

    connect(window_, &QComboBox::currentIndexChanged, this, [this](int) { setWindowSeconds(window_->currentData().toInt()); });
    connect(pause_, &QToolButton::toggled, this, &PlotsPanel::setPaused);
    connect(png, &QToolButton::clicked, this, &PlotsPanel::exportPngInteractive);
    connect(csv, &QToolButton::clicked, this, &PlotsPanel::exportCsvInteractive);
}

QCustomPlot* PlotsPanel::makePlot(const QString& title, const QString& y_label) {
    auto* plot = new QCustomPlot(this);
    plot->setMinimumSize(200, 110);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(font().family(), font().pointSize(), QFont::Bold)));
    plot->xAxis->setLabel(tr("seconds"));
    plot->yAxis->setLabel(y_label);
    plot->yAxis->ticker()->setTickCount(4);
    plot->xAxis->ticker()->setTickCount(6);
    plot->legend->setVisible(true);
    plot->legend->setFont(QFont(font().family(), std::max(7, font().pointSize() - 2)));
    plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    plot->legend->setRowSpacing(0);
    style_for_palette(plot, palette());
    return plot;
}

void PlotsPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        for (QCustomPlot* plot : plots()) style_for_palette(plot, palette());
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
    pause_->setIcon(QIcon(paused ? ":/icons/play.svg" : ":/icons/pause.svg"));
    if (!paused) replot();
}

void PlotsPanel::setWindowSeconds(int seconds) {
    window_s_ = std::max(5, seconds);
    replot();
}

void PlotsPanel::replot() {
    const double now = samples_.empty() ? 0.0 : samples_.back().time_s;
    const double start = now - window_s_;
    QVector<double> t, prompt, gen, kv, running, waiting, ttft_t, ttft, itl_t, itl;
    double max_tps = 1, max_req = 1, max_ms = 1;
    for (auto it = std::lower_bound(samples_.begin(), samples_.end(), start,
                                    [](const EngineSample& s, double v) { return s.time_s < v; });
         it != samples_.end(); ++it) {
        t << it->time_s;
        prompt << it->prompt_tokens_per_s;
        gen << it->generation_tokens_per_s;
        kv << it->kv_usage * 100.0;
        running << it->running;
        waiting << it->waiting;
        max_tps = std::max({max_tps, it->prompt_tokens_per_s, it->generation_tokens_per_s});
        max_req = std::max({max_req, double(it->running), double(it->waiting)});
        if (!std::isnan(it->ttft_s)) {
            ttft_t << it->time_s;
            ttft << it->ttft_s * 1000.0;
            max_ms = std::max(max_ms, it->ttft_s * 1000.0);
        }
        if (!std::isnan(it->inter_token_s)) {
            itl_t << it->time_s;
            itl << it->inter_token_s * 1000.0;
            max_ms = std::max(max_ms, it->inter_token_s * 1000.0);
        }
    }
    throughput_->graph(0)->setData(t, prompt, true);
    throughput_->graph(1)->setData(t, gen, true);
    kv_->graph(0)->setData(t, kv, true);
    requests_->graph(0)->setData(t, running, true);
    requests_->graph(1)->setData(t, waiting, true);
    latency_->graph(0)->setData(ttft_t, ttft, true);
    latency_->graph(1)->setData(itl_t, itl, true);
    throughput_->yAxis->setRange(0, max_tps * 1.1);
    requests_->yAxis->setRange(0, max_req + 1);
    latency_->yAxis->setRange(0, max_ms * 1.1);
    for (QCustomPlot* plot : plots()) {
        // Rolling: the newest sample at the right edge once the window has filled.
        plot->xAxis->setRange(std::max(0.0, start), std::max(now, double(window_s_)));
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
