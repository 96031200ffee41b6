// The CUDA Backend: an Architecture run with CudaOps. At creation the
// weights go to the device once (through one staging buffer, repacked by
// kernels::prepare_matrix into the layout the kernels read; or filled with
// random values for a dummy model), then the KV pool takes what the memory
// budget leaves (vLLM's gpu_memory_utilization).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_set>

#include "cuda/cuda_ops.h"
#include "cuda/nvml.h"
#include "folio/backend.h"
#include "folio_kernels/check.h"
#include "folio_kernels/matmul.h"
#include "folio_kernels/moe.h"
#include "folio_kernels/sampling.h"
#include "model/architecture.h"
#include "model/batch_check.h"
#include "model/tracing_ops.h"

namespace folio {
namespace {

// The host addresses and rows of matrices stored as one (Weight or ExpertMatrix), in order.
template <typename Matrix>
std::pair<std::vector<const void*>, std::vector<int64_t>> stacked_members(const std::vector<Matrix>& members) {
    std::pair<std::vector<const void*>, std::vector<int64_t>> out;
    for (const Matrix& m : members) {
        out.first.push_back(m.data);
        out.second.push_back(m.out_features);
    }
    return out;
}

std::string cuda_error(const std::string& what, cudaError_t err) {
    return "cuda: " + what + ": " + cudaGetErrorString(err);
}

#define FOLIO_CUDA_OR_ERROR(call, what)                                \
    do {                                                               \
        if (cudaError_t err_ = (call); err_ != cudaSuccess) return make_error(cuda_error(what, err_)); \
    } while (0)

// Weight types as the kernels number them (GGML's ids, as TensorType does).
kernels::WeightType kernel_type(TensorType t) { return static_cast<kernels::WeightType>(static_cast<int32_t>(t)); }

// Bytes of a matrix as GGUF stores it.
size_t gguf_bytes(const model::Weight& w) {
    const TensorTypeTraits t = traits(w.type);
    return static_cast<size_t>(w.in_features / t.block_elems) * t.block_bytes * static_cast<size_t>(w.out_features);
}

class CudaBackend final : public Backend {
public:
    ~CudaBackend() override {
        for (Graph& g : graphs_)
            if (g.exec) cudaGraphExecDestroy(g.exec);
        ops_.reset();
        cache_.memory.reset();
        weights_.reset();
        vectors_.reset();
        if (cublas_) cublasDestroy(cublas_);
        if (stream_) cudaStreamDestroy(stream_);
    }

    // `index` is the user's cuda:N, `device` the runtime's id of that GPU.
    Status init(const ModelDescription& model, std::unique_ptr<model::Architecture> arch, const BackendOptions& options,
                int index, int device);

    Status forward(const Batch& batch, std::span<float> logits) override {
        return step(batch, model::StepOutput::all_logits(logits));
    }
    Status forward_wrapped(const Batch& batch, std::span<float> logits, const OpsDecorator& wrap) override {
        return step(batch, model::StepOutput::all_logits(logits), &wrap);
    }
    // Greedy steps: the logits stay on the device, only the chosen ids come back.
    bool can_argmax() const override { return true; }
    Status forward_argmax(const Batch& batch, std::span<int32_t> ids) override {
        return step(batch, model::StepOutput::argmax_ids(ids));
    }
    // Top-k sampling: each row's k best entries come back, not the row. The
    // selection costs ~30 us for one row of 128256 or 262144 (split over
    // blocks), 0.11 ms for 64 rows (bench/results/cuda-top-k-2026-11-29.txt),
    // less than a row's download and the Sampler's own selection at any size.
    int32_t max_top_k(size_t) const override { return kernels::kMaxTopK; }
    Status forward_top_k(const Batch& batch, int32_t k, std::span<float> values, std::span<int32_t> ids,
                         const RowSums& sums) override {
        return step(batch, model::StepOutput::best_k(k, values, ids, sums));
    }
    // Sampling at a plain temperature: each row's token comes back (kernels::draw_rows, ~0.1 ms a step).
    bool can_draw() const override { return true; }
    Status forward_draw(const Batch& batch, const RowDraws& draws, std::span<int32_t> ids) override {
        return step(batch, model::StepOutput::drawn_ids(draws, ids));
    }
    Status last_logits_rows(std::span<const size_t> rows, std::span<float> out) override {
        return ops_->last_logits_rows(rows, out);
    }
    // Top-p and min-p sets wider than the best entries: each row sorted and
    // walked on the device (kernels::top_p_draw_rows), only the token comes back.
    bool can_draw_last_rows() const override { return true; }
    Status draw_last_rows(std::span<const size_t> rows, std::span<const WholeRowDraw> draws,
                      std::span<DrawnToken> out) override {
        return ops_->draw_last_rows(rows, draws, out);
    }

    // One block is the same slice of each layer's K and V region, regions
    // equally spaced: one 2D copy a block (2 * n_layer rows of block_bytes).
    Status copy_blocks(std::span<const BlockCopy> copies) override {
        FOLIO_RETURN_IF_ERROR(model::check_block_copies(copies, cache_.n_blocks));
        for (const BlockCopy& c : copies)
            FOLIO_CUDA_OR_ERROR(copy_block(cache_block(c.dst), region_bytes(), cache_block(c.src), region_bytes(),
                                           cudaMemcpyDeviceToDevice),
                                "copy_blocks");
        FOLIO_CUDA_OR_ERROR(cudaStreamSynchronize(stream_), "copy_blocks");
        return {};
    }

    bool can_shift_keys() const override { return true; }
    Status shift_keys(std::span<const int32_t> blocks, int32_t delta) override {
        FOLIO_RETURN_IF_ERROR(model::check_blocks(blocks, cache_.n_blocks, "shift_keys"));
        for (int layer = 0; layer < cache_.n_layer; ++layer)
            FOLIO_RETURN_IF_ERROR(ops_->shift_keys(layer, blocks, delta, arch_->rope(layer)));
        FOLIO_CUDA_OR_ERROR(cudaStreamSynchronize(stream_), "shift_keys");
        return {};
    }

    // Swap space: host slots of one block each ([2 * n_layer][block_bytes]),
    // pinned a chunk at a time as slots in it are first used: pinning runs
    // at ~1-2 GB/s, so pinning it all at start (or at the first preemption)
    // would cost seconds that most sessions never need. The scheduler hands
    // out the lowest free slots, so few chunks get pinned. Copies are queued
    // on the step's stream, so the forward pass after them and any later
    // swap see them done; nothing waits here.
    uint32_t n_swap_blocks() const override { return n_swap_blocks_; }
    Status swap_blocks(std::span<const BlockCopy> out, std::span<const BlockCopy> in) override {
        FOLIO_RETURN_IF_ERROR(model::check_block_copies(out, cache_.n_blocks, n_swap_blocks_, "swap out"));
        FOLIO_RETURN_IF_ERROR(model::check_block_copies(in, n_swap_blocks_, cache_.n_blocks, "swap in"));
        FOLIO_RETURN_IF_ERROR(pin_swap_slots(out));
        const uint64_t block = cache_.block_bytes();
        for (const BlockCopy& c : out)
            FOLIO_CUDA_OR_ERROR(copy_block(swap_slot(c.dst), block, cache_block(c.src), region_bytes(),
                                           cudaMemcpyDeviceToHost),
                                "swap out");
        for (const BlockCopy& c : in)
            FOLIO_CUDA_OR_ERROR(copy_block(cache_block(c.dst), region_bytes(), swap_slot(c.src), block,
                                           cudaMemcpyHostToDevice),
                                "swap in");
        return {};
    }

    int32_t n_vocab() const override { return arch_->n_vocab(); }
    uint32_t block_size() const override { return cache_.block_size; }
    uint32_t n_blocks() const override { return cache_.n_blocks; }
    uint32_t max_context() const override { return max_context_; }
    uint64_t kv_cache_bytes() const override { return cache_.bytes(); }
    uint64_t kv_bytes_per_block() const override { return 2 * static_cast<uint64_t>(cache_.n_layer) * cache_.block_bytes(); }
    KvType kv_type() const override { return cache_.type; }
    int n_threads() const override { return 1; }
    std::string name() const override { return name_; }
    DeviceReadings device_readings() const override { return nvml_ ? nvml_->read() : DeviceReadings{}; }

private:
    // With `wrap` (forward_wrapped), the step runs through the decorator, never from a graph.
    Status step(const Batch& batch, const model::StepOutput& out, const OpsDecorator* wrap = nullptr) {
        FOLIO_RETURN_IF_ERROR(model::check_batch(batch, out, n_vocab(), cache_.n_blocks, cache_.block_size,
                                                 max_context_, row_sequence_));
        if (cudaSetDevice(device_) != cudaSuccess) return make_error("cuda: cannot select device " + std::to_string(device_));
        if (!wrap && use_graphs_ && !model::ops_trace_file())
            if (const int32_t bucket = graph_bucket(batch); bucket > 0) return forward_graph(batch, bucket, out);
        FOLIO_RETURN_IF_ERROR(ops_->begin_step(batch, row_sequence_));
        if (wrap) return arch_->forward((*wrap)(*ops_), batch, out);
        return model::forward_traced(*arch_, *ops_, "cuda", batch, out);
    }
    Status upload_weights(const ModelDescription& model);
    Status allocate_kv(const BackendOptions& options);
    Status size_swap_space(const BackendOptions& options);  // how many slots (pinned later)
    // Pins the chunks of the slots `out` writes to; when it cannot, there is
    // no swap space from then on (the engine recomputes preempted sequences
    // instead) and nothing was copied.
    Status pin_swap_slots(std::span<const BlockCopy> out);

    // Block b's slice of the first K region, and the distance between regions.
    std::byte* cache_block(int32_t b) const {
        return static_cast<std::byte*>(cache_.memory.data()) + static_cast<uint64_t>(b) * cache_.block_bytes();
    }
    uint64_t region_bytes() const { return uint64_t{cache_.n_blocks} * cache_.block_bytes(); }
    std::byte* swap_slot(int32_t slot) const {
        const auto s = static_cast<uint32_t>(slot);
        return swap_chunks_[s / swap_chunk_blocks_]->data() + uint64_t{s % swap_chunk_blocks_} * kv_bytes_per_block();
    }
    // All 2 * n_layer regions' slices of one block, between layouts of the given pitch.
    cudaError_t copy_block(std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
                           cudaMemcpyKind kind) const {
        return cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, cache_.block_bytes(), 2 * static_cast<size_t>(cache_.n_layer),
                                 kind, stream_);
    }

    // Decode steps (one row per sequence, logits for each) replay a CUDA
    // graph captured for the next batch-size bucket up: the batch is padded
    // with rows that write no KV and whose logits nobody reads.
    int32_t graph_bucket(const Batch& batch) const;
    Status forward_graph(const Batch& batch, int32_t bucket, const model::StepOutput& out);
    struct Graph {
        cudaGraphExec_t exec = nullptr;
        uint64_t epoch = 0;  // CudaOps::memory_epoch() at capture
        bool warmed = false; // ran once uncaptured (sizes buffers, loads kernels)
    };
    std::vector<Graph> graphs_;  // per bucket index
    bool use_graphs_ = true;
    Batch padded_;                    // reused step to step: its vectors keep their capacity
    std::vector<int32_t> padded_rows_;  // row r is sequence r

    int device_ = 0;
    std::string name_;
    std::unique_ptr<cuda::Nvml> nvml_;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    std::unique_ptr<model::Architecture> arch_;
    uint32_t max_context_ = 0;
    cuda::DeviceBuffer weights_, vectors_;
    cuda::DeviceKvCache cache_;
    std::vector<std::unique_ptr<cuda::PinnedBuffer>> swap_chunks_;  // null until a slot in it is used
    uint32_t n_swap_blocks_ = 0, swap_chunk_blocks_ = 1;
    std::unique_ptr<cuda::CudaOps> ops_;
    std::vector<int32_t> row_sequence_;
};

Status CudaBackend::init(const ModelDescription& model, std::unique_ptr<model::Architecture> arch,
                         const BackendOptions& options, int index, int device) {
    device_ = device;
    arch_ = std::move(arch);
    use_graphs_ = options.cuda_graphs;
    FOLIO_CUDA_OR_ERROR(cudaSetDevice(device_), "select device " + std::to_string(device_));
    cudaDeviceProp prop{};
    FOLIO_CUDA_OR_ERROR(cudaGetDeviceProperties(&prop, device_), "device properties");
    name_ = "cuda:" + std::to_string(index) + " (" + prop.name + ")";
    if (cudaError_t err = kernels::kernel_image_status(); err != cudaSuccess)
        return make_error(name_ + ": this build of Folio has no CUDA code for sm_" + std::to_string(prop.major) +
                          std::to_string(prop.minor) + " (" + cudaGetErrorString(err) +
                          "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=native, or use --device cpu");
    char pci[32] = {};
    if (cudaDeviceGetPCIBusId(pci, sizeof pci, device_) == cudaSuccess) nvml_ = cuda::Nvml::open(pci);
    FOLIO_CUDA_OR_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) return make_error("cuda: cannot create a cuBLAS handle");
    max_context_ = options.max_context ? options.max_context : 4096;
    if (model.hparams.n_ctx_train > 0) max_context_ = std::min(max_context_, model.hparams.n_ctx_train);
    arch_->set_context_length(max_context_);

    const model::KvShape kv = arch_->kv_shape();
    cache_.n_layer = kv.n_layer;
    cache_.n_head_kv = kv.n_head_kv;
    cache_.head_dim = kv.head_dim;
    cache_.block_size = options.block_size;
    cache_.type = options.kv_type;
    if (cache_.type != KvType::F16 && (!kv_type_fits(cache_.type, static_cast<uint64_t>(kv.head_dim)) ||
                                       options.block_size % 16 != 0))
        return make_error("--kv-type " + std::string(kv_type_name(cache_.type)) +
                          " on the GPU stores heads in blocks of 32 values and KV blocks of a multiple of 16 tokens; "
                          "model '" + model.name + "' has heads of " + std::to_string(kv.head_dim) +
                          ", the KV block is " + std::to_string(options.block_size) + " tokens");
    ops_ = std::make_unique<cuda::CudaOps>(stream_, cublas_, cache_);
    FOLIO_RETURN_IF_ERROR(upload_weights(model));
    FOLIO_RETURN_IF_ERROR(allocate_kv(options));
    return size_swap_space(options);
}

Status CudaBackend::upload_weights(const ModelDescription& model) {
    // What goes to the device: each group of matrices that share their input
    // and type (Q K V, gate up) as one matrix of their rows stacked, every
    // other matrix once (a tied output head is the embedding table).
    // The experts of a stacked expert matrix are uploads of their own, one
    // after the other (a fixed stride apart: kernels::DeviceExperts); the
    // expert matrices of a group (gate, up) go as one, each expert's rows of
    // them stacked.
    struct Upload {
        std::vector<model::Weight> members;  // stacked in this order
        int64_t rows = 0;
        size_t offset = 0;
        bool expert = false;
    };
    std::vector<Upload> uploads;
    std::unordered_set<const void*> placed;
    for (const std::vector<model::Weight>& group : arch_->matrix_groups()) {
        bool fusable = group.size() > 1;
        for (const model::Weight& w : group)
            fusable = fusable && w.type == group[0].type && w.in_features == group[0].in_features && !placed.count(w.data);
        if (!fusable) continue;
        Upload u{group, 0, 0};
        for (const model::Weight& w : group) {
            u.rows += w.out_features;
            placed.insert(w.data);
        }
        uploads.push_back(std::move(u));
    }
    std::vector<model::Weight> singles = {arch_->embedding()};
    for (const model::Weight& w : arch_->matrices()) singles.push_back(w);
    for (const model::Weight& w : singles)
        if (placed.insert(w.data).second) uploads.push_back(Upload{{w}, w.out_features, 0});
    struct ExpertUpload {
        std::vector<model::ExpertMatrix> members;  // stacked in this order
        int64_t rows = 0;
        size_t first = 0;  // index in uploads of expert 0's
    };
    std::vector<ExpertUpload> expert_uploads;
    auto add_experts = [&](std::vector<model::ExpertMatrix> members) {
        ExpertUpload eu{std::move(members), 0, uploads.size()};
        for (const model::ExpertMatrix& em : eu.members) {
            eu.rows += em.out_features;
            placed.insert(em.data);
        }
        for (int32_t e = 0; e < eu.members[0].n_expert; ++e) {
            Upload u{{}, eu.rows, 0, true};
            for (const model::ExpertMatrix& em : eu.members) u.members.push_back(em.expert(e));
            uploads.push_back(std::move(u));
        }
        expert_uploads.push_back(std::move(eu));
    };
    for (const std::vector<model::ExpertMatrix>& group : arch_->expert_groups()) {
        bool fusable = group.size() > 1;
        for (const model::ExpertMatrix& em : group)
            fusable = fusable && em.type == group[0].type && em.in_features == group[0].in_features &&
                      em.n_expert == group[0].n_expert && !placed.count(em.data);
        if (fusable) add_experts(group);
    }
    for (const model::ExpertMatrix& em : arch_->expert_matrices()) {
        if (em.n_expert > kernels::kMaxExperts || model.hparams.n_expert_used > static_cast<uint32_t>(kernels::kMaxExpertsUsed))
            return make_error("model '" + model.name + "': " + std::to_string(model.hparams.n_expert_used) + " of " +
                              std::to_string(em.n_expert) + " experts per token; the CUDA backend routes at most " +
                              std::to_string(kernels::kMaxExpertsUsed) + " of " + std::to_string(kernels::kMaxExperts));
        if (!placed.count(em.data)) add_experts({em});
    }

    size_t total = 0, staging = 0;
    for (Upload& u : uploads) {
        const model::Weight& w = u.members[0];
        const kernels::WeightType t = kernel_type(w.type);
        const size_t bytes = kernels::matmul_supported(t) ? kernels::device_matrix_bytes(t, u.rows, w.in_features) : 0;
        if (bytes == 0)
            return make_error("model '" + model.name + "': no CUDA kernels for " + std::string(traits(w.type).name) +
                              " matrices of " + std::to_string(w.in_features) + " columns");
        u.offset = total;
        total += (bytes + 255) / 256 * 256;
        size_t gguf = 0;
        for (const model::Weight& m : u.members) gguf += gguf_bytes(m);
        staging = std::max(staging, gguf);
    }
    FOLIO_CUDA_OR_ERROR(weights_.reserve(total), "weights (" + std::to_string(total >> 20) + " MiB)");
    cuda::DeviceBuffer stage;
    if (!model.random_weights) FOLIO_CUDA_OR_ERROR(stage.reserve(staging), "weight staging buffer");
    for (size_t i = 0; i < uploads.size(); ++i) {
        const Upload& u = uploads[i];
        const model::Weight& w = u.members[0];
        void* dst = static_cast<std::byte*>(weights_.data()) + u.offset;
        const kernels::DeviceMatrix m{kernel_type(w.type), dst, u.rows, w.in_features};
        if (model.random_weights) {
            // Dummy weights: values of the magnitude a trained layer has (~1/sqrt(fan-in)).
            const float scale = 1.0f / std::sqrt(static_cast<float>(w.in_features));
            FOLIO_CUDA_OR_ERROR(kernels::fill_random_matrix(m.type, dst, m.rows, m.cols, model.random_seed + i, scale, stream_),
                                "random weights");
        } else {
            // GGUF rows of the members back to back, then the kernels' layout.
            size_t at = 0;
            for (const model::Weight& member : u.members) {
                FOLIO_CUDA_OR_ERROR(cudaMemcpyAsync(static_cast<std::byte*>(stage.data()) + at, member.data, gguf_bytes(member),
                                                    cudaMemcpyHostToDevice, stream_),
                                    "weight upload");
                at += gguf_bytes(member);
            }
            FOLIO_CUDA_OR_ERROR(kernels::prepare_matrix(m.type, stage.data(), m.rows, m.cols, dst, stream_), "weight layout");
            // The staging buffer is reused by the next matrix.
            FOLIO_CUDA_OR_ERROR(cudaStreamSynchronize(stream_), "weight upload");
        }
        if (u.expert) {
            // Registered below, as a whole.
        } else if (u.members.size() == 1) {
            ops_->add_matrix(w.data, m);
        } else {
            auto [members, rows] = stacked_members(u.members);
            ops_->add_stacked(m, std::move(members), std::move(rows));
        }
    }
    for (const ExpertUpload& eu : expert_uploads) {
        const model::ExpertMatrix& em = eu.members[0];
        const kernels::WeightType t = kernel_type(em.type);
        const kernels::DeviceExperts de{t, static_cast<std::byte*>(weights_.data()) + uploads[eu.first].offset,
                                        kernels::expert_stride(t, eu.rows, em.in_features), eu.rows, em.in_features,
                                        em.n_expert};
        auto [members, rows] = stacked_members(eu.members);
        ops_->add_experts(de, std::move(members), std::move(rows));
    }
    // Norm weights and biases: small, one buffer.
    const auto vectors = arch_->vectors();
    size_t floats = 0;
    for (const auto& v : vectors) floats += (v.size() + 63) / 64 * 64;
    FOLIO_CUDA_OR_ERROR(vectors_.reserve(std::max<size_t>(1, floats) * sizeof(float)), "norm weights");
    size_t at = 0;
    for (const auto& v : vectors) {
        float* dst = static_cast<float*>(vectors_.data()) + at;
        FOLIO_CUDA_OR_ERROR(cudaMemcpyAsync(dst, v.data(), v.size_bytes(), cudaMemcpyHostToDevice, stream_), "norm weights");
        ops_->add_vector(v.data(), dst);
        at += (v.size() + 63) / 64 * 64;
    }
    FOLIO_CUDA_OR_ERROR(cudaStreamSynchronize(stream_), "weight upload");
    return {};
}

Status CudaBackend::allocate_kv(const BackendOptions& options) {
    const uint64_t per_block = kv_bytes_per_block();
    uint64_t n_blocks = options.n_blocks;
    if (n_blocks == 0 && options.kv_budget_bytes > 0) n_blocks = options.kv_budget_bytes / per_block;
    if (n_blocks == 0) {
        // vLLM's gpu_memory_utilization: weights, activations and KV within
        // this share of the card; activations and library workspaces get a
        // fixed reserve.
        const double fraction = options.kv_memory_fraction > 0 ? options.kv_memory_fraction : 0.9;
        if (fraction > 0.98) return make_error("a GPU memory fraction above 0.98 leaves the driver nothing");
        size_t free = 0, total = 0;
        FOLIO_CUDA_OR_ERROR(cudaMemGetInfo(&free, &total), "memory info");
        const uint64_t reserve = uint64_t{2} << 30;
        const double allowed = fraction * static_cast<double>(total) - static_cast<double>(total - free) -
                               static_cast<double>(reserve);
        if (allowed < static_cast<double>(per_block))
            return make_error("the model leaves no room for a KV cache within " + std::to_string(int(fraction * 100)) +
                              "% of the GPU's " + std::to_string(total >> 30) + " GiB (" + std::to_string(free >> 30) +
                              " GiB free); raise --kv-fraction or use a smaller model");
        n_blocks = static_cast<uint64_t>(allowed) / per_block;
    }
    if (n_blocks == 0)
        return make_error("a KV budget of " + std::to_string(options.kv_budget_bytes) + " bytes holds no block; one block takes " +
                          std::to_string(per_block));
    cache_.n_blocks = static_cast<uint32_t>(std::min<uint64_t>(n_blocks, 1u << 24));
    FOLIO_CUDA_OR_ERROR(cache_.memory.reserve(cache_.bytes()), "KV cache (" + std::to_string(cache_.bytes() >> 20) + " MiB)");
    const uint64_t layer_bytes = cache_.n_blocks * cache_.block_bytes();
    auto* base = static_cast<std::byte*>(cache_.memory.data());
    cache_.layers.clear();
    for (int l = 0; l < cache_.n_layer; ++l) {
        kernels::PagedKvLayer layer;
        layer.k = base + (2 * static_cast<uint64_t>(l)) * layer_bytes;
        layer.v = base + (2 * static_cast<uint64_t>(l) + 1) * layer_bytes;
        layer.n_blocks = static_cast<int32_t>(cache_.n_blocks);
        layer.block_size = static_cast<int32_t>(cache_.block_size);
        layer.n_head_kv = cache_.n_head_kv;
        layer.head_dim = cache_.head_dim;
        layer.format = cache_.type == KvType::Fp8    ? kernels::KvFormat::Fp8
                       : cache_.type == KvType::Q8_0 ? kernels::KvFormat::Q8_0
                                                     : kernels::KvFormat::F16;
        cache_.layers.push_back(layer);
    }
    return {};
}

// Default swap space: vLLM's 4 GiB, but no more than the KV cache (a
// preempted sequence never holds more than the cache) nor a quarter of the
// host memory available (it is pinned: the system cannot page it out). Only
// its size is decided here; it is pinned in chunks as slots are used.
Status CudaBackend::size_swap_space(const BackendOptions& options) {
    const uint64_t per_block = kv_bytes_per_block();
    uint64_t bytes = 0;
    if (options.swap_space_bytes >= 0) {
        bytes = static_cast<uint64_t>(options.swap_space_bytes);
    } else {
        bytes = std::min<uint64_t>(uint64_t{4} << 30, cache_.bytes());
        if (const uint64_t host = available_host_memory(); host > 0) bytes = std::min(bytes, host / 4);
    }
    n_swap_blocks_ = static_cast<uint32_t>(std::min<uint64_t>(bytes / per_block, 1u << 24));
    // Chunks of ~64 MiB (at least one block).
    swap_chunk_blocks_ = static_cast<uint32_t>(std::max<uint64_t>(1, (uint64_t{64} << 20) / per_block));
    swap_chunks_.resize((n_swap_blocks_ + swap_chunk_blocks_ - 1) / swap_chunk_blocks_);
    return {};
}

Status CudaBackend::pin_swap_slots(std::span<const BlockCopy> out) {
    const uint64_t per_block = kv_bytes_per_block();
    for (const BlockCopy& c : out) {
        const uint32_t chunk = static_cast<uint32_t>(c.dst) / swap_chunk_blocks_;
        if (swap_chunks_[chunk]) continue;
        const uint32_t blocks = std::min(swap_chunk_blocks_, n_swap_blocks_ - chunk * swap_chunk_blocks_);
        auto pinned = std::make_unique<cuda::PinnedBuffer>();
        if (cudaError_t err = pinned->reserve(uint64_t{blocks} * per_block, /*exact=*/true); err != cudaSuccess) {
            cudaGetLastError();  // not sticky: the device is fine
            const uint64_t wanted = uint64_t{n_swap_blocks_} * per_block;
            n_swap_blocks_ = 0;
            swap_chunks_.clear();
            return make_error("cuda: cannot pin host memory for swap space (" + std::string(cudaGetErrorString(err)) +
                              ", " + std::to_string(wanted >> 20) +
                              " MiB asked for); preempted requests are recomputed instead");
        }
        swap_chunks_[chunk] = std::move(pinned);
    }
    return {};
}

// Batch sizes a decode graph is captured for.
constexpr int32_t kGraphBuckets[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};

int32_t CudaBackend::graph_bucket(const Batch& batch) const {
    const int32_t n = batch.n_tokens();
    if (static_cast<int32_t>(batch.sequences.size()) != n || static_cast<int32_t>(batch.logits_rows.size()) != n)
        return 0;
    // (Graph steps lay block tables out for a whole context.)
    const size_t max_blocks = (max_context_ + cache_.block_size - 1) / cache_.block_size;
    for (int32_t r = 0; r < n; ++r) {
        const BatchSequence& seq = batch.sequences[static_cast<size_t>(r)];
        if (seq.n_query != 1 || seq.query_start != r || batch.logits_rows[static_cast<size_t>(r)] != r ||
            seq.block_table.size() > max_blocks)
            return 0;
    }
    for (int32_t b : kGraphBuckets)
        if (b >= n) return b;
    return 0;
}

// `batch` (decode rows only, row r = sequence r) padded to `bucket` rows
// with rows of their own one-token sequences at position 0 that write no KV
// (slot -1) and whose logits nobody reads; `out` keeps its vectors' capacity.
void pad_decode_batch(const Batch& batch, int32_t bucket, Batch& out) {
    const auto n = static_cast<size_t>(batch.n_tokens()), rows = static_cast<size_t>(bucket);
    out.token_ids.assign(batch.token_ids.begin(), batch.token_ids.end());
    out.token_ids.resize(rows, 0);
    out.positions.assign(batch.positions.begin(), batch.positions.end());
    out.positions.resize(rows, 0);
    out.slot_mapping.assign(batch.slot_mapping.begin(), batch.slot_mapping.end());
    out.slot_mapping.resize(rows, -1);
    out.sequences.resize(rows);
    for (size_t r = 0; r < rows; ++r) {
        BatchSequence& s = out.sequences[r];
        if (r < n) {
            const BatchSequence& in = batch.sequences[r];
            s.query_start = in.query_start, s.n_query = in.n_query, s.seq_len = in.seq_len;
            s.block_table.assign(in.block_table.begin(), in.block_table.end());
        } else {
            s.query_start = static_cast<int32_t>(r), s.n_query = 1, s.seq_len = 1;
            s.block_table.assign(1, 0);
        }
    }
    out.logits_rows.resize(rows);
    for (size_t r = 0; r < rows; ++r) out.logits_rows[r] = static_cast<int32_t>(r);
}

Status CudaBackend::forward_graph(const Batch& batch, int32_t bucket, const model::StepOutput& out) {
    const int32_t n = batch.n_tokens();
    const size_t index = static_cast<size_t>(std::find(std::begin(kGraphBuckets), std::end(kGraphBuckets), bucket) -
                                             std::begin(kGraphBuckets));
    if (graphs_.size() <= index) graphs_.resize(index + 1);
    Graph& g = graphs_[index];

    pad_decode_batch(batch, bucket, padded_);
    padded_rows_.resize(static_cast<size_t>(bucket));
    for (int32_t r = 0; r < bucket; ++r) padded_rows_[static_cast<size_t>(r)] = r;
    cuda::StepLayout layout;
    layout.for_graph = true;
    layout.max_blocks = static_cast<int32_t>((max_context_ + cache_.block_size - 1) / cache_.block_size);
    layout.max_seq_len = static_cast<int32_t>(max_context_);
    FOLIO_RETURN_IF_ERROR(ops_->begin_step(padded_, padded_rows_, layout));

    if (g.exec && g.epoch != ops_->memory_epoch()) {  // a buffer it points into has moved
        cudaGraphExecDestroy(g.exec);
        g = Graph{};
    }
    if (!g.warmed || !g.exec) {
        // First the step runs as usual: it sizes every buffer and loads the
        // kernels, so that the capture that follows allocates nothing. `out`
        // gets the real rows only (the output head delivers out.rows()).
        FOLIO_RETURN_IF_ERROR(arch_->forward(*ops_, padded_, out));
        if (!g.warmed) {
            g.warmed = true;
            return {};
        }
        // (This step's output came from the run above; the capture only records.)
        // The second time this bucket comes, its step is captured (the next
        // replays it); a capture that fails turns graphs off, nothing else.
        cudaGraph_t graph = nullptr;
        FOLIO_CUDA_OR_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "graph capture");
        ops_->set_capturing(true);
        const Status captured = arch_->forward(*ops_, padded_, out);
        ops_->set_capturing(false);
        const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
        if (captured && end == cudaSuccess && cudaGraphInstantiate(&g.exec, graph, 0) == cudaSuccess) {
            g.epoch = ops_->memory_epoch();
        } else {
            std::fprintf(stderr, "folio: CUDA graph capture failed (%s); decoding without graphs\n",
                         captured ? cudaGetErrorString(end) : captured.error().message.c_str());
            use_graphs_ = false;
            g.exec = nullptr;
        }
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        return {};
    }
    FOLIO_CUDA_OR_ERROR(cudaGraphLaunch(g.exec, stream_), "graph launch");
    // The graph's output head wrote the padded batch's logits here.
    const int64_t vocab = n_vocab();
    float* logits = ops_->buffer(model::Buffer::Logits, int64_t{bucket} * vocab);
    return model::deliver(*ops_, logits, n, vocab, out);
}

Result<int> parse_device(const std::string& device) {
    if (device == "cuda") return 0;
    const std::string index = device.substr(5);
    if (index.empty() || index.size() > 3 || index.find_first_not_of("0123456789") != std::string::npos)
        return make_error("device '" + device + "': expected cuda or cuda:N");
    return std::stoi(index);
}

}  // namespace

namespace {

// Folio's kernels need sm_80 (cp.async, bf16 tensor-core MMA).
constexpr int kMinComputeCapability = 80;

// The GPUs Folio can use, in the runtime's order: "cuda:N" is the N-th of
// them. A GPU older than sm_80 is left out and named in the description.
struct DeviceScan {
    std::vector<int> usable;  // runtime device ids
    std::string description;
};

std::string describe_device(const cudaDeviceProp& p) {
    char memory[64];
    std::snprintf(memory, sizeof memory, ", %.1f GiB, sm_%d%d", static_cast<double>(p.totalGlobalMem) / (1 << 30),
                  p.major, p.minor);
    return std::string(p.name) + memory;
}

const DeviceScan& scan_devices() {
    static const DeviceScan scan = [] {
        DeviceScan d;
        int count = 0;
        if (cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
            cudaGetLastError();  // clear it
            d.description = std::string("no usable CUDA GPU: ") + cudaGetErrorString(err);
            return d;
        }
        std::vector<std::string> usable, too_old;
        for (int i = 0; i < count; ++i) {
            cudaDeviceProp p{};
            if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
            if (p.major * 10 + p.minor < kMinComputeCapability) {
                too_old.push_back(describe_device(p));
                continue;
            }
            usable.push_back("cuda:" + std::to_string(d.usable.size()) + " " + describe_device(p));
            d.usable.push_back(i);
        }
        for (const std::string& line : usable) d.description += (d.description.empty() ? "" : "\n") + line;
        if (count == 0) d.description = "no CUDA GPU found";
        for (const std::string& gpu : too_old)
            d.description += (d.description.empty() ? "no usable CUDA GPU: " : "\nnot used: ") + gpu +
                             " is older than sm_80, which Folio's CUDA kernels need";
        return d;
    }();
    return scan;
}

}  // namespace

int cuda_device_count() { return static_cast<int>(scan_devices().usable.size()); }

std::string describe_cuda_devices() { return scan_devices().description; }

Result<std::unique_ptr<Backend>> create_cuda_backend(const ModelDescription& model, const BackendOptions& options) {
    auto device = parse_device(options.device);
    if (!device) return device.error();
    if (options.f32_activations) return make_error("F32 activations (--f32-activations) are a CPU backend option");
    const int count = cuda_device_count();
    if (count == 0) return make_error(describe_cuda_devices());
    if (*device >= count)
        return make_error("device cuda:" + std::to_string(*device) + " does not exist (" + std::to_string(count) +
                          " usable GPU" + (count == 1 ? "" : "s") + ")");
    if (options.block_size == 0 || options.block_size > 1024)
        return make_error("KV block size must be between 1 and 1024 tokens");
    auto arch = model::create_architecture(model);
    if (!arch) return arch.error();
    auto backend = std::make_unique<CudaBackend>();
    if (Status s = backend->init(model, std::move(*arch), options, *device, scan_devices().usable[*device]); !s)
        return s.error();
    return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace folio
