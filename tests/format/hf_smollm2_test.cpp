// SmolLM2 read both ways: the GGUF file and the Hugging Face folder that
// tools/gguf_to_hf.py made from it (sharded, F32). The two descriptions must
// agree on every hyper-parameter but the RoPE style, on every tensor name and
// shape, on every weight value (the GGUF side dequantized; Q/K rows
// permuted, which proves the converter's un-permute), and on the tokenizer
// and chat template.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "folio/dequant.h"
#include "folio/model.h"
#include "folio_test.h"

namespace {

template <typename R>
std::string error_of(const R& r) {
    return r.ok() ? std::string() : r.error().message;
}

std::vector<float> as_f32(const folio::TensorView& t) {
    std::vector<float> out(static_cast<size_t>(t.n_elements()));
    folio::Status s = folio::dequantize(t.type, t.data, t.nbytes, out.data(), t.n_elements());
    if (!s) out.clear();
    return out;
}

// llama.cpp's convert_hf_to_gguf permute, on rows of `row_len` values: within
// each head, HF row j*(d/2) + i (rotate-half) becomes GGUF row 2i + j (interleaved pairs).
std::vector<float> permute_rows(const std::vector<float>& hf, int64_t n_head, int64_t head_dim, int64_t row_len) {
    std::vector<float> out(hf.size());
    for (int64_t h = 0; h < n_head; ++h)
        for (int64_t i = 0; i < head_dim / 2; ++i)
            for (int64_t j = 0; j < 2; ++j) {
                const int64_t from = h * head_dim + j * (head_dim / 2) + i;
                const int64_t to = h * head_dim + 2 * i + j;
                std::memcpy(&out[static_cast<size_t>(to * row_len)], &hf[static_cast<size_t>(from * row_len)],
                            static_cast<size_t>(row_len) * sizeof(float));
            }
    return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

class HfSmolLM2Test : public QObject {
    Q_OBJECT

    folio::Result<folio::ModelDescription> gguf_ = folio::make_error("not loaded");
    folio::Result<folio::ModelDescription> hf_ = folio::make_error("not loaded");
    bool have_models_ = false;

    // True when both descriptions are there; otherwise the slot is skipped (failed in CI).
    bool ready() const { return have_models_ && gguf_.ok() && hf_.ok(); }

private slots:
    void initTestCase() {
        const std::string gguf_path = folio_test::model_path(folio_test::kSmolLM2);
        const std::string hf_path = folio_test::model_path(folio_test::kSmolLM2Folder);
        have_models_ = !gguf_path.empty() && !hf_path.empty();
        if (!have_models_) return;
        gguf_ = folio::load_model_description(gguf_path);
        hf_ = folio::load_model_description(hf_path);
    }

    void bothFormsLoad() {
        FOLIO_REQUIRE_MODEL(gguf_path, folio_test::kSmolLM2);
        FOLIO_REQUIRE_MODEL(hf_path, folio_test::kSmolLM2Folder);
        QVERIFY2(gguf_.ok(), error_of(gguf_).c_str());
        QVERIFY2(hf_.ok(), error_of(hf_).c_str());
        QVERIFY(gguf_->format == folio::SourceFormat::Gguf);
        QVERIFY(hf_->format == folio::SourceFormat::HuggingFaceFolder);
        QCOMPARE(hf_->name, std::string(folio_test::kSmolLM2Folder));
        QCOMPARE(hf_->storage.size(), size_t(2));  // the fixture is sharded: the index path is covered
    }

    void hyperParametersAgreeFieldByField() {
        FOLIO_REQUIRE_MODEL(hf_path, folio_test::kSmolLM2Folder);
        QVERIFY(ready());
        const folio::HParams& g = gguf_->hparams;
        const folio::HParams& h = hf_->hparams;
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
        QCOMPARE(h.rope_freq_base_swa, g.rope_freq_base_swa);
        QCOMPARE(h.rope_scale_linear, g.rope_scale_linear);
        QCOMPARE(h.sliding_window, g.sliding_window);
        QCOMPARE(h.sliding_window_pattern, g.sliding_window_pattern);
        QCOMPARE(h.final_logit_softcap, g.final_logit_softcap);
        QCOMPARE(h.attn_logit_softcap, g.attn_logit_softcap);
        QCOMPARE(h.query_pre_attn_scalar, g.query_pre_attn_scalar);
        QCOMPARE(h.tied_embeddings, g.tied_embeddings);
        QCOMPARE(h.norm_weight_offset, g.norm_weight_offset);
        // The one intended difference: the weights keep their own row order.
        QVERIFY(g.rope_style == folio::RopeStyle::Interleaved);
        QVERIFY(h.rope_style == folio::RopeStyle::SplitHalf);
        QCOMPARE(h.architecture, std::string("llama"));
        QCOMPARE(h.n_layer, 30u);
        QVERIFY(h.tied_embeddings);
        QCOMPARE(hf_->kv_bytes_per_token(2), gguf_->kv_bytes_per_token(2));
        QCOMPARE(hf_->kv_bytes_per_token(2), uint64_t(2 * 30 * 3 * 64 * 2));
    }

    void sameTensorNamesAndShapes() {
        FOLIO_REQUIRE_MODEL(hf_path, folio_test::kSmolLM2Folder);
        QVERIFY(ready());
        std::set<std::string> gguf_names, hf_names;
        for (const auto& t : gguf_->tensors) gguf_names.insert(t.name);
        for (const auto& t : hf_->tensors) hf_names.insert(t.name);
        QCOMPARE(hf_names.size(), size_t(272));
        QVERIFY(hf_names == gguf_names);
        for (const auto& g : gguf_->tensors) {
            const folio::TensorView* h = hf_->find_tensor(g.name);
            QVERIFY2(h != nullptr, g.name.c_str());
            QVERIFY2(h->shape == g.shape, g.name.c_str());
            QVERIFY2(h->type == folio::TensorType::F32, g.name.c_str());
        }
        uint64_t elements = 0;
        for (const auto& t : hf_->tensors) elements += static_cast<uint64_t>(t.n_elements());
        QCOMPARE(hf_->weight_bytes(), elements * 4);
    }

    // Every weight, exactly: the converter dequantized with gguf-py, Folio's
    // dequantize() matches it bit for bit, and Q/K differ only by the row permutation.
    void weightValuesMatchTheGgufOnes() {
        FOLIO_REQUIRE_MODEL(hf_path, folio_test::kSmolLM2Folder);
        QVERIFY(ready());
        const folio::HParams& hp = gguf_->hparams;
        size_t permuted = 0;
        for (const auto& g : gguf_->tensors) {
            const folio::TensorView* h = hf_->find_tensor(g.name);
            QVERIFY2(h != nullptr, g.name.c_str());
            const std::vector<float> gguf_values = as_f32(g);
            std::vector<float> hf_values = as_f32(*h);
            QVERIFY2(!gguf_values.empty() && gguf_values.size() == hf_values.size(), g.name.c_str());
            const bool is_q = ends_with(g.name, ".attn_q.weight");
            const bool is_k = ends_with(g.name, ".attn_k.weight");
            if (is_q || is_k) {
                // Unpermuted, the rows must differ (else this would prove nothing).
                QVERIFY2(std::memcmp(hf_values.data(), gguf_values.data(), hf_values.size() * 4) != 0, g.name.c_str());
                hf_values = permute_rows(hf_values, is_q ? hp.n_head : hp.n_head_kv, hp.head_dim, g.shape[0]);
                ++permuted;
            }
            QVERIFY2(std::memcmp(hf_values.data(), gguf_values.data(), hf_values.size() * 4) == 0,
                     ("values differ in " + g.name).c_str());
        }
        QCOMPARE(permuted, size_t(2 * 30));
    }

    void sameTokenizerAndChatTemplate() {
        FOLIO_REQUIRE_MODEL(hf_path, folio_test::kSmolLM2Folder);
        QVERIFY(ready());
        const folio::TokenizerSpec& g = gguf_->tokenizer;
        const folio::TokenizerSpec& h = hf_->tokenizer;
        QVERIFY(h.model == folio::TokenizerModel::BytePairEncoding);
        QCOMPARE(h.tokens.size(), g.tokens.size());
        QCOMPARE(h.tokens.size(), size_t(49152));
        QVERIFY(h.tokens == g.tokens);
        QCOMPARE(h.merges.size(), g.merges.size());
        QCOMPARE(h.bos_id, g.bos_id);
        QCOMPARE(h.eos_id, g.eos_id);
        QCOMPARE(h.add_bos, g.add_bos);
        QVERIFY(!gguf_->chat_template.empty());
        QCOMPARE(hf_->chat_template, gguf_->chat_template);
    }
};

FOLIO_TEST_MAIN(HfSmolLM2Test)
#include "hf_smollm2_test.moc"
