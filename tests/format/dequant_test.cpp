// folio::dequantize matches gguf-py's gguf.quants.dequantize bit for bit on
// the golden blocks of every supported type, and refuses inconsistent sizes.
#include <cmath>
#include <set>

#include "folio/dequant.h"
#include "folio_test.h"
#include "dequant_golden.h"

using namespace folio;

class DequantTest : public QObject {
    Q_OBJECT
private slots:
    void goldenBlocksMatchGgufPyExactly() {
        const nlohmann::json golden = dequant_golden::load();
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/format/dequant_goldens.json");
        std::set<std::string> types_seen;
        for (const auto& c : golden["blocks"]) {
            const std::string type_name = c["type"].get<std::string>();
            const auto type = dequant_golden::type_named(type_name);
            QVERIFY2(type.has_value(), std::string("unsupported type in goldens: " + type_name).c_str());
            const auto src = dequant_golden::from_hex(c["data_hex"].get<std::string>());
            const auto expected = dequant_golden::from_hex(c["expected_f32_hex"].get<std::string>());
            const int64_t n = c["n_elements"].get<int64_t>();
            QCOMPARE(expected.size(), size_t(n) * 4);
            std::vector<float> out(size_t(n), -1.0f);
            Status ok = dequantize(*type, src.data(), src.size(), out.data(), n);
            QVERIFY2(ok.ok(), std::string(ok.ok() ? "" : ok.error().message).c_str());
            for (int64_t i = 0; i < n; ++i) {
                uint32_t want;
                std::memcpy(&want, expected.data() + 4 * i, 4);
                const uint32_t got = dequant_golden::bits_of(out[size_t(i)]);
                QVERIFY2(got == want, std::string(type_name + " (" + c["origin"].get<std::string>() + ") element " + std::to_string(i) +
                                          ": got bits " + std::to_string(got) + ", gguf-py " + std::to_string(want)).c_str());
            }
            types_seen.insert(type_name);
        }
        QCOMPARE(types_seen.size(), size_t(11));  // every supported type
    }

    void halfPrecisionSpecialValues() {
        QCOMPARE(fp16_to_fp32(0x3C00), 1.0f);
        QCOMPARE(fp16_to_fp32(0xC000), -2.0f);
        QCOMPARE(fp16_to_fp32(0x7BFF), 65504.0f);
        QCOMPARE(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
        QCOMPARE(fp16_to_fp32(0x03FF), std::ldexp(1023.0f, -24));
        QCOMPARE(dequant_golden::bits_of(fp16_to_fp32(0x8000)), 0x80000000u);
        QVERIFY(std::isinf(fp16_to_fp32(0x7C00)) && fp16_to_fp32(0x7C00) > 0);
        QVERIFY(std::isnan(fp16_to_fp32(0x7E00)));
        QCOMPARE(bf16_to_fp32(0x3F80), 1.0f);
        QCOMPARE(bf16_to_fp32(0xC0A0), -5.0f);
    }

    void sizesAreValidated() {
        std::vector<std::byte> block(34);
        std::vector<float> out(64);
        QVERIFY(dequantize(TensorType::Q8_0, block.data(), 34, out.data(), 32).ok());
        QVERIFY(!dequantize(TensorType::Q8_0, block.data(), 34, out.data(), 31).ok());   // not whole blocks
        QVERIFY(!dequantize(TensorType::Q8_0, block.data(), 33, out.data(), 32).ok());   // short source
        QVERIFY(!dequantize(TensorType::Q8_0, block.data(), 34, out.data(), 64).ok());   // more than given
        QVERIFY(!dequantize(TensorType::Q8_0, block.data(), 34, out.data(), -32).ok());
        QVERIFY(!dequantize(static_cast<TensorType>(17), block.data(), 34, out.data(), 32).ok());
        auto e = dequantize(TensorType::Q4_K, block.data(), 34, out.data(), 32);
        QVERIFY(!e.ok());
        QVERIFY2(e.error().message.find("Q4_K") != std::string::npos, std::string(e.error().message).c_str());
        QVERIFY(dequantize(TensorType::F16, nullptr, 0, nullptr, 0).ok());  // empty is fine
    }

    void q4_0BlockByHand() {
        // d = 0.5 (f16 0x3800), low nibbles 0..15 then high nibbles 15..0: y = d * (q - 8).
        std::vector<std::byte> block(18);
        block[0] = std::byte{0x00};
        block[1] = std::byte{0x38};
        for (int j = 0; j < 16; ++j) block[2 + j] = std::byte(uint8_t(j | ((15 - j) << 4)));
        std::vector<float> out(32);
        QVERIFY(dequantize(TensorType::Q4_0, block.data(), 18, out.data(), 32).ok());
        QCOMPARE(out[0], -4.0f);
        QCOMPARE(out[15], 3.5f);
        QCOMPARE(out[16], 3.5f);
        QCOMPARE(out[31], -4.0f);
    }
};

FOLIO_TEST_MAIN(DequantTest)
#include "dequant_test.moc"
