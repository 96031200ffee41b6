// The safetensors reader against well-formed and hostile images: every bad
// input is an Error naming the file (and tensor) at fault, never a crash.
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "folio_test.h"
#include "format/safetensors.h"
#include "hf_fixture.h"

namespace st = folio::safetensors;
namespace fs = std::filesystem;

namespace {

folio::Result<std::vector<st::Tensor>> parse_image(const std::string& image) {
    return st::parse(reinterpret_cast<const std::byte*>(image.data()), image.size(), "test.safetensors");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <typename R>
std::string error_of(const R& r) {
    return r.ok() ? std::string() : r.error().message;
}

// A one-tensor header: "w" of `dtype` with `shape` at [begin, end).
std::string one_tensor_header(const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return "{\"w\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}}";
}

}  // namespace

class HfSafetensorsTest : public QObject {
    Q_OBJECT

    fs::path dir_;

    // The error message for `image`, or "" when it parses.
    static std::string expect_error(const std::string& image) {
        auto r = parse_image(image);
        return r.ok() ? std::string() : r.error().message;
    }

private slots:
    void initTestCase() {
        dir_ = fs::temp_directory_path() / ("folio_hf_safetensors_" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }

    void readsTensorsInDataOrderWithTheirBytes() {
        const std::string image = hf_fixture::safetensors_file({
            {"b", "F32", {2, 3}, {1, 2, 3, 4, 5, 6}},
            {"a", "F16", {2}, {1.5f, -2.0f}},
            {"c", "BF16", {1, 1, 2}, {0.5f, 3.0f}},
        });
        auto r = parse_image(image);
        QVERIFY2(r.ok(), error_of(r).c_str());
        QCOMPARE(r->size(), size_t(3));
        const st::Tensor& b = (*r)[0];
        QCOMPARE(b.name, std::string("b"));
        QVERIFY(b.type == folio::TensorType::F32);
        QVERIFY((b.shape == std::vector<int64_t>{2, 3}));
        QCOMPARE(b.nbytes, uint64_t(24));
        float last = 0;
        std::memcpy(&last, b.data + 20, 4);
        QCOMPARE(last, 6.0f);
        QVERIFY((*r)[1].type == folio::TensorType::F16);
        QCOMPARE((*r)[1].nbytes, uint64_t(4));
        QVERIFY((*r)[2].type == folio::TensorType::BF16);
        QVERIFY(((*r)[2].shape == std::vector<int64_t>{1, 1, 2}));
        uint16_t bf = 0;
        std::memcpy(&bf, (*r)[2].data + 2, 2);
        QCOMPARE(bf, uint16_t(0x4040));  // 3.0 in bfloat16
    }

    void ignoresMetadataAndAcceptsEmptyTensors() {
        const std::string image = hf_fixture::safetensors_image(
            "{\"__metadata__\":{\"anything\":\"goes\"},\"e\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0,0]}}", "");
        auto r = parse_image(image);
        QVERIFY2(r.ok(), error_of(r).c_str());
        QCOMPARE(r->size(), size_t(1));
        QCOMPARE((*r)[0].nbytes, uint64_t(0));
    }

    void rejectsTruncatedHeaderLength() {
        const std::string msg = expect_error(std::string("\x10\x00\x00", 3));
        QVERIFY2(contains(msg, "test.safetensors") && contains(msg, "too short"), msg.c_str());
    }

    void rejectsHeaderLengthPastEndOfFile() {
        const std::string header = one_tensor_header("F32", "[1]", "[0,4]");
        const std::string msg = expect_error(hf_fixture::safetensors_image(header, "abcd", header.size() + 100));
        QVERIFY2(contains(msg, "runs past the end of the file"), msg.c_str());
    }

    void rejectsAbsurdHeaderLength() {
        const std::string msg = expect_error(hf_fixture::safetensors_image("{}", "", uint64_t(1) << 62));
        QVERIFY2(contains(msg, "cap"), msg.c_str());
        const std::string all_ones = expect_error(hf_fixture::safetensors_image("{}", "", ~uint64_t(0)));
        QVERIFY2(!all_ones.empty(), "a header length of 2^64-1 must be an error");
    }

    void rejectsBadJson() {
        QVERIFY2(contains(expect_error(hf_fixture::safetensors_image("{\"w\": [1, 2", "")), "not valid JSON"),
                 "truncated JSON");
        QVERIFY2(contains(expect_error(hf_fixture::safetensors_image("[1,2,3]", "")), "not a JSON object"),
                 "array header");
        QVERIFY2(contains(expect_error(hf_fixture::safetensors_image("{\"w\": 5}", "")), "tensor 'w'"),
                 "non-object entry");
        QVERIFY2(contains(expect_error(hf_fixture::safetensors_image(std::string("{\"w\xff\":1}"), "")), "JSON"),
                 "invalid UTF-8");
    }

    void rejectsOffsetsOutOfRange() {
        const std::string msg =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[2]", "[0,8]"), "abcd"));
        QVERIFY2(contains(msg, "tensor 'w'") && contains(msg, "past the data section"), msg.c_str());
        const std::string reversed =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[1]", "[4,0]"), "abcd"));
        QVERIFY2(contains(reversed, "not a range"), reversed.c_str());
        const std::string negative =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[1]", "[-4,0]"), "abcd"));
        QVERIFY2(contains(negative, "not a range"), negative.c_str());
        const std::string three =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[1]", "[0,4,8]"), "abcd"));
        QVERIFY2(contains(three, "data_offsets"), three.c_str());
    }

    void rejectsSizeMismatch() {
        const std::string msg =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[2]", "[0,4]"), "abcdefgh"));
        QVERIFY2(contains(msg, "tensor 'w'") && contains(msg, "needs 8"), msg.c_str());
    }

    void rejectsHugeOrNegativeShapes() {
        const std::string huge = expect_error(hf_fixture::safetensors_image(
            one_tensor_header("F32", "[4294967296,4294967296,16]", "[0,4]"), "abcd"));
        QVERIFY2(contains(huge, "too large"), huge.c_str());
        const std::string negative =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[-1]", "[0,4]"), "abcd"));
        QVERIFY2(contains(negative, "not a size"), negative.c_str());
        const std::string text =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[\"4\"]", "[0,4]"), "abcd"));
        QVERIFY2(contains(text, "not a size"), text.c_str());
    }

    // Printing a value nested a million deep would recurse a million frames; errors never print it.
    void deeplyNestedValuesAreNotPrinted() {
        const std::string deep = std::string(1'000'000, '[') + "1" + std::string(1'000'000, ']');
        const std::string shape_msg =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", deep, "[0,4]"), "abcd"));
        QVERIFY2(contains(shape_msg, "tensor 'w'") && shape_msg.size() < 1000, shape_msg.substr(0, 200).c_str());
        const std::string offsets_msg =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("F32", "[1]", "[0," + deep + "]"), "abcd"));
        QVERIFY2(contains(offsets_msg, "data_offsets") && offsets_msg.size() < 1000, offsets_msg.substr(0, 200).c_str());
    }

    void rejectsUnknownDtypeNamingIt() {
        const std::string msg =
            expect_error(hf_fixture::safetensors_image(one_tensor_header("I64", "[1]", "[0,8]"), "abcdefgh"));
        QVERIFY2(contains(msg, "tensor 'w'") && contains(msg, "I64") && contains(msg, "test.safetensors"), msg.c_str());
        const std::string missing =
            expect_error(hf_fixture::safetensors_image("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"));
        QVERIFY2(contains(missing, "dtype"), missing.c_str());
    }

    void rejectsOverlappingRanges() {
        const std::string header =
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
        const std::string msg = expect_error(hf_fixture::safetensors_image(header, std::string(12, 'x')));
        QVERIFY2(contains(msg, "overlap") && contains(msg, "'a'") && contains(msg, "'b'"), msg.c_str());
    }

    void readsAFileFromDisk() {
        const fs::path path = dir_ / "one.safetensors";
        hf_fixture::write_file(path, hf_fixture::safetensors_file({{"x", "F32", {2}, {7, 8}}}));
        auto r = st::read_file(path.string());
        QVERIFY2(r.ok(), error_of(r).c_str());
        QCOMPARE(r->files.size(), size_t(1));
        QCOMPARE(r->tensors.size(), size_t(1));
        QCOMPARE(r->tensors[0].file, path.string());
        auto missing = st::read_file((dir_ / "absent.safetensors").string());
        QVERIFY(!missing.ok());
        QVERIFY2(contains(missing.error().message, "absent.safetensors"), missing.error().message.c_str());
    }

    void readsAShardedSetThroughItsIndex() {
        const fs::path dir = dir_ / "sharded";
        fs::create_directories(dir);
        hf_fixture::write_file(dir / "s1.safetensors", hf_fixture::safetensors_file({{"x", "F32", {1}, {1}}}));
        hf_fixture::write_file(dir / "s2.safetensors", hf_fixture::safetensors_file({{"y", "F32", {1}, {2}}}));
        hf_fixture::write_file(dir / "model.safetensors.index.json",
                               R"({"metadata":{},"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}})");
        auto r = st::read_index((dir / "model.safetensors.index.json").string());
        QVERIFY2(r.ok(), error_of(r).c_str());
        QCOMPARE(r->files.size(), size_t(2));
        QCOMPARE(r->tensors.size(), size_t(2));
        QCOMPARE(r->tensors[1].name, std::string("y"));
        float y = 0;
        std::memcpy(&y, r->tensors[1].data, 4);
        QCOMPARE(y, 2.0f);
    }

    void rejectsMissingShard() {
        const fs::path dir = dir_ / "missing_shard";
        fs::create_directories(dir);
        hf_fixture::write_file(dir / "s1.safetensors", hf_fixture::safetensors_file({{"x", "F32", {1}, {1}}}));
        hf_fixture::write_file(dir / "model.safetensors.index.json",
                               R"({"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}})");
        auto r = st::read_index((dir / "model.safetensors.index.json").string());
        QVERIFY(!r.ok());
        QVERIFY2(contains(r.error().message, "s2.safetensors") && contains(r.error().message, "'y'"),
                 r.error().message.c_str());
    }

    void rejectsTensorAbsentFromItsShard() {
        const fs::path dir = dir_ / "absent_tensor";
        fs::create_directories(dir);
        hf_fixture::write_file(dir / "s1.safetensors", hf_fixture::safetensors_file({{"x", "F32", {1}, {1}}}));
        hf_fixture::write_file(dir / "model.safetensors.index.json",
                               R"({"weight_map":{"x":"s1.safetensors","z":"s1.safetensors"}})");
        auto r = st::read_index((dir / "model.safetensors.index.json").string());
        QVERIFY(!r.ok());
        QVERIFY2(contains(r.error().message, "'z'") && contains(r.error().message, "does not hold it"),
                 r.error().message.c_str());
    }

    void rejectsHostileIndexes() {
        const fs::path dir = dir_ / "hostile_index";
        fs::create_directories(dir);
        const fs::path index = dir / "model.safetensors.index.json";
        hf_fixture::write_file(index, R"({"weight_map":{"x":"../../etc/passwd"}})");
        auto escape = st::read_index(index.string());
        QVERIFY(!escape.ok());
        QVERIFY2(contains(escape.error().message, "outside the model folder"), escape.error().message.c_str());
        hf_fixture::write_file(index, R"({"weight_map":{"x":7}})");
        QVERIFY(!st::read_index(index.string()).ok());
        hf_fixture::write_file(index, R"({"metadata":{}})");
        auto no_map = st::read_index(index.string());
        QVERIFY(!no_map.ok());
        QVERIFY2(contains(no_map.error().message, "weight_map"), no_map.error().message.c_str());
        hf_fixture::write_file(index, "{\"weight_map\":");
        QVERIFY(!st::read_index(index.string()).ok());
    }

    void rejectsTensorStoredInTwoShards() {
        const fs::path dir = dir_ / "duplicate";
        fs::create_directories(dir);
        hf_fixture::write_file(dir / "s1.safetensors", hf_fixture::safetensors_file({{"x", "F32", {1}, {1}}}));
        hf_fixture::write_file(dir / "s2.safetensors", hf_fixture::safetensors_file({{"x", "F32", {1}, {2}}}));
        hf_fixture::write_file(dir / "model.safetensors.index.json", R"({"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}})");
        auto r = st::read_index((dir / "model.safetensors.index.json").string());
        QVERIFY(!r.ok());
        QVERIFY2(contains(r.error().message, "'x'"), r.error().message.c_str());
    }

    // Every prefix of a valid file is rejected cleanly (the reader never reads past the end).
    void everyTruncationIsAnError() {
        const std::string image = hf_fixture::safetensors_file({{"x", "F32", {3}, {1, 2, 3}}, {"y", "F16", {2}, {1, 2}}});
        for (size_t n = 0; n < image.size(); ++n) {
            auto r = parse_image(image.substr(0, n));
            QVERIFY2(!r.ok(), ("prefix of " + std::to_string(n) + " bytes was accepted").c_str());
        }
        QVERIFY(parse_image(image).ok());
    }

    void cleanupTestCase() { fs::remove_all(dir_); }
};

FOLIO_TEST_MAIN(HfSafetensorsTest)
#include "hf_safetensors_test.moc"
