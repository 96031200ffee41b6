#include "format/hf_tensor_names.h"

#include <cctype>
#include <utility>

namespace folio::hf {
namespace {

struct NamePair {
    std::string_view hf;    // suffix after "model.layers.N."
    std::string_view gguf;  // suffix after "blk.N."
};

constexpr NamePair kLayerNames[] = {
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"input_layernorm.weight", "attn_norm.weight"},
};

// Llama, Mistral, Qwen2, Qwen3: one norm before attention, one before the MLP.
constexpr NamePair kPreNormLayerNames[] = {
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
};

// Qwen3: Q and K normalised per head before RoPE.
constexpr NamePair kQkNormLayerNames[] = {
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
};

// Gemma 3 normalises both before and after each block, and Q/K per head.
constexpr NamePair kGemma3LayerNames[] = {
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};

// Phi-3: Q, K and V in one matrix, gate and up in another (gate's rows first),
// as GGUF keeps them.
constexpr NamePair kPhi3LayerNames[] = {
    {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},
};

constexpr NamePair kModelNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// Splits "model.layers.<N>.<rest>" into N and rest.
std::optional<std::pair<std::string_view, std::string_view>> split_layer(std::string_view name) {
    constexpr std::string_view prefix = "model.layers.";
    if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
    name.remove_prefix(prefix.size());
    size_t digits = 0;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    if (digits == 0 || digits > 6 || digits >= name.size() || name[digits] != '.') return std::nullopt;
    if (digits > 1 && name[0] == '0') return std::nullopt;  // "07" is not a layer index HF writes
    return std::make_pair(name.substr(0, digits), name.substr(digits + 1));
}

template <size_t N>
std::optional<std::string_view> lookup(const NamePair (&table)[N], std::string_view hf) {
    for (const NamePair& p : table)
        if (p.hf == hf) return p.gguf;
    return std::nullopt;
}

}  // namespace

std::optional<std::string> gguf_tensor_name(std::string_view hf_name, std::string_view architecture) {
    if (auto top = lookup(kModelNames, hf_name)) return std::string(*top);
    const auto layer = split_layer(hf_name);
    if (!layer) return std::nullopt;
    const auto [index, rest] = *layer;
    std::optional<std::string_view> suffix = lookup(kLayerNames, rest);
    const bool gemma = architecture == "gemma3" || architecture == "gemma2";  // Gemma 2: the same names, no Q/K norms
    if (!suffix) suffix = gemma ? lookup(kGemma3LayerNames, rest) : lookup(kPreNormLayerNames, rest);
    if (!suffix && architecture == "qwen3") suffix = lookup(kQkNormLayerNames, rest);
    if (!suffix && architecture == "phi3") suffix = lookup(kPhi3LayerNames, rest);
    if (!suffix) return std::nullopt;
    return "blk." + std::string(index) + "." + std::string(*suffix);
}

bool is_ignored_tensor(std::string_view hf_name) {
    constexpr std::string_view inv_freq = ".rotary_emb.inv_freq";
    return hf_name.size() >= inv_freq.size() && hf_name.substr(hf_name.size() - inv_freq.size()) == inv_freq;
}

}  // namespace folio::hf
