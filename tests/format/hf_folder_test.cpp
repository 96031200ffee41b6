// A Hugging Face folder (written here: config.json, model.safetensors,
// tokenizer files) read into a ModelDescription, the config.json mapping for
// each supported model type, and the errors for folders Folio cannot use.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <set>
#include <string>
#include <unistd.h>

#include "folio/model.h"
#include "folio_test.h"
#include "format/hf_config.h"
#include "format/hf_model.h"
#include "format/hf_tensor_names.h"
#include "gguf_fixture.h"
#include "hf_fixture.h"

namespace fs = std::filesystem;
using hf_fixture::TinyLlama;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <typename R>
std::string error_of(const R& r) {
    return r.ok() ? std::string() : r.error().message;
}

float f32_at(const folio::TensorView& t, size_t index) {
    float v = 0;
    std::memcpy(&v, t.data + index * 4, 4);
    return v;
}

const char* kGemma3Config = R"({
  "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
  "vocab_size": 262144, "hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 18,
  "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "max_position_embeddings": 32768,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": null,
  "sliding_window": 512, "sliding_window_pattern": 6, "query_pre_attn_scalar": 256,
  "final_logit_softcapping": null, "attn_logit_softcapping": null, "hidden_activation": "gelu_pytorch_tanh"
})";

}  // namespace

class HfFolderTest : public QObject {
    Q_OBJECT

    fs::path dir_;

    // Writes the tiny folder under `name`, applies `edit` to it, and returns the load error ("" if it loads).
    std::string load_error_after(const std::string& name, const std::function<void(const fs::path&)>& edit) {
        const fs::path dir = dir_ / name;
        TinyLlama::write_folder(dir);
        edit(dir);
        return error_of(folio::load_hf_folder_model(dir.string()));
    }

private slots:
    void initTestCase() {
        dir_ = fs::temp_directory_path() / ("folio_hf_folder_" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }

    void describesASingleFileFolder() {
        const fs::path dir = dir_ / "tiny-llama";
        TinyLlama::write_folder(dir);
        auto r = folio::load_model_description(dir.string() + "/");
        QVERIFY2(r.ok(), error_of(r).c_str());
        const folio::ModelDescription& m = *r;
        QVERIFY(m.format == folio::SourceFormat::HuggingFaceFolder);
        QCOMPARE(m.name, std::string("tiny-llama"));
        QCOMPARE(m.storage.size(), size_t(1));

        const folio::HParams& hp = m.hparams;
        QCOMPARE(hp.architecture, std::string("llama"));
        QCOMPARE(hp.n_vocab, 6u);
        QCOMPARE(hp.n_ctx_train, 256u);
        QCOMPARE(hp.n_embd, 8u);
        QCOMPARE(hp.n_layer, 2u);
        QCOMPARE(hp.n_head, 2u);
        QCOMPARE(hp.n_head_kv, 1u);
        QCOMPARE(hp.head_dim, 4u);  // hidden_size / num_attention_heads
        QCOMPARE(hp.n_ff, 12u);
        QCOMPARE(hp.rms_norm_eps, 1e-6f);
        QCOMPARE(hp.rope_freq_base, 500000.0f);
        QCOMPARE(hp.rope_scale_linear, 2.0f);
        QVERIFY(hp.rope_style == folio::RopeStyle::SplitHalf);
        QVERIFY(hp.tied_embeddings);
        QCOMPARE(hp.norm_weight_offset, 0.0f);
        QCOMPARE(hp.sliding_window, 0u);  // Mistral-style windows are not kept for llama (as GGUF does)

        // 1 + 9 per layer + output_norm; the tied model has no output.weight.
        QCOMPARE(m.tensors.size(), size_t(1 + 9 * 2 + 1));
        QVERIFY(m.find_tensor("output.weight") == nullptr);
        const folio::TensorView* q = m.find_tensor("blk.1.attn_q.weight");
        QVERIFY(q != nullptr);
        QVERIFY(q->type == folio::TensorType::F32);
        QVERIFY((q->shape == std::vector<int64_t>{8, 8}));
        const folio::TensorView* k = m.find_tensor("blk.0.attn_k.weight");
        QVERIFY(k != nullptr);
        QVERIFY((k->shape == std::vector<int64_t>{8, 4}));  // GGML order: in_features first
        const folio::TensorView* down = m.find_tensor("blk.0.ffn_down.weight");
        QVERIFY(down != nullptr);
        QVERIFY(down->type == folio::TensorType::BF16);
        QVERIFY((down->shape == std::vector<int64_t>{12, 8}));
        QCOMPARE(down->nbytes, uint64_t(12 * 8 * 2));
        QVERIFY(m.find_tensor("blk.1.ffn_norm.weight")->type == folio::TensorType::F16);
        QVERIFY(m.find_tensor("output_norm.weight") != nullptr);

        // Views point at the right bytes: the embedding's values are tag 0 + i/2, k_proj of layer 0 is tag 300.
        const folio::TensorView* embd = m.find_tensor("token_embd.weight");
        QVERIFY((embd->shape == std::vector<int64_t>{8, 6}));
        QCOMPARE(f32_at(*embd, 3), 1.5f);
        QCOMPARE(f32_at(*k, 0), 300.0f);
        QCOMPARE(f32_at(*k, 9), 304.5f);

        QCOMPARE(m.tokenizer.tokens.size(), size_t(6));
        QCOMPARE(m.tokenizer.bos_id, 0);
        QCOMPARE(m.tokenizer.eos_id, 1);
        QCOMPARE(m.chat_template, std::string("{% for m in messages %}{{ m['content'] }}{% endfor %}"));

        uint64_t bytes = 0;
        for (const auto& t : m.tensors) bytes += t.nbytes;
        QCOMPARE(m.weight_bytes(), bytes);
        QCOMPARE(m.kv_bytes_per_token(2), uint64_t(2 * 2 * 1 * 4 * 2));
    }

    // Qwen3: per-head Q/K norms, required; Gemma 2: Gemma 3's norms without them.
    void describesQwen3AndGemma2Folders() {
        const fs::path qwen3 = dir_ / "tiny-qwen3";
        TinyLlama::write_folder(qwen3, true, false, "qwen3");
        auto q = folio::load_hf_folder_model(qwen3.string());
        QVERIFY2(q.ok(), error_of(q).c_str());
        QCOMPARE(q->hparams.architecture, std::string("qwen3"));
        QCOMPARE(q->tensors.size(), size_t(1 + 11 * 2 + 1));
        const folio::TensorView* k_norm = q->find_tensor("blk.1.attn_k_norm.weight");
        QVERIFY(k_norm != nullptr);
        QVERIFY((k_norm->shape == std::vector<int64_t>{4}));
        QVERIFY(q->find_tensor("blk.0.ffn_norm.weight") != nullptr);
        QCOMPARE(q->hparams.norm_weight_offset, 0.0f);

        const fs::path gemma2 = dir_ / "tiny-gemma2";
        TinyLlama::write_folder(gemma2, true, false, "gemma2");
        auto g = folio::load_hf_folder_model(gemma2.string());
        QVERIFY2(g.ok(), error_of(g).c_str());
        QCOMPARE(g->hparams.architecture, std::string("gemma2"));
        QCOMPARE(g->tensors.size(), size_t(1 + 11 * 2 + 1));
        QVERIFY(g->find_tensor("blk.1.post_ffw_norm.weight") != nullptr);
        QVERIFY(g->find_tensor("blk.1.attn_q_norm.weight") == nullptr);
        QCOMPARE(g->hparams.sliding_window_pattern, 2u);
        QCOMPARE(g->hparams.norm_weight_offset, 1.0f);

        // A qwen3 folder without its Q/K norms is refused, naming the tensor.
        const std::string missing = load_error_after("qwen3-no-norms", [](const fs::path& dir) {
            auto specs = TinyLlama::tensors(false, "qwen3");
            std::erase_if(specs, [](const hf_fixture::TensorSpec& t) { return t.name.find("q_norm") != std::string::npos; });
            hf_fixture::write_file(dir / "model.safetensors", hf_fixture::safetensors_file(specs));
            hf_fixture::write_file(dir / "config.json", TinyLlama::config_json(true, "qwen3"));
        });
        QVERIFY2(contains(missing, "attn_q_norm.weight"), missing.c_str());
    }

    void describesQwen2FolderWithBiases() {
        const fs::path dir = dir_ / "tiny-qwen2";
        TinyLlama::write_folder(dir, true, false, "qwen2");
        auto r = folio::load_hf_folder_model(dir.string());
        QVERIFY2(r.ok(), error_of(r).c_str());
        QCOMPARE(r->hparams.architecture, std::string("qwen2"));
        QCOMPARE(r->tensors.size(), size_t(1 + 12 * 2 + 1));
        const folio::TensorView* bias = r->find_tensor("blk.1.attn_k.bias");
        QVERIFY(bias != nullptr);
        QVERIFY((bias->shape == std::vector<int64_t>{4}));
        QVERIFY(r->find_tensor("blk.0.ffn_norm.weight") != nullptr);
    }

    void describesGemma3Folder() {
        const fs::path dir = dir_ / "tiny-gemma3";
        TinyLlama::write_folder(dir, true, false, "gemma3_text");
        auto r = folio::load_hf_folder_model(dir.string());
        QVERIFY2(r.ok(), error_of(r).c_str());
        const folio::HParams& hp = r->hparams;
        QCOMPARE(hp.architecture, std::string("gemma3"));
        QCOMPARE(hp.norm_weight_offset, 1.0f);
        QCOMPARE(hp.sliding_window, 4u);
        QCOMPARE(hp.sliding_window_pattern, 6u);
        QCOMPARE(hp.rope_freq_base, 500000.0f);
        QCOMPARE(hp.rope_freq_base_swa, 10000.0f);
        QCOMPARE(hp.rope_scale_linear, 2.0f);
        QCOMPARE(hp.query_pre_attn_scalar, 4.0f);
        QCOMPARE(r->tensors.size(), size_t(1 + 13 * 2 + 1));
        // Gemma's post-attention norm is its own tensor; the pre-MLP norm is GGUF's ffn_norm.
        const folio::TensorView* post_attn = r->find_tensor("blk.0.post_attention_norm.weight");
        const folio::TensorView* pre_ffn = r->find_tensor("blk.0.ffn_norm.weight");
        QVERIFY(post_attn != nullptr && pre_ffn != nullptr);
        QVERIFY(post_attn->type == folio::TensorType::F16);  // post_attention_layernorm in the fixture
        QVERIFY(pre_ffn->type == folio::TensorType::F32);    // pre_feedforward_layernorm
        QVERIFY(r->find_tensor("blk.1.post_ffw_norm.weight") != nullptr);
        QVERIFY((r->find_tensor("blk.1.attn_q_norm.weight")->shape == std::vector<int64_t>{4}));
        QVERIFY(r->find_tensor("blk.1.attn_k_norm.weight") != nullptr);

        // Without its per-head norms a Gemma 3 folder is incomplete.
        auto tensors = TinyLlama::tensors(false, "gemma3_text");
        std::erase_if(tensors, [](const hf_fixture::TensorSpec& t) { return t.name == "model.layers.1.self_attn.q_norm.weight"; });
        hf_fixture::write_file(dir / "model.safetensors", hf_fixture::safetensors_file(tensors));
        auto incomplete = folio::load_hf_folder_model(dir.string());
        QVERIFY(!incomplete.ok());
        QVERIFY2(contains(incomplete.error().message, "blk.1.attn_q_norm.weight"), incomplete.error().message.c_str());
    }

    void nameIsTheFolderNameAsGiven() {
        const fs::path dir = dir_ / "named-model";
        TinyLlama::write_folder(dir);
        fs::create_directory_symlink(dir, dir_ / "alias-model");
        auto dotted = folio::load_hf_folder_model((dir / ".").string());
        QVERIFY2(dotted.ok(), error_of(dotted).c_str());
        QCOMPARE(dotted->name, std::string("named-model"));
        auto aliased = folio::load_hf_folder_model((dir_ / "alias-model").string());
        QVERIFY2(aliased.ok(), error_of(aliased).c_str());
        QCOMPARE(aliased->name, std::string("alias-model"));
    }

    void untiedCheckpointKeepsItsOutputProjection() {
        const fs::path dir = dir_ / "untied";
        TinyLlama::write_folder(dir, /*tie=*/false, /*with_lm_head=*/true);
        auto r = folio::load_hf_folder_model(dir.string());
        QVERIFY2(r.ok(), error_of(r).c_str());
        QVERIFY(!r->hparams.tied_embeddings);
        const folio::TensorView* out = r->find_tensor("output.weight");
        QVERIFY(out != nullptr);
        QVERIFY((out->shape == std::vector<int64_t>{8, 6}));
    }

    void tiedCheckpointIgnoresASavedLmHead() {
        const fs::path dir = dir_ / "tied_with_head";
        TinyLlama::write_folder(dir, /*tie=*/true, /*with_lm_head=*/true);
        auto r = folio::load_hf_folder_model(dir.string());
        QVERIFY2(r.ok(), error_of(r).c_str());
        QVERIFY(r->hparams.tied_embeddings);
        QVERIFY(r->find_tensor("output.weight") == nullptr);
    }

    void missingLmHeadMeansTiedWhateverTheConfigSays() {
        const fs::path dir = dir_ / "untied_config_no_head";
        TinyLlama::write_folder(dir, /*tie=*/false, /*with_lm_head=*/false);
        auto r = folio::load_hf_folder_model(dir.string());
        QVERIFY2(r.ok(), error_of(r).c_str());
        QVERIFY(r->hparams.tied_embeddings);
    }

    void readsChatTemplateJinjaFirst() {
        const std::string err = load_error_after("jinja", [](const fs::path& dir) {
            hf_fixture::write_file(dir / "chat_template.jinja", "{{ messages[0]['content'] }}");
        });
        QVERIFY2(err.empty(), err.c_str());
        auto r = folio::load_hf_folder_model((dir_ / "jinja").string());
        QVERIFY(r.ok());
        QCOMPARE(r->chat_template, std::string("{{ messages[0]['content'] }}"));
    }

    void errorsNameWhatIsWrong() {
        std::string err = load_error_after("no_config", [](const fs::path& dir) { fs::remove(dir / "config.json"); });
        QVERIFY2(contains(err, "config.json"), err.c_str());

        err = load_error_after("no_tokenizer", [](const fs::path& dir) { fs::remove(dir / "tokenizer.json"); });
        QVERIFY2(contains(err, "tokenizer.json"), err.c_str());

        err = load_error_after("no_weights", [](const fs::path& dir) { fs::remove(dir / "model.safetensors"); });
        QVERIFY2(contains(err, "model.safetensors"), err.c_str());

        err = load_error_after("unknown_type", [](const fs::path& dir) {
            hf_fixture::write_file(dir / "config.json", R"({"model_type": "mamba", "vocab_size": 6})");
        });
        QVERIFY2(contains(err, "model_type 'mamba'"), err.c_str());

        err = load_error_after("unknown_tensor", [](const fs::path& dir) {
            auto tensors = TinyLlama::tensors(false);
            tensors.push_back({"model.layers.0.self_attn.rotary_proj.weight", "F32", {2}, {1, 2}});
            hf_fixture::write_file(dir / "model.safetensors", hf_fixture::safetensors_file(tensors));
        });
        QVERIFY2(contains(err, "model.layers.0.self_attn.rotary_proj.weight"), err.c_str());

        err = load_error_after("missing_tensor", [](const fs::path& dir) {
            auto tensors = TinyLlama::tensors(false);
            tensors.erase(tensors.begin() + 3);  // layer 0 k_proj
            hf_fixture::write_file(dir / "model.safetensors", hf_fixture::safetensors_file(tensors));
        });
        QVERIFY2(contains(err, "blk.0.attn_k.weight"), err.c_str());

        err = load_error_after("wrong_layers", [](const fs::path& dir) {
            std::string config = TinyLlama::config_json(true);
            config.replace(config.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 1");
            hf_fixture::write_file(dir / "config.json", config);
        });
        QVERIFY2(contains(err, "blk.1.") && contains(err, "num_hidden_layers"), err.c_str());

        err = load_error_after("wrong_shape", [](const fs::path& dir) {
            std::string config = TinyLlama::config_json(true);
            config.replace(config.find("\"intermediate_size\": 12"), 23, "\"intermediate_size\": 16");
            hf_fixture::write_file(dir / "config.json", config);
        });
        QVERIFY2(contains(err, "ffn_gate") && contains(err, "[8, 16]"), err.c_str());

        err = load_error_after("bad_weights", [](const fs::path& dir) {
            hf_fixture::write_file(dir / "model.safetensors", std::string("\x08\0\0\0\0\0\0\0{}", 10));
        });
        QVERIFY2(contains(err, "model.safetensors"), err.c_str());
    }

    void loaderDispatchesOnWhatThePathIs() {
        auto absent = folio::load_model_description((dir_ / "nothing-here").string());
        QVERIFY(!absent.ok());
        QVERIFY2(contains(absent.error().message, "does not exist"), absent.error().message.c_str());

        const fs::path empty_dir = dir_ / "empty";
        fs::create_directories(empty_dir);
        auto not_hf = folio::load_model_description(empty_dir.string());
        QVERIFY(!not_hf.ok());
        QVERIFY2(contains(not_hf.error().message, "neither a GGUF file nor a Hugging Face model folder (no config.json)"),
                 not_hf.error().message.c_str());

        const fs::path text = dir_ / "notes.txt";
        hf_fixture::write_file(text, "GGU");
        auto not_gguf = folio::load_model_description(text.string());
        QVERIFY(!not_gguf.ok());
        QVERIFY2(contains(not_gguf.error().message, "neither a GGUF file"), not_gguf.error().message.c_str());

        // The magic alone routes to the GGUF reader, whose own error then names the problem.
        const fs::path fake = dir_ / "fake.gguf";
        hf_fixture::write_file(fake, "GGUF\x03");
        auto bad_gguf = folio::load_model_description(fake.string());
        QVERIFY(!bad_gguf.ok());
        QVERIFY2(!contains(bad_gguf.error().message, "neither"), bad_gguf.error().message.c_str());
    }

    void mapsTensorNamesPerArchitecture() {
        using folio::hf::gguf_tensor_name;
        QCOMPARE(gguf_tensor_name("model.embed_tokens.weight", "llama").value_or(""), std::string("token_embd.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.12.self_attn.o_proj.weight", "llama").value_or(""),
                 std::string("blk.12.attn_output.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.0.self_attn.q_proj.bias", "qwen2").value_or(""),
                 std::string("blk.0.attn_q.bias"));
        QCOMPARE(gguf_tensor_name("model.layers.3.post_attention_layernorm.weight", "llama").value_or(""),
                 std::string("blk.3.ffn_norm.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.3.post_attention_layernorm.weight", "gemma3").value_or(""),
                 std::string("blk.3.post_attention_norm.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.3.pre_feedforward_layernorm.weight", "gemma3").value_or(""),
                 std::string("blk.3.ffn_norm.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.3.post_feedforward_layernorm.weight", "gemma3").value_or(""),
                 std::string("blk.3.post_ffw_norm.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.3.self_attn.k_norm.weight", "gemma3").value_or(""),
                 std::string("blk.3.attn_k_norm.weight"));
        QCOMPARE(gguf_tensor_name("lm_head.weight", "llama").value_or(""), std::string("output.weight"));
        QVERIFY(!gguf_tensor_name("model.layers.3.pre_feedforward_layernorm.weight", "llama"));
        QVERIFY(!gguf_tensor_name("model.layers.x.mlp.up_proj.weight", "llama"));
        QVERIFY(!gguf_tensor_name("model.layers.1", "llama"));
        QVERIFY(!gguf_tensor_name("model.layers..mlp.up_proj.weight", "llama"));
        QVERIFY(folio::hf::is_ignored_tensor("model.layers.0.self_attn.rotary_emb.inv_freq"));
    }

    void readsGemma3Config() {
        auto r = folio::hf::parse_config(kGemma3Config, "config.json");
        QVERIFY2(r.ok(), error_of(r).c_str());
        const folio::HParams& hp = r->hparams;
        QCOMPARE(hp.architecture, std::string("gemma3"));
        QCOMPARE(hp.head_dim, 256u);
        QCOMPARE(hp.n_head_kv, 1u);
        QCOMPARE(hp.rope_freq_base, 1000000.0f);
        QCOMPARE(hp.rope_freq_base_swa, 10000.0f);
        QCOMPARE(hp.sliding_window, 512u);
        QCOMPARE(hp.sliding_window_pattern, 6u);
        QCOMPARE(hp.query_pre_attn_scalar, 256.0f);
        QCOMPARE(hp.final_logit_softcap, 0.0f);
        QCOMPARE(hp.norm_weight_offset, 1.0f);
        QVERIFY(hp.rope_style == folio::RopeStyle::SplitHalf);
        QVERIFY(r->tie_word_embeddings);  // Gemma3TextConfig's default
    }

    // transformers 5 writes rope_parameters and layer_types instead of rope_theta and the pattern.
    void readsTransformers5Configs() {
        auto llama = folio::hf::parse_config(R"({"model_type": "mistral", "vocab_size": 32, "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 32, "max_position_embeddings": 1024, "rope_parameters": {"rope_theta": 1000000.0,
            "rope_type": "linear", "factor": 4.0}})", "config.json");
        QVERIFY2(llama.ok(), error_of(llama).c_str());
        QCOMPARE(llama->hparams.architecture, std::string("llama"));
        QCOMPARE(llama->hparams.head_dim, 32u);  // explicit, not hidden / heads
        QCOMPARE(llama->hparams.rope_freq_base, 1000000.0f);
        QCOMPARE(llama->hparams.rope_scale_linear, 4.0f);
        QCOMPARE(llama->hparams.rms_norm_eps, 1e-6f);

        auto gemma = folio::hf::parse_config(R"({"model_type": "gemma3_text", "vocab_size": 32, "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 1,
            "head_dim": 16, "max_position_embeddings": 1024, "sliding_window": 128,
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
            "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}})",
                                                 "config.json");
        QVERIFY2(gemma.ok(), error_of(gemma).c_str());
        QCOMPARE(gemma->hparams.sliding_window_pattern, 2u);
        QCOMPARE(gemma->hparams.rope_freq_base, 1000000.0f);
        QCOMPARE(gemma->hparams.rope_freq_base_swa, 10000.0f);
        QCOMPARE(gemma->hparams.rope_scale_linear, 8.0f);
    }

    void refusesConfigsItWouldRunWrong() {
        const std::string base = R"("vocab_size": 32, "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 1024)";
        auto llama3 = folio::hf::parse_config(
            "{\"model_type\": \"llama\", " + base + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})",
            "config.json");
        QVERIFY(!llama3.ok());  // llama3 without low/high_freq_factor and the original context
        QVERIFY2(contains(llama3.error().message, "llama3") && contains(llama3.error().message, "low_freq_factor"),
                 llama3.error().message.c_str());
        // YaRN runs on the llama block (qwen3 here) with llama.cpp's betas; dynamic and
        // longrope (outside phi3), other betas or DeepSeek's mscale are a clear error, never plain RoPE.
        auto yarn = folio::hf::parse_config("{\"model_type\": \"qwen3\", " + base +
                                                R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                "original_max_position_embeddings": 32768}})",
                                            "config.json");
        QVERIFY2(yarn.ok(), yarn.ok() ? "" : yarn.error().message.c_str());
        QCOMPARE(yarn->hparams.rope_yarn_factor, 4.0f);
        QCOMPARE(yarn->hparams.rope_orig_context, 32768u);
        QCOMPARE(yarn->hparams.rope_attn_factor, 1.0f);
        for (const char* extra : {R"("beta_fast": 16)", R"("mscale": 0.707)"}) {
            auto odd = folio::hf::parse_config("{\"model_type\": \"qwen3\", " + base +
                                                   R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                   "original_max_position_embeddings": 32768, )" + extra + "}}",
                                               "config.json");
            QVERIFY2(!odd.ok(), extra);
        }
        auto dynamic = folio::hf::parse_config("{\"model_type\": \"qwen3\", " + base +
                                                   R"(, "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}})",
                                               "config.json");
        QVERIFY(!dynamic.ok());
        QVERIFY2(contains(dynamic.error().message, "'dynamic'"), dynamic.error().message.c_str());
        // llama3 factors belong to the llama graph; a qwen2 config asking for them is refused.
        auto qwen_llama3 = folio::hf::parse_config(
            "{\"model_type\": \"qwen2\", " + base + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
            "config.json");
        QVERIFY(!qwen_llama3.ok());

        auto gelu = folio::hf::parse_config("{\"model_type\": \"llama\", " + base + R"(, "hidden_act": "gelu"})",
                                            "config.json");
        QVERIFY(!gelu.ok());
        QVERIFY2(contains(gelu.error().message, "hidden_act"), gelu.error().message.c_str());

        auto gqa = folio::hf::parse_config("{\"model_type\": \"llama\", " + base + R"(, "num_key_value_heads": 3})",
                                           "config.json");
        QVERIFY(!gqa.ok());
        QVERIFY2(contains(gqa.error().message, "num_key_value_heads"), gqa.error().message.c_str());

        auto missing = folio::hf::parse_config(R"({"model_type": "qwen2", "vocab_size": 32})", "config.json");
        QVERIFY(!missing.ok());
        QVERIFY2(contains(missing.error().message, "config.json") && contains(missing.error().message, "\""),
                 missing.error().message.c_str());

        auto negative = folio::hf::parse_config(R"({"model_type": "llama", "vocab_size": -5})", "config.json");
        QVERIFY(!negative.ok());
        QVERIFY2(contains(negative.error().message, "vocab_size"), negative.error().message.c_str());

        const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
        auto nested = folio::hf::parse_config(R"({"model_type": "llama", "vocab_size": )" + deep + "}", "config.json");
        QVERIFY(!nested.ok());
        QVERIFY2(contains(nested.error().message, "vocab_size") && nested.error().message.size() < 1000,
                 nested.error().message.substr(0, 200).c_str());

        QVERIFY(!folio::hf::parse_config("{nope", "config.json").ok());
        QVERIFY(!folio::hf::parse_config("[]", "config.json").ok());
    }

    // Llama 3.1's config (8B): 64 factors, 1 for the fast pairs, 8 for the
    // slow ones, blended between, rising; rope_theta unchanged.
    void llama3RopeScalingGivesFrequencyFactors() {
        auto r = folio::hf::parse_config(R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
            "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
            "rope_type": "llama3"}})", "config.json");
        QVERIFY2(r.ok(), error_of(r).c_str());
        const std::vector<float>& f = r->hparams.rope_freq_factors;
        QCOMPARE(f.size(), size_t(64));
        QCOMPARE(r->hparams.rope_freq_base, 500000.0f);
        QCOMPARE(r->hparams.rope_scale_linear, 1.0f);
        QCOMPARE(f.front(), 1.0f);
        QCOMPARE(f.back(), 8.0f);
        QVERIFY(std::is_sorted(f.begin(), f.end()));
        int blended = 0;
        for (float x : f) blended += x > 1.0f && x < 8.0f;
        QVERIFY2(blended > 0, "no pair between the two wavelength bounds");
    }

    // The two forms of one model, config.json and GGUF, written by
    // tools/make_arch_gguf.py (the GGUF's rope_freqs computed as
    // convert_hf_to_gguf does, in Python): the same description, the
    // factors within 1e-6 (float32 there, double here), save the RoPE pair
    // layout, which is recorded per form (GGUF llama: interleaved).
    void hfConfigsMapToTheirGgufForms() {
        GGUF_REQUIRE_PYTHON(python);
        const std::string vocab = folio_test::model_path(folio_test::kSmolLM2);
        if (vocab.empty()) {
            if (folio_test::models_required()) QFAIL("test model missing: run scripts/setup.sh");
            QSKIP("needs the SmolLM2 GGUF's vocabulary");
        }
        for (const char* family : {"llama31", "qwen3", "qwen3yarn", "gemma2", "phi3"}) {
            const std::string gguf = (dir_ / (std::string(family) + ".gguf")).string();
            const std::string config = (dir_ / (std::string(family) + ".json")).string();
            std::string output;
            const int status = gguf_fixture::run_command(python + " " + folio_test::source_dir() +
                                                             "/tools/make_arch_gguf.py " + family + " " + gguf +
                                                             " --hf-config " + config + " --vocab-from " + vocab +
                                                             " 2>&1",
                                                         output);
            QVERIFY2(status == 0, output.c_str());
            auto from_gguf = folio::load_model_description(gguf);
            QVERIFY2(from_gguf.ok(), error_of(from_gguf).c_str());
            std::ifstream in(config);
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            auto from_hf = folio::hf::parse_config(text, config);
            QVERIFY2(from_hf.ok(), error_of(from_hf).c_str());
            const folio::HParams &g = from_gguf->hparams, &h = from_hf->hparams;
            QCOMPARE(h.architecture, g.architecture);
            QCOMPARE(h.n_vocab, g.n_vocab);
            QCOMPARE(h.n_ctx_train, g.n_ctx_train);
            QCOMPARE(h.n_embd, g.n_embd);
            QCOMPARE(h.n_layer, g.n_layer);
            QCOMPARE(h.n_head, g.n_head);
            QCOMPARE(h.n_head_kv, g.n_head_kv);
            QCOMPARE(h.head_dim, g.head_dim);
            QCOMPARE(h.n_ff, g.n_ff);
            QCOMPARE(h.rms_norm_eps, g.rms_norm_eps);
            QCOMPARE(h.rope_freq_base, g.rope_freq_base);
            QCOMPARE(h.rope_scale_linear, g.rope_scale_linear);
            QCOMPARE(h.tied_embeddings, g.tied_embeddings);
            QCOMPARE(h.sliding_window, g.sliding_window);
            QCOMPARE(h.sliding_window_pattern, g.sliding_window_pattern);
            QCOMPARE(h.attn_logit_softcap, g.attn_logit_softcap);
            QCOMPARE(h.final_logit_softcap, g.final_logit_softcap);
            if (std::string(family) == "gemma2") {
                QCOMPARE(h.query_pre_attn_scalar, g.query_pre_attn_scalar);
                QCOMPARE(h.norm_weight_offset, 1.0f);  // HF Gemma norms are stored as w - 1, GGUF's with the 1 added
            }
            QCOMPARE(h.rope_freq_factors.size(), g.rope_freq_factors.size());
            QCOMPARE(g.rope_freq_factors.empty(), std::string(family) != "llama31");
            for (size_t i = 0; i < g.rope_freq_factors.size(); ++i)
                QVERIFY2(std::fabs(h.rope_freq_factors[i] - g.rope_freq_factors[i]) <= 1e-6f * g.rope_freq_factors[i],
                         ("factor " + std::to_string(i) + ": config.json " + std::to_string(h.rope_freq_factors[i]) +
                          ", GGUF " + std::to_string(g.rope_freq_factors[i]))
                             .c_str());
            // Phi-3's LongRoPE: both sets, the original context and the attention factor.
            QCOMPARE(g.rope_factors_long.empty(), std::string(family) != "phi3");
            QVERIFY(h.rope_factors_long == g.rope_factors_long);
            QVERIFY(h.rope_factors_short == g.rope_factors_short);
            QCOMPARE(h.rope_orig_context, g.rope_orig_context);
            QCOMPARE(h.rope_attn_factor, g.rope_attn_factor);
            QCOMPARE(h.rope_yarn_factor, g.rope_yarn_factor);
            QCOMPARE(g.rope_yarn_factor > 0.0f, std::string(family) == "qwen3yarn");
            QVERIFY(h.rope_style == folio::RopeStyle::SplitHalf);
            QVERIFY(g.rope_style == (std::string(family) == "llama31" ? folio::RopeStyle::Interleaved
                                                                     : folio::RopeStyle::SplitHalf));
        }
    }

    // Gemma 2 in transformers 4's form: alternation hard-coded, caps by default 50 / 30, null = off.
    void readsGemma2Config() {
        const std::string base = R"("model_type": "gemma2", "vocab_size": 256000, "hidden_size": 2304,
            "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
            "head_dim": 256, "max_position_embeddings": 8192, "hidden_activation": "gelu_pytorch_tanh",
            "hidden_act": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256, "sliding_window": 4096)";
        auto r = folio::hf::parse_config("{" + base + "}", "config.json");
        QVERIFY2(r.ok(), error_of(r).c_str());
        const folio::HParams& hp = r->hparams;
        QCOMPARE(hp.architecture, std::string("gemma2"));
        QCOMPARE(hp.sliding_window, 4096u);
        QCOMPARE(hp.sliding_window_pattern, 2u);
        QCOMPARE(hp.attn_logit_softcap, 50.0f);
        QCOMPARE(hp.final_logit_softcap, 30.0f);
        QCOMPARE(hp.query_pre_attn_scalar, 256.0f);
        QCOMPARE(hp.rope_freq_base, 10000.0f);
        QCOMPARE(hp.norm_weight_offset, 1.0f);
        QVERIFY(r->tie_word_embeddings);
        auto off = folio::hf::parse_config("{" + base + R"(, "attn_logit_softcapping": null})", "config.json");
        QVERIFY2(off.ok(), error_of(off).c_str());
        QCOMPARE(off->hparams.attn_logit_softcap, 0.0f);
        QCOMPARE(off->hparams.final_logit_softcap, 30.0f);
        QCOMPARE(folio::hf::gguf_tensor_name("model.layers.1.pre_feedforward_layernorm.weight", "gemma2").value_or(""),
                 std::string("blk.1.ffn_norm.weight"));
    }

    void mapsQwen3QkNorms() {
        using folio::hf::gguf_tensor_name;
        QCOMPARE(gguf_tensor_name("model.layers.2.self_attn.q_norm.weight", "qwen3").value_or(""),
                 std::string("blk.2.attn_q_norm.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.2.self_attn.k_norm.weight", "qwen3").value_or(""),
                 std::string("blk.2.attn_k_norm.weight"));
        QCOMPARE(gguf_tensor_name("model.layers.2.post_attention_layernorm.weight", "qwen3").value_or(""),
                 std::string("blk.2.ffn_norm.weight"));
        QVERIFY(!gguf_tensor_name("model.layers.2.self_attn.q_norm.weight", "llama"));
    }

    void cleanupTestCase() { fs::remove_all(dir_); }
};

FOLIO_TEST_MAIN(HfFolderTest)
#include "hf_folder_test.moc"
