#include "ui/session_settings_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QPushButton>
#include <QLabel>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "ui/chat_controller.h"
#include "ui/chat_presets.h"

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

SessionSettingsPanel::SessionSettingsPanel(ChatController* chats, ChatPresets* presets, QWidget* parent)
    : QWidget(parent), chats_(chats), presets_(presets) {
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
    auto* preset_row = new QHBoxLayout;
    preset_row->addWidget(new QLabel(tr("Preset"), this));
    preset_ = new QComboBox(this);
    preset_->setObjectName("presetChoice");
    preset_->setToolTip(tr("A saved set of system prompt, sampling and speculation settings and long-chat policy: "
                           "choosing one applies it to this chat"));
    preset_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    preset_->setMinimumContentsLength(6);
    preset_row->addWidget(preset_, 1);
    save_preset_ = new QPushButton(tr("Save As…"), this);
    save_preset_->setAutoDefault(false);
    save_preset_->setObjectName("savePresetAs");
    save_preset_->setToolTip(tr("Save this chat's system prompt and settings as a preset"));
    delete_preset_ = new QPushButton(tr("Delete"), this);
    delete_preset_->setObjectName("deletePreset");
    delete_preset_->setToolTip(tr("Delete the chosen preset (chats keep their settings)"));
    layout->addLayout(preset_row);
    // The buttons on a line of their own: the column is narrow in a compact window.
    auto* preset_buttons = new QHBoxLayout;
    preset_buttons->addStretch(1);
    preset_buttons->addWidget(save_preset_);
    preset_buttons->addWidget(delete_preset_);
    layout->addLayout(preset_buttons);
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
    overflow_->addItem(tr("Attention sinks + window"), static_cast<int>(folio::ChatOverflow::SinkWindow));
    overflow_->setToolTip(tr("When the conversation is longer than the context holds: leave out the oldest messages "
                             "(the system prompt stays; the reply says what was left out), fail with an error, keep "
                             "the system prompt and the latest tokens, or keep only the latest tokens"));
    form->addRow(tr("When the chat is too long"), overflow_);
    speculation_ = new QComboBox(this);
    speculation_->setObjectName("chatSpeculation");
    speculation_->setToolTip(tr("Speculative decoding for this chat's replies: guesses the target model verifies in "
                                "one step. Greedy replies are token for token the same; sampled ones follow the "
                                "same distribution"));
    draft_max_ = new QSpinBox(this);
    draft_max_->setObjectName("chatDraftLength");
    draft_max_->setSpecialValueText(tr("auto"));
    draft_max_->setToolTip(tr("Draft tokens per step (K): auto is the engine's choice (adaptive K, or its fixed K)"));
    form->addRow(tr("Speculation"), speculation_);
    form->addRow(tr("Draft length"), draft_max_);
    rebuildSpeculation();
    layout->addLayout(form);
    layout->addStretch(1);

    connect(system_prompt_, &QPlainTextEdit::textChanged, this, &SessionSettingsPanel::store);
    for (QDoubleSpinBox* b : {temperature_, top_p_, min_p_, repetition_})
        connect(b, &QDoubleSpinBox::valueChanged, this, &SessionSettingsPanel::store);
    for (QSpinBox* b : {top_k_, max_tokens_, seed_}) connect(b, &QSpinBox::valueChanged, this, &SessionSettingsPanel::store);
    connect(overflow_, &QComboBox::currentIndexChanged, this, &SessionSettingsPanel::store);
    connect(speculation_, &QComboBox::currentIndexChanged, this, &SessionSettingsPanel::store);
    connect(draft_max_, &QSpinBox::valueChanged, this, &SessionSettingsPanel::store);
    connect(preset_, &QComboBox::activated, this, [this](int index) { applyPreset(preset_->itemData(index).toString()); });
    connect(save_preset_, &QPushButton::clicked, this, &SessionSettingsPanel::askPresetName);
    connect(delete_preset_, &QPushButton::clicked, this, &SessionSettingsPanel::deleteCurrentPreset);
    connect(presets_, &ChatPresets::changed, this, &SessionSettingsPanel::rebuildPresets);
    rebuildPresets();
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
    rebuildSpeculation();
    rebuildPresets();
    loading_ = false;
}

void SessionSettingsPanel::setEngineSpeculation(const EngineSettings& engine) {
    engine_method_ = engine.spec_method;
    engine_draft_max_ = engine.draft_max;
    const bool was_loading = loading_;
    loading_ = true;
    rebuildSpeculation();
    loading_ = was_loading;
}

void SessionSettingsPanel::rebuildSpeculation() {
    // The chat's choice stays what it is even where the engine cannot do it
    // now (another engine setting may come back): it is shown, greyed, and
    // its replies fail with the engine's reason until the chat or the
    // engine changes.
    const ChatSession* s = chats_->session(session_);
    const QString chosen = s ? s->sampling.speculation : QString();
    struct Method {
        QString name, label;
    };
    const Method methods[] = {{"off", tr("Off")},
                              {"ngram", tr("N-gram (prompt lookup)")},
                              {"draft", tr("Draft model")},
                              {"int4-self", tr("INT4 self-draft")},
                              {"layer-skip", tr("Layer skip")}};
    QString engine_label = tr("Off");
    for (const Method& m : methods)
        if (m.name == engine_method_) engine_label = m.label;
    const QSignalBlocker block(speculation_);
    speculation_->clear();
    speculation_->addItem(tr("Engine's (%1)").arg(engine_label), QString());
    auto* model = qobject_cast<QStandardItemModel*>(speculation_->model());
    for (const Method& m : methods) {
        speculation_->addItem(m.label, m.name);
        const bool needs_draft = m.name != "off" && m.name != "ngram";
        if (needs_draft && m.name != engine_method_) {
            QStandardItem* item = model->item(speculation_->count() - 1);
            item->setEnabled(false);
            item->setToolTip(tr("The engine holds one draft model: choose %1 in Engine > Settings to use it here")
                                 .arg(m.label));
        }
    }
    speculation_->setCurrentIndex(std::max(0, speculation_->findData(chosen)));
    // K up to the engine's (the engine host holds a chat to it too).
    const QSignalBlocker block_k(draft_max_);
    draft_max_->setRange(0, engine_draft_max_);
    draft_max_->setValue(s ? std::min(s->sampling.draft_max, engine_draft_max_) : 0);
    draft_max_->setEnabled(speculates());
}

bool SessionSettingsPanel::speculates() const {
    const QString chosen = speculation_->currentData().toString();
    return (chosen.isEmpty() ? engine_method_ : chosen) != "off";
}

void SessionSettingsPanel::rebuildPresets() {
    // The chat's preset is shown as "name (edited)" once its settings differ from the preset's.
    const ChatSession* s = chats_->session(session_);
    const QString current = s ? s->preset : QString();
    const QSignalBlocker block(preset_);
    preset_->clear();
    preset_->addItem(tr("(none)"), QString());
    for (const ChatPreset& p : presets_->presets()) {
        const bool edited = s && p.name == current && !p.matches(*s);
        preset_->addItem(edited ? tr("%1 (edited)").arg(p.name) : p.name, p.name);
    }
    const int at = preset_->findData(current);
    preset_->setCurrentIndex(std::max(0, at));
    delete_preset_->setEnabled(at > 0);
}

QInputDialog* SessionSettingsPanel::presetNameDialog() const { return name_dialog_; }

void SessionSettingsPanel::askPresetName() {
    if (name_dialog_) return;
    const ChatSession* s = chats_->session(session_);
    if (!s) return;
    name_dialog_ = new QInputDialog(this);
    name_dialog_->setObjectName("presetNameDialog");
    name_dialog_->setWindowTitle(tr("Save Preset"));
    name_dialog_->setLabelText(tr("Name of the preset (an existing one of that name is replaced):"));
    name_dialog_->setTextValue(s->preset.isEmpty() ? s->title : s->preset);
    name_dialog_->setAttribute(Qt::WA_DeleteOnClose);
    connect(name_dialog_, &QInputDialog::textValueSelected, this, [this](const QString& name) { savePresetAs(name); });
    connect(name_dialog_, &QObject::destroyed, this, [this] { name_dialog_ = nullptr; });
    name_dialog_->open();
}

bool SessionSettingsPanel::savePresetAs(const QString& name) {
    const ChatSession* s = chats_->session(session_);
    if (!s || name.trimmed().isEmpty()) return false;
    const ChatPreset preset = ChatPreset::from_session(name, *s);
    if (!presets_->save(preset)) return false;
    chats_->setPresetName(session_, preset.name);
    rebuildPresets();
    return true;
}

void SessionSettingsPanel::applyPreset(const QString& name) {
    if (!chats_->session(session_)) return;
    if (name.isEmpty()) {
        chats_->setPresetName(session_, {});
    } else if (const ChatPreset* p = presets_->find(name)) {
        chats_->applyPreset(session_, *p);
    }
    load();
}

void SessionSettingsPanel::deleteCurrentPreset() {
    const QString name = preset_->currentData().toString();
    if (name.isEmpty()) return;
    presets_->remove(name);
    // Chats that followed it keep their settings; they follow no preset now.
    QStringList following;
    for (const ChatSession& s : chats_->sessions())
        if (s.preset == name) following << s.id;
    for (const QString& id : following) chats_->setPresetName(id, {});
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
    s.speculation = speculation_->currentData().toString();
    s.draft_max = draft_max_->value();
    chats_->setSampling(session_, s);
    draft_max_->setEnabled(speculates());
    chats_->setOverflow(session_, static_cast<folio::ChatOverflow>(overflow_->currentData().toInt()));
    chats_->setSystemPrompt(session_, system_prompt_->toPlainText());
    rebuildPresets();  // "(edited)" follows the settings
}

}  // namespace folio::ui
