#include "ui/session_settings_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/chat_controller.h"

namespace folio::ui {

namespace {

QDoubleSpinBox* real_box(double min, double max, double step, int decimals, QWidget* parent) {
    auto* b = new QDoubleSpinBox(parent);
    b->setRange(min, max);
    b->setSingleStep(step);
    b->setDecimals(decimals);
    return b;
}

}  // namespace

SessionSettingsPanel::SessionSettingsPanel(ChatController* chats, QWidget* parent) : QWidget(parent), chats_(chats) {
    // Scrollable, so that the panel never makes the window taller than a small screen.
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* content = new QWidget(scroll);
    scroll->setWidget(content);
    outer->addWidget(scroll);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(new QLabel(tr("System prompt"), this));
    system_prompt_ = new QPlainTextEdit(this);
    system_prompt_->setPlaceholderText(tr("Instructions the model sees before the conversation"));
    system_prompt_->setMaximumHeight(120);
    layout->addWidget(system_prompt_);

    auto* form = new QFormLayout;
    temperature_ = real_box(0, 5, 0.05, 2, this);
    temperature_->setToolTip(tr("0 = greedy"));
    top_k_ = new QSpinBox(this);
    top_k_->setRange(0, 100000);
    top_k_->setToolTip(tr("0 = off"));
    top_p_ = real_box(0.01, 1, 0.01, 2, this);
    top_p_->setToolTip(tr("1 = off"));
    min_p_ = real_box(0, 1, 0.01, 2, this);
    min_p_->setToolTip(tr("0 = off"));
    repetition_ = real_box(0.1, 5, 0.05, 2, this);
    repetition_->setToolTip(tr("1 = off"));
    max_tokens_ = new QSpinBox(this);
    max_tokens_->setRange(1, 1 << 20);
    seed_ = new QSpinBox(this);
    seed_->setRange(-1, 2147483647);
    seed_->setSpecialValueText(tr("random"));
    form->addRow(tr("Temperature"), temperature_);
    form->addRow(tr("Top-k"), top_k_);
    form->addRow(tr("Top-p"), top_p_);
    form->addRow(tr("Min-p"), min_p_);
    form->addRow(tr("Repetition penalty"), repetition_);
    form->addRow(tr("Max tokens"), max_tokens_);
    form->addRow(tr("Seed"), seed_);
    overflow_ = new QComboBox(this);
    overflow_->setObjectName("overflowChoice");
    overflow_->addItem(tr("Drop oldest turns"), static_cast<int>(folio::ChatOverflow::DropOldestTurns));
    overflow_->addItem(tr("Stop with an error"), static_cast<int>(folio::ChatOverflow::Stop));
    overflow_->addItem(tr("Truncate the middle"), static_cast<int>(folio::ChatOverflow::TruncateMiddle));
    overflow_->addItem(tr("Rolling window"), static_cast<int>(folio::ChatOverflow::RollingWindow));
    overflow_->setToolTip(tr("When the conversation is longer than the context holds: leave out the oldest messages "
                             "(the system prompt stays; the reply says what was left out), fail with an error, keep "
                             "the system prompt and the latest tokens, or keep only the latest tokens"));
    form->addRow(tr("When the chat is too long"), overflow_);
    layout->addLayout(form);
    layout->addStretch(1);

    connect(system_prompt_, &QPlainTextEdit::textChanged, this, &SessionSettingsPanel::store);
    for (QDoubleSpinBox* b : {temperature_, top_p_, min_p_, repetition_})
        connect(b, &QDoubleSpinBox::valueChanged, this, &SessionSettingsPanel::store);
    for (QSpinBox* b : {top_k_, max_tokens_, seed_}) connect(b, &QSpinBox::valueChanged, this, &SessionSettingsPanel::store);
    connect(overflow_, &QComboBox::currentIndexChanged, this, &SessionSettingsPanel::store);
    connect(chats_, &ChatController::sessionChanged, this, [this](const QString& id) {
        if (id == session_) load();
    });
    setSession({});
}

void SessionSettingsPanel::setSession(const QString& id) {
    session_ = id;
    setEnabled(chats_->session(id) != nullptr);
    load();
}

void SessionSettingsPanel::load() {
    const ChatSession* s = chats_->session(session_);
    const ChatSession empty;
    const ChatSession& src = s ? *s : empty;
    loading_ = true;
    if (system_prompt_->toPlainText() != src.system_prompt) system_prompt_->setPlainText(src.system_prompt);
    temperature_->setValue(src.sampling.temperature);
    top_k_->setValue(src.sampling.top_k);
    top_p_->setValue(src.sampling.top_p);
    min_p_->setValue(src.sampling.min_p);
    repetition_->setValue(src.sampling.repetition_penalty);
    max_tokens_->setValue(src.sampling.max_tokens);
    seed_->setValue(static_cast<int>(std::min<qint64>(src.sampling.seed, 2147483647)));
    overflow_->setCurrentIndex(std::max(0, overflow_->findData(static_cast<int>(src.overflow))));
    loading_ = false;
}

void SessionSettingsPanel::store() {
    if (loading_ || !chats_->session(session_)) return;
    SamplingSettings s;
    s.temperature = temperature_->value();
    s.top_k = top_k_->value();
    s.top_p = top_p_->value();
    s.min_p = min_p_->value();
    s.repetition_penalty = repetition_->value();
    s.max_tokens = max_tokens_->value();
    s.seed = seed_->value();
    chats_->setSampling(session_, s);
    chats_->setOverflow(session_, static_cast<folio::ChatOverflow>(overflow_->currentData().toInt()));
    chats_->setSystemPrompt(session_, system_prompt_->toPlainText());
}

}  // namespace folio::ui
