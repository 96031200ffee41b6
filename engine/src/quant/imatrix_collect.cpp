// collect_imatrix(): the model runs on the CPU's Ops, wrapped in a decorator
// that sees the input of every matrix product before it happens.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "backend/cpu/cpu_ops.h"
#include "folio/imatrix.h"
#include "folio/tokenizer.h"
#include "model/architecture.h"
#include "model/batch_check.h"
#include "model/forwarding_ops.h"

namespace folio {

namespace {

constexpr uint32_t kBlockSize = 16;

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Sums |x| per column and keeps a uniform sample of max_rows rows: row i
// (counting from 0) replaces a random kept row with probability max_rows / (i + 1).
void sample_rows(ActivationSample& s, const float* x, int64_t n_rows, int64_t n_in, int64_t max_rows,
                 const std::string& name) {
    if (s.sum_abs.empty()) {
        s.sum_abs.assign(size_t(n_in), 0.0);
        s.rng_state = std::hash<std::string>{}(name);
    }
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* row = x + r * n_in;
        for (int64_t j = 0; j < n_in; ++j) s.sum_abs[size_t(j)] += std::fabs(row[j]);
        const int64_t i = s.rows_seen++;
        int64_t slot = i;
        if (i >= max_rows) {
            slot = int64_t(splitmix64(s.rng_state) % uint64_t(i + 1));
            if (slot >= max_rows) continue;
        } else {
            s.rows.resize(size_t((i + 1) * n_in));
        }
        std::copy(row, row + n_in, s.rows.begin() + slot * n_in);
    }
}

// Adds x^2 of each matmul input row to its weight's column sums (and, when
// asked, the statistics AWQ needs of the inputs it rescales).
class ImatrixOps final : public model::ForwardingOps {
public:
    ImatrixOps(Ops& inner, const std::unordered_map<const std::byte*, std::string>& names, ImportanceMatrix& out,
               ActivationStats* activations)
        : ForwardingOps(inner), names_(names), out_(out), activations_(activations) {}

    Status matmul(const model::Weight& w, const float* x, int64_t n_rows, float* y) override {
        record(w, x, n_rows);
        return inner_.matmul(w, x, n_rows, y);
    }
    Status matmuls(std::span<const model::Weight> w, const float* x, int64_t n_rows,
                   std::span<float* const> y) override {
        for (const model::Weight& weight : w) record(weight, x, n_rows);
        return inner_.matmuls(w, x, n_rows, y);
    }

private:
    void record(const model::Weight& w, const float* x, int64_t n_rows) {
        const auto it = names_.find(w.data);
        if (it == names_.end()) return;  // the output head, or a weight outside the layers
        ImatrixEntry& e = out_.entries[it->second];
        e.sums.resize(size_t(w.in_features), 0.0f);
        for (int64_t r = 0; r < n_rows; ++r) {
            const float* row = x + r * w.in_features;
            for (int64_t j = 0; j < w.in_features; ++j) e.sums[size_t(j)] += row[j] * row[j];
        }
        e.count += float(n_rows);
        if (activations_ && is_awq_input(it->second))
            sample_rows(activations_->inputs[it->second], x, n_rows, w.in_features, activations_->max_rows, it->second);
    }

    const std::unordered_map<const std::byte*, std::string>& names_;
    ImportanceMatrix& out_;
    ActivationStats* activations_;
};

Batch chunk_batch(std::span<const int32_t> tokens) {
    Batch b;
    const auto n = int32_t(tokens.size());
    std::vector<int32_t> table;
    for (int32_t blk = 0; blk * int32_t(kBlockSize) < n; ++blk) table.push_back(blk);
    for (int32_t j = 0; j < n; ++j) {
        b.token_ids.push_back(tokens[size_t(j)]);
        b.positions.push_back(j);
        b.slot_mapping.push_back(j);
    }
    b.sequences.push_back(BatchSequence{0, n, n, table});
    b.logits_rows = {n - 1};  // the head runs for one row only: its input is not collected
    return b;
}

}  // namespace

std::vector<float> ActivationSample::mean_abs() const {
    std::vector<float> mean(sum_abs.size());
    for (size_t j = 0; j < mean.size(); ++j) mean[j] = rows_seen ? float(sum_abs[j] / double(rows_seen)) : 0.0f;
    return mean;
}

bool is_awq_input(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return false;
    for (const char* suffix : {".attn_q.weight", ".ffn_gate.weight", ".ffn_down.weight", ".attn_output.weight"}) {
        const size_t n = std::strlen(suffix);
        if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) return true;
    }
    return false;
}

Result<ImportanceMatrix> collect_imatrix(const ModelDescription& model, const std::string& text,
                                         const ImatrixOptions& options) {
    auto arch = model::create_architecture(model);
    if (!arch) return arch.error();
    auto tokenizer = Tokenizer::create(model.tokenizer);
    if (!tokenizer) return tokenizer.error();
    const std::vector<int32_t> tokens = tokenizer->encode(text, /*add_special=*/true, /*parse_special=*/false);
    const int32_t n_ctx = options.n_ctx;
    if (n_ctx < 2) return make_error("imatrix: chunks of " + std::to_string(n_ctx) + " tokens are too short");
    int64_t n_chunks = int64_t(tokens.size()) / n_ctx;
    if (options.n_chunks >= 0) n_chunks = std::min(n_chunks, options.n_chunks);
    if (n_chunks == 0)
        return make_error("imatrix: the text is " + std::to_string(tokens.size()) + " tokens, less than one chunk of " +
                          std::to_string(n_ctx));

    // Only the layers' matrices are collected (llama.cpp: "blk.*").
    std::unordered_map<const std::byte*, std::string> names;
    for (const TensorView& t : model.tensors)
        if (t.name.rfind("blk.", 0) == 0 && t.shape.size() == 2) names[t.data] = t.name;

    const model::KvShape shape = (*arch)->kv_shape();
    const uint32_t n_blocks = (uint32_t(n_ctx) + kBlockSize - 1) / kBlockSize;
    cpu::KvCache cache;
    cache.allocate(shape.n_layer, shape.n_head_kv, shape.head_dim, kBlockSize, n_blocks);
    cpu::CpuOps cpu(options.threads, cache, uint32_t(n_ctx));
    std::vector<int32_t> rows;
    cpu.set_row_sequences(&rows);
    ImportanceMatrix result;
    if (options.activations && options.activations->max_rows < 1)
        return make_error("imatrix: AWQ needs at least one sampled activation row per input");
    ImatrixOps ops(cpu, names, result, options.activations);
    const bool add_bos = tokenizer->add_bos() && tokenizer->bos_id() >= 0;
    std::vector<float> logits(size_t((*arch)->n_vocab()));
    for (int64_t c = 0; c < n_chunks; ++c) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return make_error("imatrix: cancelled");
        std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (add_bos) chunk[0] = tokenizer->bos_id();
        const Batch batch = chunk_batch(chunk);
        const auto out = model::StepOutput::all_logits(logits);
        if (Status s = model::check_batch(batch, out, (*arch)->n_vocab(), n_blocks, kBlockSize, uint32_t(n_ctx), rows); !s)
            return s.error();
        if (Status s = (*arch)->forward(ops, batch, out); !s) return s.error();
        if (options.on_chunk) options.on_chunk(c + 1, n_chunks);
    }
    result.datasets = {options.dataset_name};
    result.chunk_count = uint32_t(n_chunks);
    result.chunk_size = uint32_t(n_ctx);
    return result;
}

}  // namespace folio
