#include "cpu/matmul.h"

#include <algorithm>
#include <string>

namespace folio::cpu {
namespace {

// Activation rows per task in prefill: their quantized rows (a few hundred KB
// at most) stay in the core's L2 while a chunk of weight rows streams past.
constexpr int64_t kActRowsPerTask = 64;
constexpr int64_t kWeightRowsPerPrefillTask = 16;

std::string type_name(TensorType type) { return std::string(traits(type).name); }

}  // namespace

size_t weight_row_bytes(TensorType type, int64_t in_features) {
    const auto t = tensor_type_traits(static_cast<uint32_t>(type));
    if (!t || in_features <= 0 || in_features % t->block_elems != 0) return 0;
    return static_cast<size_t>(in_features / t->block_elems) * t->block_bytes;
}

Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows_x, float* y, ThreadPool& pool,
              ScratchBuffer& scratch) {
    return matmul(w, x, n_rows_x, y, pool, scratch, best_isa());
}

Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows_x, float* y, ThreadPool& pool,
              ScratchBuffer& scratch, Isa isa) {
    if (!tensor_type_traits(static_cast<uint32_t>(w.type)))
        return make_error("matmul: unknown weight type id " + std::to_string(static_cast<uint32_t>(w.type)));
    const DotKernels* kernels = dot_kernels(w.type, isa);
    if (!kernels)
        return make_error("matmul: no CPU kernel for " + type_name(w.type) + " weights on " + isa_name(isa) +
                          " (convert the model to a supported type)");
    if (w.in_features <= 0 || w.out_features <= 0 || n_rows_x < 0)
        return make_error("matmul: bad shape " + std::to_string(w.out_features) + "x" +
                          std::to_string(w.in_features) + " with " + std::to_string(n_rows_x) + " input rows");
    if (w.in_features % kernels->block_elems != 0)
        return make_error("matmul: " + type_name(w.type) + " weight rows of " + std::to_string(w.in_features) +
                          " elements are not a whole number of " + std::to_string(kernels->block_elems) +
                          "-element blocks");
    if (n_rows_x == 0) return {};
    if (!w.data || !x || !y) return make_error("matmul: null weight, input or output pointer");

    const int64_t in = w.in_features, out = w.out_features;
    const size_t w_stride = weight_row_bytes(w.type, in);
    const auto* weights = reinterpret_cast<const char*>(w.data);

    // Quantize every activation row once; all weight rows reuse them.
    const char* act = reinterpret_cast<const char*>(x);
    size_t a_stride = static_cast<size_t>(in) * sizeof(float);
    if (kernels->quantize) {
        a_stride = activation_row_bytes(kernels->activation, in);
        std::byte* buffer = scratch.reserve(a_stride * static_cast<size_t>(n_rows_x));
        if (!buffer) return make_error("matmul: out of memory for the quantized activations");
        const QuantizeRowFn quantize = kernels->quantize;
        auto quantize_row = [&](int64_t row, int) {
            quantize(x + row * in, buffer + static_cast<size_t>(row) * a_stride, in);
        };
        if (n_rows_x >= 8) pool.parallel_for(n_rows_x, quantize_row);
        else for (int64_t row = 0; row < n_rows_x; ++row) quantize_row(row, 0);
        act = reinterpret_cast<const char*>(buffer);
    }

    // Tasks are (chunk of weight rows) x (block of activation rows).
    const int64_t threads = pool.size();
    const int64_t act_rows = std::min(n_rows_x, kActRowsPerTask);
    const int64_t act_blocks = (n_rows_x + act_rows - 1) / act_rows;
    int64_t chunk = kWeightRowsPerPrefillTask;
    if (n_rows_x == 1) chunk = std::clamp<int64_t>(out / (threads * 8), 8, 256);
    chunk = (chunk + 3) / 4 * 4;  // whole register tiles
    const int64_t weight_chunks = (out + chunk - 1) / chunk;

    const TileFn tile = kernels->tile;
    auto run_task = [&](int64_t task, int) {
        const int64_t r0 = (task / act_blocks) * chunk, r1 = std::min(out, r0 + chunk);
        const int64_t c0 = (task % act_blocks) * act_rows, c1 = std::min(n_rows_x, c0 + act_rows);
        for (int64_t c = c0; c < c1; c += kTileActRows) {
            const int n_a = static_cast<int>(std::min<int64_t>(kTileActRows, c1 - c));
            tile(in, weights + static_cast<size_t>(r0) * w_stride, w_stride, static_cast<int>(r1 - r0),
                 act + static_cast<size_t>(c) * a_stride, a_stride, n_a, y + c * out + r0, static_cast<size_t>(out));
        }
    };
    pool.parallel_for(weight_chunks * act_blocks, run_task);
    return {};
}

}  // namespace folio::cpu
