#include "ui/quantize_jobs_panel.h"

#include <QEvent>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>

#include "ui/quantize_job_card.h"
#include "ui/quantize_queue.h"

namespace folio::ui {

QuantizeJobsPanel::QuantizeJobsPanel(QuantizeQueue* queue, QWidget* parent) : QWidget(parent), queue_(queue) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName("jobsScroll");
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* content = new QWidget(scroll);
    list_ = new QVBoxLayout(content);
    list_->setContentsMargins(0, 0, 0, 0);
    empty_ = new QLabel(tr("No jobs. Model > Quantize to INT4… (or the Model panel's button) quantizes the loaded model "
                           "here while it keeps answering chats."),
                        content);
    empty_->setObjectName("jobsEmpty");
    empty_->setWordWrap(true);
    list_->addWidget(empty_);
    list_->addStretch(1);
    scroll->setWidget(content);
    layout->addWidget(scroll);
    scroll_ = scroll;
    scroll->viewport()->installEventFilter(this);

    connect(queue_, &QuantizeQueue::jobAdded, this, [this, scroll](quint64 id) {
        addCard(id);
        // The new job comes into view once the layout has placed it.
        QTimer::singleShot(0, scroll, [scroll, card = card(id)] { scroll->ensureWidgetVisible(card); });
    });
    connect(queue_, &QuantizeQueue::jobStarted, this, [this](quint64 id) {
        if (QuantizeJobCard* c = card(id)) c->setStarted();
    });
    connect(queue_, &QuantizeQueue::jobProgressed, this, [this](quint64 id, const QuantizeJobProgress& p) {
        if (QuantizeJobCard* c = card(id)) c->setProgress(p);
    });
    connect(queue_, &QuantizeQueue::jobFinished, this, [this](quint64 id, const QuantizeJobOutcome& outcome) {
        if (QuantizeJobCard* c = card(id)) c->setOutcome(outcome);
    });
    for (quint64 id : queue_->jobIds()) addCard(id);
}

bool QuantizeJobsPanel::eventFilter(QObject* watched, QEvent* event) {
    // The cards' own width follows their content; the room they have is the viewport's.
    if (watched == scroll_->viewport() && event->type() == QEvent::Resize)
        for (QuantizeJobCard* c : std::as_const(cards_)) c->setAvailableWidth(scroll_->viewport()->width());
    return QWidget::eventFilter(watched, event);
}

void QuantizeJobsPanel::addCard(quint64 id) {
    const QuantizeJobEntry* e = queue_->job(id);
    if (!e || cards_.contains(id)) return;
    empty_->setVisible(false);
    auto* c = new QuantizeJobCard(id, e->request, this);
    cards_.insert(id, c);
    c->setAvailableWidth(scroll_->viewport()->width());
    list_->insertWidget(list_->count() - 1, c);  // before the stretch
    if (e->state == QuantizeJobState::Running) c->setStarted();
    connect(c, &QuantizeJobCard::cancelRequested, queue_, &QuantizeQueue::cancel);
    connect(c, &QuantizeJobCard::loadRequested, this, &QuantizeJobsPanel::loadRequested);
    connect(c, &QuantizeJobCard::useAsDraftRequested, this, &QuantizeJobsPanel::useAsDraftRequested);
}

}  // namespace folio::ui
