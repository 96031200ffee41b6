// The quantizer on the two test models, against llama.cpp's llama-quantize
// (goldens made by tools/make_quant_recipe_goldens.py, command in its
// header): every preset gives each tensor the type llama-quantize gives it,
// and Folio's block quantizers write llama-quantize's bytes for real weights.
// The SmolLM2 Hugging Face folder quantizes to the same tensors as the GGUF
// it was made from (Q/K rows back in GGUF order).
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include <cmath>

#include "folio/backend.h"
#include "folio/dequant.h"
#include "folio/quant_quality.h"
#include "folio/tokenizer.h"
#include "folio/gguf.h"
#include "folio/imatrix.h"
#include "folio/quant.h"
#include "folio/quantize_job.h"
#include "folio_test.h"
#include "quant_fixture.h"

using namespace folio;

namespace {

nlohmann::json load_golden(const std::string& name) {
    std::ifstream in(folio_test::data_path("quant/" + name));
    return nlohmann::json::parse(in, nullptr, false);
}

// tools/make_quant_recipe_goldens.py's weighted-sum-64 of a tensor's bytes.
uint64_t weighted_sum_64(const std::vector<std::byte>& bytes) {
    uint64_t total = 0;
    for (size_t i = 0; i < bytes.size(); ++i)
        total += uint64_t(std::to_integer<uint8_t>(bytes[i])) * ((2 * uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull);
    return total;
}

std::vector<float> values_of(const TensorView& t) {
    std::vector<float> out(size_t(t.n_elements()));
    (void)dequantize(t.type, t.data, t.nbytes, out.data(), t.n_elements());
    return out;
}

// The weighted-sum-64 of `x` (t's shape) quantized to `type_name` row by
// row with `imatrix`'s weights for t (none when it has no entry for t).
std::string imatrix_quantized_hash(const ImportanceMatrix& imatrix, const TensorView& t, const std::vector<float>& x,
                                   const std::string& type_name) {
    std::optional<TensorType> type;
    for (uint32_t id = 0; id < 64; ++id)
        if (auto tt = tensor_type_traits(id); tt && tt->name == type_name) type = tt->type;
    if (!type) return "unknown type " + type_name;
    auto weights = imatrix.weights_for(t.name, t.shape[0]);
    if (!weights) return weights.error().message;
    const int64_t row = t.shape[0];
    const uint64_t row_bytes = quantized_size(*type, row);
    std::vector<std::byte> q(row_bytes * uint64_t(t.n_elements() / row));
    for (int64_t r = 0; r < t.n_elements() / row; ++r)
        if (Status s = quantize_row(*type, std::span<const float>(x.data() + r * row, size_t(row)),
                                    std::span<std::byte>(q.data() + uint64_t(r) * row_bytes, row_bytes), *weights);
            !s)
            return s.error().message;
    return std::to_string(weighted_sum_64(q));
}

}  // namespace

class QuantModelsTest : public QObject {
    Q_OBJECT
private slots:
    void everyPresetPicksLlamaQuantizesTypes() {
        const nlohmann::json golden = load_golden("recipe_goldens.json");
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/quant/recipe_goldens.json");
        for (const auto& [file, presets] : golden["models"].items()) {
            FOLIO_REQUIRE_MODEL(path, file);
            auto model = load_model_description(path);
            QVERIFY2(model.ok(), model.ok() ? "" : model.error().message.c_str());
            for (const auto& [preset_name, want] : presets.items()) {
                const auto preset = parse_preset(preset_name);
                QVERIFY(preset.has_value());
                QCOMPARE(preset_info(*preset).file_type, want["file_type"].get<uint32_t>());
                auto plan = plan_quantization(*model, *preset);
                QVERIFY(plan.ok());
                QCOMPARE(plan->size(), want["tensors"].size());
                for (size_t i = 0; i < plan->size(); ++i) {
                    const std::string name = want["tensors"][i][0].get<std::string>();
                    const std::string type = want["tensors"][i][1].get<std::string>();
                    const TensorPlan& p = (*plan)[i];
                    // The goldens' sources are F32, so a tensor kept as it is is F32 there.
                    const std::string got = std::string(traits(p.quantized ? p.type : TensorType::F32).name);
                    const std::string msg = file + " " + preset_name + " #" + std::to_string(i) + ": " + p.name + " " +
                                            got + ", llama-quantize: " + name + " " + type;
                    QVERIFY2(p.name == name && got == type, msg.c_str());
                }
            }
        }
    }

    void blockQuantizersWriteLlamaQuantizesBytes() {
        const nlohmann::json golden = load_golden("kquant_goldens.json");
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/quant/kquant_goldens.json");
        size_t compared = 0;
        for (const auto& [file, types] : golden["models"].items()) {
            FOLIO_REQUIRE_MODEL(path, file);
            auto model = load_model_description(path);
            QVERIFY(model.ok());
            for (const auto& [type_name, tensors] : types.items()) {
                std::optional<TensorType> type;
                for (uint32_t id = 0; id < 64; ++id)
                    if (auto t = tensor_type_traits(id); t && t->name == type_name) type = t->type;
                QVERIFY(type.has_value());
                for (const auto& [tensor_name, hash] : tensors.items()) {
                    const TensorView* t = model->find_tensor(tensor_name);
                    QVERIFY(t != nullptr);
                    // The golden's source is this tensor dequantized by gguf-py, which dequantize() matches bit for bit.
                    const std::vector<float> x = values_of(*t);
                    const int64_t row = t->shape[0];
                    std::vector<std::byte> q(quantized_size(*type, t->n_elements()));
                    const uint64_t row_bytes = quantized_size(*type, row);
                    for (int64_t r = 0; r < t->n_elements() / row; ++r)
                        QVERIFY(quantize_row(*type, std::span<const float>(x.data() + r * row, size_t(row)),
                                             std::span<std::byte>(q.data() + uint64_t(r) * row_bytes, row_bytes)).ok());
                    const std::string msg = file + " " + type_name + " " + tensor_name + ": bytes differ from llama-quantize's";
                    QVERIFY2(std::to_string(weighted_sum_64(q)) == hash.get<std::string>(), msg.c_str());
                    ++compared;
                }
            }
        }
        QVERIFY(compared >= 20);
    }

    // llama.cpp's llama-perplexity loaded Folio's Q4_K_M files (the same
    // bytes: the tensor data hash is checked) and scored GPL-3; Folio's own
    // perplexity on them agrees within 0.5 %.
    void llamaCppScoresFolioOutputAsFolioDoes() {
        const nlohmann::json golden = load_golden("llamacpp_ppl_goldens.json");
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/quant/llamacpp_ppl_goldens.json");
        std::ifstream in(golden["text"].get<std::string>(), std::ios::binary);
        if (!in) QSKIP("the evaluation text (base-files' GPL-3) is missing");
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (const auto& [file, want] : golden["models"].items()) {
            FOLIO_REQUIRE_MODEL(path, file);
            const std::string out = quant_fixture::temp_path(file + ".Q4_K_M.gguf");
            QuantizeOptions options;
            options.source = path;
            options.output = out;
            options.threads = 2;
            auto report = QuantizeJob(options).run();
            QVERIFY2(report.ok(), report.ok() ? "" : report.error().message.c_str());
            auto written = GgufFile::open(out);
            QVERIFY(written.ok());
            std::vector<std::byte> data;
            for (const GgufTensorInfo& t : written->tensors()) data.insert(data.end(), t.data, t.data + t.nbytes);
            QVERIFY2(std::to_string(weighted_sum_64(data)) == want["tensor_data_hash"].get<std::string>(),
                     (file + ": the quantized tensors are not the ones llama.cpp scored").c_str());

            auto model = load_model_description(out);
            QVERIFY(model.ok());
            BackendOptions backend_options;
            backend_options.n_threads = 2;
            backend_options.max_context = 512;
            auto backend = create_backend(*model, backend_options);
            QVERIFY2(backend.ok(), backend.ok() ? "" : backend.error().message.c_str());
            auto tokenizer = Tokenizer::create(model->tokenizer);
            QVERIFY(tokenizer.ok());
            const std::vector<int32_t> tokens = tokenizer->encode(text, true, false);
            ChunkScoring scoring;
            scoring.n_ctx = golden["n_ctx"].get<int32_t>();
            scoring.n_chunks = golden["chunks"].get<int64_t>();
            scoring.bos = tokenizer->add_bos() ? tokenizer->bos_id() : -1;
            double nll = 0;
            int64_t count = 0;
            const int32_t n_vocab = (*backend)->n_vocab();
            Status s = score_chunks(**backend, tokens, scoring, [&](int64_t, std::span<const float> logits,
                                                                    std::span<const int32_t> targets) -> Status {
                std::vector<uint16_t> record(log_prob_record_size(n_vocab));
                for (size_t i = 0; i < targets.size(); ++i, ++count)
                    nll += compress_log_probs(logits.subspan(i * size_t(n_vocab), size_t(n_vocab)), targets[i], record);
                return {};
            });
            QVERIFY2(s.ok(), s.ok() ? "" : s.error().message.c_str());
            const double ppl = std::exp(nll / double(count)), reference = want["llama_cpp_ppl"].get<double>();
            const std::string msg = file + ": Folio PPL " + std::to_string(ppl) + ", llama.cpp " + std::to_string(reference);
            QVERIFY2(std::fabs(ppl / reference - 1) < 0.005, msg.c_str());
            std::filesystem::remove(out);
            std::filesystem::remove(report->report_path);
        }
    }

    // An importance matrix made by llama-imatrix (three of its entries,
    // tools/make_imatrix_goldens.py) reads as such, and the imatrix-weighted
    // search with it writes llama-quantize --imatrix's bytes.
    void llamaImatrixGivesLlamaQuantizesBytes() {
        const nlohmann::json golden = load_golden("imatrix_goldens.json");
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/quant/imatrix_goldens.json");
        auto imatrix = ImportanceMatrix::read(folio_test::data_path("quant/" + golden["imatrix"].get<std::string>()));
        QVERIFY2(imatrix.ok(), imatrix.ok() ? "" : imatrix.error().message.c_str());
        QCOMPARE(imatrix->chunk_count, 16u);
        QCOMPARE(imatrix->chunk_size, 512u);
        FOLIO_REQUIRE_MODEL(path, "SmolLM2-135M-Instruct.Q4_1.gguf");
        auto model = load_model_description(path);
        QVERIFY(model.ok());
        for (const auto& [name, want] : golden["tensors"].items()) {
            const TensorView* t = model->find_tensor(name);
            QVERIFY(t != nullptr);
            const std::string hash = imatrix_quantized_hash(*imatrix, *t, values_of(*t), want["type"].get<std::string>());
            QVERIFY2(hash == want["hash"].get<std::string>(),
                     (name + " (" + want["type"].get<std::string>() + "): bytes differ from llama-quantize --imatrix's").c_str());
        }
    }

    // The weighted Q4_1 and Q5_1 searches write llama-quantize --imatrix's
    // bytes, on values moved off the grid they came from
    // (tools/make_legacy_imatrix_goldens.py).
    void weightedLegacyQuantsAreLlamaQuantizes() {
        const nlohmann::json golden = load_golden("legacy_imatrix_goldens.json");
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/quant/legacy_imatrix_goldens.json");
        auto imatrix = ImportanceMatrix::read(folio_test::data_path("quant/" + golden["imatrix"].get<std::string>()));
        QVERIFY(imatrix.ok());
        FOLIO_REQUIRE_MODEL(path, "SmolLM2-135M-Instruct.Q4_1.gguf");
        auto model = load_model_description(path);
        QVERIFY(model.ok());
        QCOMPARE(golden["quantized"].size(), size_t{6});
        for (const nlohmann::json& want : golden["quantized"]) {
            const std::string name = want["tensor"].get<std::string>(), type = want["type"].get<std::string>();
            const TensorView* t = model->find_tensor(name);
            QVERIFY(t != nullptr);
            std::vector<float> x = values_of(*t);
            for (size_t i = 0; i < x.size(); ++i) x[i] *= 1.0f + float(i % 7) / 64.0f;
            const std::string hash = imatrix_quantized_hash(*imatrix, *t, x, type);
            QVERIFY2(hash == want["hash"].get<std::string>(),
                     (name + " (" + type + "): bytes differ from llama-quantize --imatrix's").c_str());
            // Without the importance matrix the bytes are the reference quantizer's, not these.
            QVERIFY(imatrix_quantized_hash(ImportanceMatrix{}, *t, x, type) != hash);
        }
    }

    // Folio's own importance matrix against llama-imatrix's on the same
    // text: the F32 SmolLM2 (the HF folder holds the values llama-imatrix
    // read from the F32 GGUF), Folio's default calibration text (what the
    // bench gave llama-imatrix), 16 chunks of 512. The two differ only in
    // float summation order.
    void collectedMatrixMatchesLlamaImatrix() {
        const nlohmann::json golden = load_golden("imatrix_goldens.json");
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/quant/imatrix_goldens.json");
        auto llama = ImportanceMatrix::read(folio_test::data_path("quant/" + golden["imatrix"].get<std::string>()));
        QVERIFY(llama.ok());
        FOLIO_REQUIRE_MODEL(folder, "SmolLM2-135M-Instruct-hf");
        auto text = read_calibration_text(default_calibration_files());
        if (!text) QSKIP("no /usr/share/common-licenses texts to calibrate on");
        auto model = load_model_description(folder);
        QVERIFY(model.ok());
        ImatrixOptions options;
        options.n_ctx = int32_t(llama->chunk_size);
        options.n_chunks = llama->chunk_count;
        options.threads = 2;
        auto ours = collect_imatrix(*model, *text, options);
        QVERIFY2(ours.ok(), ours.ok() ? "" : ours.error().message.c_str());
        QCOMPARE(ours->chunk_count, llama->chunk_count);
        for (const auto& [name, want] : llama->entries) {
            const auto it = ours->entries.find(name);
            QVERIFY2(it != ours->entries.end(), name.c_str());
            auto a = ours->weights_for(name, int64_t(want.sums.size()));
            auto b = llama->weights_for(name, int64_t(want.sums.size()));
            QVERIFY(a.ok() && b.ok());
            double diff = 0, norm = 0;
            for (size_t j = 0; j < b->size(); ++j) {
                diff += double((*a)[j] - (*b)[j]) * double((*a)[j] - (*b)[j]);
                norm += double((*b)[j]) * double((*b)[j]);
            }
            const double rel = std::sqrt(diff / norm);
            std::fprintf(stderr, "%s: mean x^2 per column, relative L2 difference from llama-imatrix %.3g\n",
                         name.c_str(), rel);
            QVERIFY2(rel < 1e-3, (name + ": " + std::to_string(rel)).c_str());
        }
    }

    void hfFolderQuantizesToItsGgufsTensors() {
        FOLIO_REQUIRE_MODEL(gguf, "SmolLM2-135M-Instruct.Q4_1.gguf");
        FOLIO_REQUIRE_MODEL(folder, "SmolLM2-135M-Instruct-hf");
        const std::string a = quant_fixture::temp_path("from-gguf.gguf"), b = quant_fixture::temp_path("from-hf.gguf");
        for (const auto& [src, out] : {std::pair{gguf, a}, std::pair{folder, b}}) {
            QuantizeOptions options;
            options.source = src;
            options.output = out;
            options.preset = QuantPreset::Q8_0;
            options.threads = 2;
            auto report = QuantizeJob(options).run();
            QVERIFY2(report.ok(), report.ok() ? "" : report.error().message.c_str());
            std::filesystem::remove(report->report_path);
        }
        auto from_gguf = GgufFile::open(a);
        auto from_hf = GgufFile::open(b);
        QVERIFY(from_gguf.ok() && from_hf.ok());
        QCOMPARE(from_hf->tensors().size(), from_gguf->tensors().size());
        for (size_t i = 0; i < from_gguf->tensors().size(); ++i) {
            const GgufTensorInfo& x = from_gguf->tensors()[i];
            const GgufTensorInfo& y = from_hf->tensors()[i];
            QCOMPARE(y.name, x.name);
            QCOMPARE(y.ggml_type, x.ggml_type);
            QVERIFY2(x.nbytes == y.nbytes && std::memcmp(x.data, y.data, x.nbytes) == 0, x.name.c_str());
        }
        // The tokenizer the folder's metadata writes is the GGUF's.
        for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre"})
            QCOMPARE(*from_hf->get_string(key), *from_gguf->get_string(key));
        for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"})
            QVERIFY2(*from_hf->get_string_array(key) == *from_gguf->get_string_array(key), key);
        QVERIFY(*from_hf->get_i32_array("tokenizer.ggml.token_type") == *from_gguf->get_i32_array("tokenizer.ggml.token_type"));
        for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "llama.block_count",
                                "llama.embedding_length", "llama.attention.head_count_kv", "llama.vocab_size"})
            QCOMPARE(*from_hf->get_u32(key), *from_gguf->get_u32(key));
        QCOMPARE(*from_hf->get_f32("llama.rope.freq_base"), *from_gguf->get_f32("llama.rope.freq_base"));
        QCOMPARE(*from_hf->get_string("tokenizer.chat_template"), *from_gguf->get_string("tokenizer.chat_template"));
        std::filesystem::remove(a);
        std::filesystem::remove(b);
    }
};

FOLIO_TEST_MAIN(QuantModelsTest)
#include "quant_models_test.moc"
