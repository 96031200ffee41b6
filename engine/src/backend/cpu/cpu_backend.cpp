// The CPU Backend: an Architecture run with CpuOps over a KvCache. forward()
// checks a batch against the cache before any kernel sees it, so a
// scheduler bug becomes an Error, not a stray write.
#include <algorithm>
#include <cstdio>

#include "backend/cpu/cpu_ops.h"
#include "cpu/kernels.h"
#include "cpu/matmul.h"
#include "folio/backend.h"
#include "model/architecture.h"
#include "model/batch_check.h"
#include "model/tracing_ops.h"

namespace folio {
namespace {

class CpuBackend final : public Backend {
public:
    CpuBackend(std::unique_ptr<model::Architecture> arch, uint32_t block_size, uint32_t n_blocks,
               uint32_t max_context, int n_threads, bool f32_activations, KvType kv_type)
        : arch_(std::move(arch)), max_context_(max_context) {
        const model::KvShape kv = arch_->kv_shape();
        cache_.allocate(kv.n_layer, kv.n_head_kv, kv.head_dim, block_size, n_blocks, kv_type);
        ops_ = std::make_unique<cpu::CpuOps>(n_threads, cache_, max_context, f32_activations);
    }

    Status forward(const Batch& batch, std::span<float> logits) override { return step(batch, logits, nullptr); }
    Status forward_wrapped(const Batch& batch, std::span<float> logits, const OpsDecorator& wrap) override {
        return step(batch, logits, &wrap);
    }

    Status copy_blocks(std::span<const BlockCopy> copies) override {
        // A block's bytes in the cache's type (F16 values or Q8_0 blocks, scales included).
        const size_t block_bytes = size_t{cache_.block_size} * static_cast<size_t>(cache_.slot_bytes());
        FOLIO_RETURN_IF_ERROR(model::check_block_copies(copies, cache_.n_blocks));
        for (const BlockCopy& c : copies) {
            for (int layer = 0; layer < cache_.n_layer; ++layer)
                for (auto* kv : {cache_.k[static_cast<size_t>(layer)].get(), cache_.v[static_cast<size_t>(layer)].get()})
                    std::copy_n(kv + static_cast<size_t>(c.src) * block_bytes, block_bytes,
                                kv + static_cast<size_t>(c.dst) * block_bytes);
        }
        return {};
    }

    bool can_shift_keys() const override { return true; }
    Status shift_keys(std::span<const int32_t> blocks, int32_t delta) override {
        FOLIO_RETURN_IF_ERROR(model::check_blocks(blocks, cache_.n_blocks, "shift_keys"));
        for (int layer = 0; layer < cache_.n_layer; ++layer) ops_->shift_keys(layer, blocks, delta, arch_->rope(layer));
        return {};
    }

    int32_t n_vocab() const override { return arch_->n_vocab(); }
    uint32_t block_size() const override { return cache_.block_size; }
    uint32_t n_blocks() const override { return cache_.n_blocks; }
    uint32_t max_context() const override { return max_context_; }
    uint64_t kv_cache_bytes() const override { return cache_.bytes(); }
    uint64_t kv_bytes_per_block() const override { return cache_.n_blocks ? cache_.bytes() / cache_.n_blocks : 0; }
    KvType kv_type() const override { return cache_.type; }
    int n_threads() const override { return ops_->pool().size(); }
    std::string name() const override {
        return std::string("cpu (") + cpu::isa_name(cpu::best_isa()) + ", " + std::to_string(n_threads()) +
               " threads" + (ops_->f32_activations() ? ", F32 activations" : "") +
               (cache_.type == KvType::F16 ? ")" : ", " + std::string(kv_type_name(cache_.type)) + " KV)");
    }

private:
    Status step(const Batch& batch, std::span<float> logits, const OpsDecorator* wrap) {
        const auto out = model::StepOutput::all_logits(logits);
        FOLIO_RETURN_IF_ERROR(model::check_batch(batch, out, n_vocab(), cache_.n_blocks, cache_.block_size,
                                                 max_context_, row_sequence_));
        ops_->set_row_sequences(&row_sequence_);
        if (wrap) return arch_->forward((*wrap)(*ops_), batch, out);
        return model::forward_traced(*arch_, *ops_, "cpu", batch, out);
    }

    std::unique_ptr<model::Architecture> arch_;
    uint32_t max_context_;
    cpu::KvCache cache_;
    std::unique_ptr<cpu::CpuOps> ops_;
    std::vector<int32_t> row_sequence_;
};

}  // namespace

Result<std::unique_ptr<Backend>> create_cpu_backend(const ModelDescription& model, const BackendOptions& options) {
    if (model.random_weights)
        return make_error("model '" + model.name + "' has dummy weights that only a GPU generates; use --device cuda");
    auto arch = model::create_architecture(model);
    if (!arch) return arch.error();
    for (const model::Weight& w : (*arch)->matrices())
        if (!cpu::dot_kernels(w.type, cpu::best_isa()))
            return make_error("model '" + model.name + "': no CPU kernels for " + std::string(traits(w.type).name) +
                              " weights (convert the model to a supported type)");
    for (const model::ExpertMatrix& w : (*arch)->expert_matrices())
        if (!cpu::dot_kernels(w.type, cpu::best_isa()))
            return make_error("model '" + model.name + "': no CPU kernels for " + std::string(traits(w.type).name) +
                              " expert weights (convert the model to a supported type)");
    if (options.block_size == 0 || options.block_size > 1024)
        return make_error("KV block size must be between 1 and 1024 tokens");
    uint32_t max_context = options.max_context ? options.max_context : 4096;
    if (model.hparams.n_ctx_train > 0) max_context = std::min(max_context, model.hparams.n_ctx_train);
    (*arch)->set_context_length(max_context);
    uint32_t n_blocks = options.n_blocks;
    uint64_t budget = options.kv_budget_bytes;
    if (n_blocks == 0 && budget == 0 && options.kv_memory_fraction > 0) {
        if (options.kv_memory_fraction > 0.95)
            return make_error("a KV memory fraction above 0.95 leaves the system nothing");
        const uint64_t available = available_host_memory();
        if (available == 0) return make_error("cannot tell how much memory is available; give a KV budget in bytes");
        budget = static_cast<uint64_t>(static_cast<double>(available) * options.kv_memory_fraction);
    }
    const model::KvShape kv = (*arch)->kv_shape();
    if (!kv_type_fits(options.kv_type, static_cast<uint64_t>(kv.head_dim)))
        return make_error("--kv-type " + std::string(kv_type_name(options.kv_type)) + " stores heads in blocks of " +
                          std::to_string(kv_type_block_values(options.kv_type)) + " values; model '" + model.name +
                          "' has heads of " + std::to_string(kv.head_dim) + " (use --kv-type f16)");
    if (n_blocks == 0 && budget > 0) {
        // K and V, every layer, in the cache's type.
        const uint64_t per_block = 2ull * static_cast<uint64_t>(kv.n_layer) *
                                   kv_type_bytes(options.kv_type, static_cast<uint64_t>(kv.n_head_kv) *
                                                                      static_cast<uint64_t>(kv.head_dim)) *
                                   options.block_size;
        const uint64_t blocks = budget / per_block;
        if (blocks == 0)
            return make_error("a KV budget of " + std::to_string(budget) +
                              " bytes holds no block; one block takes " + std::to_string(per_block));
        n_blocks = static_cast<uint32_t>(std::min<uint64_t>(blocks, 1u << 24));
    }
    if (n_blocks == 0) n_blocks = (max_context + options.block_size - 1) / options.block_size;
    return std::unique_ptr<Backend>(
        std::make_unique<CpuBackend>(std::move(*arch), options.block_size, n_blocks, max_context, options.n_threads,
                                     options.f32_activations, options.kv_type));
}

}  // namespace folio
