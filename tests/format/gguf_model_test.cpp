// The two test models through the GGUF reader, load_gguf_model(), the
// reference dequantizer (against gguf-py goldens) and the writer (a rewrite
// that gguf-py reads back identically).
#include <filesystem>

#include "folio/dequant.h"
#include "folio_test.h"
#include "dequant_golden.h"
#include "format/gguf_model.h"
#include "gguf_fixture.h"

using namespace folio;

namespace {

// Dequantizes a tensor row by row and hashes it as make_gguf_goldens.py does.
std::string check_tensor_golden(const GgufFile& file, const nlohmann::json& c) {
    const std::string name = c["tensor"].get<std::string>();
    const GgufTensorInfo* t = file.find_tensor(name);
    if (!t) return "no tensor " + name;
    if (std::string(ggml_type_name(t->ggml_type)) != c["type"].get<std::string>()) return name + ": type differs";
    if (t->n_elements() != c["n_elements"].get<int64_t>()) return name + ": element count differs";
    const TensorTypeTraits traits = *tensor_type_traits(t->ggml_type);
    const int64_t row = t->shape[0];
    const uint64_t row_bytes = uint64_t(row) / traits.block_elems * traits.block_bytes;
    std::vector<float> values(static_cast<size_t>(row));  // one row at a time: Gemma's embedding is 167M values
    uint64_t hash = 0;
    size_t samples_checked = 0;
    for (int64_t r = 0; r < t->n_elements() / row; ++r) {
        Status ok = dequantize(traits.type, t->data + r * row_bytes, row_bytes, values.data(), row);
        if (!ok) return name + ": " + ok.error().message;
        const uint64_t first = uint64_t(r * row);
        hash = dequant_golden::weighted_sum_64(values.data(), size_t(row), first, hash);
        for (const auto& sample : c["samples"]) {
            const uint64_t index = sample[0].get<uint64_t>();
            if (index < first || index >= first + uint64_t(row)) continue;
            ++samples_checked;
            if (dequant_golden::bits_of(values[size_t(index - first)]) != sample[1].get<uint32_t>())
                return name + ": element " + std::to_string(index) + " differs from gguf-py";
        }
    }
    if (samples_checked != c["samples"].size()) return name + ": not every sample was checked";
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    if (hex != c["hash"].get<std::string>()) return name + ": hash " + hex + " differs from gguf-py's " + c["hash"].get<std::string>();
    return {};
}

std::string check_dequant_goldens(const std::string& path, const char* model_file) {
    const nlohmann::json golden = dequant_golden::load();
    if (golden.is_discarded()) return "cannot read dequant_goldens.json";
    auto file = GgufFile::open(path);
    if (!file) return file.error().message;
    const auto& cases = golden["models"][model_file];
    if (cases.size() < 3) return "too few golden tensors";
    for (const auto& c : cases)
        if (std::string problem = check_tensor_golden(*file, c); !problem.empty()) return problem;
    return {};
}

// Re-writes `path` with GgufWriter from GgufFile's view and asks gguf-py
// whether the two files say the same thing.
std::string check_rewrite(const std::string& python, const std::string& path) {
    auto file = GgufFile::open(path);
    if (!file) return file.error().message;
    GgufWriter w(file->alignment());
    for (const GgufKeyValue& kv : file->metadata()) w.set(kv.key, kv.value);
    for (const GgufTensorInfo& t : file->tensors())
        if (auto ok = w.add_tensor(t.name, *t.type(), t.shape, std::span<const std::byte>(t.data, t.nbytes)); !ok)
            return ok.error().message;
    const std::string copy = gguf_fixture::temp_path(std::filesystem::path(path).filename().string());
    if (auto ok = w.write(copy); !ok) return ok.error().message;
    std::string output;
    const int status = gguf_fixture::run_command(
        python + " " + folio_test::source_dir() + "/tools/gguf_dump_json.py --compare " + path + " " + copy + " 2>&1", output);
    const bool same_size = std::filesystem::file_size(copy) == std::filesystem::file_size(path);
    std::filesystem::remove(copy);
    if (status != 0) return "gguf-py sees a difference: " + output;
    if (!same_size) return "rewritten file has another size";
    return {};
}

}  // namespace

class GgufModelTest : public QObject {
    Q_OBJECT
private slots:
    void smolLM2Reads() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto file = GgufFile::open(path);
        QVERIFY2(file.ok(), std::string(file.ok() ? "" : file.error().message).c_str());
        QCOMPARE(file->tensors().size(), size_t(272));
        QCOMPARE(file->metadata().size(), size_t(33));
        QCOMPARE(*file->get_u32("llama.block_count"), 30u);
        QCOMPARE(file->find("tokenizer.ggml.tokens")->as_array()->size(), size_t(49152));
        QCOMPARE(file->find_tensor("token_embd.weight")->shape, (std::vector<int64_t>{576, 49152}));
        QCOMPARE(*file->find_tensor("token_embd.weight")->type(), TensorType::Q8_0);
        QCOMPARE(*file->find_tensor("blk.0.attn_q.weight")->type(), TensorType::Q4_1);
    }

    void smolLM2Describes() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto model = load_gguf_model(path);
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        const HParams& hp = model->hparams;
        QCOMPARE(hp.architecture, std::string("llama"));
        QCOMPARE(hp.n_vocab, 49152u);
        QCOMPARE(hp.n_ctx_train, 8192u);
        QCOMPARE(hp.n_embd, 576u);
        QCOMPARE(hp.n_layer, 30u);
        QCOMPARE(hp.n_head, 9u);
        QCOMPARE(hp.n_head_kv, 3u);
        QCOMPARE(hp.head_dim, 64u);
        QCOMPARE(hp.n_ff, 1536u);
        QCOMPARE(hp.rope_freq_base, 100000.0f);
        QCOMPARE(hp.rms_norm_eps, 1e-5f);
        QVERIFY(hp.rope_style == RopeStyle::Interleaved);
        QVERIFY(hp.tied_embeddings);
        QCOMPARE(hp.sliding_window, 0u);
        QCOMPARE(model->tensors.size(), size_t(272));
        QCOMPARE(model->storage.size(), size_t(1));
        QCOMPARE(model->tensors[0].data, model->storage[0]->data() + 1785664);  // gguf-py's data_offset
        const TokenizerSpec& tok = model->tokenizer;
        QVERIFY(tok.model == TokenizerModel::BytePairEncoding);
        QCOMPARE(tok.pre, std::string("smollm"));
        QCOMPARE(tok.tokens.size(), size_t(49152));
        QCOMPARE(tok.merges.size(), size_t(48900));
        QCOMPARE(tok.kinds.size(), size_t(49152));
        QCOMPARE(tok.bos_id, 1);
        QCOMPARE(tok.eos_id, 2);
        QCOMPARE(tok.eot_id, 2);  // <|im_end|>
        QCOMPARE(tok.tokens[2], std::string("<|im_end|>"));
        QVERIFY(!tok.add_bos);
        QVERIFY(model->chat_template.find("<|im_start|>") != std::string::npos);
    }

    void gemma3Describes() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        auto file = GgufFile::open(path);
        QVERIFY(file.ok());
        QCOMPARE(file->tensors().size(), size_t(236));
        QCOMPARE(*file->get_u32("gemma3.block_count"), 18u);
        auto model = load_gguf_model(path);
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        const HParams& hp = model->hparams;
        QCOMPARE(hp.architecture, std::string("gemma3"));
        QCOMPARE(model->name, std::string("Gemma 3 270m"));
        QCOMPARE(hp.n_vocab, 262144u);
        QCOMPARE(hp.n_embd, 640u);
        QCOMPARE(hp.n_layer, 18u);
        QCOMPARE(hp.n_head, 4u);
        QCOMPARE(hp.n_head_kv, 1u);
        QCOMPARE(hp.head_dim, 256u);  // key_length, not n_embd / n_head
        QCOMPARE(hp.n_ff, 2048u);
        QCOMPARE(hp.rope_freq_base, 1000000.0f);
        QCOMPARE(hp.rope_freq_base_swa, 10000.0f);
        QCOMPARE(hp.sliding_window, 512u);
        QCOMPARE(hp.sliding_window_pattern, 6u);
        QCOMPARE(hp.query_pre_attn_scalar, 256.0f);
        QVERIFY(hp.rope_style == RopeStyle::SplitHalf);
        QVERIFY(hp.tied_embeddings);
        const TokenizerSpec& tok = model->tokenizer;
        QVERIFY(tok.model == TokenizerModel::SentencePiece);
        QCOMPARE(tok.tokens.size(), size_t(262144));
        QCOMPARE(tok.scores.size(), size_t(262144));
        QCOMPARE(tok.bos_id, 2);
        QCOMPARE(tok.eos_id, 1);
        QVERIFY(tok.eot_id > 0);
        QCOMPARE(tok.tokens[size_t(tok.eot_id)], std::string("<end_of_turn>"));
        QVERIFY(tok.add_bos);
        QVERIFY(!tok.add_space_prefix);
        QVERIFY(model->chat_template.empty());
    }

    void dequantMatchesGgufPyOnRealTensors() {
        FOLIO_REQUIRE_MODEL(smol, folio_test::kSmolLM2);
        FOLIO_REQUIRE_MODEL(gemma, folio_test::kGemma3);
        std::string problem = check_dequant_goldens(smol, folio_test::kSmolLM2);
        QVERIFY2(problem.empty(), std::string(problem).c_str());
        problem = check_dequant_goldens(gemma, folio_test::kGemma3);
        QVERIFY2(problem.empty(), std::string(problem).c_str());
    }

    // gguf-py needs about a minute per model here (it builds a Python object
    // per vocabulary entry), hence one slot each and a longer Qt Test watchdog.
    void rewrittenSmolLM2ReadsIdenticallyInGgufPy() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        GGUF_REQUIRE_PYTHON(python);
        const std::string problem = check_rewrite(python, path);
        QVERIFY2(problem.empty(), problem.c_str());
    }

    void rewrittenGemma3ReadsIdenticallyInGgufPy() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        GGUF_REQUIRE_PYTHON(python);
        const std::string problem = check_rewrite(python, path);
        QVERIFY2(problem.empty(), problem.c_str());
    }
};

FOLIO_TEST_MAIN(GgufModelTest)
#include "gguf_model_test.moc"
