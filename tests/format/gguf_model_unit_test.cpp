// load_gguf_model() on small hand-made files: defaults, architecture rules,
// the tokenizer, and clear errors for missing or inconsistent keys.
#include <filesystem>
#include <span>
#include <vector>

#include "folio_test.h"
#include "format/gguf_model.h"
#include "gguf_fixture.h"

using namespace folio;

namespace {

// The hyper-parameters of a small llama and its token embedding (n_vocab rows).
GgufWriter llama_without_tokenizer(uint32_t n_vocab) {
    GgufWriter w;
    w.set("general.architecture", GgufValue::string("llama"));
    w.set("general.name", GgufValue::string("tiny"));
    w.set("llama.block_count", GgufValue::u32(2));
    w.set("llama.context_length", GgufValue::u32(128));
    w.set("llama.embedding_length", GgufValue::u32(64));
    w.set("llama.feed_forward_length", GgufValue::u32(128));
    w.set("llama.attention.head_count", GgufValue::u32(8));
    (void)w.add_tensor("token_embd.weight", TensorType::Q8_0, {64, n_vocab},
                       gguf_fixture::pattern_bytes(2 * 34 * n_vocab, 9));
    return w;
}

GgufWriter tiny_llama() {
    GgufWriter w = llama_without_tokenizer(4);
    w.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
    w.set("tokenizer.ggml.tokens", GgufValue::array(GgufArray::of_strings({"a", "b", "ab", "<|im_end|>"})));
    w.set("tokenizer.ggml.merges", GgufValue::array(GgufArray::of_strings({"a b"})));
    w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(3));
    return w;
}

Result<ModelDescription> load(const GgufWriter& w) {
    const std::string path = gguf_fixture::temp_path("model.gguf");
    if (auto ok = w.write(path); !ok) return ok.error();
    auto model = load_gguf_model(path);
    std::filesystem::remove(path);  // the mapping stays valid after unlinking
    return model;
}

bool error_mentions(const Result<ModelDescription>& r, const std::string& part) {
    return !r.ok() && r.error().message.find(part) != std::string::npos;
}

}  // namespace

class GgufModelUnitTest : public QObject {
    Q_OBJECT
private slots:
    void llamaDefaults() {
        auto model = load(tiny_llama());
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        const HParams& hp = model->hparams;
        QCOMPARE(model->name, std::string("tiny"));
        QCOMPARE(hp.n_head_kv, 8u);     // defaults to head_count
        QCOMPARE(hp.head_dim, 8u);      // embedding_length / head_count
        QCOMPARE(hp.n_vocab, 4u);       // counted from the tokens
        QCOMPARE(hp.rope_freq_base, 10000.0f);
        QCOMPARE(hp.rope_scale_linear, 1.0f);
        QVERIFY(hp.rope_style == RopeStyle::Interleaved);
        QVERIFY(hp.tied_embeddings);
        QCOMPARE(model->tokenizer.eot_id, 3);  // found by name
        QCOMPARE(model->tokenizer.bos_id, -1);
        QCOMPARE(model->tensors.size(), size_t(1));
        QCOMPARE(model->tensors[0].nbytes, uint64_t(272));
        QCOMPARE(model->tensors[0].data[0], gguf_fixture::pattern_bytes(1, 9)[0]);
    }

    void ropeScalingAndUntiedOutput() {
        GgufWriter w = tiny_llama();
        w.set("llama.rope.scaling.type", GgufValue::string("linear"));
        w.set("llama.rope.scaling.factor", GgufValue::f32(4.0f));
        (void)w.add_tensor("output.weight", TensorType::F32, {64, 4}, gguf_fixture::pattern_bytes(1024, 1));
        auto model = load(w);
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        QCOMPARE(model->hparams.rope_scale_linear, 4.0f);
        QVERIFY(!model->hparams.tied_embeddings);
    }

    // Llama 3.1's rope_freqs.weight: one F32 divisor per rotated pair (heads of 8 here: 4).
    void ropeFrequencyFactorsAreRead() {
        const float factors[4] = {1.0f, 1.5f, 4.0f, 8.0f};
        GgufWriter w = tiny_llama();
        (void)w.add_tensor("rope_freqs.weight", TensorType::F32, {4},
                           std::span(reinterpret_cast<const std::byte*>(factors), sizeof factors));
        auto model = load(w);
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        QVERIFY((model->hparams.rope_freq_factors == std::vector<float>(factors, factors + 4)));

        GgufWriter wrong = tiny_llama();
        (void)wrong.add_tensor("rope_freqs.weight", TensorType::F32, {2},
                               std::span(reinterpret_cast<const std::byte*>(factors), 8));
        QVERIFY(error_mentions(load(wrong), "'rope_freqs.weight' should be F32 of 4 values"));
        const float zero[4] = {1.0f, 0.0f, 1.0f, 1.0f};
        GgufWriter bad = tiny_llama();
        (void)bad.add_tensor("rope_freqs.weight", TensorType::F32, {4},
                             std::span(reinterpret_cast<const std::byte*>(zero), sizeof zero));
        QVERIFY(error_mentions(load(bad), "factors must be positive"));
    }

    // Scalings Folio does not run are load errors, never plain RoPE.
    void unsupportedRopeScalingIsAnError() {
        {
            GgufWriter w = tiny_llama();
            w.set("llama.rope.scaling.type", GgufValue::string("longrope"));
            w.set("llama.rope.scaling.factor", GgufValue::f32(4.0f));
            auto model = load(w);
            QVERIFY2(error_mentions(model, "rope.scaling.type is 'longrope'"),
                     std::string(model.ok() ? "loaded" : model.error().message).c_str());
        }
        // YaRN: read on the llama block, with its original context; DeepSeek's magnitude and factors below 1 refused.
        GgufWriter yarn = tiny_llama();
        yarn.set("llama.rope.scaling.type", GgufValue::string("yarn"));
        yarn.set("llama.rope.scaling.factor", GgufValue::f32(4.0f));
        yarn.set("llama.rope.scaling.original_context_length", GgufValue::u32(256));
        auto yarn_model = load(yarn);
        QVERIFY2(yarn_model, yarn_model ? "" : yarn_model.error().message.c_str());
        QCOMPARE(yarn_model->hparams.rope_yarn_factor, 4.0f);
        QCOMPARE(yarn_model->hparams.rope_orig_context, 256u);
        QCOMPARE(yarn_model->hparams.rope_scale_linear, 1.0f);
        GgufWriter log_mul = yarn;
        log_mul.set("llama.rope.scaling.yarn_log_multiplier", GgufValue::f32(0.1f));
        QVERIFY(error_mentions(load(log_mul), "yarn_log_multiplier"));
        GgufWriter shrink = yarn;
        shrink.set("llama.rope.scaling.factor", GgufValue::f32(0.5f));
        QVERIFY(error_mentions(load(shrink), "YaRN needs rope.scaling.factor >= 1"));
        GgufWriter partial = tiny_llama();
        partial.set("llama.rope.dimension_count", GgufValue::u32(4));  // heads of 8
        QVERIFY(error_mentions(load(partial), "partial rotary"));
    }

    void missingRequiredKeyIsNamed() {
        GgufWriter w;
        w.set("general.architecture", GgufValue::string("llama"));
        w.set("llama.embedding_length", GgufValue::u32(64));
        auto model = load(w);
        QVERIFY2(error_mentions(model, "'llama.block_count' is missing"), std::string(model.ok() ? "loaded" : model.error().message).c_str());
    }

    void unknownArchitectureIsStillDescribed() {
        GgufWriter w;
        w.set("general.architecture", GgufValue::string("mamba9"));
        w.set("mamba9.block_count", GgufValue::u32(3));
        auto model = load(w);
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        QCOMPARE(model->hparams.architecture, std::string("mamba9"));
        QCOMPARE(model->hparams.n_layer, 3u);
    }

    void gemma3Rules() {
        GgufWriter w;
        w.set("general.architecture", GgufValue::string("gemma3"));
        for (auto [key, v] : {std::pair{"block_count", 6u}, std::pair{"context_length", 64u}, std::pair{"embedding_length", 64u},
                              std::pair{"feed_forward_length", 128u}, std::pair{"attention.head_count", 2u},
                              std::pair{"attention.key_length", 48u}, std::pair{"attention.sliding_window", 16u},
                              std::pair{"vocab_size", 10u}})
            w.set(std::string("gemma3.") + key, GgufValue::u32(v));
        auto model = load(w);
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        const HParams& hp = model->hparams;
        QVERIFY(hp.rope_style == RopeStyle::SplitHalf);
        QCOMPARE(hp.head_dim, 48u);
        QCOMPARE(hp.sliding_window, 16u);
        QCOMPARE(hp.sliding_window_pattern, 6u);
        QCOMPARE(hp.rope_freq_base_swa, 10000.0f);
        QCOMPARE(hp.query_pre_attn_scalar, 48.0f);
        QCOMPARE(hp.rms_norm_eps, 1e-6f);
    }

    void inconsistentValuesAreErrors() {
        GgufWriter kv = tiny_llama();
        kv.set("llama.attention.head_count_kv", GgufValue::u32(3));
        QVERIFY(error_mentions(load(kv), "head_count_kv 3 does not divide"));
        GgufWriter id = tiny_llama();
        id.set("tokenizer.ggml.bos_token_id", GgufValue::u32(4));
        QVERIFY(error_mentions(load(id), "'tokenizer.ggml.bos_token_id' is token 4"));
        GgufWriter scores = tiny_llama();
        scores.set("tokenizer.ggml.scores", GgufValue::array(GgufArray::of_f32({1.0f})));
        QVERIFY(error_mentions(load(scores), "tokenizer.ggml.scores has 1 entries for 4 tokens"));
        GgufWriter model = tiny_llama();
        model.set("tokenizer.ggml.model", GgufValue::string("bert"));
        QVERIFY(error_mentions(load(model), "tokenizer model 'bert' is not supported"));
        GgufWriter wrong_type = tiny_llama();
        wrong_type.set("llama.block_count", GgufValue::string("2"));
        QVERIFY(error_mentions(load(wrong_type), "'llama.block_count' should be an unsigned 32-bit integer"));
    }

    // llama.cpp's benchmark files carry no vocabulary (tokenizer.ggml.model
    // "none"): the model gets the byte vocabulary, sized by its embedding.
    void fileWithoutVocabularyGetsByteTokens() {
        GgufWriter w = llama_without_tokenizer(300);
        w.set("tokenizer.ggml.model", GgufValue::string("none"));
        auto model = load(w);
        QVERIFY2(model.ok(), std::string(model.ok() ? "" : model.error().message).c_str());
        QCOMPARE(model->hparams.n_vocab, 300u);
        QCOMPARE(model->tokenizer.tokens.size(), size_t{300});
        QCOMPARE(model->tokenizer.tokens[3 + 'h'], std::string("<0x68>"));
        QCOMPARE(model->tokenizer.bos_id, 1);
        // Too few rows for the byte tokens: an error, not ids past the embedding.
        GgufWriter small = llama_without_tokenizer(200);
        small.set("tokenizer.ggml.model", GgufValue::string("none"));
        QVERIFY(error_mentions(load(small), "has no vocabulary (tokenizer.ggml.model 'none') and 200 token rows"));
    }

    void unsupportedTensorTypeIsNamed() {
        gguf_fixture::RawGguf raw;
        raw.header(3, 1, 1).str("general.architecture").u32(8).str("mamba9");
        raw.tensor_info("w", {256}, 17, 0).pad().zeros(96);  // IQ2_XS: 74 bytes a block
        const std::string path = gguf_fixture::temp_path("iq2.gguf");
        {
            std::FILE* f = std::fopen(path.c_str(), "wb");
            std::fwrite(raw.bytes.data(), 1, raw.bytes.size(), f);
            std::fclose(f);
        }
        auto file = GgufFile::open(path);
        QVERIFY2(file.ok(), std::string(file.ok() ? "" : file.error().message).c_str());  // readable...
        QVERIFY(!file->tensors()[0].type().has_value());
        auto model = load_gguf_model(path);  // ...but not computable
        std::filesystem::remove(path);
        QVERIFY(error_mentions(model, "tensor 'w' has type IQ2_XS"));
    }
};

FOLIO_TEST_MAIN(GgufModelUnitTest)
#include "gguf_model_unit_test.moc"
