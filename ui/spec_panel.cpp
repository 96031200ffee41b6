#include "ui/spec_panel.h"

#include <QEvent>
#include <QShowEvent>
#include <QGridLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "ui/plot_axes.h"

namespace folio::ui {

namespace {

constexpr double kWindowS = 60;       // the time plots span
constexpr double kKeepS = 300;        // samples kept
constexpr double kMaxSampleGap = 1.0;  // samples come every 0.1 s: a longer silence is a gap

}  // namespace

SpecPanel::SpecPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    state_ = new QLabel(this);
    state_->setObjectName("specState");
    state_->setWordWrap(true);
    layout->addWidget(state_);

    acceptance_ = make_titled_plot(this, tr("Acceptance"), tr("rate"));
    acceptance_->xAxis->setTicker(QSharedPointer<RelativeTimeTicker>::create());
    acceptance_->yAxis->setRange(0, 1.05);
    acceptance_->yAxis2->setVisible(true);
    acceptance_->yAxis2->setLabel(tr("tokens a step"));
    add_graph(acceptance_, tr("acceptance rate"), QColor(0x2e, 0xa0, 0x6b));
    add_graph(acceptance_, tr("mean acceptance length"), QColor(0x4f, 0x7c, 0xff), acceptance_->yAxis2);

    cost_ = make_titled_plot(this, tr("Draft vs verify, per step"), tr("ms"));
    cost_->xAxis->setTicker(QSharedPointer<RelativeTimeTicker>::create());
    add_graph(cost_, tr("draft"), QColor(0xf2, 0x8c, 0x28));
    add_graph(cost_, tr("verify"), QColor(0x9b, 0x59, 0xb6));

    positions_ = make_titled_plot(this, tr("Accepted by draft position"), tr("share of steps"));
    positions_->xAxis->setLabel(tr("position"));
    positions_->xAxis->setTicker(count_ticker());
    positions_->yAxis->setRange(0, 1.05);
    bars_ = new QCPBars(positions_->xAxis, positions_->yAxis);
    bars_->setName(tr("accepted"));
    bars_->setBrush(QColor(0x2e, 0xa0, 0x6b, 170));
    bars_->setPen(Qt::NoPen);
    bars_->setWidth(0.7);

    auto* grid = new QGridLayout;
    grid->setSpacing(4);
    grid->addWidget(acceptance_, 0, 0);
    grid->addWidget(cost_, 0, 1);
    grid->addWidget(positions_, 0, 2);
    layout->addLayout(grid, 1);
    replot();
}

void SpecPanel::setSpeculation(const QString& description) {
    speculation_ = description;
    replot();
}

void SpecPanel::addSample(const EngineSample& s) {
    samples_.push_back(s);
    while (!samples_.empty() && samples_.front().time_s < s.time_s - kKeepS) samples_.pop_front();
    replot();
}

void SpecPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    replot();
}

void SpecPanel::clear() {
    samples_.clear();
    replot();
}

QString SpecPanel::stateText() const { return state_->text(); }

int SpecPanel::positionBars() const { return bars_->data()->size(); }

void SpecPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        for (QCustomPlot* plot : {acceptance_, cost_, positions_}) style_plot_for_palette(plot, palette());
        acceptance_->yAxis2->setTickLabelColor(palette().text().color());
        acceptance_->yAxis2->setLabelColor(palette().text().color());
        replot();
    }
}

void SpecPanel::replot() {
    const EngineSample* last = samples_.empty() ? nullptr : &samples_.back();
    if (speculation_.isEmpty())
        state_->setText(tr("Speculative decoding is off: Engine > Engine Settings… chooses a method."));
    else if (last && last->spec_paused)
        state_->setText(tr("%1 · speculation paused (batch of %2): drafts cannot pay at this batch")
                            .arg(speculation_)
                            .arg(last->running_batch));
    else if (last && last->draft_k > 0)
        state_->setText(tr("%1 · K this step: %2").arg(speculation_).arg(last->draft_k));
    else
        state_->setText(speculation_);
    if (!isVisible()) return;  // a hidden panel (no speculation, another tab) draws its plots when shown

    const double now = last ? last->time_s : 0.0;
    QVector<double> rate_t, rate, len_t, len, draft_t, draft, verify_t, verify;
    double max_len = 2, max_ms = 1;
    for (const EngineSample& s : samples_) {
        if (s.time_s < now - kWindowS || std::isnan(s.acceptance_rate)) continue;
        const double x = s.time_s - now;
        append_point(rate_t, rate, x, s.acceptance_rate, kMaxSampleGap);
        append_point(len_t, len, x, s.mean_acceptance_length, kMaxSampleGap);
        append_point(draft_t, draft, x, s.draft_ms_per_step, kMaxSampleGap);
        append_point(verify_t, verify, x, s.verify_ms_per_step, kMaxSampleGap);
        max_len = std::max(max_len, s.mean_acceptance_length);
        max_ms = std::max({max_ms, s.draft_ms_per_step, s.verify_ms_per_step});
    }
    acceptance_->graph(0)->setData(rate_t, rate, true);
    acceptance_->graph(1)->setData(len_t, len, true);
    acceptance_->yAxis2->setRange(0, max_len * 1.1);
    cost_->graph(0)->setData(draft_t, draft, true);
    cost_->graph(1)->setData(verify_t, verify, true);
    cost_->yAxis->setRange(0, max_ms * 1.15);
    for (QCustomPlot* plot : {acceptance_, cost_}) plot->xAxis->setRange(-kWindowS, 0);

    QVector<double> pos, share;
    if (last)
        for (int i = 0; i < last->accepted_share_per_position.size(); ++i) {
            pos << i + 1;
            share << last->accepted_share_per_position[i];
        }
    bars_->setData(pos, share, true);
    positions_->xAxis->setRange(0.4, std::max<double>(4, pos.size()) + 0.6);
    for (QCustomPlot* plot : {acceptance_, cost_, positions_}) plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace folio::ui
