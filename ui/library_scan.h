// What the model library knows about one model on disk, and how it finds
// and reads them. Both functions run on the library's worker thread: they
// touch only the file system and the engine's Qt-free loaders
// (load_model_description: headers and metadata, the weights stay unread
// behind their mappings; GgufFile for a file the loader refuses), and give
// back plain values. A file Folio cannot run is an "unsupported" entry that
// says why; one that cannot be read is an "error" entry; neither throws.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

#include <atomic>

#include "ui/studio_types.h"

namespace folio::ui {

struct LibraryEntry {
    enum class Status { Ready, Unsupported, Error };
    QString path;            // as found (absolute)
    QString canonical_path;  // symlinks resolved: one entry per model
    QString name;            // the file (or folder) name; "org/name" for a Hugging Face cache snapshot
    bool folder = false;     // a Hugging Face folder
    Status status = Status::Ready;
    QString problem;         // Unsupported / Error: why, in the loader's words
    uint64_t size_bytes = 0; // on disk (a folder: its files)
    bool quantized = false;  // most weight bytes are in a block-quantized type
    QString recorded_source; // a Folio quantization's source (folio.quantize.source), canonical when it exists
    ModelSummary summary;    // architecture, parameters, quantization mix, context, memory estimate inputs
    QString architecture() const { return summary.architecture; }
};

// Model files (*.gguf) and Hugging Face folders (config.json + *.safetensors)
// under `roots` (a root may itself be a model), at most `max_depth` folders
// down; hidden folders are skipped, symlinked folders followed once. Stops
// early when `cancel` becomes true.
QStringList find_model_paths(const QStringList& roots, const std::atomic<bool>& cancel, int max_depth = 6);

// One model's entry, from its header and metadata.
LibraryEntry describe_library_model(const QString& path);

// The library's name for a model: the file or folder name, or "org/name" for
// a snapshot in the Hugging Face cache (…/models--org--name/snapshots/<hash>).
QString library_model_name(const QString& path);

// The name with quantization and precision suffixes taken off, lower case
// ("SmolLM2-135M-Instruct.Q4_K_M.gguf" and "SmolLM2-135M-Instruct-hf" both
// give "smollm2-135m-instruct"): how a quantized file is matched to its source
// when it does not record one.
QString library_base_name(const QString& name);

// For each entry, the index of the entry it is listed under (-1: top level):
// its recorded source when that is in the list, else, for a quantized model,
// an unquantized one of the same base name (a folder first). One level deep.
QVector<int> library_parents(const QVector<LibraryEntry>& entries);

// "Q4_K 71% · Q6_K 24%" (types with at least 5% of the weight bytes).
QString quantization_text(const ModelSummary& summary);

}  // namespace folio::ui

Q_DECLARE_METATYPE(folio::ui::LibraryEntry)
