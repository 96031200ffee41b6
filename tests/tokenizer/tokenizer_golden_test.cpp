// Both test models tokenize every corpus string exactly as Hugging Face
// `tokenizers` does (goldens: tools/make_tokenizer_goldens.py), through the
// GGUF's TokenizerSpec and through the tokenizer.json one; decode(encode(s))
// gives s back wherever the reference round-trips; streaming adds up.
#include <folio_test.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "folio/model.h"
#include "folio/tokenizer.h"

namespace {

using Ids = std::vector<int32_t>;

struct Golden {
    std::string text;
    Ids ids;
    Ids plain_ids;  // without special-token parsing
    bool round_trips = false;
};

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) lines.push_back(line);
    }
    return lines;
}

// Empty when a file is missing or the files disagree in length.
std::vector<Golden> read_goldens(const std::string& ids_file) {
    const auto corpus = read_lines(folio_test::data_path("tokenizer/corpus.jsonl"));
    const auto id_lines = read_lines(folio_test::data_path("tokenizer/" + ids_file));
    std::vector<Golden> goldens;
    if (corpus.size() != id_lines.size()) return goldens;
    for (size_t i = 0; i < corpus.size(); ++i) {
        const auto entry = nlohmann::json::parse(id_lines[i]);
        Ids ids = entry.at("ids").get<Ids>();
        goldens.push_back({nlohmann::json::parse(corpus[i]).get<std::string>(), ids, ids, entry.at("r").get<int>() == 1});
    }
    // Strings whose ids change when special tokens are not parsed.
    const std::string plain_file = ids_file.substr(0, ids_file.size() - 6) + "_plain.jsonl";
    const auto plain = read_lines(folio_test::data_path("tokenizer/" + plain_file));
    if (plain.empty()) return {};
    for (const auto& line : plain) {
        const auto entry = nlohmann::json::parse(line);
        const auto index = entry.at("i").get<size_t>();
        if (index >= goldens.size()) return {};
        goldens[index].plain_ids = entry.at("ids").get<Ids>();
    }
    return goldens;
}

std::string shown(const std::string& s) {
    std::string out;
    for (unsigned char c : s.substr(0, 80)) {
        if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return s.size() > 80 ? out + "..." : out;
}

std::string shown(const Ids& ids, size_t from) {
    std::string out;
    for (size_t i = from; i < ids.size() && i < from + 8; ++i) out += std::to_string(ids[i]) + " ";
    return out;
}

bool valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        }
        i += n;
    }
    return true;
}

double seconds_since(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// Compares every golden; prints the first mismatches with index and position. Returns the count.
size_t check_corpus(const folio::Tokenizer& tok, const std::vector<Golden>& goldens, int32_t bos, const char* label) {
    size_t mismatches = 0, plain_mismatches = 0, round_trip_failures = 0, stream_failures = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < goldens.size(); ++i) {
        const Golden& g = goldens[i];
        const Ids ids = tok.encode(g.text, false);
        if (ids != g.ids) {
            size_t at = 0;
            while (at < ids.size() && at < g.ids.size() && ids[at] == g.ids[at]) ++at;
            if (++mismatches <= 15) {
                std::fprintf(stderr, "%s: string #%zu \"%s\": first difference at token %zu: got [%s] want [%s]\n", label, i,
                             shown(g.text).c_str(), at, shown(ids, at).c_str(), shown(g.ids, at).c_str());
            }
            continue;
        }
        if (tok.encode(g.text, false, false) != g.plain_ids) {
            if (++plain_mismatches <= 5)
                std::fprintf(stderr, "%s: string #%zu \"%s\" differs without special-token parsing\n", label, i,
                             shown(g.text).c_str());
        }
        Ids with_bos = tok.encode(g.text, true);
        if (bos >= 0 && (with_bos.empty() || with_bos.front() != bos)) ++mismatches;
        if (g.round_trips && tok.decode(ids) != g.text) {
            if (++round_trip_failures <= 5)
                std::fprintf(stderr, "%s: string #%zu \"%s\" does not round-trip\n", label, i, shown(g.text).c_str());
        }
        folio::StreamingDecoder stream(tok);
        std::string streamed;
        bool chunks_valid = true;
        for (int32_t id : ids) {
            const std::string chunk = stream.push(id);
            chunks_valid = chunks_valid && valid_utf8(chunk);
            streamed += chunk;
        }
        streamed += stream.flush();
        if (!chunks_valid || streamed != tok.decode(ids)) ++stream_failures;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %zu strings, %zu mismatches (%zu without special-token parsing), %zu round-trip failures, "
                "%zu stream failures, %.2f s\n",
                label, goldens.size(), mismatches, plain_mismatches, round_trip_failures, stream_failures, seconds);
    return mismatches + plain_mismatches + round_trip_failures + stream_failures;
}

template <typename R>
std::string why(const R& result) {
    return result.ok() ? std::string() : result.error().message;
}

}  // namespace

class TokenizerGoldenTest : public QObject {
    Q_OBJECT
private slots:
    void smollm2FromGguf() { from_gguf(folio_test::kSmolLM2, "smollm2_ids.jsonl", -1, {0, 2}); }
    void gemma3FromGguf() { from_gguf(folio_test::kGemma3, "gemma3_ids.jsonl", 2, {1, 106}); }
    void smollm2FromTokenizerJson() { from_json("tokenizers/smollm2", "smollm2_ids.jsonl", -1); }
    void gemma3FromTokenizerJson() { from_json("tokenizers/gemma3", "gemma3_ids.jsonl", 2); }

    // The HF folder fixture (tools/gguf_to_hf.py), read by load_model_description.
    void smollm2FromHfFolder() {
        FOLIO_REQUIRE_MODEL(folder, folio_test::kSmolLM2Folder);
        const auto goldens = read_goldens("smollm2_ids.jsonl");
        QVERIFY2(goldens.size() >= 2000, "corpus and goldens are missing or differ in length");
        auto model = folio::load_model_description(folder);
        QVERIFY2(model.ok(), why(model).c_str());
        auto tok = folio::Tokenizer::create(model->tokenizer);
        QVERIFY2(tok.ok(), why(tok).c_str());
        QCOMPARE(check_corpus(*tok, goldens, -1, folio_test::kSmolLM2Folder), size_t(0));
    }

private:
    // `end_ids`: tokens that must end generation (<|endoftext|>, <|im_end|>; <eos>, <end_of_turn>).
    void from_gguf(const char* model_file, const char* ids_file, int32_t bos, std::vector<int32_t> end_ids) {
        FOLIO_REQUIRE_MODEL(path, model_file);
        const auto goldens = read_goldens(ids_file);
        QVERIFY2(goldens.size() >= 2000, "corpus and goldens are missing or differ in length");
        const auto t0 = std::chrono::steady_clock::now();
        auto model = folio::load_model_description(path);
        QVERIFY2(model.ok(), why(model).c_str());
        const auto t1 = std::chrono::steady_clock::now();
        auto tok = folio::Tokenizer::create(model->tokenizer);
        QVERIFY2(tok.ok(), why(tok).c_str());
        std::printf("%s: model read in %.2f s, tokenizer built in %.2f s\n", model_file, seconds_since(t0, t1),
                    seconds_since(t1, std::chrono::steady_clock::now()));
        QCOMPARE(check_corpus(*tok, goldens, bos, model_file), size_t(0));
        QCOMPARE(tok->add_bos(), bos >= 0);
        QVERIFY(tok->is_end_of_generation(tok->eos_id()));
        for (int32_t id : end_ids) QVERIFY2(tok->is_end_of_generation(id), tok->token_text(id).c_str());
        QCOMPARE(tok->eot_id(), end_ids.back());
        QVERIFY(!tok->is_end_of_generation(tok->encode("Hello", false).front()));
    }

    // tokenizer.json + tokenizer_config.json written by tools/reference_tokenizer.py into
    // models/<dir> (scripts/fetch-models.sh).
    void from_json(const char* dir, const char* ids_file, int32_t bos) {
        FOLIO_REQUIRE_MODEL(folder, dir);
        const auto goldens = read_goldens(ids_file);
        QVERIFY2(goldens.size() >= 2000, "corpus and goldens are missing or differ in length");
        const auto t0 = std::chrono::steady_clock::now();
        auto spec = folio::tokenizer_spec_from_hf_files(folder + "/tokenizer.json", folder + "/tokenizer_config.json");
        QVERIFY2(spec.ok(), why(spec).c_str());
        const auto t1 = std::chrono::steady_clock::now();
        auto tok = folio::Tokenizer::create(*spec);
        QVERIFY2(tok.ok(), why(tok).c_str());
        std::printf("%s: tokenizer.json read in %.2f s, tokenizer built in %.2f s\n", dir, seconds_since(t0, t1),
                    seconds_since(t1, std::chrono::steady_clock::now()));
        QCOMPARE(check_corpus(*tok, goldens, bos, dir), size_t(0));
    }
};

FOLIO_TEST_MAIN(TokenizerGoldenTest)
#include "tokenizer_golden_test.moc"
