// The importance matrix: for every matrix of the model, per input column,
// the sum of squared activations that reached it over a calibration text
// (and how many rows were summed). The K-quant search then weighs each
// weight's rounding error by its column's mean square activation. Read and
// written in llama.cpp's imatrix GGUF format ("<tensor>.in_sum2",
// "<tensor>.counts", imatrix.* keys), so llama-quantize --imatrix takes
// Folio's files and Folio takes llama-imatrix's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "folio/error.h"
#include "folio/model.h"

namespace folio {

// What activation-aware scaling (AWQ, quant/awq.h) needs of the calibration
// activations beyond the importance matrix, for the inputs it rescales: per
// input column the sum of |x|, and a uniform sample of whole input rows
// (reservoir sampling, seeded: the same text gives the same sample). Keyed
// by the first weight that reads the input (attn_q for Q K V, ffn_gate for
// gate and up, ffn_down, attn_output). Memory is bounded by
// max_rows x (columns of those inputs) floats: for SmolLM2-135M at 512 rows
// 30 x (3 x 576 + 1536) x 512 x 4 B = 200 MB; for a Llama-3-8B shape 1.7 GB.
struct ActivationSample {
    std::vector<double> sum_abs;  // per input column
    int64_t rows_seen = 0;
    std::vector<float> rows;      // up to max_rows rows of sum_abs.size() values
    uint64_t rng_state = 0;

    int64_t n_columns() const { return int64_t(sum_abs.size()); }
    int64_t n_rows() const { return sum_abs.empty() ? 0 : int64_t(rows.size() / sum_abs.size()); }
    std::vector<float> mean_abs() const;
};

struct ActivationStats {
    int64_t max_rows = 512;
    std::map<std::string, ActivationSample> inputs;  // by weight name
};

// The weights whose inputs ActivationStats keeps ("blk.3.attn_q.weight", ...).
bool is_awq_input(const std::string& weight_name);

struct ImatrixEntry {
    std::vector<float> sums;  // per input column: sum of x^2
    float count = 0;          // rows summed
};

struct ImportanceMatrix {
    std::map<std::string, ImatrixEntry> entries;  // by weight name ("blk.0.attn_q.weight")
    std::vector<std::string> datasets;            // the calibration texts
    uint32_t chunk_count = 0;
    uint32_t chunk_size = 0;

    // The mean square activation of each column of `tensor`, as llama-quantize
    // weighs with; empty when the matrix has no entry for it. An entry whose
    // width is not `columns` is an Error.
    Result<std::vector<float>> weights_for(const std::string& tensor, int64_t columns) const;

    // With `activations`, also what folio imatrix --awq stores beside the
    // entries ("<tensor>.in_sum_abs", "<tensor>.in_rows"; llama.cpp's loader
    // reads only .in_sum2 and .counts and passes over them): read fills it
    // (left empty when the file has none), write adds it.
    static Result<ImportanceMatrix> read(const std::string& path, ActivationStats* activations = nullptr);
    Status write(const std::string& path, const ActivationStats* activations = nullptr) const;
};

struct ImatrixOptions {
    int32_t n_ctx = 512;        // tokens per chunk
    int64_t n_chunks = -1;      // -1: all whole chunks of the text
    int threads = 0;
    std::string device = "cpu"; // the backend the model runs on: cpu, cuda or cuda:N
    std::string dataset_name;   // recorded in imatrix.datasets
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(int64_t chunk, int64_t n_chunks)> on_chunk;
    // When set, the same pass also fills it (its max_rows as given).
    ActivationStats* activations = nullptr;
};

// The calibration text Folio uses when none is given: licence texts that
// Debian's base-files package installs on every system
// (/usr/share/common-licenses: Apache-2.0, MPL-2.0, MPL-1.1, GFDL-1.3,
// Artistic, CC0-1.0; ~22k tokens), none of the GPL family, whose GPL-3 is
// the text quantizations are evaluated on. Those present, concatenated.
std::vector<std::string> default_calibration_files();
Result<std::string> read_calibration_text(const std::vector<std::string>& files);

// Runs the model (on options.device) over `text` in chunks as llama-imatrix does
// (BOS first when the model adds one) and sums x^2 of the input of every
// matrix in a layer (blk.*; the output head is left out, as llama.cpp does).
Result<ImportanceMatrix> collect_imatrix(const ModelDescription& model, const std::string& text,
                                         const ImatrixOptions& options);

}  // namespace folio
