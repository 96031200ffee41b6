#include "format/hf_config.h"

#include <cmath>
#include <cstdint>
#include <vector>
#include <optional>

#include <nlohmann/json.hpp>

#include "format/hf_json.h"

namespace folio::hf {
namespace {

using nlohmann::json;

// The model types whose tensors hf_tensor_names knows, and what GGUF calls them.
struct KnownType {
    const char* model_type;
    const char* architecture;
    bool tie_default;         // the transformers config class's default
    float rope_theta_default;
};
constexpr KnownType kKnownTypes[] = {
    {"llama", "llama", false, 10000.0f},
    {"mistral", "llama", false, 10000.0f},  // Mistral is Llama's graph; GGUF files call it llama
    {"qwen2", "qwen2", false, 10000.0f},
    {"qwen3", "qwen3", false, 10000.0f},
    {"gemma2", "gemma2", true, 10000.0f},
    {"gemma3_text", "gemma3", true, 1000000.0f},
    {"phi3", "phi3", false, 10000.0f},
};

class ConfigReader {
public:
    ConfigReader(const json& root, std::string source) : root_(root), source_(std::move(source)) {}

    Result<uint32_t> count(const char* key, std::optional<uint32_t> fallback = std::nullopt) const {
        const json* v = find(key);
        if (!v) {
            if (fallback) return *fallback;
            return make_error(source_ + ": missing \"" + key + "\"");
        }
        if (!v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > INT32_MAX)
            return make_error(source_ + ": \"" + key + "\" = " + describe_json(*v) + " is not a positive count");
        return static_cast<uint32_t>(v->get<int64_t>());
    }

    // A float that may be absent or null (transformers writes null for "off").
    Result<float> real(const json& object, const char* key, float fallback) const {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null()) return fallback;
        if (!it->is_number()) return make_error(source_ + ": \"" + key + "\" = " + describe_json(*it) + " is not a number");
        return it->get<float>();
    }
    Result<float> real(const char* key, float fallback) const { return real(root_, key, fallback); }

    // Whether the key is there at all (null included: "off" for some keys).
    bool present(const char* key) const { return root_.contains(key); }
    const json* find(const char* key) const {
        const auto it = root_.find(key);
        return (it == root_.end() || it->is_null()) ? nullptr : &*it;
    }
    const std::string& source() const { return source_; }

private:
    const json& root_;
    std::string source_;
};

// What one RoPE parameter set asks for; the llama3 fields are only read for
// rope_type "llama3" (transformers' _compute_llama3_parameters).
struct RopeConfig {
    float theta = 10000.0f;
    float linear_scale = 1.0f;
    bool llama3 = false;
    float factor = 1.0f, low_freq_factor = 1.0f, high_freq_factor = 1.0f, original_context = 0.0f;
    // rope_type "yarn": factor and original_context as above; the magnitude
    // beyond YaRN's own 1 + 0.1 ln(factor) (transformers' attention_factor over it).
    bool yarn = false;
    float yarn_attn_factor = 1.0f;
};

// Reads one RoPE parameter set: {"rope_type"|"type": ..., "factor": ..., "rope_theta": ...}.
// Plain, linearly scaled and (where allowed) llama3 RoPE have a place in
// HParams; anything else (yarn, longrope, dynamic) would be run with the wrong
// frequencies, so it is refused.
Status read_rope(const ConfigReader& reader, const json& params, const std::string& what, RopeConfig& rope,
                 bool allow_llama3, bool allow_yarn = false) {
    if (params.is_null()) return {};
    if (!params.is_object()) return make_error(reader.source() + ": \"" + what + "\" is not an object");
    std::string type = "default";
    for (const char* key : {"rope_type", "type"}) {
        const auto it = params.find(key);
        if (it != params.end() && it->is_string()) type = it->get<std::string>();
    }
    Result<float> t = reader.real(params, "rope_theta", rope.theta);
    if (!t) return t.error();
    rope.theta = *t;
    if (type == "default") return {};
    const bool llama3 = type == "llama3" && allow_llama3;
    const bool yarn = type == "yarn" && allow_yarn;
    if (type != "linear" && !llama3 && !yarn)
        return make_error(reader.source() + ": \"" + what + "\" uses rope type '" + type + "'; Folio supports plain" +
                          (allow_llama3 ? ", linear, llama3" : ", linear") + (allow_yarn ? " and yarn" : "") +
                          " RoPE scaling only");
    Result<float> factor = reader.real(params, "factor", 1.0f);
    if (!factor) return factor.error();
    if (!(*factor > 0.0f)) return make_error(reader.source() + ": \"" + what + "\" has a non-positive factor");
    if (yarn) {
        // transformers' _compute_yarn_parameters; llama.cpp runs beta_fast 32, beta_slow 1 only.
        Result<float> original = reader.real(params, "original_max_position_embeddings", 0.0f);
        Result<float> attention = reader.real(params, "attention_factor", 0.0f);
        Result<float> fast = reader.real(params, "beta_fast", 32.0f);
        Result<float> slow = reader.real(params, "beta_slow", 1.0f);
        for (const Result<float>* r : {&original, &attention, &fast, &slow})
            if (!*r) return r->error();
        if (!(*factor >= 1.0f) || !(*original > 0.0f))
            return make_error(reader.source() + ": \"" + what + "\" (yarn) needs factor >= 1 and "
                              "original_max_position_embeddings");
        if (*fast != 32.0f || *slow != 1.0f)
            return make_error(reader.source() + ": \"" + what + "\" (yarn) has beta_fast " + std::to_string(*fast) +
                              ", beta_slow " + std::to_string(*slow) + "; Folio runs YaRN's 32 and 1 (as llama.cpp)");
        for (const char* unsupported : {"mscale", "mscale_all_dim"})
            if (params.contains(unsupported) && !params.at(unsupported).is_null())
                return make_error(reader.source() + ": \"" + what + "\" (yarn) has \"" + unsupported +
                                  "\" (DeepSeek's magnitude), which Folio does not run");
        rope.yarn = true;
        rope.factor = *factor;
        rope.original_context = *original;
        const float own = 0.1f * std::log(*factor) + 1.0f;
        rope.yarn_attn_factor = *attention > 0.0f ? *attention / own : 1.0f;
        return {};
    }
    if (!llama3) {
        rope.linear_scale = *factor;
        return {};
    }
    rope.llama3 = true;
    rope.factor = *factor;
    struct Field {
        const char* key;
        float* out;
    };
    for (const Field& f : {Field{"low_freq_factor", &rope.low_freq_factor}, Field{"high_freq_factor", &rope.high_freq_factor},
                           Field{"original_max_position_embeddings", &rope.original_context}}) {
        if (!params.contains(f.key) || params.at(f.key).is_null())
            return make_error(reader.source() + ": \"" + what + "\" (llama3) lacks \"" + f.key + "\"");
        Result<float> v = reader.real(params, f.key, 0.0f);
        if (!v) return v.error();
        *f.out = *v;
    }
    if (!(rope.low_freq_factor > 0.0f) || !(rope.high_freq_factor > rope.low_freq_factor) ||
        !(rope.original_context > 0.0f))
        return make_error(reader.source() + ": \"" + what +
                          "\" (llama3) needs 0 < low_freq_factor < high_freq_factor and a positive "
                          "original_max_position_embeddings");
    return {};
}

// Llama 3.1's factors, as transformers' _compute_llama3_parameters derives
// them (and convert_hf_to_gguf writes them to rope_freqs.weight): pairs whose
// wavelength is below original_context / high_freq_factor keep their
// frequency, those above original_context / low_freq_factor turn `factor`
// times slower, and the ones between are blended smoothly.
std::vector<float> llama3_rope_factors(const RopeConfig& rope, uint32_t head_dim) {
    constexpr double kTwoPi = 6.283185307179586;
    const double low_wavelen = rope.original_context / rope.low_freq_factor;
    const double high_wavelen = rope.original_context / rope.high_freq_factor;
    std::vector<float> factors(head_dim / 2);
    for (uint32_t i = 0; i < head_dim / 2; ++i) {
        const double inv_freq = std::pow(static_cast<double>(rope.theta), -2.0 * i / head_dim);
        const double wavelen = kTwoPi / inv_freq;
        double divisor = 1.0;
        if (wavelen > low_wavelen) {
            divisor = rope.factor;
        } else if (wavelen >= high_wavelen) {
            const double smooth = (rope.original_context / wavelen - rope.low_freq_factor) /
                                  (rope.high_freq_factor - rope.low_freq_factor);
            divisor = 1.0 / ((1.0 - smooth) / rope.factor + smooth);
        }
        factors[i] = static_cast<float>(divisor);
    }
    return factors;
}

// Gemma 3 interleaves sliding-window and global layers. transformers 4 wrote
// the period ("sliding_window_pattern"); transformers 5 writes one type per
// layer ("layer_types"), from which the period is read back.
Result<uint32_t> sliding_window_pattern(const ConfigReader& reader, uint32_t n_layer) {
    for (const char* key : {"sliding_window_pattern", "_sliding_window_pattern"})
        if (reader.find(key)) return reader.count(key);
    const json* types = reader.find("layer_types");
    if (!types) return 6u;  // Gemma3TextConfig's default
    if (!types->is_array() || types->size() != n_layer)
        return make_error(reader.source() + ": \"layer_types\" must list one type per layer");
    uint32_t period = 0;
    for (uint32_t i = 0; i < n_layer; ++i) {
        const json& t = (*types)[i];
        if (t == "full_attention") {
            period = i + 1;
            break;
        }
    }
    if (period == 0) return 0u;  // no global layer at all: every layer is sliding
    for (uint32_t i = 0; i < n_layer; ++i) {
        const bool global = (i + 1) % period == 0;
        if ((*types)[i] != (global ? "full_attention" : "sliding_attention"))
            return make_error(reader.source() + ": \"layer_types\" does not repeat with a period of " +
                              std::to_string(period) + " (layer " + std::to_string(i) + ")");
    }
    return period;
}

// Phi-3: rope_scaling (transformers 5: rope_parameters) of type "longrope"
// (its old name: "su") holds long_factor and short_factor, one divisor per
// rotated pair; original_max_position_embeddings sits in it or at the top
// level. The attention factor is convert_hf_to_gguf's, sqrt(1 + ln(s) /
// ln(original)) for s = max_position_embeddings / original > 1, else 1. Other
// rope types go to read_rope. Its sliding_window is not kept (llama.cpp runs
// phi3 without one), and partial rotary embeddings (Phi-4-mini) are refused.
Status read_phi3_rope(const ConfigReader& reader, HParams& hp) {
    if (const json* partial = reader.find("partial_rotary_factor");
        partial && !(partial->is_number() && partial->get<double>() == 1.0))
        return make_error(reader.source() + ": partial_rotary_factor " + describe_json(*partial) +
                          ": Folio rotates whole heads (partial rotary embeddings are not supported)");
    RopeConfig rope{hp.rope_freq_base, hp.rope_scale_linear};
    uint32_t original = 0;
    if (reader.find("original_max_position_embeddings")) {
        Result<uint32_t> v = reader.count("original_max_position_embeddings");
        if (!v) return v.error();
        original = *v;
    }
    for (const char* key : {"rope_scaling", "rope_parameters"}) {
        const json* params = reader.find(key);
        if (!params) continue;
        std::string type;
        for (const char* type_key : {"rope_type", "type"})
            if (params->is_object() && params->contains(type_key) && params->at(type_key).is_string())
                type = params->at(type_key).get<std::string>();
        if (type != "longrope" && type != "su") {
            Status r = read_rope(reader, *params, key, rope, false);
            if (!r) return r;
            continue;
        }
        Result<float> theta = reader.real(*params, "rope_theta", rope.theta);
        if (!theta) return theta.error();
        rope.theta = *theta;
        for (auto [name, out] : {std::pair{"long_factor", &hp.rope_factors_long},
                                 std::pair{"short_factor", &hp.rope_factors_short}}) {
            const auto it = params->find(name);
            if (it == params->end() || !it->is_array() || it->size() != hp.head_dim / 2)
                return make_error(reader.source() + ": \"" + key + "\" (longrope) needs \"" + name + "\" with " +
                                  std::to_string(hp.head_dim / 2) + " values (one per rotated pair)");
            out->clear();
            for (const json& v : *it) {
                if (!v.is_number() || !(v.get<double>() > 0.0))
                    return make_error(reader.source() + ": \"" + key + "\"." + name + " holds " + describe_json(v) +
                                      "; factors must be positive numbers");
                out->push_back(v.get<float>());
            }
        }
        if (const auto it = params->find("original_max_position_embeddings"); it != params->end() && !it->is_null()) {
            if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > INT32_MAX)
                return make_error(reader.source() + ": \"" + key + "\".original_max_position_embeddings is not a positive count");
            original = static_cast<uint32_t>(it->get<int64_t>());
        }
    }
    hp.rope_freq_base = rope.theta;
    hp.rope_scale_linear = rope.linear_scale;
    hp.rope_orig_context = original ? original : hp.n_ctx_train;
    if (!hp.rope_factors_long.empty()) {
        if (!original) return make_error(reader.source() + ": longrope needs original_max_position_embeddings");
        const double scale = double(hp.n_ctx_train) / double(original);
        hp.rope_attn_factor = scale > 1.0 ? float(std::sqrt(1.0 + std::log(scale) / std::log(double(original)))) : 1.0f;
    }
    return {};
}

// Gemma 2: even layers slide (transformers 4 hard-codes the alternation, 5
// writes layer_types); soft-capping at Gemma2Config's 50 / 30 when the keys
// are absent, off when they are null.
Status read_gemma2_extras(const ConfigReader& reader, HParams& hp) {
    hp.norm_weight_offset = 1.0f;  // Gemma2RMSNorm scales by (1 + weight)
    Result<uint32_t> window = reader.count("sliding_window", 4096u);
    if (!window) return window.error();
    hp.sliding_window = *window;
    Result<uint32_t> pattern = reader.find("layer_types") ? sliding_window_pattern(reader, hp.n_layer) : 2u;
    if (!pattern) return pattern.error();
    hp.sliding_window_pattern = *pattern;
    struct Cap {
        const char* key;
        float fallback;
        float* out;
    };
    for (const Cap& c : {Cap{"attn_logit_softcapping", 50.0f, &hp.attn_logit_softcap},
                         Cap{"final_logit_softcapping", 30.0f, &hp.final_logit_softcap}}) {
        Result<float> v = reader.real(c.key, reader.present(c.key) ? 0.0f : c.fallback);
        if (!v) return v.error();
        *c.out = *v;
    }
    Result<float> scalar = reader.real("query_pre_attn_scalar", 256.0f);  // Gemma2Config's default
    if (!scalar) return scalar.error();
    hp.query_pre_attn_scalar = *scalar;
    return {};
}

Status read_gemma3_extras(const ConfigReader& reader, HParams& hp) {
    hp.norm_weight_offset = 1.0f;  // Gemma3RMSNorm scales by (1 + weight)
    Result<uint32_t> window = reader.count("sliding_window", 4096u);
    if (!window) return window.error();
    hp.sliding_window = *window;
    Result<uint32_t> pattern = sliding_window_pattern(reader, hp.n_layer);
    if (!pattern) return pattern.error();
    hp.sliding_window_pattern = *pattern;
    Result<float> final_cap = reader.real("final_logit_softcapping", 0.0f);
    Result<float> attn_cap = reader.real("attn_logit_softcapping", 0.0f);
    Result<float> scalar = reader.real("query_pre_attn_scalar", static_cast<float>(hp.head_dim));
    if (!final_cap) return final_cap.error();
    if (!attn_cap) return attn_cap.error();
    if (!scalar) return scalar.error();
    hp.final_logit_softcap = *final_cap;
    hp.attn_logit_softcap = *attn_cap;
    hp.query_pre_attn_scalar = *scalar;

    // transformers 4: rope_theta + rope_local_base_freq + rope_scaling (global layers);
    // transformers 5: rope_parameters = {full_attention: {...}, sliding_attention: {...}}.
    Result<float> local_base = reader.real("rope_local_base_freq", 10000.0f);
    if (!local_base) return local_base.error();
    hp.rope_freq_base_swa = *local_base;
    if (const json* params = reader.find("rope_parameters")) {
        if (!params->is_object()) return make_error(reader.source() + ": \"rope_parameters\" is not an object");
        if (params->contains("full_attention")) {
            RopeConfig rope{hp.rope_freq_base, hp.rope_scale_linear};
            Status s = read_rope(reader, params->at("full_attention"), "rope_parameters.full_attention", rope, false);
            if (!s) return s;
            hp.rope_freq_base = rope.theta;
            hp.rope_scale_linear = rope.linear_scale;
        }
        if (params->contains("sliding_attention")) {
            RopeConfig rope{hp.rope_freq_base_swa};  // its scale is unused: sliding layers are never scaled in Gemma 3
            Status s = read_rope(reader, params->at("sliding_attention"), "rope_parameters.sliding_attention", rope, false);
            if (!s) return s;
            hp.rope_freq_base_swa = rope.theta;
        }
    }
    return {};
}

}  // namespace

Result<ModelConfig> parse_config(const std::string& json_text, const std::string& source) {
    json root;
    try {
        root = json::parse(json_text);
    } catch (const json::exception& e) {
        return make_error(source + " is not valid JSON: " + e.what());
    }
    if (!root.is_object()) return make_error(source + " is not a JSON object");

    try {
        const ConfigReader reader(root, source);
        ModelConfig config;
        const json* type = reader.find("model_type");
        if (!type || !type->is_string()) return make_error(source + ": missing \"model_type\"");
        config.model_type = type->get<std::string>();
        const KnownType* known = nullptr;
        for (const KnownType& k : kKnownTypes)
            if (config.model_type == k.model_type) known = &k;
        if (!known)
            return make_error(source + ": model_type '" + config.model_type +
                              "' is not supported for Hugging Face folders (Folio maps llama, mistral, qwen2, qwen3, "
                              "gemma2, gemma3_text and phi3 weights)");

        HParams& hp = config.hparams;
        hp.architecture = known->architecture;
        // Hugging Face checkpoints keep Q/K rows in rotate-half order; nothing is permuted on load.
        hp.rope_style = RopeStyle::SplitHalf;

        if (known->architecture != std::string("gemma3") && known->architecture != std::string("gemma2")) {
            const json* act = reader.find("hidden_act");
            if (act && *act != "silu")
                return make_error(source + ": hidden_act " + describe_json(*act) + " is not supported for model_type '" +
                                  config.model_type + "' (Folio runs SiLU-gated feed-forward blocks)");
        }

        struct CountField {
            const char* key;
            uint32_t* out;
        };
        for (const CountField& f : {CountField{"vocab_size", &hp.n_vocab},
                                    CountField{"max_position_embeddings", &hp.n_ctx_train},
                                    CountField{"hidden_size", &hp.n_embd},
                                    CountField{"num_hidden_layers", &hp.n_layer},
                                    CountField{"num_attention_heads", &hp.n_head},
                                    CountField{"intermediate_size", &hp.n_ff}}) {
            Result<uint32_t> v = reader.count(f.key);
            if (!v) return v.error();
            *f.out = *v;
        }
        Result<uint32_t> n_head_kv = reader.count("num_key_value_heads", hp.n_head);
        if (!n_head_kv) return n_head_kv.error();
        hp.n_head_kv = *n_head_kv;
        if (hp.n_head % hp.n_head_kv != 0)
            return make_error(source + ": num_attention_heads (" + std::to_string(hp.n_head) +
                              ") is not a multiple of num_key_value_heads (" + std::to_string(hp.n_head_kv) + ")");
        if (!reader.find("head_dim") && hp.n_embd % hp.n_head != 0)
            return make_error(source + ": hidden_size is not a multiple of num_attention_heads and no head_dim is given");
        Result<uint32_t> head_dim = reader.count("head_dim", hp.n_embd / hp.n_head);
        if (!head_dim) return head_dim.error();
        hp.head_dim = *head_dim;
        if (hp.head_dim % 2 != 0) return make_error(source + ": head_dim " + std::to_string(hp.head_dim) + " is odd; RoPE rotates pairs");

        Result<float> eps = reader.real("rms_norm_eps", 1e-6f);
        if (!eps) return eps.error();
        hp.rms_norm_eps = *eps;

        hp.rope_freq_base = known->rope_theta_default;
        Result<float> theta = reader.real("rope_theta", hp.rope_freq_base);
        if (!theta) return theta.error();
        hp.rope_freq_base = *theta;
        if (hp.architecture == "gemma3") {
            Status s = read_gemma3_extras(reader, hp);
            if (!s) return s.error();
            if (const json* scaling = reader.find("rope_scaling")) {
                RopeConfig rope{hp.rope_freq_base, hp.rope_scale_linear};
                Status r = read_rope(reader, *scaling, "rope_scaling", rope, false);
                if (!r) return r.error();
                hp.rope_freq_base = rope.theta;
                hp.rope_scale_linear = rope.linear_scale;
            }
        } else {
            // Qwen2's and Mistral's optional sliding windows are left out, as GGUF
            // converters do: these checkpoints are trained and run with full attention.
            // llama3 factors are the llama graph's (llama.cpp reads rope_freqs for llama only).
            RopeConfig rope{hp.rope_freq_base, hp.rope_scale_linear};
            for (const char* key : {"rope_scaling", "rope_parameters"}) {
                if (const json* params = reader.find(key); params && hp.architecture != "phi3") {
                    const bool llama_block = hp.architecture == "llama" || hp.architecture == "mistral" ||
                                             hp.architecture == "qwen2" || hp.architecture == "qwen3" ||
                                             hp.architecture == "qwen3moe";
                    Status r = read_rope(reader, *params, key, rope, hp.architecture == "llama", llama_block);
                    if (!r) return r.error();
                }
            }
            hp.rope_freq_base = rope.theta;
            hp.rope_scale_linear = rope.linear_scale;
            if (rope.llama3) hp.rope_freq_factors = llama3_rope_factors(rope, hp.head_dim);
            if (rope.yarn) {
                hp.rope_yarn_factor = rope.factor;
                hp.rope_orig_context = static_cast<uint32_t>(rope.original_context);
                hp.rope_attn_factor = rope.yarn_attn_factor;
            }
            if (hp.architecture == "phi3") {
                Status s = read_phi3_rope(reader, hp);
                if (!s) return s.error();
            }
            if (hp.architecture == "gemma2") {
                Status s = read_gemma2_extras(reader, hp);
                if (!s) return s.error();
            }
        }

        config.tie_word_embeddings = known->tie_default;
        if (const json* tie = reader.find("tie_word_embeddings")) {
            if (!tie->is_boolean()) return make_error(source + ": \"tie_word_embeddings\" is not true/false");
            config.tie_word_embeddings = tie->get<bool>();
        }
        hp.tied_embeddings = config.tie_word_embeddings;
        return config;
    } catch (const json::exception& e) {
        return make_error(source + ": unexpected value: " + e.what());
    }
}

}  // namespace folio::hf
