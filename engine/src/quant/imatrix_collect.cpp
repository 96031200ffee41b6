// collect_imatrix(): the model runs on a backend (the CPU or a GPU) whose Ops
// are wrapped in a decorator that sees the input of every matrix product
// before it happens.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "folio/backend.h"
#include "folio/imatrix.h"
#include "folio/tokenizer.h"
#include "model/architecture.h"
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

// Adds x^2 of each matmul input row to its weight's column sums (and, when
// asked, the statistics AWQ needs of the inputs it rescales: the sum of |x|
// per column and a uniform sample of whole rows). The sums are the backend's
// (Ops::add_column_stats: on a GPU they never leave it but as totals).
class ImatrixOps final : public model::ForwardingOps {
public:
    ImatrixOps(Ops& inner, const std::unordered_map<const std::byte*, std::string>& names, ImportanceMatrix& out,
               ActivationStats* activations)
        : ForwardingOps(inner), names_(names), out_(out), activations_(activations) {}

    Status matmul(const model::Weight& w, const float* x, int64_t n_rows, float* y) override {
        FOLIO_RETURN_IF_ERROR(record({&w, 1}, x, n_rows));
        return inner_.matmul(w, x, n_rows, y);
    }
    Status matmuls(std::span<const model::Weight> w, const float* x, int64_t n_rows,
                   std::span<float* const> y) override {
        FOLIO_RETURN_IF_ERROR(record(w, x, n_rows));
        return inner_.matmuls(w, x, n_rows, y);
    }

private:
    // Weights that share an input (Q K V; gate up) and have seen the same
    // rows so far have the same sums: the first one's are summed, the
    // others copy them.
    Status record(std::span<const model::Weight> weights, const float* x, int64_t n_rows) {
        const ImatrixEntry* first = nullptr;
        for (const model::Weight& w : weights) {
            const auto it = names_.find(w.data);
            if (it == names_.end()) continue;  // the output head, or a weight outside the layers
            ImatrixEntry& e = out_.entries[it->second];
            e.sums.resize(size_t(w.in_features), 0.0f);
            if (first && first->sums.size() == e.sums.size() && first->count == e.count + float(n_rows)) {
                e.sums = first->sums;
            } else {
                ActivationSample* sample =
                    activations_ && is_awq_input(it->second) ? &activations_->inputs[it->second] : nullptr;
                if (sample && sample->sum_abs.empty()) {
                    sample->sum_abs.assign(size_t(w.in_features), 0.0);
                    sample->rng_state = std::hash<std::string>{}(it->second);
                }
                FOLIO_RETURN_IF_ERROR(inner_.add_column_stats(x, n_rows, w.in_features, e.sums,
                                                              sample ? std::span<double>(sample->sum_abs)
                                                                     : std::span<double>()));
                if (sample) FOLIO_RETURN_IF_ERROR(keep_rows(*sample, x, n_rows, w.in_features));
            }
            e.count += float(n_rows);
            first = &e;
        }
        return {};
    }

    // Reservoir sampling: row i (counting from 0 over the whole text) takes
    // a random kept row's place with probability max_rows / (i + 1). The
    // rows that fill the sample come over in one copy.
    Status keep_rows(ActivationSample& s, const float* x, int64_t n_rows, int64_t n_in) {
        const int64_t max_rows = activations_->max_rows;
        const int64_t filling = std::clamp<int64_t>(max_rows - s.rows_seen, 0, n_rows);
        if (filling > 0) {
            const size_t at = s.rows.size();
            s.rows.resize(at + size_t(filling * n_in));
            FOLIO_RETURN_IF_ERROR(inner_.to_host(x, std::span<float>(s.rows).subspan(at), filling * n_in));
            s.rows_seen += filling;
        }
        for (int64_t r = filling; r < n_rows; ++r) {
            const int64_t i = s.rows_seen++;
            const auto slot = int64_t(splitmix64(s.rng_state) % uint64_t(i + 1));
            if (slot >= max_rows) continue;
            FOLIO_RETURN_IF_ERROR(
                inner_.to_host(x + r * n_in, std::span<float>(s.rows).subspan(size_t(slot * n_in)), n_in));
        }
        return {};
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

    const uint32_t n_blocks = (uint32_t(n_ctx) + kBlockSize - 1) / kBlockSize;
    BackendOptions backend_options;
    backend_options.device = options.device;
    backend_options.n_threads = options.threads;
    backend_options.block_size = kBlockSize;
    backend_options.n_blocks = n_blocks;
    backend_options.max_context = uint32_t(n_ctx);
    backend_options.swap_space_bytes = 0;
    backend_options.cuda_graphs = false;
    auto backend = create_backend(model, backend_options);
    if (!backend) return backend.error();
    if ((*backend)->max_context() < uint32_t(n_ctx))
        return make_error("imatrix: chunks of " + std::to_string(n_ctx) + " tokens are longer than the model's context (" +
                          std::to_string((*backend)->max_context()) + " tokens)");
    ImportanceMatrix result;
    if (options.activations && options.activations->max_rows < 1)
        return make_error("imatrix: AWQ needs at least one sampled activation row per input");
    std::optional<ImatrixOps> watch;  // around the backend's Ops, made at the first step
    const Backend::OpsDecorator wrap = [&](model::Ops& inner) -> model::Ops& {
        if (!watch) watch.emplace(inner, names, result, options.activations);
        return *watch;
    };
    const bool add_bos = tokenizer->add_bos() && tokenizer->bos_id() >= 0;
    std::vector<float> logits(size_t((*backend)->n_vocab()));
    for (int64_t c = 0; c < n_chunks; ++c) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return make_error("imatrix: cancelled");
        std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (add_bos) chunk[0] = tokenizer->bos_id();
        if (Status s = (*backend)->forward_wrapped(chunk_batch(chunk), logits, wrap); !s) return s.error();
        if (options.on_chunk) options.on_chunk(c + 1, n_chunks);
    }
    result.datasets = {options.dataset_name};
    result.chunk_count = uint32_t(n_chunks);
    result.chunk_size = uint32_t(n_ctx);
    return result;
}

}  // namespace folio
