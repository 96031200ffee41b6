// Files written by GgufWriter read back identically in the reference reader,
// the `gguf` Python package (through tools/gguf_dump_json.py).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "folio_test.h"
#include "gguf_fixture.h"

using namespace folio;
using gguf_fixture::pattern_bytes;

namespace {

std::string hex(std::span<const std::byte> bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::byte b : bytes) {
        out += digits[std::to_integer<int>(b) >> 4];
        out += digits[std::to_integer<int>(b) & 15];
    }
    return out;
}

}  // namespace

class GgufPythonTest : public QObject {
    Q_OBJECT
private slots:
    void pythonReadsWhatWeWrite() {
        GGUF_REQUIRE_PYTHON(python);
        GgufWriter w;
        w.set("general.architecture", GgufValue::string("llama"));
        w.set("t.u8", GgufValue::u8(200));
        w.set("t.i8", GgufValue::i8(-100));
        w.set("t.u16", GgufValue::u16(60000));
        w.set("t.i16", GgufValue::i16(-30000));
        w.set("t.u32", GgufValue::u32(4000000000u));
        w.set("t.i32", GgufValue::i32(-2000000000));
        w.set("t.u64", GgufValue::u64(18000000000000000000ull));
        w.set("t.i64", GgufValue::i64(-9000000000000000000ll));
        w.set("t.f32", GgufValue::f32(0.1f));
        w.set("t.f64", GgufValue::f64(-2.5e-300));
        w.set("t.bool", GgufValue::boolean(true));
        w.set("t.string", GgufValue::string("h\xc3\xa9llo"));
        w.set("t.strings", GgufValue::array(GgufArray::of_strings({"a", "", "<|im_end|>"})));
        w.set("t.floats", GgufValue::array(GgufArray::of_f32({1.5f, -0.0f, 3.25e-8f})));
        w.set("t.ints", GgufValue::array(GgufArray::of_i32({-1, 0, 2147483647})));
        const auto f32_bytes = pattern_bytes(48, 1), q4_bytes = pattern_bytes(72, 2), q6_bytes = pattern_bytes(210, 3);
        QVERIFY(w.add_tensor("a.weight", TensorType::F32, {4, 3}, f32_bytes).ok());
        QVERIFY(w.add_tensor("b.weight", TensorType::Q4_0, {64, 2}, q4_bytes).ok());
        QVERIFY(w.add_tensor("c.weight", TensorType::Q6_K, {256}, q6_bytes).ok());
        const std::string path = gguf_fixture::temp_path("python.gguf");
        QVERIFY(w.write(path).ok());

        std::string output;
        const int status = gguf_fixture::run_command(
            python + " " + folio_test::source_dir() + "/tools/gguf_dump_json.py " + path, output);
        std::filesystem::remove(path);
        QVERIFY2(status == 0, std::string("gguf_dump_json.py failed: " + output).c_str());
        nlohmann::json dump = nlohmann::json::parse(output, nullptr, false);
        QVERIFY2(!dump.is_discarded(), std::string("not JSON: " + output.substr(0, 200)).c_str());

        QCOMPARE(dump["version"].get<int>(), 3);
        QCOMPARE(dump["alignment"].get<int>(), 32);
        const auto& md = dump["metadata"];
        QCOMPARE(md.size(), size_t(16));
        const char* expected_types[] = {"STRING", "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "UINT64",
                                        "INT64", "FLOAT32", "FLOAT64", "BOOL", "STRING", "ARRAY", "ARRAY", "ARRAY"};
        for (size_t i = 0; i < md.size(); ++i) QCOMPARE(md[i]["type"].get<std::string>(), std::string(expected_types[i]));
        QCOMPARE(md[1]["value"].get<int>(), 200);
        QCOMPARE(md[2]["value"].get<int>(), -100);
        QCOMPARE(md[3]["value"].get<int>(), 60000);
        QCOMPARE(md[4]["value"].get<int>(), -30000);
        QCOMPARE(md[5]["value"].get<uint64_t>(), uint64_t(4000000000u));
        QCOMPARE(md[6]["value"].get<int64_t>(), int64_t(-2000000000));
        QCOMPARE(md[7]["value"].get<uint64_t>(), 18000000000000000000ull);
        QCOMPARE(md[8]["value"].get<int64_t>(), -9000000000000000000ll);
        QCOMPARE(md[9]["value"].get<double>(), double(0.1f));
        QCOMPARE(md[10]["value"].get<double>(), -2.5e-300);
        QCOMPARE(md[11]["value"].get<bool>(), true);
        QCOMPARE(md[12]["value"].get<std::string>(), std::string("h\xc3\xa9llo"));
        QCOMPARE(md[13]["element_type"].get<std::string>(), std::string("STRING"));
        QCOMPARE(md[13]["value"].get<std::vector<std::string>>(), (std::vector<std::string>{"a", "", "<|im_end|>"}));
        QCOMPARE(md[14]["element_type"].get<std::string>(), std::string("FLOAT32"));
        QCOMPARE(md[14]["value"].get<std::vector<double>>(), (std::vector<double>{1.5, -0.0, double(3.25e-8f)}));
        QCOMPARE(md[15]["value"].get<std::vector<int64_t>>(), (std::vector<int64_t>{-1, 0, 2147483647}));

        const auto& tensors = dump["tensors"];
        QCOMPARE(tensors.size(), size_t(3));
        QCOMPARE(tensors[0]["type"].get<std::string>(), std::string("F32"));
        QCOMPARE(tensors[0]["shape"].get<std::vector<int64_t>>(), (std::vector<int64_t>{4, 3}));
        QCOMPARE(tensors[0]["data_hex"].get<std::string>(), hex(f32_bytes));
        QCOMPARE(tensors[1]["name"].get<std::string>(), std::string("b.weight"));
        QCOMPARE(tensors[1]["type"].get<std::string>(), std::string("Q4_0"));
        QCOMPARE(tensors[1]["shape"].get<std::vector<int64_t>>(), (std::vector<int64_t>{64, 2}));
        QCOMPARE(tensors[1]["data_hex"].get<std::string>(), hex(q4_bytes));
        QCOMPARE(tensors[2]["type"].get<std::string>(), std::string("Q6_K"));
        QCOMPARE(tensors[2]["nbytes"].get<uint64_t>(), uint64_t(210));
        QCOMPARE(tensors[2]["data_hex"].get<std::string>(), hex(q6_bytes));
    }
};

FOLIO_TEST_MAIN(GgufPythonTest)
#include "gguf_python_test.moc"
