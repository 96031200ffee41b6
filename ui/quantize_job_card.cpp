#include "ui/quantize_job_card.h"
#include "ui/resources.h"

#include <QBoxLayout>
#include <QEvent>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include <qcustomplot.h>

#include <cmath>

namespace folio::ui {

namespace {

// Below this width the chart goes under the numbers instead of beside them.
constexpr int kSideBySideWidth = 520;

double mib(uint64_t bytes) { return double(bytes) / double(1 << 20); }

QString model_name(const QString& path) { return QFileInfo(QDir::cleanPath(path)).fileName(); }

}  // namespace

QuantizeJobCard::QuantizeJobCard(quint64 id, const QuantizeRequest& request, QWidget* parent)
    : QFrame(parent), id_(id), request_(request) {
    setObjectName(QStringLiteral("quantizeJob%1").arg(id));
    setFrameShape(QFrame::StyledPanel);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    layout->setSpacing(4);

    auto* header = new QHBoxLayout;
    title_ = new QLabel(this);
    title_->setTextFormat(Qt::RichText);
    title_->setWordWrap(true);
    title_->setText(QStringLiteral("<b>%1</b> → <b>%2</b> <span>(%3)</span>")
                        .arg(model_name(request.source).toHtmlEscaped(), model_name(request.output).toHtmlEscaped(),
                             request.preset.toHtmlEscaped()));
    title_->setToolTip(tr("%1\n→ %2").arg(request.source, request.output));
    state_ = new QLabel(tr("queued"), this);
    state_->setObjectName("jobState");
    cancel_ = new QPushButton(studio_icon("stop"), tr("Cancel"), this);
    cancel_->setObjectName("jobCancel");
    load_ = new QPushButton(studio_icon("load"), tr("Load"), this);
    load_->setObjectName("jobLoad");
    load_->setToolTip(tr("Load %1 in the studio").arg(request.output));
    load_->setVisible(false);
    draft_ = new QPushButton(tr("Use as Draft"), this);
    draft_->setObjectName("jobUseAsDraft");
    draft_->setToolTip(tr("Speculative decoding of %1, drafted by this quantization (same vocabulary)").arg(request.source));
    draft_->setVisible(false);
    // The title on a line of its own, the state and the buttons under it: narrow columns too.
    layout->addWidget(title_);
    header->addWidget(state_, 1);
    header->addWidget(cancel_);
    header->addWidget(load_);
    header->addWidget(draft_);
    layout->addLayout(header);

    bar_ = new QProgressBar(this);
    bar_->setRange(0, 1000);
    bar_->setValue(0);
    bar_->setTextVisible(false);
    bar_->setMaximumHeight(10);
    layout->addWidget(bar_);
    progress_ = new QLabel(tr("waiting for the jobs before it"), this);
    progress_->setObjectName("jobProgress");
    progress_->setWordWrap(true);
    layout->addWidget(progress_);

    report_box_ = new QWidget(this);
    report_layout_ = new QBoxLayout(QBoxLayout::LeftToRight, report_box_);
    auto* report_layout = report_layout_;
    report_layout->setContentsMargins(0, 0, 0, 0);
    report_ = new QLabel(report_box_);
    report_->setObjectName("jobReport");
    report_->setTextFormat(Qt::RichText);
    report_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    report_layout->addWidget(report_, 0, Qt::AlignTop);
    chart_ = new QCustomPlot(report_box_);
    chart_->setObjectName("jobChart");
    chart_->setMinimumSize(220, 110);
    chart_->setMaximumSize(340, 130);
    report_layout->addWidget(chart_, 0, Qt::AlignTop | Qt::AlignLeft);
    report_layout->addStretch(1);
    report_box_->setVisible(false);
    layout->addWidget(report_box_);

    message_ = new QLabel(this);
    message_->setObjectName("jobMessage");
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    message_->setVisible(false);
    layout->addWidget(message_);

    connect(cancel_, &QPushButton::clicked, this, [this] {
        cancel_->setEnabled(false);  // the job stops at its next check, within a second
        state_->setText(tr("cancelling…"));
        emit cancelRequested(id_);
    });
    connect(load_, &QPushButton::clicked, this, [this] { emit loadRequested(request_.output); });
    connect(draft_, &QPushButton::clicked, this, [this] { emit useAsDraftRequested(request_.source, request_.output); });
}

void QuantizeJobCard::setStarted() {
    state_->setText(tr("running"));
    progress_->setText(tr("planning…"));
}

void QuantizeJobCard::setProgress(const QuantizeJobProgress& p) {
    if (cancel_->isEnabled()) state_->setText(tr("running"));
    QStringList parts{p.phase};
    const bool chunks = p.phase_id == folio::QuantizePhase::Calibrating || p.phase_id == folio::QuantizePhase::Validating;
    if (p.n_tensors > 0) parts << (chunks ? tr("chunk %1 / %2") : tr("tensor %1 / %2")).arg(p.tensor_index).arg(p.n_tensors);
    if (p.bytes_total > 0) parts << tr("%1 / %2 MiB").arg(mib(p.bytes_done), 0, 'f', 1).arg(mib(p.bytes_total), 0, 'f', 1);
    parts << tr("%1 elapsed").arg(format_eta(p.elapsed_s));
    if (p.eta_s >= 0) parts << tr("ETA %1").arg(format_eta(p.eta_s));
    // Lines break between the parts, never inside one ("33.1 / 100.6 MiB" stays whole).
    for (QString& part : parts) part.replace(' ', QChar(0x00a0));
    progress_->setText(parts.join(QStringLiteral(" · ")));
    progress_->setToolTip(p.tensor_name);
    // The bar follows the phase: chunks while calibrating or validating, the file's bytes while quantizing.
    double fraction = 0;
    if (chunks && p.n_tensors > 0) fraction = double(p.tensor_index) / double(p.n_tensors);
    else if (p.bytes_total > 0) fraction = double(p.bytes_done) / double(p.bytes_total);
    bar_->setValue(static_cast<int>(std::lround(1000 * std::clamp(fraction, 0.0, 1.0))));
}

void QuantizeJobCard::setOutcome(const QuantizeJobOutcome& outcome) {
    cancel_->setVisible(false);
    state_->setText(quantize_job_state_name(outcome.state));
    if (outcome.state != QuantizeJobState::Done || !outcome.report) {
        bar_->setVisible(false);
        progress_->setVisible(false);
        message_->setText(outcome.message);
        QPalette pal = message_->palette();
        pal.setColor(QPalette::WindowText, outcome.state == QuantizeJobState::Failed ? QColor(0xd0, 0x40, 0x30)
                                                                                    : palette().color(QPalette::WindowText));
        message_->setPalette(pal);
        message_->setVisible(true);
        return;
    }
    bar_->setValue(1000);
    bar_->setVisible(false);
    progress_->setVisible(false);
    load_->setVisible(true);
    draft_->setVisible(true);
    showReport(*outcome.report);
}

void QuantizeJobCard::showReport(const folio::QuantizeReport& r) {
    // Short rows: they must fit a compact window's column (about 250 px).
    QList<QPair<QString, QString>> rows;
    const double ratio = r.source_bytes ? 100.0 * double(r.output_bytes) / double(r.source_bytes) : 0.0;
    rows << qMakePair(tr("Size"), tr("%1 → %2 MiB").arg(mib(r.source_bytes), 0, 'f', 1).arg(mib(r.output_bytes), 0, 'f', 1));
    rows << qMakePair(tr("Of the source"), tr("%1 %").arg(ratio, 0, 'f', 1));
    rows << qMakePair(tr("Bits per weight"), QString::number(r.bits_per_weight, 'f', 2));
    if (r.quality_measured) {
        const folio::KldSummary& q = r.quality;
        const double delta = (q.ppl_ratio - 1.0) * 100.0;
        rows << qMakePair(tr("ΔPPL"), tr("%1%2 %").arg(delta >= 0 ? "+" : "").arg(delta, 0, 'f', 2));
        rows << qMakePair(tr("PPL"), tr("%1 → %2").arg(q.ppl_base, 0, 'f', 3).arg(q.ppl, 0, 'f', 3));
        rows << qMakePair(tr("Mean KLD"), QString::number(q.mean_kld, 'f', 4));
        rows << qMakePair(tr("p99 KLD"), QString::number(q.p99_kld, 'f', 4));
        rows << qMakePair(tr("Same top token"), tr("%1 %").arg(100.0 * q.same_top, 0, 'f', 1));
    } else {
        rows << qMakePair(tr("Quality"), r.blocks_checked ? tr("blocks checked only") : tr("not measured"));
    }
    rows << qMakePair(tr("Time"), tr("%1 s").arg(r.seconds, 0, 'f', 1));
    QString html = "<table cellspacing='0' cellpadding='1'>";
    for (const auto& [key, value] : rows)
        html += QStringLiteral("<tr><td>%1&nbsp;&nbsp;</td><td><b>%2</b></td></tr>").arg(key.toHtmlEscaped(), value.toHtmlEscaped());
    html += "</table>";
    report_->setText(html);
    QStringList plain;
    for (const auto& [key, value] : rows) plain << key + ": " + value;
    report_->setAccessibleDescription(plain.join('\n'));

    QStringList notes;
    for (const std::string& w : r.warnings) notes << tr("⚠ %1").arg(QString::fromStdString(w));
    // A long path may break after any '/' (a zero-width space there) rather than widen the panel.
    notes << tr("Written to %1").arg(QString::fromStdString(r.output).replace('/', QStringLiteral("/\u200b")));
    message_->setToolTip(QString::fromStdString(r.output));
    message_->setText(notes.join('\n'));
    message_->setVisible(true);

    // Two bars, the sizes before and after, each labelled with its MiB.
    chart_->clearPlottables();
    chart_->clearItems();
    auto* bars = new QCPBars(chart_->yAxis, chart_->xAxis);
    bars->setName("size");
    bars->setWidth(0.6);
    bars->setData({1, 2}, {mib(r.output_bytes), mib(r.source_bytes)});
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    ticker->addTick(1, QString::fromStdString(r.preset));
    ticker->addTick(2, tr("source"));
    chart_->yAxis->setTicker(ticker);
    chart_->yAxis->setRange(0.4, 2.6);
    chart_->xAxis->setRange(0, mib(r.source_bytes) * 1.35);
    chart_->xAxis->setLabel(tr("MiB"));
    chart_->xAxis->ticker()->setTickCount(3);  // a small chart: few, readable ticks
    chart_->yAxis->setTickLength(0, 0);
    for (int i = 0; i < 2; ++i) {
        auto* label = new QCPItemText(chart_);
        label->setObjectName(i ? "sourceLabel" : "outputLabel");
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->position->setCoords((i ? mib(r.source_bytes) : mib(r.output_bytes)) + mib(r.source_bytes) * 0.02, 1 + i);
        label->setText(QString::number(i ? mib(r.source_bytes) : mib(r.output_bytes), 'f', 0));
    }
    styleChart();
    report_box_->setVisible(true);
}

void QuantizeJobCard::styleChart() {
    const QPalette& pal = palette();
    chart_->setBackground(pal.base());
    for (QCPAxis* axis : {chart_->xAxis, chart_->yAxis}) {
        axis->setBasePen(QPen(pal.text().color()));
        axis->setTickPen(QPen(pal.text().color()));
        axis->setSubTickPen(Qt::NoPen);
        axis->setTickLabelColor(pal.text().color());
        axis->setLabelColor(pal.text().color());
        axis->grid()->setPen(QPen(pal.mid().color(), 0, Qt::DotLine));
    }
    chart_->yAxis->grid()->setVisible(false);
    if (chart_->plottableCount() > 0)
        if (auto* bars = qobject_cast<QCPBars*>(chart_->plottable(0))) {
            const QColor accent = pal.color(QPalette::Highlight);
            bars->setPen(QPen(accent.darker(120)));
            bars->setBrush(accent);
        }
    for (int i = 0; i < chart_->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(chart_->item(i))) text->setColor(pal.text().color());
    chart_->replot();
}

void QuantizeJobCard::setAvailableWidth(int width) {
    report_layout_->setDirection(width >= kSideBySideWidth ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom);
}

void QuantizeJobCard::changeEvent(QEvent* event) {
    QFrame::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) styleChart();
}

QString QuantizeJobCard::stateText() const { return state_->text(); }
QString QuantizeJobCard::progressText() const { return progress_->text(); }
QString QuantizeJobCard::reportText() const { return report_->accessibleDescription(); }
QString QuantizeJobCard::messageText() const { return message_->text(); }

}  // namespace folio::ui
