// The presets' tensor types (quant_recipe.h). The rules are llama-quantize's
// for these six presets and the dense architectures Folio runs: the output
// head (and tied token embeddings, which are the head) keeps 6 bits, and the
// K-quant mixes give attn_v and ffn_down 6 bits on the layers where errors
// hurt most (the first and last eighth, and every third between).
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

#include "folio/quant.h"
#include "folio/quant_recipe.h"

namespace folio {

namespace {

constexpr std::array<QuantPresetInfo, 6> kPresets = {{
    {QuantPreset::Q4_K_M, "Q4_K_M", TensorType::Q4_K, 15},
    {QuantPreset::Q4_K_S, "Q4_K_S", TensorType::Q4_K, 14},
    {QuantPreset::Q4_0, "Q4_0", TensorType::Q4_0, 2},
    {QuantPreset::Q5_K_M, "Q5_K_M", TensorType::Q5_K, 17},
    {QuantPreset::Q6_K, "Q6_K", TensorType::Q6_K, 18},
    {QuantPreset::Q8_0, "Q8_0", TensorType::Q8_0, 7},
}};

int layer_of(const std::string& name) {
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
    return layer;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// llama-quantize quantizes 2-D+ tensors named *weight except norms (and a
// list of small special tensors none of Folio's architectures has).
bool is_quantizable(const TensorView& t) {
    if (t.shape.size() < 2) return false;
    if (t.name.size() < 6 || t.name.compare(t.name.size() - 6, 6, "weight") != 0) return false;
    return !contains(t.name, "_norm.weight") && !contains(t.name, "ffn_gate_inp.weight");
}

enum class Role { Output, TokenEmbd, AttnQkv, AttnV, AttnK, AttnQ, AttnOutput, FfnUp, FfnGate, FfnDown, Other };

Role role_of(const std::string& name) {
    if (name == "output.weight") return Role::Output;
    if (name == "token_embd.weight") return Role::TokenEmbd;
    if (contains(name, "attn_qkv.weight")) return Role::AttnQkv;
    if (contains(name, "attn_v.weight")) return Role::AttnV;
    if (contains(name, "attn_k.weight")) return Role::AttnK;
    if (contains(name, "attn_q.weight")) return Role::AttnQ;
    if (contains(name, "attn_output.weight")) return Role::AttnOutput;
    if (contains(name, "ffn_up")) return Role::FfnUp;
    if (contains(name, "ffn_gate")) return Role::FfnGate;
    if (contains(name, "ffn_down")) return Role::FfnDown;
    return Role::Other;
}

// The layers whose attn_v / ffn_down get more bits in the _M mixes.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

struct Counters {
    int n_attn_v = 0, i_attn_v = 0;
    int n_ffn_down = 0, i_ffn_down = 0;
    bool tied_embeddings = true;
};

TensorType preset_type(QuantPreset preset, Role role, int64_t columns, Counters& c, const QuantPlanOptions& options) {
    const TensorType base = preset_info(preset).base_type;
    if (role == Role::Output || (c.tied_embeddings && role == Role::TokenEmbd)) {
        if (columns % traits(base).block_elems != 0) return TensorType::Q8_0;
        return base == TensorType::Q8_0 ? TensorType::Q8_0 : TensorType::Q6_K;
    }
    const bool k_m = preset == QuantPreset::Q4_K_M || preset == QuantPreset::Q5_K_M;
    if (role == Role::AttnV || role == Role::AttnQkv) {
        TensorType type = base;
        if (role == Role::AttnQkv && preset == QuantPreset::Q4_K_M) type = TensorType::Q5_K;
        else if (role == Role::AttnQkv && preset == QuantPreset::Q5_K_M) type = TensorType::Q6_K;
        else if (k_m && use_more_bits(c.i_attn_v, c.n_attn_v)) type = TensorType::Q6_K;
        else if (preset == QuantPreset::Q4_K_S && c.i_attn_v < 4) type = TensorType::Q5_K;
        ++c.i_attn_v;
        return type;
    }
    if (role == Role::FfnDown) {
        const int i = c.i_ffn_down++, n = c.n_ffn_down;
        if (k_m && use_more_bits(i, n)) return TensorType::Q6_K;
        if (preset == QuantPreset::Q4_K_S && i < n / 8) return TensorType::Q5_K;
        if (preset == QuantPreset::Q4_0 && options.has_imatrix && i < n / 8) return TensorType::Q4_1;
        return base;
    }
    return base;
}

// Rows that are not whole blocks of the chosen type take the nearest type
// whose blocks fit (llama-quantize's tensor_type_fallback), else F16.
TensorType fit_to_rows(TensorType type, int64_t columns, std::string& why) {
    if (columns % traits(type).block_elems == 0) return type;
    TensorType fallback = type;
    switch (type) {
        case TensorType::Q4_K: fallback = TensorType::Q5_0; break;
        case TensorType::Q5_K: fallback = TensorType::Q5_1; break;
        case TensorType::Q6_K: fallback = TensorType::Q8_0; break;
        default: break;
    }
    if (columns % traits(fallback).block_elems != 0) fallback = TensorType::F16;
    why = std::to_string(columns) + " columns: " + std::string(traits(type).name) + " -> " +
          std::string(traits(fallback).name);
    return fallback;
}

bool is_float(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

}  // namespace

const QuantPresetInfo& preset_info(QuantPreset preset) {
    for (const QuantPresetInfo& info : kPresets)
        if (info.preset == preset) return info;
    return kPresets[0];
}

std::optional<QuantPreset> parse_preset(std::string_view name) {
    std::string upper(name);
    for (char& ch : upper) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    for (const QuantPresetInfo& info : kPresets)
        if (info.name == upper) return info.preset;
    return std::nullopt;
}

std::string preset_names() {
    std::string out;
    for (const QuantPresetInfo& info : kPresets) out += (out.empty() ? "" : ", ") + std::string(info.name);
    return out;
}

Result<std::vector<TensorPlan>> plan_quantization(const ModelDescription& model, QuantPreset preset,
                                                  const QuantPlanOptions& options) {
    std::vector<size_t> order(model.tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    // llama.cpp's loader keeps weights in a map ordered by (layer, name).
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const std::string& na = model.tensors[a].name;
        const std::string& nb = model.tensors[b].name;
        const int la = layer_of(na), lb = layer_of(nb);
        return la != lb ? la < lb : na < nb;
    });

    Counters counters;
    counters.n_ffn_down = int(model.hparams.n_layer);
    for (const TensorView& t : model.tensors) {
        const Role role = role_of(t.name);
        if (role == Role::AttnV || role == Role::AttnQkv) ++counters.n_attn_v;
        if (role == Role::Output) counters.tied_embeddings = false;
    }

    std::vector<TensorPlan> plan;
    plan.reserve(order.size());
    for (size_t index : order) {
        const TensorView& t = model.tensors[index];
        if (!is_float(t.type) && !can_quantize_to(t.type))
            return make_error("tensor '" + t.name + "' is " + std::string(traits(t.type).name) +
                              ", which Folio cannot dequantize to requantize");
        TensorPlan p;
        p.source_index = index;
        p.name = t.name;
        p.shape = t.shape;
        p.source_type = t.type;
        p.type = t.type;
        if (is_quantizable(t)) {
            p.quantized = true;
            const TensorType wanted = preset_type(preset, role_of(t.name), t.shape[0], counters, options);
            p.type = fit_to_rows(wanted, t.shape[0], p.fallback);
        } else if (!is_float(t.type)) {
            // A 1-D tensor stored quantized is decoded: its type belongs to the source's recipe.
            p.type = TensorType::F32;
        }
        plan.push_back(std::move(p));
    }
    return plan;
}

}  // namespace folio
