// ImportanceMatrix in llama.cpp's imatrix GGUF: general.type "imatrix",
// imatrix.datasets / chunk_count / chunk_size, and per matrix an F32
// "<name>.in_sum2" [columns, 1] and "<name>.counts" [1, 1].
#include <cmath>
#include <cstring>

#include "folio/gguf.h"
#include "folio/imatrix.h"

namespace folio {

namespace {

constexpr std::string_view kSums = ".in_sum2";
constexpr std::string_view kCounts = ".counts";
constexpr std::string_view kSumAbs = ".in_sum_abs";
constexpr std::string_view kRows = ".in_rows";

bool ends_with(const std::string& s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<float> f32_values(const GgufTensorInfo& t) {
    std::vector<float> out(size_t(t.n_elements()));
    std::memcpy(out.data(), t.data, out.size() * 4);
    return out;
}

}  // namespace

Result<std::vector<float>> ImportanceMatrix::weights_for(const std::string& tensor, int64_t columns) const {
    const auto it = entries.find(tensor);
    if (it == entries.end()) return std::vector<float>();
    const ImatrixEntry& e = it->second;
    if (int64_t(e.sums.size()) != columns)
        return make_error("the importance matrix has " + std::to_string(e.sums.size()) + " columns for '" + tensor +
                          "', which has " + std::to_string(columns) + " (was it made for another model?)");
    std::vector<float> w(e.sums.size(), 1.0f);  // no rows seen: every column alike, as llama-quantize does
    if (e.count > 0)
        for (size_t i = 0; i < w.size(); ++i) w[i] = e.sums[i] / e.count;
    return w;
}

namespace {

// The AWQ activations of a file written by folio imatrix --awq: per input,
// the sum of |x| per column and the sampled rows; the rows seen are the entry's count.
Status read_activations(const GgufFile& file, const std::string& path, const ImportanceMatrix& m, ActivationStats& out) {
    out.inputs.clear();
    if (file.has("folio.awq.max_rows")) {
        auto max_rows = file.get_u32("folio.awq.max_rows");
        if (!max_rows) return max_rows.error();
        out.max_rows = *max_rows;
    }
    for (const GgufTensorInfo& t : file.tensors()) {
        if (!ends_with(t.name, kSumAbs)) continue;
        const std::string name = t.name.substr(0, t.name.size() - kSumAbs.size());
        const GgufTensorInfo* rows = file.find_tensor(name + std::string(kRows));
        const auto entry = m.entries.find(name);
        if (!rows || entry == m.entries.end())
            return make_error("'" + path + "': '" + t.name + "' has no '" + name + ".in_rows' or no importance entry");
        const int64_t n_in = t.n_elements();
        if (t.type() != TensorType::F32 || rows->type() != TensorType::F32 || rows->shape.empty() || rows->shape[0] != n_in ||
            int64_t(entry->second.sums.size()) != n_in)
            return make_error("'" + path + "': the AWQ activations of '" + name + "' do not fit its " +
                              std::to_string(entry->second.sums.size()) + " columns");
        ActivationSample& s = out.inputs[name];
        const std::vector<float> sums = f32_values(t);
        s.sum_abs.assign(sums.begin(), sums.end());
        s.rows = f32_values(*rows);
        s.rows_seen = int64_t(entry->second.count);
        for (float v : s.rows)
            if (!std::isfinite(v)) return make_error("'" + path + "': '" + name + ".in_rows' holds a value that is not finite");
    }
    return {};
}

Status add_activations(GgufWriter& writer, const ActivationStats& activations) {
    writer.set("folio.awq.max_rows", GgufValue::u32(uint32_t(activations.max_rows)));
    for (const auto& [name, s] : activations.inputs) {
        std::vector<float> sums(s.sum_abs.begin(), s.sum_abs.end());
        std::vector<std::byte> sum_bytes(sums.size() * 4), row_bytes(s.rows.size() * 4);
        std::memcpy(sum_bytes.data(), sums.data(), sum_bytes.size());
        std::memcpy(row_bytes.data(), s.rows.data(), row_bytes.size());
        if (Status st = writer.add_tensor(name + std::string(kSumAbs), TensorType::F32, {s.n_columns(), 1}, std::move(sum_bytes)); !st)
            return st;
        if (Status st = writer.add_tensor(name + std::string(kRows), TensorType::F32, {s.n_columns(), s.n_rows()}, std::move(row_bytes)); !st)
            return st;
    }
    return {};
}

}  // namespace

Result<ImportanceMatrix> ImportanceMatrix::read(const std::string& path, ActivationStats* activations) {
    auto file = GgufFile::open(path);
    if (!file) return file.error();
    auto type = file->get_string_or("general.type", "");
    if (!type || *type != "imatrix")
        return make_error("'" + path + "' is not an importance matrix (general.type is not \"imatrix\"); "
                          "llama.cpp's legacy .dat files are not read");
    ImportanceMatrix m;
    if (file->has("imatrix.datasets")) {
        auto datasets = file->get_string_array("imatrix.datasets");
        if (!datasets) return datasets.error();
        m.datasets = *datasets;
    }
    auto chunk_count = file->get_u32_or("imatrix.chunk_count", 0);
    auto chunk_size = file->get_u32_or("imatrix.chunk_size", 0);
    if (!chunk_count) return chunk_count.error();
    if (!chunk_size) return chunk_size.error();
    m.chunk_count = *chunk_count;
    m.chunk_size = *chunk_size;
    for (const GgufTensorInfo& t : file->tensors()) {
        if (!ends_with(t.name, kSums)) continue;
        const std::string name = t.name.substr(0, t.name.size() - kSums.size());
        const GgufTensorInfo* counts = file->find_tensor(name + std::string(kCounts));
        if (!counts) return make_error("'" + path + "': '" + t.name + "' has no '" + name + ".counts'");
        if (t.type() != TensorType::F32 || counts->type() != TensorType::F32)
            return make_error("'" + path + "': the entries of '" + name + "' are not F32");
        if (counts->n_elements() != 1 || t.shape.size() > 2 || (t.shape.size() == 2 && t.shape[1] != 1))
            return make_error("'" + path + "': '" + name + "' has several experts; Folio's models have none");
        ImatrixEntry e;
        e.sums = f32_values(t);
        e.count = f32_values(*counts)[0];
        for (float v : e.sums)
            if (!std::isfinite(v) || v < 0) return make_error("'" + path + "': '" + t.name + "' holds a value that is not finite and >= 0");
        m.entries[name] = std::move(e);
    }
    if (m.entries.empty()) return make_error("'" + path + "' holds no importance entries");
    if (activations)
        if (Status s = read_activations(*file, path, m, *activations); !s) return s.error();
    return m;
}

Status ImportanceMatrix::write(const std::string& path, const ActivationStats* activations) const {
    GgufWriter writer;
    writer.set("general.type", GgufValue::string("imatrix"));
    writer.set("imatrix.datasets", GgufValue::array(GgufArray::of_strings(datasets)));
    writer.set("imatrix.chunk_count", GgufValue::u32(chunk_count));
    writer.set("imatrix.chunk_size", GgufValue::u32(chunk_size));
    for (const auto& [name, e] : entries) {
        std::vector<std::byte> sums(e.sums.size() * 4), count(4);
        std::memcpy(sums.data(), e.sums.data(), sums.size());
        std::memcpy(count.data(), &e.count, 4);
        if (Status s = writer.add_tensor(name + std::string(kSums), TensorType::F32, {int64_t(e.sums.size()), 1}, std::move(sums)); !s)
            return s;
        if (Status s = writer.add_tensor(name + std::string(kCounts), TensorType::F32, {1, 1}, std::move(count)); !s) return s;
    }
    if (activations)
        if (Status s = add_activations(writer, *activations); !s) return s;
    return writer.write(path);
}

}  // namespace folio
