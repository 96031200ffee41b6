#include "folio/kv_type.h"
#include "ui/model_summary.h"

#include <QObject>

#include <algorithm>
#include <map>

#include "folio/backend.h"
#include "folio/chat_template.h"
#include "folio/host_memory.h"
#include "folio/tensor_type.h"

namespace folio::ui {

namespace {

QString qstr(const std::string& s) { return QString::fromStdString(s); }

QString tokenizer_description(const folio::TokenizerSpec& spec) {
    const QString kind = spec.model == folio::TokenizerModel::SentencePiece ? QObject::tr("SentencePiece BPE")
                                                                             : QObject::tr("byte-level BPE");
    QString text = kind;
    if (!spec.pre.empty()) text += " (" + qstr(spec.pre) + ")";
    return text + QObject::tr(", %1 tokens").arg(spec.tokens.size());
}

}  // namespace

ModelSummary summarize_model(const folio::ModelDescription& model) {
    ModelSummary s;
    s.path = qstr(model.path);
    s.name = model.name.empty() ? s.path.section('/', -1) : qstr(model.name);
    s.format = model.format == folio::SourceFormat::Gguf ? QStringLiteral("GGUF") : QObject::tr("Hugging Face folder");
    const folio::HParams& hp = model.hparams;
    s.architecture = qstr(hp.architecture);
    const std::string supported = "," + folio::supported_architectures() + ",";
    std::string compact;
    for (char c : supported)
        if (c != ' ') compact += c;
    s.architecture_supported = compact.find("," + hp.architecture + ",") != std::string::npos;
    s.n_ctx_train = hp.n_ctx_train;
    s.n_layer = hp.n_layer;
    s.n_embd = hp.n_embd;
    s.n_head = hp.n_head;
    s.n_head_kv = hp.n_head_kv;
    s.head_dim = hp.head_dim;
    s.n_ff = hp.n_ff;
    s.n_vocab = hp.n_vocab;
    s.weight_bytes = model.weight_bytes();
    s.kv_bytes_per_token = model.kv_bytes_per_token(2);
    for (const folio::KvType type : folio::kKvTypes)
        if (type != folio::KvType::F16 && folio::kv_type_fits(type, hp.head_dim))
            s.kv_bytes_per_token_by_type.insert(QString::fromLatin1(folio::kv_type_name(type)),
                                                folio::kv_bytes_per_token(model, type));

    std::map<QString, TensorTypeShare> mix;
    for (const folio::TensorView& t : model.tensors) {
        const auto n = static_cast<uint64_t>(std::max<int64_t>(t.n_elements(), 0));
        s.parameters += n;
        const std::string_view type_name = folio::ggml_type_name(static_cast<uint32_t>(t.type));
        const QString key = QString::fromLatin1(type_name.data(), static_cast<qsizetype>(type_name.size()));
        TensorTypeShare& share = mix[key];
        share.type = key;
        ++share.tensors;
        share.elements += n;
        share.bytes += t.nbytes;
    }
    for (const auto& entry : mix) s.quant_mix.push_back(entry.second);
    std::sort(s.quant_mix.begin(), s.quant_mix.end(),
              [](const TensorTypeShare& a, const TensorTypeShare& b) { return a.bytes > b.bytes; });

    s.tokenizer = tokenizer_description(model.tokenizer);
    const folio::ChatTemplateChoice choice = folio::ChatTemplate::for_model(model.chat_template, hp.architecture);
    s.chat_template = qstr(choice.chat_template.source());
    if (choice.is_fallback) s.chat_template_notice = qstr(choice.notice);
    return s;
}

uint64_t available_memory_bytes() { return folio::available_host_memory(); }

MemoryEstimate estimate_memory(const ModelSummary& model, const EngineSettings& settings) {
    MemoryEstimate e;
    e.weight_bytes = model.weight_bytes;
    e.available_bytes = available_memory_bytes();
    const uint64_t per_block = model.kv_bytes_per_token_as(settings.kv_type) * settings.block_size;
    e.known = per_block > 0;
    if (e.known) {
        const uint64_t blocks = (settings.kv_budget_mib << 20) / per_block;
        e.kv_bytes = blocks * per_block;
        e.kv_tokens = blocks * settings.block_size;
    }
    e.total_bytes = e.weight_bytes + e.kv_bytes;
    return e;
}

QString MemoryEstimate::describe() const {
    if (!known) return QObject::tr("Memory estimate unavailable: the model does not say how large its KV cache is.");
    QString text = QObject::tr("Weights %1 (memory-mapped) + KV cache %2 (%3 tokens) = %4")
                       .arg(format_bytes(weight_bytes), format_bytes(kv_bytes), QString::number(kv_tokens),
                            format_bytes(total_bytes));
    if (available_bytes > 0) text += QObject::tr("; %1 available").arg(format_bytes(available_bytes));
    if (!fits()) text += QObject::tr(". It will not fit: lower the KV budget in Engine Settings or free memory.");
    return text;
}

}  // namespace folio::ui
