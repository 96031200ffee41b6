// GgufWriter -> GgufFile: every value type, tensors, alignment and the typed
// getters survive a round trip; the writer refuses inconsistent input.
#include <filesystem>
#include <fstream>

#include "folio_test.h"
#include "gguf_fixture.h"

using namespace folio;
using gguf_fixture::pattern_bytes;

namespace {

// A writer holding one key of every type (nested arrays too) and three tensors.
GgufWriter sample_writer(uint32_t alignment = 32) {
    GgufWriter w(alignment);
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
    w.set("t.string", GgufValue::string("héllo \n world"));
    w.set("t.empty_string", GgufValue::string(""));
    w.set("t.strings", GgufValue::array(GgufArray::of_strings({"a", "", "<|im_end|>"})));
    w.set("t.floats", GgufValue::array(GgufArray::of_f32({1.5f, -0.0f, 3.25e-8f})));
    w.set("t.ints", GgufValue::array(GgufArray::of_i32({-1, 0, 2147483647})));
    w.set("t.empty", GgufValue::array(GgufArray::of_u32({})));
    w.set("t.nested", GgufValue::array(GgufArray::of_arrays({GgufArray::of_u32({1, 2}), GgufArray::of_strings({"x"})})));
    (void)w.add_tensor("a.weight", TensorType::F32, {4, 3}, pattern_bytes(48, 1));
    (void)w.add_tensor("b.weight", TensorType::Q4_0, {64, 2}, pattern_bytes(4 * 18, 2));
    (void)w.add_tensor("c.weight", TensorType::Q6_K, {256}, pattern_bytes(210, 3));
    return w;
}

bool same_bytes(const std::byte* data, const std::vector<std::byte>& expected) {
    return std::equal(expected.begin(), expected.end(), data);
}

}  // namespace

class GgufRoundTripTest : public QObject {
    Q_OBJECT
private slots:
    void everyValueTypeSurvivesRoundTrip() {
        auto bytes = sample_writer().to_bytes();
        QVERIFY(bytes.ok());
        auto file = GgufFile::parse(*bytes, "sample.gguf");
        QVERIFY2(file.ok(), std::string(file.ok() ? "" : file.error().message).c_str());
        QCOMPARE(file->version(), 3u);
        QCOMPARE(file->metadata().size(), size_t(19));
        QCOMPARE(file->metadata()[1].key, std::string("t.u8"));
        QCOMPARE(file->find("t.u8")->type(), GgufValueType::U8);
        QCOMPARE(*file->find("t.u8")->as_u64(), uint64_t(200));
        QCOMPARE(*file->find("t.i8")->as_i64(), int64_t(-100));
        QCOMPARE(file->find("t.u16")->type(), GgufValueType::U16);
        QCOMPARE(*file->find("t.i16")->as_i64(), int64_t(-30000));
        QCOMPARE(*file->get_u32("t.u32"), 4000000000u);
        QCOMPARE(*file->get_i32("t.i32"), -2000000000);
        QCOMPARE(*file->get_u64("t.u64"), 18000000000000000000ull);
        QCOMPARE(*file->find("t.i64")->as_i64(), -9000000000000000000ll);
        QCOMPARE(file->find("t.f32")->type(), GgufValueType::F32);
        QCOMPARE(*file->get_f32("t.f32"), 0.1f);
        QCOMPARE(*file->find("t.f64")->as_f64(), -2.5e-300);
        QCOMPARE(*file->get_bool("t.bool"), true);
        QCOMPARE(*file->get_string("t.string"), std::string("héllo \n world"));
        QCOMPARE(*file->get_string("t.empty_string"), std::string());
        QCOMPARE(*file->get_string_array("t.strings"), (std::vector<std::string>{"a", "", "<|im_end|>"}));
        QCOMPARE(*file->get_f32_array("t.floats"), (std::vector<float>{1.5f, -0.0f, 3.25e-8f}));
        QCOMPARE(*file->get_i32_array("t.ints"), (std::vector<int32_t>{-1, 0, 2147483647}));
        QCOMPARE(file->find("t.empty")->as_array()->size(), size_t(0));
        QCOMPARE(file->find("t.empty")->as_array()->element_type(), GgufValueType::U32);
        const GgufArray* nested = file->find("t.nested")->as_array();
        QVERIFY(nested && nested->element_type() == GgufValueType::Array && nested->size() == 2);
        QCOMPARE(*nested->arrays()[0].element(1).as_u64(), uint64_t(2));
        QCOMPARE(nested->arrays()[1].strings()[0], std::string("x"));

        QCOMPARE(file->tensors().size(), size_t(3));
        const GgufTensorInfo* b = file->find_tensor("b.weight");
        QVERIFY(b);
        QCOMPARE(*b->type(), TensorType::Q4_0);
        QCOMPARE(b->shape, (std::vector<int64_t>{64, 2}));
        QCOMPARE(b->nbytes, uint64_t(72));
        QCOMPARE(b->n_elements(), int64_t(128));
        QVERIFY(same_bytes(b->data, pattern_bytes(72, 2)));
        QVERIFY(same_bytes(file->find_tensor("a.weight")->data, pattern_bytes(48, 1)));
        QVERIFY(same_bytes(file->find_tensor("c.weight")->data, pattern_bytes(210, 3)));
        for (const GgufTensorInfo& t : file->tensors()) QCOMPARE(t.offset % 32, uint64_t(0));
        QCOMPARE(file->data_offset() % 32, uint64_t(0));
    }

    void rewritingReadFileGivesIdenticalBytes() {
        // Reader -> writer -> reader: what the model rewrite test does, in small.
        auto original = sample_writer().to_bytes();
        auto file = GgufFile::parse(*original, "sample.gguf");
        QVERIFY(file.ok());
        GgufWriter w(file->alignment());
        for (const GgufKeyValue& kv : file->metadata()) w.set(kv.key, kv.value);
        for (const GgufTensorInfo& t : file->tensors())
            QVERIFY(w.add_tensor(t.name, *t.type(), t.shape, std::span<const std::byte>(t.data, t.nbytes)).ok());
        auto rewritten = w.to_bytes();
        QVERIFY(rewritten.ok());
        QVERIFY(*rewritten == *original);
    }

    void customAlignmentIsWrittenAndHonoured() {
        auto bytes = sample_writer(64).to_bytes();
        auto file = GgufFile::parse(*bytes, "aligned.gguf");
        QVERIFY2(file.ok(), std::string(file.ok() ? "" : file.error().message).c_str());
        QCOMPARE(file->alignment(), 64u);
        QCOMPARE(*file->get_u32("general.alignment"), 64u);
        QCOMPARE(file->data_offset() % 64, uint64_t(0));
        for (const GgufTensorInfo& t : file->tensors()) QCOMPARE(t.offset % 64, uint64_t(0));
    }

    void getterChecksTypesAndRanges() {
        GgufWriter w;
        w.set("small", GgufValue::u8(7));
        w.set("negative", GgufValue::i64(-1));
        w.set("huge", GgufValue::u64(1ull << 40));
        w.set("text", GgufValue::string("x"));
        w.set("double", GgufValue::f64(0.5));
        auto bytes = w.to_bytes();
        auto file = GgufFile::parse(*bytes, "getters.gguf");
        QVERIFY(file.ok());
        QCOMPARE(*file->get_u32("small"), 7u);      // any integer type that fits
        QCOMPARE(*file->get_i32("small"), 7);
        QCOMPARE(*file->get_i32("negative"), -1);
        QVERIFY(!file->get_u32("negative").ok());
        QVERIFY(!file->get_u32("huge").ok());
        QCOMPARE(*file->get_u64("huge"), 1ull << 40);
        QCOMPARE(*file->get_f32("double"), 0.5f);
        auto wrong = file->get_u32("text");
        QVERIFY(!wrong.ok());
        QVERIFY2(wrong.error().message.find("'text'") != std::string::npos, std::string(wrong.error().message).c_str());
        auto missing = file->get_string("llama.block_count");
        QVERIFY(!missing.ok());
        QVERIFY2(missing.error().message.find("'llama.block_count' is missing") != std::string::npos, std::string(missing.error().message).c_str());
        QCOMPARE(*file->get_u32_or("absent", 42), 42u);
        QVERIFY(!file->get_u32_or("text", 42).ok());  // present with the wrong type is still an error
        QVERIFY(!file->get_bool("small").ok());
    }

    void writerRefusesInconsistentTensors() {
        GgufWriter w;
        QVERIFY(!w.add_tensor("short", TensorType::F32, {4}, pattern_bytes(15, 1)).ok());
        QVERIFY(!w.add_tensor("zero", TensorType::F32, {0}, std::vector<std::byte>{}).ok());
        QVERIFY(!w.add_tensor("five_dims", TensorType::F32, {1, 1, 1, 1, 1}, pattern_bytes(4, 1)).ok());
        QVERIFY(!w.add_tensor("partial_block", TensorType::Q4_K, {128}, pattern_bytes(72, 1)).ok());
        QVERIFY(!w.add_tensor("", TensorType::F32, {1}, pattern_bytes(4, 1)).ok());
        QVERIFY(w.add_tensor("ok", TensorType::F32, {1}, pattern_bytes(4, 1)).ok());
        QVERIFY(!w.add_tensor("ok", TensorType::F32, {1}, pattern_bytes(4, 1)).ok());
        w.set("general.alignment", GgufValue::u32(64));  // disagrees with the writer's 32
        QVERIFY(!w.to_bytes().ok());
    }

    void writeReplacesFileAtomically() {
        const std::string path = gguf_fixture::temp_path("atomic.gguf");
        { std::ofstream(path) << "old contents"; }
        QVERIFY(sample_writer().write(path).ok());
        QVERIFY(!std::filesystem::exists(path + ".tmp"));
        auto file = GgufFile::open(path);
        QVERIFY2(file.ok(), std::string(file.ok() ? "" : file.error().message).c_str());
        QCOMPARE(file->tensors().size(), size_t(3));
        QVERIFY(file->mapping() != nullptr);
        QCOMPARE(file->file_size(), uint64_t(std::filesystem::file_size(path)));
        std::filesystem::remove(path);
        QVERIFY(!sample_writer().write("/nonexistent-dir/x.gguf").ok());
    }
};

FOLIO_TEST_MAIN(GgufRoundTripTest)
#include "gguf_roundtrip_test.moc"
