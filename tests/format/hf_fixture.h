// Builders for the Hugging Face reader tests: safetensors images assembled
// byte by byte (so hostile ones can be made too), and a tiny Llama folder
// written to a temporary directory.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace hf_fixture {

// A raw image: 8-byte little-endian header length, header text, data.
inline std::string safetensors_image(const std::string& header, const std::string& data, uint64_t header_len) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header_len >> (8 * i)) & 0xff);
    return out + header + data;
}
inline std::string safetensors_image(const std::string& header, const std::string& data) {
    return safetensors_image(header, data, header.size());
}

struct TensorSpec {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16"
    std::vector<int64_t> shape;
    std::vector<float> values;  // stored converted to dtype
};

inline uint16_t to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);  // the test values are exact in bf16
}

// Exact for the small integers and halves the tests use.
inline uint16_t to_f16(float f) {
    if (f == 0.0f) return 0;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const uint32_t sign = (bits >> 16) & 0x8000;
    const int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
    const uint32_t mantissa = (bits >> 13) & 0x3ff;
    return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | mantissa);
}

// A well-formed image holding `tensors` back to back, in order.
inline std::string safetensors_file(const std::vector<TensorSpec>& tensors) {
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
    std::string data;
    for (const TensorSpec& t : tensors) {
        const size_t begin = data.size();
        for (float v : t.values) {
            if (t.dtype == "F32") {
                char b[4];
                std::memcpy(b, &v, 4);
                data.append(b, 4);
            } else {
                const uint16_t h = t.dtype == "F16" ? to_f16(v) : to_bf16(v);
                data.push_back(static_cast<char>(h & 0xff));
                data.push_back(static_cast<char>(h >> 8));
            }
        }
        std::string shape = "[";
        for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
        shape += "]";
        header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
                  std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
    }
    header += "}";
    while (header.size() % 8 != 0) header += ' ';  // as the reference writer pads
    return safetensors_image(header, data);
}

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A tiny Llama: 2 layers, 8-wide, 2 query heads sharing 1 KV head of 4, FFN 12, vocab 6.
struct TinyLlama {
    static constexpr int64_t kVocab = 6, kEmbd = 8, kHeads = 2, kKvHeads = 1, kHeadDim = 4, kFf = 12, kLayers = 2;

    // Tensors in Hugging Face form: row-major [out_features, in_features]. Each
    // value encodes its tensor and position so a swapped view shows up.
    // model_type "llama", "qwen2" (adds Q/K/V biases) or "gemma3_text" (adds
    // per-head Q/K norms and the norms after attention and the MLP).
    static std::vector<TensorSpec> tensors(bool with_lm_head, const std::string& model_type = "llama") {
        std::vector<TensorSpec> out;
        float tag = 0.0f;
        auto add = [&](const std::string& name, const std::string& dtype, std::vector<int64_t> shape) {
            int64_t n = 1;
            for (int64_t d : shape) n *= d;
            std::vector<float> values(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = tag + static_cast<float>(i % 64) * 0.5f;
            tag += 100.0f;
            out.push_back({name, dtype, std::move(shape), std::move(values)});
        };
        add("model.embed_tokens.weight", "F32", {kVocab, kEmbd});
        for (int l = 0; l < kLayers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            add(p + "input_layernorm.weight", "F16", {kEmbd});
            add(p + "self_attn.q_proj.weight", "F32", {kHeads * kHeadDim, kEmbd});
            add(p + "self_attn.k_proj.weight", "F32", {kKvHeads * kHeadDim, kEmbd});
            add(p + "self_attn.v_proj.weight", "F32", {kKvHeads * kHeadDim, kEmbd});
            add(p + "self_attn.o_proj.weight", "F32", {kEmbd, kHeads * kHeadDim});
            add(p + "post_attention_layernorm.weight", "F16", {kEmbd});
            if (model_type == "qwen2") {
                add(p + "self_attn.q_proj.bias", "F32", {kHeads * kHeadDim});
                add(p + "self_attn.k_proj.bias", "F32", {kKvHeads * kHeadDim});
                add(p + "self_attn.v_proj.bias", "F32", {kKvHeads * kHeadDim});
            }
            if (model_type == "gemma3_text" || model_type == "qwen3") {
                add(p + "self_attn.q_norm.weight", "F32", {kHeadDim});
                add(p + "self_attn.k_norm.weight", "F32", {kHeadDim});
            }
            if (model_type == "gemma3_text" || model_type == "gemma2") {
                add(p + "pre_feedforward_layernorm.weight", "F32", {kEmbd});
                add(p + "post_feedforward_layernorm.weight", "F32", {kEmbd});
            }
            add(p + "mlp.gate_proj.weight", "BF16", {kFf, kEmbd});
            add(p + "mlp.up_proj.weight", "BF16", {kFf, kEmbd});
            add(p + "mlp.down_proj.weight", "BF16", {kEmbd, kFf});
        }
        add("model.norm.weight", "F32", {kEmbd});
        if (with_lm_head) add("lm_head.weight", "F32", {kVocab, kEmbd});
        return out;
    }

    static std::string config_json(bool tie, const std::string& model_type = "llama") {
        return std::string(R"({
  "model_type": ")") + model_type + R"(", "sliding_window": 4,
  "vocab_size": 6, "hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 256,
  "rms_norm_eps": 1e-06, "rope_theta": 500000.0, "rope_scaling": {"type": "linear", "factor": 2.0},
  "hidden_act": "silu", "tie_word_embeddings": )" +
               (tie ? "true" : "false") + "}";
    }

    // As the `tokenizers` library writes a byte-level BPE tokenizer.json.
    static std::string tokenizer_json() {
        return R"({
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [
    {"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": {"<s>": 0, "</s>": 1, "a": 2, "b": 3, "ab": 4, "Ġ": 5},
            "merges": [["a", "b"]]}
})";
    }

    static std::string tokenizer_config_json() {
        return R"({"add_bos_token": false, "bos_token": "<s>", "eos_token": "</s>",
                   "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"})";
    }

    // Writes config.json, tokenizer files and model.safetensors into `dir`.
    static void write_folder(const std::filesystem::path& dir, bool tie = true, bool with_lm_head = false,
                             const std::string& model_type = "llama") {
        std::filesystem::create_directories(dir);
        write_file(dir / "config.json", config_json(tie, model_type));
        write_file(dir / "tokenizer.json", tokenizer_json());
        write_file(dir / "tokenizer_config.json", tokenizer_config_json());
        write_file(dir / "model.safetensors", safetensors_file(tensors(with_lm_head, model_type)));
    }
};

}  // namespace hf_fixture
