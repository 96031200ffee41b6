#include "format/hf_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "format/hf_config.h"
#include "format/hf_tensor_names.h"
#include "format/safetensors.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// GGML keeps at most four dimensions; no weight of a supported model has more.
constexpr size_t kMaxGgmlRank = 4;

Result<std::string> read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error("cannot open '" + path.string() + "'");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return make_error("cannot read '" + path.string() + "'");
    return text.str();
}

bool is_file(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}

Result<safetensors::Archive> read_weights(const fs::path& dir) {
    const fs::path index = dir / "model.safetensors.index.json";
    if (is_file(index)) return safetensors::read_index(index.string());
    const fs::path single = dir / "model.safetensors";
    if (is_file(single)) return safetensors::read_file(single.string());
    std::string hint;
    if (is_file(dir / "pytorch_model.bin") || is_file(dir / "pytorch_model.bin.index.json"))
        hint = " (it has PyTorch .bin weights, which Folio does not read: save them as safetensors)";
    return make_error("'" + dir.string() + "' has neither model.safetensors nor model.safetensors.index.json" + hint);
}

// Renames to GGUF names, reverses shapes into GGML order and drops what the
// configuration says is not used (a tied checkpoint's redundant lm_head).
Status describe_tensors(safetensors::Archive& archive, const hf::ModelConfig& config, ModelDescription& model) {
    const std::string& arch = config.hparams.architecture;
    bool has_lm_head = false;
    std::map<std::string, std::string> hf_name_of;  // GGUF name -> HF name, to report duplicates
    for (safetensors::Tensor& t : archive.tensors) {
        if (hf::is_ignored_tensor(t.name)) continue;
        std::optional<std::string> name = hf::gguf_tensor_name(t.name, arch);
        if (!name)
            return make_error("tensor '" + t.name + "' in '" + t.file + "' is not a known " + config.model_type +
                              " weight; Folio cannot tell what it is for");
        if (*name == "output.weight") {
            has_lm_head = true;
            // transformers ignores a tied checkpoint's saved lm_head and reuses the embedding.
            if (config.tie_word_embeddings) continue;
        }
        if (t.shape.size() > kMaxGgmlRank)
            return make_error("tensor '" + t.name + "' in '" + t.file + "' has " + std::to_string(t.shape.size()) +
                              " dimensions; weights have at most " + std::to_string(kMaxGgmlRank));
        const auto [it, inserted] = hf_name_of.emplace(*name, t.name);
        if (!inserted)
            return make_error("tensors '" + it->second + "' and '" + t.name + "' both map to '" + *name + "'");
        TensorView view;
        view.name = std::move(*name);
        view.type = t.type;
        view.shape.assign(t.shape.rbegin(), t.shape.rend());
        view.data = t.data;
        view.nbytes = t.nbytes;
        model.tensors.push_back(std::move(view));
    }
    model.hparams.tied_embeddings = config.tie_word_embeddings || !has_lm_head;
    model.storage = std::move(archive.files);
    return {};
}

// Checks that every tensor the architecture needs is there with the shape the
// configuration implies, so a mismatched config.json fails here and not in a kernel.
Status check_tensor_shapes(const ModelDescription& model) {
    const HParams& hp = model.hparams;
    const int64_t embd = hp.n_embd, vocab = hp.n_vocab, ff = hp.n_ff, hd = hp.head_dim;
    const int64_t q_out = static_cast<int64_t>(hp.n_head) * hd, kv_out = static_cast<int64_t>(hp.n_head_kv) * hd;
    const bool gemma3 = hp.architecture == "gemma3";

    std::map<std::string, std::vector<int64_t>> expected = {
        {"token_embd.weight", {embd, vocab}},
        {"output_norm.weight", {embd}},
    };
    if (!hp.tied_embeddings) expected["output.weight"] = {embd, vocab};
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const std::string blk = "blk." + std::to_string(l) + ".";
        expected[blk + "attn_norm.weight"] = {embd};
        expected[blk + "attn_q.weight"] = {embd, q_out};
        expected[blk + "attn_k.weight"] = {embd, kv_out};
        expected[blk + "attn_v.weight"] = {embd, kv_out};
        expected[blk + "attn_output.weight"] = {q_out, embd};
        expected[blk + "ffn_norm.weight"] = {embd};
        expected[blk + "ffn_gate.weight"] = {embd, ff};
        expected[blk + "ffn_up.weight"] = {embd, ff};
        expected[blk + "ffn_down.weight"] = {ff, embd};
        if (gemma3 || hp.architecture == "qwen3") {
            expected[blk + "attn_q_norm.weight"] = {hd};
            expected[blk + "attn_k_norm.weight"] = {hd};
        }
        if (gemma3 || hp.architecture == "gemma2") {
            expected[blk + "post_attention_norm.weight"] = {embd};
            expected[blk + "post_ffw_norm.weight"] = {embd};
        }
        if (hp.architecture == "phi3") {  // fused: qkv_proj, gate_up_proj
            for (const char* separate : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight"})
                expected.erase(blk + separate);
            expected[blk + "attn_qkv.weight"] = {embd, q_out + 2 * kv_out};
            expected[blk + "ffn_up.weight"] = {embd, 2 * ff};
        }
    }
    // Optional tensors: their shape is checked when present.
    std::map<std::string, std::vector<int64_t>> optional;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const std::string blk = "blk." + std::to_string(l) + ".";
        optional[blk + "attn_q.bias"] = {q_out};
        optional[blk + "attn_k.bias"] = {kv_out};
        optional[blk + "attn_v.bias"] = {kv_out};
        optional[blk + "attn_output.bias"] = {embd};
    }

    auto shape_text = [](const std::vector<int64_t>& s) {
        std::string out = "[";
        for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
    };
    size_t found = 0;
    for (const TensorView& t : model.tensors) {
        const std::vector<int64_t>* want = nullptr;
        if (const auto e = expected.find(t.name); e != expected.end()) {
            want = &e->second;
            ++found;
        } else if (const auto o = optional.find(t.name); o != optional.end()) {
            want = &o->second;
        } else {
            return make_error("tensor '" + t.name + "' does not belong to a " + std::to_string(hp.n_layer) +
                              "-layer " + hp.architecture + " model (check num_hidden_layers in config.json)");
        }
        if (t.shape != *want)
            return make_error("tensor '" + t.name + "' has shape " + shape_text(t.shape) +
                              " (GGML order) but config.json implies " + shape_text(*want));
    }
    if (found != expected.size()) {
        for (const auto& [name, shape] : expected)
            if (!model.find_tensor(name)) return make_error("the weights lack tensor '" + name + "'");
    }
    return {};
}

// tokenizer_config.json holds the template as a string, or (older files) as a
// list of named templates of which "default" is the chat one. transformers 5
// saves it to chat_template.jinja instead, which then wins.
Result<std::string> read_chat_template(const fs::path& dir, const fs::path& tokenizer_config) {
    const fs::path jinja = dir / "chat_template.jinja";
    if (is_file(jinja)) return read_text(jinja);
    if (!is_file(tokenizer_config)) return std::string();
    Result<std::string> text = read_text(tokenizer_config);
    if (!text) return text.error();
    try {
        const json config = json::parse(*text);
        if (!config.is_object()) return make_error("'" + tokenizer_config.string() + "' is not a JSON object");
        const auto it = config.find("chat_template");
        if (it == config.end() || it->is_null()) return std::string();
        if (it->is_string()) return it->get<std::string>();
        if (it->is_array()) {
            for (const json& entry : *it)
                if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
                    entry["template"].is_string())
                    return entry["template"].get<std::string>();
        }
        return make_error("'" + tokenizer_config.string() + "': \"chat_template\" is neither a string nor a list "
                          "holding a \"default\" template");
    } catch (const json::exception& e) {
        return make_error("'" + tokenizer_config.string() + "' is not valid JSON: " + e.what());
    }
}

}  // namespace

Result<ModelDescription> load_hf_folder_model(const std::string& dir_text) {
    const fs::path dir = fs::path(dir_text).lexically_normal();
    const fs::path config_path = dir / "config.json";
    if (!is_file(config_path)) return make_error("'" + dir_text + "' has no config.json; not a Hugging Face model folder");
    Result<std::string> config_text = read_text(config_path);
    if (!config_text) return config_text.error();
    Result<hf::ModelConfig> config = hf::parse_config(*config_text, config_path.string());
    if (!config) return config.error();

    const fs::path tokenizer_json = dir / "tokenizer.json";
    if (!is_file(tokenizer_json))
        return make_error("'" + dir_text + "' has no tokenizer.json (Folio reads the fast-tokenizer file, "
                          "not tokenizer.model or vocab.json alone)");

    ModelDescription model;
    model.path = dir_text;
    model.format = SourceFormat::HuggingFaceFolder;
    // The folder's own name, also for "models/x/" or ".".
    std::error_code ec;
    fs::path absolute = fs::absolute(dir, ec).lexically_normal();  // no symlink resolution: the name the user gave
    if (ec) absolute = dir;
    model.name = (absolute.has_filename() ? absolute : absolute.parent_path()).filename().string();
    model.hparams = config->hparams;

    Result<safetensors::Archive> weights = read_weights(dir);
    if (!weights) return weights.error();
    Status described = describe_tensors(*weights, *config, model);
    if (!described) return described.error();
    Status shapes = check_tensor_shapes(model);
    if (!shapes) return make_error("'" + dir_text + "': " + shapes.error().message);

    const fs::path tokenizer_config = dir / "tokenizer_config.json";
    Result<TokenizerSpec> tokenizer = tokenizer_spec_from_hf_files(
        tokenizer_json.string(), is_file(tokenizer_config) ? tokenizer_config.string() : std::string());
    if (!tokenizer) return tokenizer.error();
    model.tokenizer = std::move(tokenizer.value());
    if (model.tokenizer.tokens.size() > model.hparams.n_vocab)
        return make_error("'" + tokenizer_json.string() + "' has " + std::to_string(model.tokenizer.tokens.size()) +
                          " tokens but the embedding has rows for " + std::to_string(model.hparams.n_vocab));

    Result<std::string> chat_template = read_chat_template(dir, tokenizer_config);
    if (!chat_template) return chat_template.error();
    model.chat_template = std::move(chat_template.value());
    return model;
}

}  // namespace folio
