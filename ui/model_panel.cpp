#include "ui/model_panel.h"
#include "ui/resources.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "folio/kv_type.h"
#include "ui/model_summary.h"

namespace folio::ui {

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    state_ = new QLabel(tr("No model"), this);
    state_->setWordWrap(true);
    layout->addWidget(state_);

    auto* row = new QHBoxLayout;
    auto* open = new QPushButton(studio_icon("open"), tr("Open…"), this);
    load_ = new QPushButton(studio_icon("load"), tr("Load"), this);
    unload_ = new QPushButton(studio_icon("unload"), tr("Unload"), this);
    row->addWidget(open);
    row->addWidget(load_);
    row->addWidget(unload_);
    row->addStretch(1);
    layout->addLayout(row);
    // A row of its own: the panel stays narrow enough for a compact window's column.
    auto* tools = new QHBoxLayout;
    quantize_ = new QPushButton(tr("Quantize to INT4…"), this);
    quantize_->setObjectName("quantizeButton");
    quantize_->setToolTip(tr("Quantize the loaded model (Q4_K_M by default) as a job beside the chats"));
    tools->addWidget(quantize_);
    tools->addStretch(1);
    layout->addLayout(tools);

    tree_ = new QTreeWidget(this);
    tree_->setColumnCount(2);
    tree_->setHeaderLabels({tr("Property"), tr("Value")});
    tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    tree_->setRootIsDecorated(true);
    layout->addWidget(tree_, 2);

    estimate_ = new QLabel(this);
    estimate_->setWordWrap(true);
    layout->addWidget(estimate_);

    layout->addWidget(new QLabel(tr("Chat template"), this));
    template_ = new QPlainTextEdit(this);
    template_->setReadOnly(true);
    template_->setLineWrapMode(QPlainTextEdit::NoWrap);
    QFont mono("monospace");
    mono.setStyleHint(QFont::Monospace);
    template_->setFont(mono);
    // Two lines at the least: the panel fits a 1024x700 window's column with the Quantize row.
    template_->setMinimumHeight(40);
    layout->addWidget(template_, 1);

    connect(open, &QPushButton::clicked, this, &ModelPanel::openRequested);
    connect(load_, &QPushButton::clicked, this, [this] {
        if (summary_.valid()) emit loadRequested(summary_.path);
    });
    connect(unload_, &QPushButton::clicked, this, &ModelPanel::unloadRequested);
    connect(quantize_, &QPushButton::clicked, this, &ModelPanel::quantizeRequested);
    load_->setEnabled(false);
    unload_->setEnabled(false);
    quantize_->setEnabled(false);
}

void ModelPanel::setState(const QString& text) { state_->setText(text); }

QString ModelPanel::stateText() const { return state_->text(); }

QString ModelPanel::estimateText() const { return estimate_->text(); }

void ModelPanel::showSummary(const ModelSummary& s, const EngineSettings& settings, bool loaded) {
    summary_ = s;
    tree_->clear();
    load_->setEnabled(s.valid() && !loaded);
    unload_->setEnabled(loaded);
    quantize_->setEnabled(loaded);
    if (!s.valid()) {
        estimate_->clear();
        template_->clear();
        return;
    }
    auto add = [this](const QString& key, const QString& value, QTreeWidgetItem* parent = nullptr) {
        auto* it = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(tree_);
        it->setText(0, key);
        it->setText(1, value);
        it->setToolTip(1, value);
        return it;
    };
    if (!s.remote_url.isEmpty()) {
        quantize_->setEnabled(false);  // no file here
        add(tr("Name"), s.name);
        add(tr("Server"), s.remote_url);
        add(tr("Format"), s.format);
        QTreeWidgetItem* served = add(tr("Models served"), QString::number(s.remote_models.size()));
        for (const QString& m : s.remote_models) add(m, m == s.name ? tr("in use") : QString(), served);
        served->setExpanded(true);
        add(tr("Tokenizer, chat template"), tr("the server's"));
        estimate_->setText(tr("Memory: the server's"));
        template_->clear();
        return;
    }
    add(tr("Name"), s.name);
    add(tr("File"), s.path);
    add(tr("Format"), s.format);
    add(tr("Architecture"), s.architecture_supported ? s.architecture : tr("%1 (not supported by Folio)").arg(s.architecture));
    add(tr("Parameters"), format_count(s.parameters));
    add(tr("Weights"), format_bytes(s.weight_bytes));
    QTreeWidgetItem* shape = add(tr("Shape"), tr("%1 layers, %2 wide").arg(s.n_layer).arg(s.n_embd));
    add(tr("Attention heads"), tr("%1 (KV %2), head size %3").arg(s.n_head).arg(s.n_head_kv).arg(s.head_dim), shape);
    add(tr("Feed-forward"), QString::number(s.n_ff), shape);
    add(tr("Vocabulary"), QString::number(s.n_vocab), shape);
    add(tr("Trained context"), tr("%1 tokens").arg(s.n_ctx_train), shape);
    QStringList kv_per_token{tr("%1 F16").arg(format_bytes(s.kv_bytes_per_token))};
    for (const folio::KvType type : folio::kKvTypes) {
        const QString name = QString::fromLatin1(folio::kv_type_name(type));
        if (const uint64_t bytes = s.kv_bytes_per_token_as(name); type != folio::KvType::F16 && bytes)
            kv_per_token << tr("%1 %2").arg(format_bytes(bytes), name.toUpper());
    }
    add(tr("KV per token"), kv_per_token.join(QStringLiteral(", ")), shape);
    shape->setExpanded(true);
    QTreeWidgetItem* mix = add(tr("Quantization mix"), tr("%1 types").arg(s.quant_mix.size()));
    for (const TensorTypeShare& t : s.quant_mix)
        add(t.type, tr("%1 tensors, %2 parameters, %3").arg(t.tensors).arg(format_count(t.elements), format_bytes(t.bytes)), mix);
    mix->setExpanded(true);
    add(tr("Tokenizer"), s.tokenizer);
    add(tr("Chat template"), s.chat_template_notice.isEmpty() ? tr("the model's own") : s.chat_template_notice);

    const MemoryEstimate e = estimate_memory(s, settings);
    fits_ = e.known && e.fits();
    estimate_->setText((fits_ ? tr("Memory: ") : tr("⚠ Memory: ")) + e.describe());
    QPalette pal = estimate_->palette();
    pal.setColor(QPalette::WindowText, fits_ ? palette().color(QPalette::WindowText) : QColor(0xd0, 0x40, 0x30));
    estimate_->setPalette(pal);
    template_->setPlainText(s.chat_template);
}

}  // namespace folio::ui
