#include "cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <span>
#include <string>

#include "cpu/fp16.h"
#include "cpu/quant_blocks.h"
#include "folio/dequant.h"

namespace folio::cpu {
namespace {

// Activation rows per task in prefill: their quantized rows (a few hundred KB
// at most) stay in the core's L2 while a chunk of weight rows streams past.
constexpr int64_t kActRowsPerTask = 64;
constexpr int64_t kWeightRowsPerPrefillTask = 16;

std::string type_name(TensorType type) { return std::string(traits(type).name); }

// One quantized activation row's block scales (d, and s for Q8_1) into its
// lanes of its group's scale table: out[b * kActScalesPerBlock + {0, 1}].
void write_scales(ActivationType type, const std::byte* row, int64_t nb, float* out) {
    for (int64_t b = 0; b < nb; ++b, out += kActScalesPerBlock) {
        if (type == ActivationType::Q8_1) {
            const auto& block = reinterpret_cast<const BlockQ8_1*>(row)[b];
            out[0] = fp16_to_fp32(block.d);
            out[1] = fp16_to_fp32(block.s);
        } else {
            out[0] = fp16_to_fp32(reinterpret_cast<const BlockQ8_0*>(row)[b].d);
            out[1] = 0.0f;
        }
    }
}

// The arguments of matmul_many / matmul_many_f32, checked; kernels[i] gets
// the kernels of ws[i].
Status check_arguments(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows_x,
                       std::span<float* const> ys, Isa isa, const DotKernels* (&kernels)[kMaxFused]) {
    if (ws.empty() || ws.size() != ys.size() || ws.size() > kMaxFused)
        return make_error("matmul: " + std::to_string(ws.size()) + " weights for " + std::to_string(ys.size()) +
                          " outputs (1 to " + std::to_string(kMaxFused) + ")");
    for (size_t i = 0; i < ws.size(); ++i) {
        const WeightMatrix& w = ws[i];
        if (!tensor_type_traits(static_cast<uint32_t>(w.type)))
            return make_error("matmul: unknown weight type id " + std::to_string(static_cast<uint32_t>(w.type)));
        kernels[i] = dot_kernels(w.type, isa);
        if (!kernels[i])
            return make_error("matmul: no CPU kernel for " + type_name(w.type) + " weights on " + isa_name(isa) +
                              " (convert the model to a supported type)");
        if (w.in_features <= 0 || w.out_features <= 0 || n_rows_x < 0)
            return make_error("matmul: bad shape " + std::to_string(w.out_features) + "x" +
                              std::to_string(w.in_features) + " with " + std::to_string(n_rows_x) + " input rows");
        if (w.in_features % kernels[i]->block_elems != 0)
            return make_error("matmul: " + type_name(w.type) + " weight rows of " + std::to_string(w.in_features) +
                              " elements are not a whole number of " + std::to_string(kernels[i]->block_elems) +
                              "-element blocks");
        if (w.in_features != ws[0].in_features)
            return make_error("matmul: weights of one input differ in input features (" +
                              std::to_string(w.in_features) + " vs " + std::to_string(ws[0].in_features) + ")");
        if (n_rows_x > 0 && (!w.data || !x || !ys[i]))
            return make_error("matmul: null weight, input or output pointer");
    }
    return {};
}

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
    return matmul_many(std::span(&w, 1), x, n_rows_x, std::span(&y, 1), pool, scratch, isa);
}

Status matmul_many(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows_x, std::span<float* const> ys,
                   ThreadPool& pool, ScratchBuffer& scratch) {
    return matmul_many(ws, x, n_rows_x, ys, pool, scratch, best_isa());
}

Status matmul_many(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows_x, std::span<float* const> ys,
                   ThreadPool& pool, ScratchBuffer& scratch, Isa isa) {
    const DotKernels* kernels[kMaxFused];
    if (Status s = check_arguments(ws, x, n_rows_x, ys, isa, kernels); !s) return s;
    if (n_rows_x == 0) return {};
    // Weights that pair with different activation formats cannot share the
    // quantized rows: one pass each.
    for (size_t i = 1; i < ws.size(); ++i)
        if (kernels[i]->activation != kernels[0]->activation) {
            for (size_t j = 0; j < ws.size(); ++j)
                if (Status s = matmul_many(ws.subspan(j, 1), x, n_rows_x, ys.subspan(j, 1), pool, scratch, isa); !s)
                    return s;
            return {};
        }

    const int64_t in = ws[0].in_features;
    const DotKernels& first = *kernels[0];
    bool want_scales = false;
    for (size_t i = 0; i < ws.size(); ++i) want_scales = want_scales || kernels[i]->tile_scales;

    // Quantize every activation row once; all weight rows reuse them. With
    // the quantized rows goes, for the tiles that read it, a table of their
    // block scales as floats (kActScalesPerBlock per group of tile rows).
    const char* act = reinterpret_cast<const char*>(x);
    size_t a_stride = static_cast<size_t>(in) * sizeof(float);
    const float* a_scales = nullptr;
    const int64_t nb = in / first.block_elems;
    const size_t group_scales = static_cast<size_t>(nb) * kActScalesPerBlock;  // floats per group
    if (first.quantize) {
        a_stride = activation_row_bytes(first.activation, in);
        const size_t act_bytes = (a_stride * static_cast<size_t>(n_rows_x) + 63) / 64 * 64;
        const size_t n_groups = static_cast<size_t>((n_rows_x + kTileActRows - 1) / kTileActRows);
        const size_t scale_bytes = want_scales ? n_groups * group_scales * sizeof(float) : 0;
        std::byte* buffer = scratch.reserve(act_bytes + scale_bytes);
        if (!buffer) return make_error("matmul: out of memory for the quantized activations");
        float* scales = want_scales ? reinterpret_cast<float*>(buffer + act_bytes) : nullptr;
        if (scales && n_rows_x % kTileActRows != 0)  // rows past the end: zero scales
            std::fill_n(scales + (n_groups - 1) * group_scales, group_scales, 0.0f);
        const QuantizeRowFn quantize = first.quantize;
        const ActivationType type = first.activation;
        auto quantize_row = [&](int64_t row, int) {
            std::byte* q_row = buffer + static_cast<size_t>(row) * a_stride;
            quantize(x + row * in, q_row, in);
            if (scales)
                write_scales(type, q_row, nb,
                             scales + static_cast<size_t>(row / kTileActRows) * group_scales +
                                 2 * static_cast<size_t>(row % kTileActRows));
        };
        if (n_rows_x >= 8) pool.parallel_for(n_rows_x, quantize_row);
        else for (int64_t row = 0; row < n_rows_x; ++row) quantize_row(row, 0);
        act = reinterpret_cast<const char*>(buffer);
        a_scales = scales;
    }

    // Tasks are (weight, chunk of its rows) x (block of activation rows), all
    // the weights' tasks in one round of the pool.
    const int64_t threads = pool.size();
    const int64_t act_rows = std::min(n_rows_x, kActRowsPerTask);
    const int64_t act_blocks = (n_rows_x + act_rows - 1) / act_rows;
    struct Part {
        const char* weights;
        size_t w_stride;
        int64_t out, chunk, first_task;
        TileFn tile;
        float* y;
    };
    Part parts[kMaxFused];
    int64_t n_tasks = 0;
    for (size_t i = 0; i < ws.size(); ++i) {
        const int64_t out = ws[i].out_features;
        int64_t chunk = kWeightRowsPerPrefillTask;
        if (n_rows_x == 1) chunk = std::clamp<int64_t>(out / (threads * 8), 8, 256);
        chunk = (chunk + 3) / 4 * 4;  // whole register tiles
        parts[i] = Part{reinterpret_cast<const char*>(ws[i].data), weight_row_bytes(ws[i].type, in), out, chunk,
                        n_tasks, kernels[i]->tile, ys[i]};
        n_tasks += (out + chunk - 1) / chunk * act_blocks;
    }

    auto run_task = [&](int64_t task, int) {
        size_t i = 0;
        while (i + 1 < ws.size() && task >= parts[i + 1].first_task) ++i;
        const Part& part = parts[i];
        const int64_t local = task - part.first_task;
        const int64_t r0 = (local / act_blocks) * part.chunk, r1 = std::min(part.out, r0 + part.chunk);
        const int64_t c0 = (local % act_blocks) * act_rows, c1 = std::min(n_rows_x, c0 + act_rows);
        for (int64_t c = c0; c < c1; c += kTileActRows) {
            const int n_a = static_cast<int>(std::min<int64_t>(kTileActRows, c1 - c));
            const float* scales = a_scales ? a_scales + static_cast<size_t>(c / kTileActRows) * group_scales : nullptr;
            part.tile(in, part.weights + static_cast<size_t>(r0) * part.w_stride, part.w_stride,
                      static_cast<int>(r1 - r0), act + static_cast<size_t>(c) * a_stride, a_stride, scales, n_a,
                      part.y + c * part.out + r0, static_cast<size_t>(part.out));
        }
    };
    pool.parallel_for(n_tasks, run_task);
    return {};
}

Status matmul_many_f32(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows_x,
                       std::span<float* const> ys, ThreadPool& pool, ScratchBuffer& scratch, Isa isa) {
    const DotKernels* kernels[kMaxFused];
    if (Status s = check_arguments(ws, x, n_rows_x, ys, isa, kernels); !s) return s;
    if (n_rows_x == 0) return {};
    const DotKernels* f32 = dot_kernels(TensorType::F32, isa);
    const int64_t in = ws[0].in_features;
    const size_t in_bytes = static_cast<size_t>(in) * sizeof(float);

    // Tasks are (weight, chunk of its rows); a task dequantizes its rows into
    // its thread's part of the scratch, then multiplies them by every
    // activation row with the F32 weights' tile.
    const int64_t threads = pool.size();
    int64_t chunk = kWeightRowsPerPrefillTask;
    for (const WeightMatrix& w : ws)
        if (n_rows_x == 1) chunk = std::max(chunk, std::clamp<int64_t>(w.out_features / (threads * 8), 8, 256));
    std::byte* buffer = scratch.reserve(static_cast<size_t>(threads * chunk) * in_bytes);
    if (!buffer) return make_error("matmul: out of memory for the dequantized weight rows");
    int64_t first_task[kMaxFused + 1] = {0};
    for (size_t i = 0; i < ws.size(); ++i)
        first_task[i + 1] = first_task[i] + (ws[i].out_features + chunk - 1) / chunk;
    std::atomic<bool> failed{false};
    pool.parallel_for(first_task[ws.size()], [&](int64_t task, int thread) {
        size_t i = 0;
        while (task >= first_task[i + 1]) ++i;
        const WeightMatrix& w = ws[i];
        const int64_t r0 = (task - first_task[i]) * chunk, r1 = std::min(w.out_features, r0 + chunk);
        const size_t row_bytes = weight_row_bytes(w.type, in);
        auto* rows = reinterpret_cast<float*>(buffer + static_cast<size_t>(thread * chunk) * in_bytes);
        for (int64_t r = r0; r < r1; ++r)
            if (!dequantize(w.type, w.data + static_cast<size_t>(r) * row_bytes, row_bytes, rows + (r - r0) * in, in))
                failed = true;
        for (int64_t c = 0; c < n_rows_x; c += kTileActRows) {
            const int n_a = static_cast<int>(std::min<int64_t>(kTileActRows, n_rows_x - c));
            f32->tile(in, rows, in_bytes, static_cast<int>(r1 - r0), x + c * in, in_bytes, nullptr, n_a,
                      ys[i] + c * w.out_features + r0, static_cast<size_t>(w.out_features));
        }
    });
    if (failed) return make_error("matmul: cannot dequantize " + type_name(ws[0].type) + " weight rows");
    return {};
}

}  // namespace folio::cpu
