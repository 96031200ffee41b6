// Mixture-of-experts feed-forward blocks (Mixtral's `llama` files with
// ffn_*_exps tensors; qwen3moe): binding a layer's router and 3-D expert
// tensors, and the routing rule that every backend's Ops::moe_ffn follows.
//
// Routing, as llama.cpp's build_moe_ffn with softmax gating does it:
//   p = softmax(x · Wrouterᵀ) over all n_expert experts
//   chosen = the n_used largest p (ties: the lower expert id first)
//   weight = p[chosen] / sum(p[chosen])  (norm_weights; Mixtral and Qwen3-MoE
//            always, see docs/formats.md), else p[chosen] as they are
//   out = sum over the chosen, best first, of weight * expert FFN(x)
#pragma once

#include <cstdint>
#include <vector>

#include "folio/error.h"
#include "folio/model.h"
#include "model/ops.h"

namespace folio::model {

// Row r's chosen experts, best first: ids[r * n_used + s] with their
// weights[r * n_used + s], from the router's logits [n_rows][n_expert].
void route_experts(const float* logits, int64_t n_rows, int32_t n_expert, int32_t n_used, bool norm_weights,
                   int32_t* ids, float* weights);

// The (row, slot) entries of a routing grouped by expert: expert e's entries
// are entries[offsets[e] .. offsets[e + 1]), each r * n_used + s, ascending.
// A backend runs each group as one product per expert matrix.
struct ExpertGroups {
    std::vector<int32_t> offsets;  // n_expert + 1
    std::vector<int32_t> entries;  // n_rows * n_used
    int32_t rows(int32_t e) const {
        return offsets[static_cast<size_t>(e) + 1] - offsets[static_cast<size_t>(e)];
    }
};
void group_by_expert(const int32_t* ids, int64_t n_rows, int32_t n_used, int32_t n_expert, ExpertGroups& groups);

// Checks that ffn's matrices fit together (router n_embd -> n_expert; gate
// and up n_embd -> n_ff; down n_ff -> n_embd; 1 <= n_used <= n_expert).
Status check_moe_ffn(const MoeFfn& ffn);

// Layer `layer`'s MoE block: blk.N.ffn_gate_inp.weight [n_embd, n_expert] and
// blk.N.ffn_{gate,up}_exps.weight [n_embd, n_ff, n_expert],
// ffn_down_exps.weight [n_ff, n_embd, n_expert], n_ff = the expert width
// (HParams::expert_ff()).
Result<MoeFfn> bind_moe_ffn(const ModelDescription& model, int layer);

}  // namespace folio::model
