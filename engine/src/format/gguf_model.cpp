#include "format/gguf_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace folio {

namespace {

// Architectures whose GGML graphs rotate split halves (NEOX RoPE). The rest
// of the llama family uses interleaved pairs, matching how convert_hf_to_gguf
// permutes their Q/K rows.
bool uses_split_half_rope(const std::string& arch) {
    static constexpr std::array<std::string_view, 14> kSplitHalf = {
        "gemma", "gemma2", "gemma3", "qwen2", "qwen2moe", "qwen3", "qwen3moe", "phi2", "phi3",
        "stablelm", "gptneox", "falcon", "starcoder2", "olmo2"};
    return std::find(kSplitHalf.begin(), kSplitHalf.end(), arch) != kSplitHalf.end();
}

// Architectures whose keys we read and for which a missing required key is an error.
bool is_known_architecture(const std::string& arch) {
    static constexpr std::array<std::string_view, 10> kKnown = {
        "llama", "mistral", "gemma", "gemma2", "gemma3", "qwen2", "qwen3", "granite", "phi3", "qwen3moe"};
    return std::find(kKnown.begin(), kKnown.end(), arch) != kKnown.end();
}

// rope_freqs.weight (llama.cpp's LLM_TENSOR_ROPE_FREQS), and Phi-3's
// rope_factors_long / rope_factors_short: one F32 divisor per rotated pair,
// shared by every layer.
Result<std::vector<float>> rope_freq_factors(const GgufFile& file, const GgufTensorInfo& t, uint32_t head_dim) {
    const std::string what = "gguf: " + file.name() + ": tensor '" + t.name + "'";
    if (t.type() != TensorType::F32 || t.shape.size() != 1 || t.shape[0] != int64_t{head_dim} / 2 || head_dim == 0)
        return make_error(what + " should be F32 of " + std::to_string(head_dim / 2) +
                          " values (one per rotated pair of a head)");
    std::vector<float> factors(static_cast<size_t>(t.shape[0]));
    if (t.nbytes < factors.size() * sizeof(float) || !t.data) return make_error(what + " is truncated");
    std::memcpy(factors.data(), t.data, factors.size() * sizeof(float));
    for (float f : factors)
        if (!(f > 0.0f) || !std::isfinite(f)) return make_error(what + " holds " + std::to_string(f) + "; factors must be positive");
    return factors;
}

// Mixture of experts (llama.cpp's LLM_KV_EXPERT_*): Mixtral's `llama` files
// and qwen3moe. An expert of a `llama` file is as wide as feed_forward_length;
// qwen3moe's is expert_feed_forward_length (llama.cpp: else n_ff / n_used).
// llama.cpp normalises the chosen experts' weights for both families without
// reading expert_weights_norm (no converter writes it for them); Folio reads
// it where present, as Hugging Face's norm_topk_prob.
Status read_expert_hparams(const GgufFile& file, const std::string& p, HParams& hp) {
    auto count = file.get_u32_or(p + "expert_count", 0);
    auto used = file.get_u32_or(p + "expert_used_count", 0);
    auto width = file.get_u32_or(p + "expert_feed_forward_length", 0);
    auto norm = file.get_bool_or(p + "expert_weights_norm", true);
    for (const Result<uint32_t>* r : {&count, &used, &width})
        if (!*r) return r->error();
    if (!norm) return norm.error();
    if (*count == 0) return {};
    constexpr uint32_t kMaxExperts = 512;  // llama.cpp's LLAMA_MAX_EXPERTS
    if (*count > kMaxExperts || *used == 0 || *used > *count)
        return make_error("gguf: " + file.name() + ": " + p + "expert_used_count " + std::to_string(*used) + " of " +
                          p + "expert_count " + std::to_string(*count) + " (at most " + std::to_string(kMaxExperts) +
                          " experts, at least one used)");
    hp.n_expert = *count;
    hp.n_expert_used = *used;
    hp.n_ff_expert = *width ? *width : hp.architecture == "qwen3moe" ? hp.n_ff / *used : hp.n_ff;
    hp.expert_weights_norm = *norm;
    if (hp.n_ff_expert == 0)
        return make_error("gguf: " + file.name() + ": the experts' feed-forward length is 0");
    return {};
}

}  // namespace

Result<HParams> hparams_from_gguf(const GgufFile& file) {
    HParams hp;
    auto arch = file.get_string("general.architecture");
    if (!arch) return arch.error();
    hp.architecture = *arch;
    const std::string p = hp.architecture + ".";
    const bool known = is_known_architecture(hp.architecture);

    // Required keys for a known architecture; absent ones stay 0 otherwise.
    auto required_u32 = [&](const std::string& key, uint32_t& out) -> Status {
        if (!known && !file.has(key)) return {};
        auto v = file.get_u32(key);
        if (!v) return v.error();
        out = *v;
        return {};
    };
    for (auto [key, field] : {std::pair{"block_count", &hp.n_layer}, std::pair{"embedding_length", &hp.n_embd},
                              std::pair{"attention.head_count", &hp.n_head},
                              std::pair{"feed_forward_length", &hp.n_ff}, std::pair{"context_length", &hp.n_ctx_train}}) {
        if (auto ok = required_u32(p + key, *field); !ok) return ok.error();
    }
    if (known && (hp.n_layer == 0 || hp.n_embd == 0 || hp.n_head == 0))
        return make_error("gguf: " + file.name() + ": " + p + "block_count, embedding_length and attention.head_count must be non-zero");

    auto head_count_kv = file.get_u32_or(p + "attention.head_count_kv", hp.n_head);
    if (!head_count_kv) return head_count_kv.error();
    hp.n_head_kv = *head_count_kv;
    if (hp.n_head != 0 && (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0))
        return make_error("gguf: " + file.name() + ": " + p + "attention.head_count_kv " + std::to_string(hp.n_head_kv) +
                          " does not divide attention.head_count " + std::to_string(hp.n_head));
    auto key_length = file.get_u32_or(p + "attention.key_length", hp.n_head ? hp.n_embd / hp.n_head : 0);
    if (!key_length) return key_length.error();
    hp.head_dim = *key_length;

    const float default_eps = hp.architecture.rfind("gemma", 0) == 0 ? 1e-6f : 1e-5f;
    auto eps = file.get_f32_or(p + "attention.layer_norm_rms_epsilon", default_eps);
    auto freq_base = file.get_f32_or(p + "rope.freq_base", 10000.0f);
    auto scaling_type = file.get_string_or(p + "rope.scaling.type", "none");
    auto scaling_factor = file.get_f32_or(p + "rope.scaling.factor", 1.0f);
    auto old_scale_linear = file.get_f32_or(p + "rope.scale_linear", 1.0f);  // before rope.scaling.* existed
    auto final_softcap = file.get_f32_or(p + "final_logit_softcapping", 0.0f);
    auto attn_softcap = file.get_f32_or(p + "attn_logit_softcapping", 0.0f);
    for (const Result<float>* r : {&eps, &freq_base, &scaling_factor, &old_scale_linear, &final_softcap, &attn_softcap})
        if (!*r) return r->error();
    if (!scaling_type) return scaling_type.error();
    hp.rms_norm_eps = *eps;
    hp.rope_freq_base = *freq_base;
    // llama.cpp's scaling types are none, linear, yarn and longrope; the last
    // two change more than the positions, and running them as plain RoPE would
    // compute wrong attention from the first token on. YaRN runs on the llama
    // block (model/llama.cpp: llama, mistral, qwen2, qwen3, qwen3moe).
    const bool yarn = *scaling_type == "yarn";
    const bool llama_block = hp.architecture == "llama" || hp.architecture == "mistral" ||
                             hp.architecture == "qwen2" || hp.architecture == "qwen3" || hp.architecture == "qwen3moe";
    if (*scaling_type != "none" && *scaling_type != "linear" && !(yarn && llama_block))
        return make_error("gguf: " + file.name() + ": " + p + "rope.scaling.type is '" + *scaling_type +
                          "'; Folio runs plain RoPE, linear scaling, Llama 3.1 frequency factors (rope_freqs) and "
                          "YaRN (on llama, mistral, qwen2, qwen3, qwen3moe), not " + *scaling_type + " on " +
                          hp.architecture);
    hp.rope_scale_linear = *scaling_type == "linear" ? *scaling_factor : *old_scale_linear;
    if (yarn) {
        auto orig = file.get_u32_or(p + "rope.scaling.original_context_length", hp.n_ctx_train);
        auto attn_factor = file.get_f32_or(p + "rope.scaling.attn_factor", 1.0f);
        auto log_mul = file.get_f32_or(p + "rope.scaling.yarn_log_multiplier", 0.0f);
        for (const Result<float>* r : {&attn_factor, &log_mul})
            if (!*r) return r->error();
        if (!orig) return orig.error();
        if (!(*scaling_factor >= 1.0f) || !std::isfinite(*scaling_factor) || *orig == 0 ||
            !(*attn_factor > 0.0f) || !std::isfinite(*attn_factor))
            return make_error("gguf: " + file.name() + ": YaRN needs rope.scaling.factor >= 1, a positive "
                              "original_context_length and attn_factor (they are " + std::to_string(*scaling_factor) +
                              ", " + std::to_string(*orig) + ", " + std::to_string(*attn_factor) + ")");
        if (*log_mul != 0.0f)
            return make_error("gguf: " + file.name() + ": " + p + "rope.scaling.yarn_log_multiplier (DeepSeek's "
                              "YaRN magnitude) is not supported");
        hp.rope_yarn_factor = *scaling_factor;
        hp.rope_orig_context = *orig;
        hp.rope_attn_factor = *attn_factor;
    }
    if (!(hp.rope_scale_linear > 0.0f))
        return make_error("gguf: " + file.name() + ": rope scale factor " + std::to_string(hp.rope_scale_linear) + " must be positive");
    auto rope_dims = file.get_u32_or(p + "rope.dimension_count", hp.head_dim);
    if (!rope_dims) return rope_dims.error();
    if (known && *rope_dims != hp.head_dim)
        return make_error("gguf: " + file.name() + ": " + p + "rope.dimension_count " + std::to_string(*rope_dims) +
                          " is not the head size " + std::to_string(hp.head_dim) +
                          "; Folio rotates whole heads (partial rotary embeddings are not supported)");
    if (const GgufTensorInfo* freqs = file.find_tensor("rope_freqs.weight")) {
        auto factors = rope_freq_factors(file, *freqs, hp.head_dim);
        if (!factors) return factors.error();
        hp.rope_freq_factors = std::move(*factors);
    }
    if (hp.architecture == "phi3") {
        // LongRoPE (Phi-3 128k): both sets or neither; the original context
        // decides which one a run uses (model/phi3.cpp).
        const GgufTensorInfo* long_factors = file.find_tensor("rope_factors_long.weight");
        const GgufTensorInfo* short_factors = file.find_tensor("rope_factors_short.weight");
        if (!long_factors != !short_factors)
            return make_error("gguf: " + file.name() + ": LongRoPE needs both rope_factors_long.weight and "
                              "rope_factors_short.weight; the file has only one");
        if (long_factors) {
            auto lf = rope_freq_factors(file, *long_factors, hp.head_dim);
            if (!lf) return lf.error();
            auto sf = rope_freq_factors(file, *short_factors, hp.head_dim);
            if (!sf) return sf.error();
            hp.rope_factors_long = std::move(*lf);
            hp.rope_factors_short = std::move(*sf);
        }
        auto orig = file.get_u32_or(p + "rope.scaling.original_context_length", hp.n_ctx_train);
        auto attn_factor = file.get_f32_or(p + "rope.scaling.attn_factor", 1.0f);
        if (!orig) return orig.error();
        if (!attn_factor) return attn_factor.error();
        if (!(*attn_factor > 0.0f) || !std::isfinite(*attn_factor))
            return make_error("gguf: " + file.name() + ": " + p + "rope.scaling.attn_factor " +
                              std::to_string(*attn_factor) + " must be positive");
        hp.rope_orig_context = *orig;
        hp.rope_attn_factor = *attn_factor;
        // Its attention.sliding_window (Phi-3 mini: 2047) is not kept: llama.cpp
        // runs phi3 without a window too (its converters do not say which layers slide).
    }
    hp.final_logit_softcap = *final_softcap;
    hp.attn_logit_softcap = *attn_softcap;
    hp.rope_style = uses_split_half_rope(hp.architecture) ? RopeStyle::SplitHalf : RopeStyle::Interleaved;

    if (hp.architecture == "gemma2") {
        // llama.cpp's gemma2: every other layer (the even ones) slides over
        // `sliding_window` tokens (4096 when the key is absent), soft-capping
        // at 50 / 30 unless the file says otherwise, and queries scaled by
        // 1/sqrt(head_dim), save the 46-layer 27B's 1/sqrt(n_embd / n_head).
        auto window = file.get_u32_or(p + "attention.sliding_window", 4096);
        auto attn_cap = file.get_f32_or(p + "attn_logit_softcapping", 50.0f);
        auto final_cap = file.get_f32_or(p + "final_logit_softcapping", 30.0f);
        if (!window) return window.error();
        if (!attn_cap) return attn_cap.error();
        if (!final_cap) return final_cap.error();
        hp.sliding_window = *window;
        hp.sliding_window_pattern = 2;
        hp.attn_logit_softcap = *attn_cap;
        hp.final_logit_softcap = *final_cap;
        hp.query_pre_attn_scalar = hp.n_layer == 46 && hp.n_head ? float(hp.n_embd / hp.n_head) : float(hp.head_dim);
    }
    if (hp.architecture == "gemma3") {
        auto window = file.get_u32_or(p + "attention.sliding_window", 0);
        if (!window) return window.error();
        hp.sliding_window = *window;
        // GGUF has no keys for these two: llama.cpp hard-codes them for gemma3
        // (five local layers, then one global; local layers use base 10000).
        hp.sliding_window_pattern = 6;
        hp.rope_freq_base_swa = 10000.0f;
        hp.query_pre_attn_scalar = float(hp.head_dim);
    }

    if (Status experts = read_expert_hparams(file, p, hp); !experts) return experts.error();

    if (file.has(p + "vocab_size")) {
        auto v = file.get_u32(p + "vocab_size");
        if (!v) return v.error();
        hp.n_vocab = *v;
    } else if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens"); tokens && tokens->as_array()) {
        hp.n_vocab = uint32_t(std::min<size_t>(tokens->as_array()->size(), UINT32_MAX));
    } else if (const GgufTensorInfo* embd = file.find_tensor("token_embd.weight"); embd && embd->shape.size() == 2) {
        hp.n_vocab = uint32_t(std::min<int64_t>(embd->shape[1], UINT32_MAX));
    } else if (known) {
        return make_error("gguf: " + file.name() + ": key '" + p + "vocab_size' is missing and there is no tokenizer.ggml.tokens to count");
    }
    hp.tied_embeddings = file.find_tensor("output.weight") == nullptr;
    return hp;
}

Result<ModelDescription> load_gguf_model(const std::string& path) {
    auto file = GgufFile::open(path);
    if (!file) return file.error();

    ModelDescription model;
    model.path = path;
    model.format = SourceFormat::Gguf;
    auto hparams = hparams_from_gguf(*file);
    if (!hparams) return hparams.error();
    model.hparams = std::move(*hparams);
    auto name = file->get_string_or("general.name", "");
    if (!name) return name.error();
    model.name = name->empty() ? path.substr(path.find_last_of('/') + 1) : *name;

    model.tensors.reserve(file->tensors().size());
    for (const GgufTensorInfo& info : file->tensors()) {
        const std::optional<TensorType> type = info.type();
        if (!type)
            return make_error("gguf: " + path + ": tensor '" + info.name + "' has type " +
                              std::string(ggml_type_name(info.ggml_type)) + ", which Folio cannot compute with; "
                              "use a file quantized as F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or Q6_K");
        model.tensors.push_back(TensorView{info.name, *type, info.shape, info.data, info.nbytes});
    }

    auto tokenizer_model = file->get_string_or("tokenizer.ggml.model", "");
    if (!tokenizer_model) return tokenizer_model.error();
    if (*tokenizer_model == "none") {
        // No vocabulary (llama.cpp's benchmark files): bytes and numbered tokens.
        if (model.hparams.n_vocab < kByteVocabularyMin)
            return make_error("gguf: " + path + ": the file has no vocabulary (tokenizer.ggml.model 'none') and " +
                              std::to_string(model.hparams.n_vocab) + " token rows; Folio needs at least " +
                              std::to_string(kByteVocabularyMin) + " to stand in its byte tokens");
        model.tokenizer = byte_vocabulary(model.hparams.n_vocab);
    } else if (file->has("tokenizer.ggml.model")) {
        auto tokenizer = tokenizer_spec_from_gguf(*file);
        if (!tokenizer) return tokenizer.error();
        model.tokenizer = std::move(*tokenizer);
    }
    auto chat_template = file->get_string_or("tokenizer.chat_template", "");
    if (!chat_template) return chat_template.error();
    model.chat_template = std::move(*chat_template);
    model.storage.push_back(file->mapping());
    return model;
}

}  // namespace folio
