// The contract between the engine and a compute device: a Backend owns a
// model's weights as the device uses them, a paged KV cache of fixed-size
// blocks, and runs the forward pass over a flat Batch. The CPU backend keeps
// the weights in their stored (mmapped) format; a CUDA backend plugs in here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "folio/batch.h"
#include "folio/error.h"
#include "folio/host_memory.h"
#include "folio/kv_type.h"
#include "folio/model.h"

namespace folio {

namespace model {
class Ops;
}

struct BackendOptions {
    std::string device = "cpu";              // "cpu", "cuda" or "cuda:N"
    int n_threads = 0;                       // 0 = physical cores
    uint32_t block_size = kDefaultBlockSize; // tokens per KV block
    uint32_t n_blocks = 0;                   // KV blocks in the pool; 0 = from kv_budget_bytes
    uint64_t kv_budget_bytes = 0;            // KV memory when n_blocks is 0; 0 = one max_context sequence
    double kv_memory_fraction = 0;           // else this share of the memory available now (the CPU
                                             // reads MemAvailable); on a GPU, vLLM's gpu_memory_utilization:
                                             // weights + activations + KV within this share of the card
                                             // (0 there means 0.9)
    uint32_t max_context = 4096;             // longest sequence (capped at the trained context)
    int64_t swap_space_bytes = -1;           // host memory preempted sequences' KV blocks are swapped to
                                             // (a GPU's; the CPU's KV is host memory already): -1 = the
                                             // backend's default, 0 = none (preemption recomputes)
    bool cuda_graphs = true;                 // CUDA: replay decode steps from captured graphs
    bool f32_activations = false;            // CPU: quantized weights meet F32 activations (each block
                                             // dequantized), as in an F32 copy of the model, not Q8
                                             // ones: the reference precision of a quantized file
    KvType kv_type = KvType::F16;            // how K and V are stored (folio/kv_type.h)
};

// What a GPU reports about itself now (NVML); valid = false on the CPU or
// where NVML is missing.
struct DeviceReadings {
    bool valid = false;
    double utilization_perc = 0;   // of the last sample period, kernels running
    double memory_used_bytes = 0;
    double memory_total_bytes = 0;
    double sm_clock_mhz = 0;
    double memory_clock_mhz = 0;
    double power_watts = 0;
    double temperature_celsius = 0;
};

class Backend {
public:
    virtual ~Backend() = default;

    // Writes the rows' K/V into the cache at batch.slot_mapping, attends
    // through the block tables, and fills `logits` with
    // batch.logits_rows.size() rows of n_vocab() floats. Errors for batches
    // that do not fit (unknown block, position beyond max_context, ...).
    virtual Status forward(const Batch& batch, std::span<float> logits) = 0;
    // forward() with the step's operations going through wrap(ops): a
    // decorator of the backend's own Ops (engine/src/model/forwarding_ops.h)
    // that watches what the step computes, as the importance-matrix
    // collector does. Engine-internal (model::Ops is not a public type);
    // never replayed from a CUDA graph.
    using OpsDecorator = std::function<model::Ops&(model::Ops&)>;
    virtual Status forward_wrapped(const Batch&, std::span<float>, const OpsDecorator&) {
        return make_error("backend " + name() + " runs no step through a decorator");
    }

    // forward(), but for each logits row only the id of its largest logit
    // (ties: the lowest id; NaN never wins), chosen where the logits are, so
    // they need not be copied out: greedy steps on a GPU. Backends whose
    // logits are in host memory anyway say no (can_argmax) and the engine's
    // Sampler chooses.
    virtual bool can_argmax() const { return false; }
    virtual Status forward_argmax(const Batch&, std::span<int32_t>) {
        return make_error("this backend does not choose tokens itself");
    }
    // forward(), but each logits row's token drawn where the logits are, by
    // temperature alone or by top-p without top-k (RowDraws: the row's
    // temperature, 0 for greedy, its penalties, its top-p / min-p, and the
    // uniform value its Sampler took), bit for bit the token Sampler::sample
    // would draw from the whole row: sampling on a GPU without copying rows
    // out. Backends that cannot say no (can_draw).
    virtual bool can_draw() const { return false; }
    virtual Status forward_draw(const Batch&, const RowDraws&, std::span<int32_t>) {
        return make_error("this backend does not draw tokens itself");
    }
    // forward(), but for each logits row only its k best entries (values in
    // `logits`, ids in `ids`, k per row, best first, ties to the lower id,
    // NaN as -inf, +inf as the largest float: Sampler::sample_top_k's
    // input), selected where the logits are: top-k sampling on a GPU without
    // copying whole rows out. 1 <= k <= max_top_k(rows), which is 0 where
    // whole rows are cheaper for a step of that many logits rows (or the
    // backend cannot select).
    // With `sums` given, also sums over each whole row (RowSums), which let
    // the Sampler draw top-p and report logprobs from the k best alone. The
    // step's logits stay readable through last_logits_rows() until the next
    // step, for draws those k entries cannot decide.
    virtual int32_t max_top_k(size_t /*n_rows*/) const { return 0; }
    virtual Status forward_top_k(const Batch&, int32_t, std::span<float>, std::span<int32_t>, const RowSums&) {
        return make_error("this backend does not select top-k candidates itself");
    }
    // Rows `rows` (indices into batch.logits_rows) of the last
    // forward_top_k's logits, one after the other into `out`.
    virtual Status last_logits_rows(std::span<const size_t> /*rows*/, std::span<float> /*out*/) {
        return make_error("this backend keeps no logits rows");
    }
    // For rows of the last forward_top_k whose k best could not decide the
    // draw (a top-p or min-p set reaching past them, a draw by temperature
    // alone), the token made where the logits are: out[i] = what
    // Sampler::sample draws from row rows[i] (an index into
    // batch.logits_rows) at draws[i] (no top-k, no penalties), bit for bit,
    // with the set's size and the token's logit. Backends that cannot say no
    // (can_draw_last_rows); the engine then reads the rows whole.
    virtual bool can_draw_last_rows() const { return false; }
    virtual Status draw_last_rows(std::span<const size_t> /*rows*/, std::span<const WholeRowDraw> /*draws*/,
                              std::span<DrawnToken> /*out*/) {
        return make_error("this backend does not draw top-p tokens itself");
    }

    // Duplicates whole blocks (every layer's K and V), in order: the
    // copy-on-write the KvCacheManager asks for before a step.
    virtual Status copy_blocks(std::span<const BlockCopy> copies) = 0;

    // Turns every layer's cached keys in `blocks` (all their slots) back by
    // `delta` positions: a key written at position p becomes the key of
    // position p - delta, by the layer's own RoPE (rotations compose), its
    // values untouched. What a sink window that slides in place needs
    // (KvShift). Backends that cannot say no (can_shift_keys).
    virtual bool can_shift_keys() const { return false; }
    virtual Status shift_keys(std::span<const int32_t> /*blocks*/, int32_t /*delta*/) {
        return make_error("backend " + name() + " cannot shift cached keys");
    }

    // Host slots of one block each (every layer's K and V) that a preempted
    // sequence's blocks can wait in; 0 where the KV cache is host memory
    // already (the CPU) or no swap space was asked for: then the scheduler
    // recomputes preempted sequences.
    virtual uint32_t n_swap_blocks() const { return 0; }
    // Copies blocks out to host slots ({device block, slot}), then host slots
    // back in ({slot, device block}), in stream order before the next step.
    // A backend may take its swap space as slots are first used; if it
    // cannot, it fails with nothing copied and has none from then on
    // (n_swap_blocks() == 0): the engine recomputes preempted sequences instead.
    virtual Status swap_blocks(std::span<const BlockCopy> out, std::span<const BlockCopy> in) {
        if (out.empty() && in.empty()) return {};
        return make_error("this backend has no swap space");
    }

    virtual int32_t n_vocab() const = 0;
    virtual uint32_t block_size() const = 0;
    virtual uint32_t n_blocks() const = 0;
    virtual uint32_t max_context() const = 0;
    virtual uint64_t kv_cache_bytes() const = 0;
    virtual uint64_t kv_bytes_per_block() const = 0;
    virtual KvType kv_type() const { return KvType::F16; }
    virtual int n_threads() const = 0;
    virtual std::string name() const = 0;  // "cpu (AVX2, 2 threads)"
    // The device's own readings; any thread may ask.
    virtual DeviceReadings device_readings() const { return {}; }
};

// The backend options.device names, for `model` (which must outlive it).
// Fails with a clear message for an architecture Folio cannot run, a weight
// type without kernels, or a device this build or machine does not have.
Result<std::unique_ptr<Backend>> create_backend(const ModelDescription& model, const BackendOptions& options);

Result<std::unique_ptr<Backend>> create_cpu_backend(const ModelDescription& model, const BackendOptions& options);
// The CUDA backend on GPU N of "cuda:N" (default 0); an Error when this build
// has no CUDA or no usable GPU/driver is present (the message says which).
Result<std::unique_ptr<Backend>> create_cuda_backend(const ModelDescription& model, const BackendOptions& options);

// Usable CUDA GPUs (0 without CUDA in this build, a driver, or a GPU), and
// why there are none / what they are ("cuda:0 NVIDIA H200, 139.8 GiB, sm_90").
// The GPUs are looked for once per process: the first call loads the driver
// (up to seconds; a GUI makes it on a worker thread at start), later ones
// return at once.
int cuda_device_count();
std::string describe_cuda_devices();

// Architectures the forward pass knows ("llama", "gemma3", ...), comma-separated, for messages.
std::string supported_architectures();

}  // namespace folio
