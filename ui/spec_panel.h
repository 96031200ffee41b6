// Speculative decoding, live (QCustomPlot): the engine's method and K, or
// "speculation paused (batch of N)" when adaptive K turns drafting off; the
// acceptance rate and mean acceptance length over time; the draft model's
// time against the target's verify pass per step; and, per draft position,
// the share of verify steps whose draft was accepted there. Fed the same
// EngineSample stream as the live plots.
#pragma once

#include <QWidget>

#include <deque>

#include "ui/studio_types.h"

class QCustomPlot;
class QCPBars;
class QLabel;

namespace folio::ui {

class SpecPanel : public QWidget {
    Q_OBJECT
public:
    explicit SpecPanel(QWidget* parent = nullptr);

    // The engine now running ("" = speculation off, or no engine).
    void setSpeculation(const QString& description);
    void addSample(const EngineSample& sample);
    void clear();

    QString stateText() const;
    QCustomPlot* acceptancePlot() const { return acceptance_; }
    QCustomPlot* costPlot() const { return cost_; }
    QCustomPlot* positionPlot() const { return positions_; }
    int positionBars() const;  // draft positions shown in the per-position chart

protected:
    void changeEvent(QEvent* event) override;  // follows the theme
    void showEvent(QShowEvent* event) override;
    QSize minimumSizeHint() const override { return {200, 180}; }

private:
    void replot();

    QString speculation_;
    std::deque<EngineSample> samples_;  // the last 5 minutes
    QLabel* state_ = nullptr;
    QCustomPlot* acceptance_ = nullptr;
    QCustomPlot* cost_ = nullptr;
    QCustomPlot* positions_ = nullptr;
    QCPBars* bars_ = nullptr;
};

}  // namespace folio::ui
