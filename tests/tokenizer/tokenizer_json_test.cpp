// tokenizer_spec_from_hf_files: the shapes of tokenizer.json we read, and
// clear errors for the ones we do not.
#include <folio_test.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "folio/tokenizer.h"
#include "tiny_vocab.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Ids = std::vector<int32_t>;

fs::path scratch_dir() {
    static const fs::path dir = [] {
        fs::path d = fs::temp_directory_path() / ("folio_tokenizer_json_test_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        fs::create_directories(d);
        return d;
    }();
    return dir;
}

std::string write(const std::string& name, const std::string& text) {
    const fs::path path = scratch_dir() / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

// The tiny byte-level vocabulary as a SmolLM2-shaped tokenizer.json; merges
// in both spellings ("a b" and ["a", "b"]).
json tiny_byte_level_json() {
    const folio::TokenizerSpec spec = tiny_vocab::byte_level();
    json vocab = json::object();
    for (size_t id = 0; id < spec.tokens.size(); ++id) {
        if (spec.kinds[id] == folio::TokenKind::Normal) vocab[spec.tokens[id]] = id;
    }
    json merges = json::array();
    for (size_t i = 0; i < spec.merges.size(); ++i) {
        const std::string& m = spec.merges[i];
        const size_t space = m.find(' ');
        if (i % 2) {
            merges.push_back(m);
        } else {
            merges.push_back(json::array({m.substr(0, space), m.substr(space + 1)}));
        }
    }
    return {
        {"version", "1.0"},
        {"added_tokens", json::array({{{"id", 265}, {"content", "<|end|>"}, {"special", true}, {"normalized", false}}})},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", json::array({
            {{"type", "Digits"}, {"individual_digits", true}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}})}}},
        {"post_processor", nullptr},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", false}}},
    };
}

template <typename R>
std::string why(const R& result) {
    return result.ok() ? std::string() : result.error().message;
}

}  // namespace

class TokenizerJsonTest : public QObject {
    Q_OBJECT
private slots:
    void readsByteLevelBpe() {
        const std::string path = write("byte_level.json", tiny_byte_level_json().dump());
        const std::string config = write("byte_level_config.json",
            R"({"bos_token": {"content": "<|end|>", "special": true}, "eos_token": "<|end|>", "add_bos_token": true})");
        auto spec = folio::tokenizer_spec_from_hf_files(path, config);
        QVERIFY2(spec.ok(), why(spec).c_str());
        QVERIFY(spec->model == folio::TokenizerModel::BytePairEncoding);
        QCOMPARE(spec->tokens.size(), size_t(267));
        QCOMPARE(spec->merges.size(), size_t(10));
        QCOMPARE(spec->merges[0], std::string("l o"));
        QVERIFY(spec->kinds[265] == folio::TokenKind::Control);
        QCOMPARE(spec->bos_id, 265);
        QCOMPARE(spec->eos_id, 265);
        QVERIFY(spec->add_bos);
        QCOMPARE(spec->pre_regexes.size(), size_t(2));  // the digit split, then GPT-2's
        auto tok = folio::Tokenizer::create(*spec);
        QVERIFY2(tok.ok(), why(tok).c_str());
        // Same answers as the hand-checked spec, with smollm's digit split.
        QCOMPARE(tok->encode("low lower<|end|>", false), (Ids{257, 32, 257, 260, 265}));
        QCOMPARE(tok->encode("x 123", true), (Ids{265, 120, 32, 49, 50, 51}));
    }

    void readsSentencePieceShapedBpe() {
        json j = {
            {"added_tokens", json::array({{{"id", 0}, {"content", "<bos>"}, {"special", true}},
                                          {{"id", 6}, {"content", "\n"}, {"special", false}}})},
            {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}},
            {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}}},
            {"post_processor", {{"type", "TemplateProcessing"},
                                {"single", json::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                                        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}},
            {"model", {{"type", "BPE"}, {"byte_fallback", true}, {"unk_token", "<unk>"},
                       {"vocab", {{"<bos>", 0}, {"<unk>", 1}, {"\xE2\x96\x81", 2}, {"a", 3}, {"\xE2\x96\x81" "a", 4},
                                  {"<0x0A>", 5}, {"\n", 6}}},
                       {"merges", json::array({json::array({"\xE2\x96\x81", "a"})})}}},
        };
        auto spec = folio::tokenizer_spec_from_hf_files(write("spm.json", j.dump()), "");
        QVERIFY2(spec.ok(), why(spec).c_str());
        QVERIFY(spec->model == folio::TokenizerModel::SentencePiece);
        QVERIFY(spec->kinds[5] == folio::TokenKind::Byte);
        QVERIFY(spec->kinds[6] == folio::TokenKind::UserDefined);
        QCOMPARE(spec->unk_id, 1);
        QCOMPARE(spec->bos_id, 0);
        QVERIFY(spec->add_bos);  // from the post-processor
        auto tok = folio::Tokenizer::create(*spec);
        QVERIFY2(tok.ok(), why(tok).c_str());
        QCOMPARE(tok->encode("a a\n", true), (Ids{0, 3, 4, 6}));
        QCOMPARE(tok->decode(Ids{0, 3, 4, 6}, true), std::string("a a\n"));
    }

    void malformedJsonIsAnError() {
        const std::string path = write("broken.json", R"({"model": {"type": "BPE", "vocab": {)");
        auto spec = folio::tokenizer_spec_from_hf_files(path, "");
        QVERIFY(!spec);
        QVERIFY2(spec.error().message.find(path) != std::string::npos, spec.error().message.c_str());
        QVERIFY2(spec.error().message.find("not valid JSON") != std::string::npos, spec.error().message.c_str());
        // Well-formed JSON of the wrong shape.
        auto wrong = folio::tokenizer_spec_from_hf_files(write("wrong.json", R"({"model": {"type": "BPE", "vocab": [1]}})"), "");
        QVERIFY(!wrong);
        auto not_tokenizer = folio::tokenizer_spec_from_hf_files(write("array.json", "[1, 2]"), "");
        QVERIFY(!not_tokenizer);
        auto missing = folio::tokenizer_spec_from_hf_files((scratch_dir() / "absent.json").string(), "");
        QVERIFY(!missing);
        QVERIFY2(missing.error().message.find("cannot open") != std::string::npos, missing.error().message.c_str());
    }

    void hostileIdsAreErrors() {
        for (const json& id : {json(-1), json(1 << 30), json("7"), json(1.5)}) {
            json j = tiny_byte_level_json();
            j["model"]["vocab"]["zzz"] = id;
            auto spec = folio::tokenizer_spec_from_hf_files(write("bad_vocab_id.json", j.dump()), "");
            QVERIFY2(!spec, id.dump().c_str());
            QVERIFY2(spec.error().message.find("zzz") != std::string::npos, spec.error().message.c_str());
            j = tiny_byte_level_json();
            j["added_tokens"].push_back({{"id", id}, {"content", "<x>"}, {"special", true}});
            QVERIFY2(!folio::tokenizer_spec_from_hf_files(write("bad_added_id.json", j.dump()), ""), id.dump().c_str());
        }
        json j = tiny_byte_level_json();
        j["model"]["merges"] = json::array({json::array({"l"})});
        QVERIFY(!folio::tokenizer_spec_from_hf_files(write("bad_merge.json", j.dump()), ""));
        j = tiny_byte_level_json();
        j["model"]["vocab"] = json::array();
        QVERIFY(!folio::tokenizer_spec_from_hf_files(write("vocab_array.json", j.dump()), ""));
        // A merge naming unknown tokens never fires; the tokenizer still builds.
        j = tiny_byte_level_json();
        j["model"]["merges"].push_back("nope nada");
        auto spec = folio::tokenizer_spec_from_hf_files(write("unknown_merge.json", j.dump()), "");
        QVERIFY2(spec.ok(), why(spec).c_str());
        QVERIFY(folio::Tokenizer::create(*spec).ok());
    }

    void unsupportedModelsAreNamed() {
        for (const std::string type : {"Unigram", "WordPiece", "WordLevel"}) {
            const std::string path = write(type + ".json", json{{"model", {{"type", type}, {"vocab", json::array()}}}}.dump());
            auto spec = folio::tokenizer_spec_from_hf_files(path, "");
            QVERIFY(!spec);
            const std::string expected = "unsupported tokenizer model '" + type + "' in " + path;
            QVERIFY2(spec.error().message.find(expected) != std::string::npos, spec.error().message.c_str());
        }
        json lower = tiny_byte_level_json();
        lower["normalizer"] = {{"type", "Lowercase"}};
        auto spec = folio::tokenizer_spec_from_hf_files(write("lower.json", lower.dump()), "");
        QVERIFY(!spec);
        QVERIFY2(spec.error().message.find("Lowercase") != std::string::npos, spec.error().message.c_str());
    }

    void cleanupTestCase() { fs::remove_all(scratch_dir()); }
};

FOLIO_TEST_MAIN(TokenizerJsonTest)
#include "tokenizer_json_test.moc"
