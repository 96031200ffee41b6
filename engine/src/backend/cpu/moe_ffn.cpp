// CpuOps::moe_ffn: a mixture-of-experts FFN on the CPU, grouped by expert.
//
//   logits = x · Wrouterᵀ ; (ids, weights) = route_experts(logits)
//   per expert e chosen by any row: gather its rows, then
//       d = (silu(rows · gate_eᵀ) * (rows · up_eᵀ)) · down_eᵀ   (one product per matrix)
//   out[r] = sum over r's slots s, in order, of weight[r][s] * d[r][s]
//
// Each chosen expert's three matrices are read once per step, whatever the
// number of rows that chose it; experts no row chose are not touched. A
// row's result does not depend on the rows it is grouped with (the matmuls
// are batch-invariant), so a token computes the same alone or in a batch.
#include <algorithm>

#include "backend/cpu/cpu_ops.h"
#include "model/architecture.h"  // FOLIO_RETURN_IF_ERROR

namespace folio::cpu {

Status CpuOps::moe_ffn(const model::MoeFfn& ffn, const float* x, int64_t n_rows, float* out) {
    FOLIO_RETURN_IF_ERROR(model::check_moe_ffn(ffn));
    const int64_t n_embd = ffn.router.in_features, n_ff = ffn.gate.out_features;
    const auto n_expert = static_cast<int32_t>(ffn.router.out_features);
    const int32_t k = ffn.n_used;
    const auto entries = static_cast<size_t>(n_rows * k);
    if (n_rows <= 0) return {};

    moe_.logits.resize(static_cast<size_t>(n_rows * n_expert));
    FOLIO_RETURN_IF_ERROR(matmul(ffn.router, x, n_rows, moe_.logits.data()));
    moe_.ids.resize(entries);
    moe_.weights.resize(entries);
    model::route_experts(moe_.logits.data(), n_rows, n_expert, k, ffn.norm_weights, moe_.ids.data(),
                         moe_.weights.data());
    model::group_by_expert(moe_.ids.data(), n_rows, k, n_expert, moe_.groups);

    moe_.expert_out.resize(entries * static_cast<size_t>(n_embd));  // [row][slot][n_embd]
    for (int32_t e = 0; e < n_expert; ++e) {
        const int32_t count = moe_.groups.rows(e);
        if (count == 0) continue;
        const int32_t* group = moe_.groups.entries.data() + moe_.groups.offsets[static_cast<size_t>(e)];
        moe_.rows.resize(static_cast<size_t>(count * n_embd));
        for (int32_t i = 0; i < count; ++i)
            std::copy_n(x + (group[i] / k) * n_embd, n_embd, moe_.rows.data() + i * n_embd);
        moe_.gate.resize(static_cast<size_t>(count * n_ff));
        moe_.up.resize(static_cast<size_t>(count * n_ff));
        moe_.down.resize(static_cast<size_t>(count * n_embd));
        const model::Weight gate_up[] = {ffn.gate.expert(e), ffn.up.expert(e)};
        FOLIO_RETURN_IF_ERROR(
            gated_matmuls(gate_up, Glu::Silu, moe_.rows.data(), count, moe_.gate.data(), moe_.up.data()));
        FOLIO_RETURN_IF_ERROR(matmul(ffn.down.expert(e), moe_.gate.data(), count, moe_.down.data()));
        for (int32_t i = 0; i < count; ++i)
            std::copy_n(moe_.down.data() + i * n_embd, n_embd, moe_.expert_out.data() + group[i] * n_embd);
    }

    // x is read no more: out may be x.
    for (int64_t r = 0; r < n_rows; ++r) {
        float* o = out + r * n_embd;
        const float* slots = moe_.expert_out.data() + r * k * n_embd;
        const float* w = moe_.weights.data() + r * k;
        for (int64_t j = 0; j < n_embd; ++j) o[j] = w[0] * slots[j];
        for (int32_t s = 1; s < k; ++s)
            for (int64_t j = 0; j < n_embd; ++j) o[j] += w[s] * slots[s * n_embd + j];
    }
    return {};
}

}  // namespace folio::cpu
