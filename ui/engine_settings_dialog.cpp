#include "ui/engine_settings_dialog.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>

#include "folio/backend.h"

#include "ui/model_summary.h"

namespace folio::ui {

namespace {

QSpinBox* int_box(int min, int max, int value, const QString& suffix, QWidget* parent) {
    auto* b = new QSpinBox(parent);
    b->setRange(min, max);
    b->setValue(value);
    b->setSuffix(suffix);
    return b;
}

}  // namespace

EngineSettingsDialog::EngineSettingsDialog(const EngineSettings& s, const ModelSummary& model, QWidget* parent)
    : QDialog(parent), model_(model) {
    setWindowTitle(tr("Engine Settings"));
    setObjectName("engineSettingsDialog");
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    block_size_ = int_box(1, 1024, static_cast<int>(s.block_size), tr(" tokens"), this);
    kv_budget_ = int_box(1, 1 << 20, static_cast<int>(s.kv_budget_mib), tr(" MiB"), this);
    max_context_ = int_box(64, 1 << 20, static_cast<int>(s.max_context), tr(" tokens"), this);
    max_seqs_ = int_box(1, 4096, static_cast<int>(s.max_num_seqs), {}, this);
    max_batched_ = int_box(16, 1 << 20, static_cast<int>(s.max_num_batched_tokens), tr(" tokens"), this);
    prefix_caching_ = new QCheckBox(tr("Reuse KV blocks of identical prompt prefixes"), this);
    prefix_caching_->setChecked(s.prefix_caching);
    threads_ = int_box(0, 1024, s.threads, {}, this);
    threads_->setSpecialValueText(tr("physical cores"));
    device_ = new QComboBox(this);
    device_->addItem(tr("CPU"), "cpu");
    // One entry per usable GPU; the reason there is none otherwise.
    const int gpus = folio::cuda_device_count();
    const QStringList gpu_names = QString::fromStdString(folio::describe_cuda_devices()).split('\n');
    for (int i = 0; i < gpus; ++i)
        device_->addItem(i < gpu_names.size() ? gpu_names[i] : QStringLiteral("cuda:%1").arg(i), QStringLiteral("cuda:%1").arg(i));
    device_->setToolTip(gpus ? tr("CPU, or a CUDA GPU") : QString::fromStdString(folio::describe_cuda_devices()));
    const int current = device_->findData(s.device);
    if (current >= 0) device_->setCurrentIndex(current);
    form->addRow(tr("KV block size"), block_size_);
    form->addRow(tr("KV cache budget"), kv_budget_);
    form->addRow(tr("Context length"), max_context_);
    form->addRow(tr("Max sequences per step"), max_seqs_);
    form->addRow(tr("Max tokens per step"), max_batched_);
    form->addRow(tr("Prefix caching"), prefix_caching_);
    form->addRow(tr("Threads"), threads_);
    form->addRow(tr("Device"), device_);
    layout->addLayout(form);
    estimate_ = new QLabel(this);
    estimate_->setWordWrap(true);
    layout->addWidget(estimate_);
    warning_ = new QLabel(this);
    warning_->setObjectName("kvContextWarning");
    warning_->setWordWrap(true);
    QPalette warn = warning_->palette();
    warn.setColor(QPalette::WindowText, QColor(0xd0, 0x40, 0x30));
    warning_->setPalette(warn);
    warning_->setVisible(false);
    layout->addWidget(warning_);
    auto* note = new QLabel(tr("Applying restarts the engine: replies in progress stop; chats are kept."), this);
    note->setWordWrap(true);
    layout->addWidget(note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Apply and restart"));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this, [this] {
        const EngineSettings d;
        block_size_->setValue(static_cast<int>(d.block_size));
        kv_budget_->setValue(static_cast<int>(d.kv_budget_mib));
        max_context_->setValue(static_cast<int>(d.max_context));
        max_seqs_->setValue(static_cast<int>(d.max_num_seqs));
        max_batched_->setValue(static_cast<int>(d.max_num_batched_tokens));
        prefix_caching_->setChecked(d.prefix_caching);
        threads_->setValue(d.threads);
    });
    for (QSpinBox* b : {block_size_, kv_budget_, max_context_})
        connect(b, &QSpinBox::valueChanged, this, &EngineSettingsDialog::updateEstimate);
    updateEstimate();
}

EngineSettings EngineSettingsDialog::settings() const {
    EngineSettings s;
    s.block_size = static_cast<uint32_t>(block_size_->value());
    s.kv_budget_mib = static_cast<uint64_t>(kv_budget_->value());
    s.max_context = static_cast<uint32_t>(max_context_->value());
    s.max_num_seqs = static_cast<uint32_t>(max_seqs_->value());
    s.max_num_batched_tokens = static_cast<uint32_t>(max_batched_->value());
    s.prefix_caching = prefix_caching_->isChecked();
    s.threads = threads_->value();
    s.device = device_->currentData().toString();
    return s;
}

void EngineSettingsDialog::updateEstimate() {
    const QString warning = contextWarning();
    warning_->setText(warning);
    warning_->setVisible(!warning.isEmpty());
    if (!model_.valid()) {
        estimate_->setText(tr("Load a model to see the memory estimate."));
        return;
    }
    const MemoryEstimate e = estimate_memory(model_, settings());
    estimate_->setText(tr("%1: %2").arg(model_.name, e.describe()));
}

QString EngineSettingsDialog::contextWarning() const {
    if (!model_.valid() || model_.kv_bytes_per_token == 0) return {};
    const EngineSettings s = settings();
    const MemoryEstimate e = estimate_memory(model_, s);
    // The context the engine will run: the setting, capped at the model's trained context (as the backend does).
    uint64_t context = s.max_context;
    if (model_.n_ctx_train > 0) context = std::min<uint64_t>(context, model_.n_ctx_train);
    if (!e.known || e.kv_tokens >= context) return {};
    const uint64_t block_bytes = model_.kv_bytes_per_token * s.block_size;
    const uint64_t needed = (context + s.block_size - 1) / s.block_size * block_bytes;
    const uint64_t needed_mib = (needed + (uint64_t{1} << 20) - 1) >> 20;
    return tr("⚠ The KV cache budget holds %1 tokens, less than one full context (%2 tokens): a chat longer than that "
              "loses its oldest turns (or fails, as its Chat Settings say). %3 MiB holds a whole context.")
        .arg(e.kv_tokens).arg(context).arg(needed_mib);
}

}  // namespace folio::ui
