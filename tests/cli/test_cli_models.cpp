// folio inspect and folio tokenize on the real test models and the HF folder.
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "folio_test.h"

using folio_test::run_folio;
using folio_test::shell_quote;

namespace {

nlohmann::json inspect_json(const std::string& model, const std::string& extra = "") {
    auto r = run_folio("inspect -m " + shell_quote(model) + " --json " + extra);
    if (r.exit_code != 0) return {{"error", r.err}};
    return nlohmann::json::parse(r.out, nullptr, false);
}

}  // namespace

class CliModelsTest : public QObject {
    Q_OBJECT

private slots:
    void inspect_smollm2() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        const auto j = inspect_json(path, "-c 2048");
        QVERIFY2(!j.is_discarded() && !j.contains("error"), j.dump().c_str());
        QCOMPARE(j["architecture"].get<std::string>(), std::string("llama"));
        QCOMPARE(j["hparams"]["n_layer"].get<int>(), 30);
        QCOMPARE(j["hparams"]["n_head"].get<int>(), 9);
        QCOMPARE(j["hparams"]["n_head_kv"].get<int>(), 3);
        QCOMPARE(j["hparams"]["head_dim"].get<int>(), 64);
        QCOMPARE(j["hparams"]["rope_style"].get<std::string>(), std::string("interleaved"));
        QCOMPARE(j["hparams"]["tied_embeddings"].get<bool>(), true);
        QCOMPARE(j["tensors"].size(), size_t(272));
        // 134.5 M parameters in SmolLM2-135M
        QVERIFY(j["parameters"].get<int64_t>() > 134'000'000 && j["parameters"].get<int64_t>() < 135'000'000);
        // K and V, 30 layers, 3 KV heads of 64, F16
        QCOMPARE(j["memory"]["kv_bytes_per_token"].get<uint64_t>(), uint64_t(2 * 30 * 3 * 64 * 2));
        QCOMPARE(j["memory"]["kv_bytes"].get<uint64_t>(), uint64_t(2 * 30 * 3 * 64 * 2) * 2048);
        QCOMPARE(j["tokenizer"]["tokens"].get<int>(), 49152);
        QVERIFY(j["chat_template"].is_string());
        // the quantization mix of this file: Q4_1 210, F32 61, Q8_0 1
        int q4_1 = 0;
        for (const auto& q : j["quantization"])
            if (q["type"] == "Q4_1") q4_1 = q["tensors"].get<int>();
        QCOMPARE(q4_1, 210);
    }

    void inspect_gemma3() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        const auto j = inspect_json(path, "--no-tensors");
        QVERIFY2(!j.is_discarded() && !j.contains("error"), j.dump().c_str());
        QCOMPARE(j["architecture"].get<std::string>(), std::string("gemma3"));
        QCOMPARE(j["hparams"]["n_layer"].get<int>(), 18);
        QCOMPARE(j["hparams"]["head_dim"].get<int>(), 256);
        QCOMPARE(j["hparams"]["sliding_window"].get<int>(), 512);
        QCOMPARE(j["hparams"]["rope_style"].get<std::string>(), std::string("split-half"));
        QVERIFY(!j.contains("tensors"));
        QCOMPARE(j["tokenizer"]["tokens"].get<int>(), 262144);
        QCOMPARE(j["tokenizer"]["model"].get<std::string>(), std::string("sentencepiece"));
        QVERIFY(j["chat_template"].is_null());
        QCOMPARE(j["memory"]["kv_bytes_per_token"].get<uint64_t>(), uint64_t(2 * 18 * 1 * 256 * 2));
    }

    void inspect_text_output_names_the_essentials() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto r = run_folio("inspect -m " + shell_quote(path));
        QCOMPARE(r.exit_code, 0);
        for (const char* needle : {"architecture   llama", "quantization mix", "Q4_1", "KV cache", "blk.29.ffn_down.weight"})
            QVERIFY2(r.out.find(needle) != std::string::npos, needle);
    }

    void hf_folder_describes_the_same_model() {
        FOLIO_REQUIRE_MODEL(gguf, folio_test::kSmolLM2);
        FOLIO_REQUIRE_MODEL(folder, folio_test::kSmolLM2Folder);
        auto a = inspect_json(gguf, "--no-tensors");
        auto b = inspect_json(folder, "--no-tensors");
        QVERIFY2(!b.contains("error"), b.dump().c_str());
        QCOMPARE(b["format"].get<std::string>(), std::string("hf-folder"));
        QCOMPARE(b["hparams"]["rope_style"].get<std::string>(), std::string("split-half"));
        for (const char* key : {"n_vocab", "n_embd", "n_layer", "n_head", "n_head_kv", "head_dim", "n_ff", "tied_embeddings"})
            QVERIFY2(a["hparams"][key] == b["hparams"][key], key);
        QCOMPARE(a["parameters"], b["parameters"]);
        QCOMPARE(a["tokenizer"]["tokens"], b["tokenizer"]["tokens"]);
        QCOMPARE(a["chat_template"], b["chat_template"]);
    }

    // Expected ids from the Hugging Face reference tokenizer:
    //   .venv/bin/python -c "import sys; sys.path.insert(0,'tools'); import reference_tokenizer as rt;
    //     print(rt.hf_tokenizer_for_gguf('models/<model>.gguf').encode('<text>').ids)"
    void tokenize_ids_match_the_reference() {
        FOLIO_REQUIRE_MODEL(smol, folio_test::kSmolLM2);
        FOLIO_REQUIRE_MODEL(gemma, folio_test::kGemma3);
        const std::string text = "Hello, Folio! What is a paged KV cache?";
        auto r = run_folio("tokenize -m " + shell_quote(smol) + " --ids -p " + shell_quote(text));
        QCOMPARE(r.exit_code, 0);
        QCOMPARE(r.out, std::string("19556 28 23381 1119 17 1812 314 253 273 2450 659 70 13842 47\n"));
        r = run_folio("tokenize -m " + shell_quote(gemma) + " --ids -p " + shell_quote(text));
        QCOMPARE(r.exit_code, 0);
        QCOMPARE(r.out, std::string("2 9259 236764 21707 897 236888 2900 563 496 510 4130 132182 15612 236881\n"));
        r = run_folio("tokenize -m " + shell_quote(gemma) + " --ids --no-bos -p " + shell_quote(text));
        QCOMPARE(r.out, std::string("9259 236764 21707 897 236888 2900 563 496 510 4130 132182 15612 236881\n"));
        r = run_folio("tokenize -m " + shell_quote(smol) + " --ids -p " + shell_quote("<|im_start|>user\nçava 123"));
        QCOMPARE(r.out, std::string("1 4093 198 11512 6056 216 33 34 35\n"));
    }

    void tokenize_lists_pieces() {
        FOLIO_REQUIRE_MODEL(smol, folio_test::kSmolLM2);
        auto r = run_folio("tokenize -m " + shell_quote(smol) + " -p " + shell_quote("Hello world"));
        QCOMPARE(r.exit_code, 0);
        QVERIFY2(r.out.find("'Hello'") != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("' world'") != std::string::npos, r.out.c_str());
        QVERIFY2(r.err.find("2 tokens") != std::string::npos, r.err.c_str());
    }
};

FOLIO_TEST_MAIN(CliModelsTest)
#include "test_cli_models.moc"
