#include "folio/kv_type.h"
#include "ui/studio_types.h"

#include "folio/spec.h"

#include <QSettings>

#include <algorithm>

namespace folio::ui {

void EngineSettings::save(QSettings& settings) const {
    settings.beginGroup("engine");
    settings.setValue("block_size", block_size);
    settings.setValue("kv_budget_mib", static_cast<qulonglong>(kv_budget_mib));
    settings.setValue("max_context", max_context);
    settings.setValue("max_num_seqs", max_num_seqs);
    settings.setValue("max_num_batched_tokens", max_num_batched_tokens);
    settings.setValue("prefix_caching", prefix_caching);
    settings.setValue("threads", threads);
    settings.setValue("device", device);
    settings.setValue("kv_type", kv_type);
    settings.setValue("spec_method", spec_method);
    settings.setValue("draft_model", draft_model);
    settings.setValue("draft_max", draft_max);
    settings.setValue("draft_adaptive", draft_adaptive);
    settings.endGroup();
}

EngineSettings EngineSettings::load(QSettings& settings) {
    EngineSettings s;
    settings.beginGroup("engine");
    s.block_size = settings.value("block_size", s.block_size).toUInt();
    s.kv_budget_mib = settings.value("kv_budget_mib", static_cast<qulonglong>(s.kv_budget_mib)).toULongLong();
    s.max_context = settings.value("max_context", s.max_context).toUInt();
    s.max_num_seqs = settings.value("max_num_seqs", s.max_num_seqs).toUInt();
    s.max_num_batched_tokens = settings.value("max_num_batched_tokens", s.max_num_batched_tokens).toUInt();
    s.prefix_caching = settings.value("prefix_caching", s.prefix_caching).toBool();
    s.threads = settings.value("threads", s.threads).toInt();
    s.device = settings.value("device", s.device).toString();
    s.kv_type = settings.value("kv_type", s.kv_type).toString();
    s.spec_method = settings.value("spec_method", s.spec_method).toString();
    s.draft_model = settings.value("draft_model", s.draft_model).toString();
    s.draft_max = settings.value("draft_max", s.draft_max).toInt();
    s.draft_adaptive = settings.value("draft_adaptive", s.draft_adaptive).toBool();
    settings.endGroup();
    // Values a hand-edited file could break the engine with fall back to defaults.
    const EngineSettings d;
    if (s.block_size == 0 || s.block_size > 1024) s.block_size = d.block_size;
    if (!folio::parse_kv_type(s.kv_type.toStdString())) s.kv_type = d.kv_type;
    if (s.kv_budget_mib == 0) s.kv_budget_mib = d.kv_budget_mib;
    if (s.max_context < 64) s.max_context = d.max_context;
    if (s.max_num_seqs == 0) s.max_num_seqs = d.max_num_seqs;
    if (s.max_num_batched_tokens == 0) s.max_num_batched_tokens = d.max_num_batched_tokens;
    if (s.threads < 0) s.threads = 0;
    if (!folio::parse_spec_method(s.spec_method.toStdString())) s.spec_method = d.spec_method;
    if (s.draft_max < 1 || s.draft_max > 16) s.draft_max = d.draft_max;
    return s;
}

void RequestUpdate::set_text(const std::string& utf8, const std::vector<std::pair<uint32_t, uint32_t>>& draft_bytes) {
    // A boundary inside a character (never, from the engine) moves to its start.
    const auto char_start = [&](size_t at) {
        while (at > 0 && at < utf8.size() && (static_cast<uint8_t>(utf8[at]) & 0xC0) == 0x80) --at;
        return at;
    };
    const auto append = [&](size_t from, size_t to) { text += QString::fromUtf8(utf8.data() + from, static_cast<qsizetype>(to - from)); };
    text.clear();
    draft_ranges.clear();
    size_t at = 0;
    for (const auto& [first, second] : draft_bytes) {
        const size_t begin = std::max(at, char_start(std::min<size_t>(first, utf8.size())));
        const size_t end = std::max(begin, char_start(std::min<size_t>(second, utf8.size())));
        append(at, begin);
        const int drafted = static_cast<int>(text.size());
        append(begin, end);
        if (text.size() > drafted) draft_ranges.push_back({drafted, static_cast<int>(text.size())});
        at = end;
    }
    append(at, utf8.size());
}

QString finish_reason_name(folio::FinishReason reason) {
    const std::string_view name = folio::to_string(reason);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

QString format_bytes(uint64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (bytes >= (uint64_t{1} << 30)) return QString::number(b / double(uint64_t{1} << 30), 'f', 2) + " GiB";
    if (bytes >= (uint64_t{1} << 20)) return QString::number(b / double(uint64_t{1} << 20), 'f', 1) + " MiB";
    if (bytes >= (uint64_t{1} << 10)) return QString::number(b / 1024.0, 'f', 1) + " KiB";
    return QString::number(bytes) + " B";
}

QString format_count(uint64_t count) {
    const double c = static_cast<double>(count);
    if (count >= 1'000'000'000) return QString::number(c / 1e9, 'f', 2) + " B";
    if (count >= 1'000'000) return QString::number(c / 1e6, 'f', 1) + " M";
    if (count >= 1'000) return QString::number(c / 1e3, 'f', 1) + " K";
    return QString::number(count);
}

void register_studio_types() {
    qRegisterMetaType<EngineSettings>();
    qRegisterMetaType<ModelSummary>();
    qRegisterMetaType<EngineStatus>();
    qRegisterMetaType<ChatRequest>();
    qRegisterMetaType<RequestUpdate>();
    qRegisterMetaType<EngineSample>();
    qRegisterMetaType<BlockMapSnapshot>();
}

}  // namespace folio::ui
