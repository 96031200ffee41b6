// Truncated, corrupted and hostile GGUF files are Errors that name the
// problem and its byte offset, never a crash, a hang or a huge allocation.
#include "folio_test.h"
#include "gguf_fixture.h"

using namespace folio;
using gguf_fixture::RawGguf;

namespace {

bool mentions(const std::string& message, const std::string& part) { return message.find(part) != std::string::npos; }

// Parses and expects an error mentioning every part.
std::string expect_error(const RawGguf& raw, std::initializer_list<std::string> parts) {
    auto file = raw.parse();
    if (file.ok()) return "parsed without error";
    const std::string& message = file.error().message;
    if (!mentions(message, "gguf: test.gguf:")) return "no file name in: " + message;
    if (!mentions(message, "(at byte ")) return "no byte offset in: " + message;
    for (const std::string& part : parts)
        if (!mentions(message, part)) return "'" + part + "' not in: " + message;
    return {};
}

#define EXPECT_GGUF_ERROR(raw, ...)                           \
    do {                                                      \
        const std::string problem = expect_error(raw, {__VA_ARGS__}); \
        QVERIFY2(problem.empty(), std::string(problem).c_str());                   \
    } while (0)

// A valid file: one key, one F32 tensor of 4 elements at offset 0.
RawGguf one_tensor(uint64_t d0 = 4, uint32_t type = 0, uint64_t offset = 0, size_t data_bytes = 16) {
    RawGguf raw;
    raw.header(3, 1, 1).kv_u32("x.n", 1).tensor_info("w", {d0}, type, offset).pad().zeros(data_bytes);
    return raw;
}

}  // namespace

class GgufHostileTest : public QObject {
    Q_OBJECT
private slots:
    void validHandMadeFileParses() {
        auto file = one_tensor().parse();
        QVERIFY2(file.ok(), std::string(file.ok() ? "" : file.error().message).c_str());
        QCOMPARE(file->tensors()[0].nbytes, uint64_t(16));
    }

    void truncationAtEveryByteIsAnError() {
        GgufWriter w;
        w.set("general.architecture", GgufValue::string("llama"));
        w.set("a.list", GgufValue::array(GgufArray::of_strings({"one", "two"})));
        w.set("a.f", GgufValue::f32(1.0f));
        (void)w.add_tensor("t0", TensorType::Q8_0, {32, 2}, gguf_fixture::pattern_bytes(68, 5));
        (void)w.add_tensor("t1", TensorType::F32, {3}, gguf_fixture::pattern_bytes(12, 6));
        auto bytes = w.to_bytes();
        QVERIFY(bytes.ok());
        auto full = GgufFile::parse(*bytes, "full.gguf");
        QVERIFY(full.ok());
        const GgufTensorInfo& last = full->tensors().back();
        const size_t data_end = size_t(full->data_offset() + last.offset + last.nbytes);
        for (size_t n = 0; n < bytes->size(); ++n) {
            auto cut = GgufFile::parse(std::span<const std::byte>(bytes->data(), n), "cut.gguf");
            if (n < data_end) {
                QVERIFY2(!cut.ok(), ("a file cut at byte " + std::to_string(n) + " parsed").c_str());
                QVERIFY2(mentions(cut.error().message, "gguf: cut.gguf:"), std::string(cut.error().message).c_str());
            } else {
                QVERIFY2(cut.ok(), std::string("only trailing padding was cut at " + std::to_string(n)).c_str());  // still whole
            }
        }
    }

    void badMagicIsNotGguf() {
        RawGguf raw;
        raw.u32(0x46554746).u32(3).u64(0).u64(0);
        EXPECT_GGUF_ERROR(raw, "not a GGUF file");
    }

    void versionOneIsRejectedClearly() {
        RawGguf raw;
        raw.header(1, 0, 0);
        EXPECT_GGUF_ERROR(raw, "version 1 is not supported");
        RawGguf future;
        future.header(4, 0, 0);
        EXPECT_GGUF_ERROR(future, "unsupported GGUF version 4");
        RawGguf big_endian;
        big_endian.header(0x03000000, 0, 0);
        EXPECT_GGUF_ERROR(big_endian, "big-endian");
    }

    void versionTwoIsAccepted() {
        RawGguf raw;
        raw.header(2, 0, 1).kv_u32("k", 5);
        auto file = raw.parse();
        QVERIFY2(file.ok(), std::string(file.ok() ? "" : file.error().message).c_str());
        QCOMPARE(file->version(), 2u);
    }

    void hugeCountsAreRefusedBeforeAllocating() {
        RawGguf kv;
        kv.header(3, 0, uint64_t(1) << 60);
        EXPECT_GGUF_ERROR(kv, "metadata key count");
        RawGguf tensors;
        tensors.header(3, uint64_t(1) << 60, 0);
        EXPECT_GGUF_ERROR(tensors, "tensor count");
        RawGguf array;
        array.header(3, 0, 1).str("big").u32(9).u32(4).u64(uint64_t(1) << 61);
        EXPECT_GGUF_ERROR(array, "claims 2305843009213693952 elements");
        RawGguf strings;
        strings.header(3, 0, 1).str("big").u32(9).u32(8).u64(uint64_t(1) << 40);
        EXPECT_GGUF_ERROR(strings, "claims");
    }

    void hugeStringLengthIsTruncation() {
        RawGguf raw;
        raw.header(3, 0, 1).str("name").u32(8).u64(uint64_t(-1));
        EXPECT_GGUF_ERROR(raw, "value of key 'name'", "truncated");
        RawGguf key;
        key.header(3, 0, 1).u64(100000).zeros(100000);
        EXPECT_GGUF_ERROR(key, "100000 bytes long");
    }

    void badValueTypes() {
        RawGguf raw;
        raw.header(3, 0, 1).str("k").u32(13).u32(0);
        EXPECT_GGUF_ERROR(raw, "13 is not a GGUF value type");
        RawGguf element;
        element.header(3, 0, 1).str("k").u32(9).u32(77).u64(0);
        EXPECT_GGUF_ERROR(element, "77 is not a GGUF value type");
        RawGguf boolean;
        boolean.header(3, 0, 1).str("k").u32(7).u8(2).zeros(3);
        EXPECT_GGUF_ERROR(boolean, "neither 0 nor 1");
    }

    void emptyAndDuplicateKeys() {
        RawGguf empty;
        empty.header(3, 0, 1).kv_u32("", 1);
        EXPECT_GGUF_ERROR(empty, "empty key");
        RawGguf duplicate;
        duplicate.header(3, 0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
        EXPECT_GGUF_ERROR(duplicate, "duplicate metadata key 'a.b'");
    }

    void deeplyNestedArraysStop() {
        RawGguf raw;
        raw.header(3, 0, 1).str("deep").u32(9);
        for (int i = 0; i < 100; ++i) raw.u32(9).u64(1);
        raw.u32(4).u64(0);
        EXPECT_GGUF_ERROR(raw, "nested deeper");
    }

    void alignmentMustBePowerOfTwo() {
        RawGguf three;
        three.header(3, 0, 1).kv_u32("general.alignment", 3);
        EXPECT_GGUF_ERROR(three, "not a non-zero power of two");
        RawGguf zero;
        zero.header(3, 0, 1).kv_u32("general.alignment", 0);
        EXPECT_GGUF_ERROR(zero, "not a non-zero power of two");
        RawGguf wrong_type;
        wrong_type.header(3, 0, 1).str("general.alignment").u32(8).str("32");
        EXPECT_GGUF_ERROR(wrong_type, "general.alignment must be a UINT32");
    }

    void shapeProblems() {
        EXPECT_GGUF_ERROR(one_tensor(0), "tensor 'w' dimension 0 is zero");
        RawGguf overflow;
        overflow.header(3, 1, 0).tensor_info("w", {uint64_t(1) << 32, uint64_t(1) << 32}, 0, 0).pad().zeros(32);
        EXPECT_GGUF_ERROR(overflow, "overflows");
        RawGguf five;
        five.header(3, 1, 0).tensor_info("w", {1, 1, 1, 1, 1}, 0, 0).pad().zeros(32);
        EXPECT_GGUF_ERROR(five, "5 dimensions");
        RawGguf none;
        none.header(3, 1, 0).tensor_info("w", {}, 0, 0).pad().zeros(32);
        EXPECT_GGUF_ERROR(none, "0 dimensions");
        EXPECT_GGUF_ERROR(one_tensor(48, 12, 0, 1024), "not a multiple of the Q4_K block of 256");
    }

    void badTensorTypeId() {
        EXPECT_GGUF_ERROR(one_tensor(4, 5), "unknown GGML type id 5");
        EXPECT_GGUF_ERROR(one_tensor(4, 1000), "unknown GGML type id 1000");
    }

    void offsetsAreChecked() {
        EXPECT_GGUF_ERROR(one_tensor(4, 0, 8), "data offset 8 is not a multiple of the alignment 32");
        auto past = expect_error(one_tensor(4, 0, 0, 15), {"tensor 'w' data [offset ", ", 16 bytes] runs past end of file ("});
        QVERIFY2(past.empty(), std::string(past).c_str());
        EXPECT_GGUF_ERROR(one_tensor(4, 0, uint64_t(-32)), "runs past end of file");
        RawGguf overlap;
        overlap.header(3, 2, 0).tensor_info("a", {16}, 0, 0).tensor_info("b", {8}, 0, 32).pad().zeros(64);
        EXPECT_GGUF_ERROR(overlap, "tensor 'b' data overlaps tensor 'a'");
    }

    void tensorNames() {
        RawGguf duplicate;
        duplicate.header(3, 2, 0).tensor_info("w", {8}, 0, 0).tensor_info("w", {8}, 0, 32).pad().zeros(64);
        EXPECT_GGUF_ERROR(duplicate, "duplicate tensor name 'w'");
        RawGguf empty;
        empty.header(3, 1, 0).tensor_info("", {8}, 0, 0).pad().zeros(32);
        EXPECT_GGUF_ERROR(empty, "empty name");
    }
};

FOLIO_TEST_MAIN(GgufHostileTest)
#include "gguf_hostile_test.moc"
