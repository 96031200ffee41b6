#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/tensors.h"

namespace folio::model {

void route_experts(const float* logits, int64_t n_rows, int32_t n_expert, int32_t n_used, bool norm_weights,
                   int32_t* ids, float* weights) {
    std::vector<float> probs(static_cast<size_t>(n_expert));
    std::vector<int32_t> order(static_cast<size_t>(n_expert));
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* row = logits + r * n_expert;
        const float max = *std::max_element(row, row + n_expert);
        double sum = 0;
        for (int32_t e = 0; e < n_expert; ++e) {
            probs[static_cast<size_t>(e)] = std::exp(row[e] - max);
            sum += probs[static_cast<size_t>(e)];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (float& p : probs) p *= inv;
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + n_used, order.end(), [&](int32_t a, int32_t b) {
            const float pa = probs[static_cast<size_t>(a)], pb = probs[static_cast<size_t>(b)];
            return pa > pb || (pa == pb && a < b);
        });
        int32_t* row_ids = ids + r * n_used;
        float* row_weights = weights + r * n_used;
        float chosen = 0;
        for (int32_t s = 0; s < n_used; ++s) {
            row_ids[s] = order[static_cast<size_t>(s)];
            row_weights[s] = probs[static_cast<size_t>(row_ids[s])];
            chosen += row_weights[s];
        }
        // llama.cpp clamps the sum at F16's smallest normal before dividing.
        if (norm_weights)
            for (int32_t s = 0; s < n_used; ++s) row_weights[s] /= std::max(chosen, 6.103515625e-5f);
    }
}

void group_by_expert(const int32_t* ids, int64_t n_rows, int32_t n_used, int32_t n_expert, ExpertGroups& groups) {
    const int64_t n_entries = n_rows * n_used;
    groups.offsets.assign(static_cast<size_t>(n_expert) + 1, 0);
    for (int64_t i = 0; i < n_entries; ++i) ++groups.offsets[static_cast<size_t>(ids[i]) + 1];
    for (int32_t e = 0; e < n_expert; ++e)
        groups.offsets[static_cast<size_t>(e) + 1] += groups.offsets[static_cast<size_t>(e)];
    groups.entries.resize(static_cast<size_t>(n_entries));
    std::vector<int32_t> next(groups.offsets.begin(), groups.offsets.end() - 1);
    for (int64_t i = 0; i < n_entries; ++i)
        groups.entries[static_cast<size_t>(next[static_cast<size_t>(ids[i])]++)] = static_cast<int32_t>(i);
}

Status check_moe_ffn(const MoeFfn& ffn) {
    const int64_t n_embd = ffn.router.in_features, n_expert = ffn.router.out_features, n_ff = ffn.gate.out_features;
    const bool fits = n_embd > 0 && n_expert > 0 && n_ff > 0 && ffn.n_used >= 1 && ffn.n_used <= n_expert &&
                      ffn.gate.in_features == n_embd && ffn.up.in_features == n_embd && ffn.up.out_features == n_ff &&
                      ffn.down.in_features == n_ff && ffn.down.out_features == n_embd &&
                      ffn.gate.n_expert == n_expert && ffn.up.n_expert == n_expert && ffn.down.n_expert == n_expert;
    if (fits) return {};
    return make_error("moe_ffn: a router of " + std::to_string(n_expert) + " experts on " + std::to_string(n_embd) +
                      " features, " + std::to_string(ffn.n_used) + " used, does not fit expert matrices of " +
                      std::to_string(ffn.gate.n_expert) + "/" + std::to_string(ffn.up.n_expert) + "/" +
                      std::to_string(ffn.down.n_expert) + " experts");
}

namespace {

Result<ExpertMatrix> bind_experts(const ModelDescription& model, const std::string& name, int64_t in_features,
                                  int64_t out_features, int32_t n_expert) {
    const TensorView* t = model.find_tensor(name);
    if (!t) {
        // Files converted before llama.cpp stacked the experts (Mixtral's
        // blk.N.ffn_gate.E.weight) hold one tensor per expert.
        const std::string dense = name.substr(0, name.find("_exps")) + ".0.weight";
        if (model.find_tensor(dense))
            return make_error("model '" + model.name + "': tensor '" + dense +
                              "' is an expert in the old per-expert layout; convert the model again with a current "
                              "convert_hf_to_gguf.py (experts stacked in '" + name + "')");
        return make_error("model '" + model.name + "': tensor '" + name + "' is missing");
    }
    const TensorTypeTraits type = traits(t->type);
    const size_t row_bytes = in_features % type.block_elems == 0
                                 ? static_cast<size_t>(in_features / type.block_elems) * type.block_bytes
                                 : 0;
    if (t->shape.size() != 3 || t->shape[0] != in_features || t->shape[1] != out_features || t->shape[2] != n_expert ||
        row_bytes == 0)
        return make_error("model '" + model.name + "': tensor '" + name + "' should be [" + std::to_string(in_features) +
                          ", " + std::to_string(out_features) + ", " + std::to_string(n_expert) + "] of whole " +
                          std::string(traits(t->type).name) + " blocks");
    const size_t expert_bytes = row_bytes * static_cast<size_t>(out_features);
    if (t->nbytes < expert_bytes * static_cast<size_t>(n_expert))
        return make_error("model '" + model.name + "': tensor '" + name + "' is truncated");
    return ExpertMatrix{t->type, t->data, in_features, out_features, n_expert, expert_bytes};
}

}  // namespace

Result<MoeFfn> bind_moe_ffn(const ModelDescription& model, int layer) {
    const HParams& hp = model.hparams;
    const auto n_expert = static_cast<int32_t>(hp.n_expert);
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff_expert;
    if (n_expert <= 0 || hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert || n_ff <= 0)
        return make_error("model '" + model.name + "': " + std::to_string(hp.n_expert_used) + " of " +
                          std::to_string(hp.n_expert) + " experts of width " + std::to_string(n_ff) +
                          " is no mixture of experts");
    MoeFfn ffn;
    ffn.n_used = static_cast<int32_t>(hp.n_expert_used);
    ffn.norm_weights = hp.expert_weights_norm;
    auto router = TensorBinder(model).matrix(layer_tensor(layer, "ffn_gate_inp.weight"), n_embd, n_expert);
    if (!router) return router.error();
    ffn.router = *router;
    auto gate = bind_experts(model, layer_tensor(layer, "ffn_gate_exps.weight"), n_embd, n_ff, n_expert);
    if (!gate) return gate.error();
    auto up = bind_experts(model, layer_tensor(layer, "ffn_up_exps.weight"), n_embd, n_ff, n_expert);
    if (!up) return up.error();
    auto down = bind_experts(model, layer_tensor(layer, "ffn_down_exps.weight"), n_ff, n_embd, n_expert);
    if (!down) return down.error();
    ffn.gate = *gate;
    ffn.up = *up;
    ffn.down = *down;
    if (Status s = check_moe_ffn(ffn); !s) return s.error();
    return ffn;
}

}  // namespace folio::model
