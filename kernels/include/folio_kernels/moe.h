// Mixture-of-experts feed-forward on the GPU (engine/src/model/moe.h says
// the rule): routing on the device, the (row, slot) entries grouped by
// expert, and one grouped product per expert matrix, each group of rows
// multiplied with its own expert's weights only. Nothing goes to the host,
// so a step with experts is captured in a CUDA graph like any other.
//
//   router_logits          -> logits [n][n_expert]
//   route_and_group_experts -> ids, weights [n][k]; per non-empty expert a group (expert, first, count)
//                             of sorted positions; order[p] = the entry (r * k + s)
//                             at position p, x_row[p] = r, position[entry] = p
//   grouped_matmul(gate, up; x through x_row) -> [n * k][n_ff] in sorted order
//                             (or gate and up stacked per expert: [n * k][2 n_ff]); silu_mul
//   grouped_matmul(down)   -> [n * k][n_embd] in sorted order
//   combine_experts        -> out[r] = sum over s of weight[r][s] * down[position[r * k + s]]
//
// The rows of a group are multiplied exactly as matmul() multiplies rows
// (the same kernels' arithmetic for the quantized types; F32 sums for float
// weights): a row's result does not depend on which rows share its expert or
// where in its group it lies, so a token computes the same alone or in any
// batch, and the order atomics give the entries within a group changes no
// bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "folio_kernels/matmul.h"

namespace folio::kernels {

// n_expert matrices of one shape, expert e's at data + e * stride in the
// device layout (prepare_matrix / fill_random_matrix of rows x cols each).
struct DeviceExperts {
    WeightType type = WeightType::F32;
    const void* data = nullptr;
    size_t stride = 0;  // a multiple of 256
    int64_t rows = 0, cols = 0;
    int32_t n_expert = 0;
};

// Bytes between experts: device_matrix_bytes rounded up to 256.
size_t expert_stride(WeightType t, int64_t rows, int64_t cols);

// Device arrays of one routing of n rows, k experts each (expert_routing()
// places them in one buffer of expert_routing_bytes()).
struct ExpertRouting {
    int32_t* ids = nullptr;       // [n * k] chosen experts, best first per row
    float* weights = nullptr;     // [n * k] their weights
    int32_t* order = nullptr;     // [n * k] entry at each sorted position
    int32_t* x_row = nullptr;     // [n * k] its row: order[p] / k
    int32_t* position = nullptr;  // [n * k] sorted position of each entry
    int4* groups = nullptr;       // [max_expert_groups] (expert, first position, count, 0)
    int32_t* n_groups = nullptr;  // [1]
};
// Groups a routing can have: at most one per expert, at most one per entry.
int64_t max_expert_groups(int64_t n_entries, int32_t n_expert);
// Experts a routing can choose from (route_and_group_experts).
inline constexpr int32_t kMaxExperts = 1024;
inline constexpr int32_t kMaxExpertsUsed = 32;
size_t expert_routing_bytes(int64_t n_rows, int32_t k, int32_t n_expert);
// The arrays laid out in `buffer` (256-byte aligned, expert_routing_bytes()).
ExpertRouting expert_routing(void* buffer, int64_t n_rows, int32_t k, int32_t n_expert);

// logits [n_rows][router.rows] = x · routerᵀ for float routers (F32, F16,
// BF16; router_logits_supported): each logit summed in one fixed order
// whatever n_rows, so a row's routing never depends on its batch-mates (an
// ordinary matmul() goes to cuBLAS from two rows on). x 16-byte aligned.
bool router_logits_supported(const DeviceMatrix& router);
cudaError_t router_logits(const DeviceMatrix& router, const float* x, int64_t n_rows, float* logits, cudaStream_t s);

// Row r's k best experts by softmax(logits[r]) (ties: the lower id) with
// their probabilities, divided by their sum (clamped at F16's smallest
// normal, as llama.cpp) when norm_weights; then the entries grouped by
// expert (groups in expert order). One launch of one block: k <=
// kMaxExpertsUsed, n_expert <= kMaxExperts.
cudaError_t route_and_group_experts(const float* logits, int64_t n_rows, int32_t n_expert, int32_t k,
                                    bool norm_weights, const ExpertRouting& r, cudaStream_t s);

// y[p][0 .. rows) = x[x_row[p]] · W_{expert of p's group}ᵀ for the n_entries
// sorted positions (x_row null: x[p]; x, y row-major F32, x 16-byte
// aligned). ws: grouped_matmul_workspace_bytes, 256-byte aligned.
// x_in_workspace: ws holds x quantized already (by the previous grouped
// product with the same type and x).
size_t grouped_matmul_workspace_bytes(WeightType t, int64_t n_entries, int64_t cols);
// max_group_rows: a bound on a group's rows (the routing's n_rows: a row
// chooses an expert once), which sizes the kernels' tiles.
cudaError_t grouped_matmul(const DeviceExperts& w, const float* x, const int32_t* x_row, int64_t n_entries,
                           int64_t max_group_rows, const ExpertRouting& r, float* y, void* ws, bool x_in_workspace,
                           cudaStream_t s);

// out[r][j] = sum over s in order of weights[r * k + s] * y[position[r * k + s]][j]. out may be the FFN's input.
cudaError_t combine_experts(const float* y, const ExpertRouting& r, int64_t n_rows, int32_t k, int64_t dim,
                            float* out, cudaStream_t s);

}  // namespace folio::kernels
