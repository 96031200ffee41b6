#include "ui/library_scan.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QObject>
#include <QRegularExpression>
#include <QSet>

#include <exception>

#include "folio/backend.h"
#include "folio/gguf.h"
#include "folio/model.h"
#include "ui/model_summary.h"

namespace folio::ui {

namespace {

QString qstr(const std::string& s) { return QString::fromStdString(s); }

bool is_hf_folder(const QDir& dir) {
    return dir.exists("config.json") && !dir.entryList({"*.safetensors"}, QDir::Files).isEmpty();
}

bool is_gguf_name(const QString& name) { return name.endsWith(".gguf", Qt::CaseInsensitive); }

void walk(const QString& dir_path, int depth, int max_depth, const std::atomic<bool>& cancel, QSet<QString>& seen_dirs,
          QStringList& out) {
    if (cancel.load()) return;
    const QFileInfo info(dir_path);
    const QString canonical = info.canonicalFilePath();
    if (canonical.isEmpty() || seen_dirs.contains(canonical)) return;
    seen_dirs.insert(canonical);
    const QDir dir(dir_path);
    if (is_hf_folder(dir)) {
        out << info.absoluteFilePath();
        return;  // its files are the model's
    }
    const QFileInfoList entries =
        dir.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name | QDir::IgnoreCase);
    for (const QFileInfo& e : entries) {
        if (cancel.load()) return;
        if (e.isDir()) {
            if (depth < max_depth && !e.fileName().startsWith('.'))
                walk(e.absoluteFilePath(), depth + 1, max_depth, cancel, seen_dirs, out);
        } else if (is_gguf_name(e.fileName())) {
            out << e.absoluteFilePath();
        }
    }
}

uint64_t size_on_disk(const QFileInfo& info) {
    if (!info.isDir()) return static_cast<uint64_t>(std::max<qint64>(info.size(), 0));
    uint64_t total = 0;
    for (const QFileInfo& f : QDir(info.absoluteFilePath()).entryInfoList(QDir::Files))
        total += static_cast<uint64_t>(std::max<qint64>(f.size(), 0));
    return total;
}

bool is_supported_architecture(const QString& architecture) {
    for (const QString& name : qstr(folio::supported_architectures()).split(','))
        if (name.trimmed() == architecture) return true;
    return false;
}

bool is_block_quantized(const QString& type) {
    return !(type == "F32" || type == "F16" || type == "BF16" || type == "F64");
}

// The model's record of where a Folio quantization came from, and a loader's
// refusal told apart: a GGUF header that parses is a file Folio cannot run
// (unsupported); one that does not is damaged (error).
struct GgufHeaderFacts {
    bool parses = false;
    QString architecture;
    QString recorded_source;
    QString error;
};

GgufHeaderFacts read_gguf_header(const QString& path) {
    GgufHeaderFacts facts;
    auto file = folio::GgufFile::open(path.toStdString());
    if (!file) {
        facts.error = qstr(file.error().message);
        return facts;
    }
    facts.parses = true;
    if (auto arch = file->get_string_or("general.architecture", ""); arch) facts.architecture = qstr(*arch);
    if (auto source = file->get_string_or("folio.quantize.source", ""); source) facts.recorded_source = qstr(*source);
    return facts;
}

QString hf_model_type(const QString& folder) {
    QFile f(folder + "/config.json");
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QJsonObject config = QJsonDocument::fromJson(f.readAll()).object();
    return config.value("model_type").toString();
}

void describe_into(LibraryEntry& e) {
    GgufHeaderFacts header;
    if (!e.folder) {
        header = read_gguf_header(e.path);
        if (!header.parses) {
            e.status = LibraryEntry::Status::Error;
            e.problem = header.error;
            return;
        }
        if (!header.recorded_source.isEmpty()) {
            const QString canonical = QFileInfo(header.recorded_source).canonicalFilePath();
            e.recorded_source = canonical.isEmpty() ? QDir::cleanPath(header.recorded_source) : canonical;
        }
    }
    auto model = folio::load_model_description(e.path.toStdString());
    if (!model) {
        e.problem = qstr(model.error().message);
        e.summary.architecture = e.folder ? hf_model_type(e.path) : header.architecture;
        if (!e.folder && !header.architecture.isEmpty() && !is_supported_architecture(header.architecture))
            e.problem = QObject::tr("architecture '%1' is not supported (Folio runs: %2)")
                            .arg(header.architecture, qstr(folio::supported_architectures()));
        // A folder whose config.json reads names its model type; one that does not is damaged.
        const bool readable = e.folder ? !e.summary.architecture.isEmpty() : header.parses;
        e.status = readable ? LibraryEntry::Status::Unsupported : LibraryEntry::Status::Error;
        return;
    }
    e.summary = summarize_model(*model);
    e.summary.path = e.path;
    uint64_t quantized_bytes = 0, all_bytes = 0;
    for (const TensorTypeShare& share : e.summary.quant_mix) {
        all_bytes += share.bytes;
        if (is_block_quantized(share.type)) quantized_bytes += share.bytes;
    }
    e.quantized = all_bytes > 0 && quantized_bytes * 2 > all_bytes;
    if (!e.summary.architecture_supported) {
        e.status = LibraryEntry::Status::Unsupported;
        e.problem = QObject::tr("architecture '%1' is not supported (Folio runs: %2)")
                        .arg(e.summary.architecture, qstr(folio::supported_architectures()));
    }
}

}  // namespace

QStringList find_model_paths(const QStringList& roots, const std::atomic<bool>& cancel, int max_depth) {
    QStringList out;
    QSet<QString> seen_dirs;
    for (const QString& root : roots) {
        const QFileInfo info(root);
        if (!info.exists()) continue;
        if (info.isDir()) walk(info.absoluteFilePath(), 0, max_depth, cancel, seen_dirs, out);
        else if (is_gguf_name(info.fileName())) out << info.absoluteFilePath();
    }
    // One path per model: a file reached through two folders, or a symlink and its target, once.
    QSet<QString> seen;
    QStringList unique;
    for (const QString& p : out) {
        const QString key = QFileInfo(p).canonicalFilePath();
        if (seen.contains(key)) continue;
        seen.insert(key);
        unique << p;
    }
    return unique;
}

QString library_model_name(const QString& path) {
    const QFileInfo info(path);
    static const QRegularExpression snapshot(QStringLiteral("/models--([^/]+)--([^/]+)/snapshots/[^/]+(/.*)?$"));
    const QRegularExpressionMatch m = snapshot.match(QDir::fromNativeSeparators(info.absoluteFilePath()));
    if (m.hasMatch() && info.isDir()) return m.captured(1) + "/" + m.captured(2);
    return info.fileName();
}

QString library_base_name(const QString& name) {
    QString base = name.section('/', -1).toLower();
    if (base.endsWith(".gguf")) base.chop(5);
    static const QRegularExpression suffix(QStringLiteral(
        "[-._ ]+(i?q[0-9](_[a-z0-9]+)*|f16|f32|bf16|fp16|fp32|int4|int8|hf|gguf)$"));
    for (;;) {
        const QString stripped = QString(base).remove(suffix);
        if (stripped == base || stripped.isEmpty()) return base;
        base = stripped;
    }
}

QString quantization_text(const ModelSummary& summary) {
    uint64_t total = 0;
    for (const TensorTypeShare& s : summary.quant_mix) total += s.bytes;
    if (total == 0) return {};
    QStringList parts;
    for (const TensorTypeShare& s : summary.quant_mix) {
        const double share = 100.0 * static_cast<double>(s.bytes) / static_cast<double>(total);
        if (share >= 5.0 || parts.isEmpty()) parts << QStringLiteral("%1 %2%").arg(s.type).arg(share, 0, 'f', 0);
    }
    return parts.join(QStringLiteral(" · "));
}

LibraryEntry describe_library_model(const QString& path) {
    LibraryEntry e;
    const QFileInfo info(path);
    e.path = info.absoluteFilePath();
    e.canonical_path = info.canonicalFilePath();
    e.name = library_model_name(path);
    e.folder = info.isDir();
    e.size_bytes = size_on_disk(info);
    e.summary.path = e.path;
    try {
        describe_into(e);
    } catch (const std::exception& ex) {
        // The engine's API does not throw; a bad_alloc on a hostile file still must not end the studio.
        e.status = LibraryEntry::Status::Error;
        e.problem = QObject::tr("cannot be read: %1").arg(QString::fromLocal8Bit(ex.what()));
    }
    // The row names the model already (its path is in the tooltip): the reason without the path is shorter.
    e.problem.replace(e.path + "/", QString()).replace(e.path, QFileInfo(e.path).fileName());
    return e;
}

QVector<int> library_parents(const QVector<LibraryEntry>& entries) {
    const auto n = entries.size();
    QVector<int> parent(n, -1);
    QHash<QString, int> by_path;
    QHash<QString, int> source_by_base;  // unquantized models by base name, folders first
    for (int i = 0; i < n; ++i) {
        by_path.insert(entries[i].path, i);
        if (!entries[i].canonical_path.isEmpty()) by_path.insert(entries[i].canonical_path, i);
    }
    for (int i = 0; i < n; ++i) {
        const LibraryEntry& e = entries[i];
        if (e.quantized || e.status == LibraryEntry::Status::Error) continue;
        const QString base = library_base_name(e.name);
        const auto it = source_by_base.constFind(base);
        if (it == source_by_base.constEnd() || (e.folder && !entries[*it].folder)) source_by_base.insert(base, i);
    }
    for (int i = 0; i < n; ++i) {
        const LibraryEntry& e = entries[i];
        int p = -1;
        if (!e.recorded_source.isEmpty()) p = by_path.value(e.recorded_source, -1);
        if (p < 0 && e.quantized) p = source_by_base.value(library_base_name(e.name), -1);
        if (p != i) parent[i] = p;
    }
    // One level: a child of a child goes under the top one.
    for (int i = 0; i < n; ++i) {
        int p = parent[i];
        for (int hops = 0; p >= 0 && parent[p] >= 0 && hops < n; ++hops) p = parent[p];
        parent[i] = (p == i) ? -1 : p;
    }
    for (int i = 0; i < n; ++i)
        if (parent[i] >= 0 && parent[parent[i]] >= 0) parent[i] = -1;  // a cycle: both at the top
    return parent;
}

}  // namespace folio::ui
