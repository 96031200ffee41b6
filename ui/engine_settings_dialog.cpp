#include "ui/engine_settings_dialog.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QStandardItemModel>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>

#include "folio/backend.h"
#include "folio/model.h"
#include "folio/spec.h"
#include "folio/tokenizer.h"

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
    kv_type_ = new QComboBox(this);
    kv_type_->setObjectName("kvType");
    kv_type_->addItem(tr("F16"), "f16");
    kv_type_->addItem(tr("Q8_0 (about half the memory)"), "q8_0");
    kv_type_->addItem(tr("FP8 (about half the memory)"), "fp8");
    kv_type_->setToolTip(tr("How the KV cache stores keys and values: half-precision values; Q8_0, 8-bit integers "
                            "in blocks of 32 with a scale each (34 bytes per 32 values); or FP8 E4M3 in blocks of 32 "
                            "with a power-of-two scale each (33 bytes per 32 values). Both hold almost twice the "
                            "tokens of F16 in the same budget; Q8_0 keeps more of the model's quality."));
    if (const int i = kv_type_->findData(s.kv_type); i >= 0) kv_type_->setCurrentIndex(i);
    for (int i = 1; i < kv_type_->count(); ++i)  // heads that are not whole blocks of the type
        if (model.valid() && model.kv_bytes_per_token_as(kv_type_->itemData(i).toString()) == 0)
            qobject_cast<QStandardItemModel*>(kv_type_->model())->item(i)->setEnabled(false);
    form->addRow(tr("KV block size"), block_size_);
    form->addRow(tr("KV cache budget"), kv_budget_);
    form->addRow(tr("KV cache type"), kv_type_);
    form->addRow(tr("Context length"), max_context_);
    form->addRow(tr("Max sequences per step"), max_seqs_);
    form->addRow(tr("Max tokens per step"), max_batched_);
    form->addRow(tr("Prefix caching"), prefix_caching_);
    form->addRow(tr("Threads"), threads_);
    form->addRow(tr("Device"), device_);
    layout->addLayout(form);

    auto* spec_box = new QGroupBox(tr("Speculative decoding (every chat)"), this);
    auto* spec_form = new QFormLayout(spec_box);
    spec_method_ = new QComboBox(spec_box);
    spec_method_->setObjectName("specMethod");
    spec_method_->addItem(tr("Off"), "off");
    spec_method_->addItem(tr("N-gram (prompt lookup)"), "ngram");
    spec_method_->addItem(tr("Draft model"), "draft");
    spec_method_->addItem(tr("INT4 self-draft"), "int4-self");
    spec_method_->addItem(tr("Layer skip"), "layer-skip");
    spec_method_->setToolTip(tr("Greedy replies are token for token what they are without; sampled ones follow the "
                                "same distribution"));
    if (const int i = spec_method_->findData(s.spec_method); i >= 0) spec_method_->setCurrentIndex(i);
    auto* draft_row = new QHBoxLayout;
    draft_model_ = new QLineEdit(s.draft_model, spec_box);
    draft_model_->setObjectName("draftModel");
    draft_model_->setPlaceholderText(tr("a GGUF file or Hugging Face folder of the same vocabulary"));
    draft_browse_ = new QPushButton(tr("Browse…"), spec_box);
    draft_row->addWidget(draft_model_, 1);
    draft_row->addWidget(draft_browse_);
    draft_status_ = new QLabel(spec_box);
    draft_status_->setObjectName("draftStatus");
    draft_status_->setWordWrap(true);
    draft_max_ = int_box(1, 16, s.draft_max, tr(" tokens"), spec_box);
    draft_max_->setObjectName("draftMax");
    draft_adaptive_ = new QCheckBox(tr("Adaptive K: per sequence and step, from its acceptance and the measured costs"), spec_box);
    draft_adaptive_->setChecked(s.draft_adaptive);
    spec_form->addRow(tr("Method"), spec_method_);
    spec_form->addRow(tr("Draft model"), draft_row);
    spec_form->addRow(QString(), draft_status_);
    spec_form->addRow(tr("Drafts per step (K)"), draft_max_);
    spec_form->addRow(QString(), draft_adaptive_);
    layout->addWidget(spec_box);

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
    apply_ = buttons->button(QDialogButtonBox::Ok);
    apply_->setText(tr("Apply and restart"));
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
        kv_type_->setCurrentIndex(kv_type_->findData(d.kv_type));
        spec_method_->setCurrentIndex(spec_method_->findData(d.spec_method));
        draft_max_->setValue(d.draft_max);
        draft_adaptive_->setChecked(d.draft_adaptive);
    });
    connect(spec_method_, &QComboBox::currentIndexChanged, this, &EngineSettingsDialog::updateSpeculation);
    connect(draft_model_, &QLineEdit::textChanged, this, &EngineSettingsDialog::updateSpeculation);
    connect(draft_browse_, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Draft Model"), draft_model_->text(),
                                                          tr("Models (*.gguf config.json);;All files (*)"));
        if (!path.isEmpty())
            draft_model_->setText(QFileInfo(path).fileName() == "config.json" ? QFileInfo(path).absolutePath() : path);
    });
    updateSpeculation();
    for (QSpinBox* b : {block_size_, kv_budget_, max_context_})
        connect(b, &QSpinBox::valueChanged, this, &EngineSettingsDialog::updateEstimate);
    connect(kv_type_, &QComboBox::currentIndexChanged, this, &EngineSettingsDialog::updateEstimate);
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
    s.kv_type = kv_type_->currentData().toString();
    s.spec_method = spec_method_->currentData().toString();
    s.draft_model = draft_model_->text().trimmed();
    s.draft_max = draft_max_->value();
    s.draft_adaptive = draft_adaptive_->isChecked();
    return s;
}

EngineSettingsDialog::~EngineSettingsDialog() = default;

void EngineSettingsDialog::updateSpeculation() {
    const QString method = spec_method_->currentData().toString();
    const bool draft = method == "draft";
    draft_model_->setEnabled(draft);
    draft_browse_->setEnabled(draft);
    draft_max_->setEnabled(method != "off");
    draft_adaptive_->setEnabled(method != "off");
    draft_problem_.clear();
    QString status;
    if (draft) {
        const QString path = draft_model_->text().trimmed();
        if (path.isEmpty()) {
            draft_problem_ = tr("Choose the draft model: a smaller model of the loaded one's vocabulary.");
        } else if (!model_.valid()) {
            status = tr("Its vocabulary is checked against the model when it loads.");
        } else if (!QFileInfo::exists(path)) {
            // Typed a character at a time: nothing is read until the path names something.
            draft_problem_ = tr("No file or folder %1.").arg(path);
        } else if (path == checked_path_) {
            draft_problem_ = checked_problem_;
            status = checked_status_;
        } else {
            // Headers and the vocabulary only (the weights stay mapped, unread): once per path.
            if (!target_tokenizer_) {
                auto target = folio::load_model_description(model_.path.toStdString());
                auto t = target ? folio::Tokenizer::create(target->tokenizer) : folio::Result<folio::Tokenizer>(target.error());
                if (t) target_tokenizer_ = std::make_unique<folio::Tokenizer>(std::move(*t));
            }
            auto d = folio::load_model_description(path.toStdString());
            auto dt = d ? folio::Tokenizer::create(d->tokenizer) : folio::Result<folio::Tokenizer>(d.error());
            if (!dt) {
                draft_problem_ = tr("Cannot read it: %1").arg(QString::fromStdString(dt.error().message));
            } else if (target_tokenizer_) {
                if (folio::Status v = folio::check_draft_vocabulary(*target_tokenizer_, *dt); !v)
                    draft_problem_ = tr("Cannot draft for %1: %2").arg(model_.name, QString::fromStdString(v.error().message));
                else
                    status = tr("✓ %1: the same vocabulary as %2").arg(QString::fromStdString(d->name), model_.name);
            }
            checked_path_ = path;
            checked_status_ = status;
            checked_problem_ = draft_problem_;
        }
    }
    draft_status_->setText(draft_problem_.isEmpty() ? status : tr("✗ %1").arg(draft_problem_));
    draft_status_->setVisible(draft);
    if (apply_) apply_->setEnabled(draft_problem_.isEmpty());
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
    if (!model_.valid() || model_.kv_bytes_per_token_as(settings().kv_type) == 0) return {};
    const EngineSettings s = settings();
    const MemoryEstimate e = estimate_memory(model_, s);
    // The context the engine will run: the setting, capped at the model's trained context (as the backend does).
    uint64_t context = s.max_context;
    if (model_.n_ctx_train > 0) context = std::min<uint64_t>(context, model_.n_ctx_train);
    if (!e.known || e.kv_tokens >= context) return {};
    const uint64_t block_bytes = model_.kv_bytes_per_token_as(s.kv_type) * s.block_size;
    const uint64_t needed = (context + s.block_size - 1) / s.block_size * block_bytes;
    const uint64_t needed_mib = (needed + (uint64_t{1} << 20) - 1) >> 20;
    return tr("⚠ The KV cache budget holds %1 tokens, less than one full context (%2 tokens): a chat longer than that "
              "loses its oldest turns (or fails, as its Chat Settings say). %3 MiB holds a whole context.")
        .arg(e.kv_tokens).arg(context).arg(needed_mib);
}

}  // namespace folio::ui
