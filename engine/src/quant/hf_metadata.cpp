// hf_model_metadata(): the keys convert_hf_to_gguf.py writes for the llama
// and gemma3 architectures, from what Folio read out of the folder.
#include "quant/hf_metadata.h"

#include <array>

#include "tokenizer/pre_tokenizer.h"

namespace folio::quant {

namespace {

// The llama.cpp pre-tokenizer name whose regexes are the folder's
// tokenizer.json split regexes.
Result<std::string> pre_tokenizer_name(const TokenizerSpec& spec) {
    if (spec.model == TokenizerModel::SentencePiece) return std::string("default");
    if (spec.pre != "tokenizer.json") return spec.pre;
    static constexpr std::array<const char*, 5> kNames = {"smollm", "gpt2", "llama-bpe", "qwen2", "default"};
    for (const char* name : kNames) {
        auto regexes = tokenizer_detail::pre_tokenizer_regexes(name);
        if (regexes && *regexes == spec.pre_regexes) return std::string(name);
    }
    return make_error("the folder's tokenizer.json splits text with regexes that match no pre-tokenizer "
                      "llama.cpp knows (gpt2, smollm, llama-bpe, qwen2); a GGUF of it would tokenize differently");
}

void add_tokenizer(const TokenizerSpec& spec, std::vector<GgufKeyValue>& out, const std::string& pre) {
    auto put = [&](std::string key, GgufValue v) { out.push_back({std::move(key), std::move(v)}); };
    const bool bpe = spec.model == TokenizerModel::BytePairEncoding;
    put("tokenizer.ggml.model", GgufValue::string(bpe ? "gpt2" : "llama"));
    put("tokenizer.ggml.pre", GgufValue::string(pre));
    put("tokenizer.ggml.tokens", GgufValue::array(GgufArray::of_strings(spec.tokens)));
    if (!bpe) put("tokenizer.ggml.scores", GgufValue::array(GgufArray::of_f32(spec.scores)));
    std::vector<int32_t> kinds;
    kinds.reserve(spec.kinds.size());
    for (TokenKind k : spec.kinds) kinds.push_back(int32_t(k));
    put("tokenizer.ggml.token_type", GgufValue::array(GgufArray::of_i32(kinds)));
    if (bpe) put("tokenizer.ggml.merges", GgufValue::array(GgufArray::of_strings(spec.merges)));
    auto id = [&](const char* key, int32_t v) {
        if (v >= 0) put(key, GgufValue::u32(uint32_t(v)));
    };
    id("tokenizer.ggml.bos_token_id", spec.bos_id);
    id("tokenizer.ggml.eos_token_id", spec.eos_id);
    id("tokenizer.ggml.eot_token_id", spec.eot_id);
    id("tokenizer.ggml.unknown_token_id", spec.unk_id);
    id("tokenizer.ggml.padding_token_id", spec.pad_id);
    put("tokenizer.ggml.add_bos_token", GgufValue::boolean(spec.add_bos));
    put("tokenizer.ggml.add_eos_token", GgufValue::boolean(spec.add_eos));
    put("tokenizer.ggml.add_space_prefix", GgufValue::boolean(spec.add_space_prefix));
}

}  // namespace

Result<std::vector<GgufKeyValue>> hf_model_metadata(const ModelDescription& model) {
    const HParams& hp = model.hparams;
    if (hp.architecture != "llama" && hp.architecture != "gemma3")
        return make_error("quantizing a Hugging Face " + hp.architecture +
                          " folder is not supported (Folio writes GGUF metadata for llama and gemma3)");
    // convert_hf_to_gguf writes llama3 scaling as a rope_freqs tensor, which
    // the quantizer (tensors of the folder only) does not make yet: refused
    // rather than written as a file that runs without the factors.
    if (!hp.rope_freq_factors.empty())
        return make_error("quantizing a Hugging Face folder with llama3 RoPE scaling (rope_scaling.rope_type "
                          "'llama3') is not supported yet: its GGUF needs a rope_freqs tensor; quantize a GGUF of it");
    auto pre = pre_tokenizer_name(model.tokenizer);
    if (!pre) return pre.error();

    std::vector<GgufKeyValue> out;
    auto put = [&](std::string key, GgufValue v) { out.push_back({std::move(key), std::move(v)}); };
    const std::string a = hp.architecture + ".";
    put("general.architecture", GgufValue::string(hp.architecture));
    put("general.type", GgufValue::string("model"));
    put("general.name", GgufValue::string(model.name));
    put(a + "context_length", GgufValue::u32(hp.n_ctx_train));
    put(a + "embedding_length", GgufValue::u32(hp.n_embd));
    put(a + "block_count", GgufValue::u32(hp.n_layer));
    put(a + "feed_forward_length", GgufValue::u32(hp.n_ff));
    put(a + "attention.head_count", GgufValue::u32(hp.n_head));
    put(a + "attention.head_count_kv", GgufValue::u32(hp.n_head_kv));
    put(a + "rope.freq_base", GgufValue::f32(hp.rope_freq_base));
    put(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(hp.rms_norm_eps));
    put(a + "attention.key_length", GgufValue::u32(hp.head_dim));
    put(a + "attention.value_length", GgufValue::u32(hp.head_dim));
    if (hp.architecture == "llama") {
        put(a + "vocab_size", GgufValue::u32(hp.n_vocab));
        put(a + "rope.dimension_count", GgufValue::u32(hp.head_dim));
    }
    if (hp.sliding_window) put(a + "attention.sliding_window", GgufValue::u32(hp.sliding_window));
    if (hp.rope_scale_linear != 1.0f) {
        put(a + "rope.scaling.type", GgufValue::string("linear"));
        put(a + "rope.scaling.factor", GgufValue::f32(hp.rope_scale_linear));
    }
    if (hp.final_logit_softcap > 0) put(a + "final_logit_softcapping", GgufValue::f32(hp.final_logit_softcap));
    if (hp.attn_logit_softcap > 0) put(a + "attn_logit_softcapping", GgufValue::f32(hp.attn_logit_softcap));
    add_tokenizer(model.tokenizer, out, *pre);
    if (!model.chat_template.empty()) put("tokenizer.chat_template", GgufValue::string(model.chat_template));
    return out;
}

}  // namespace folio::quant
