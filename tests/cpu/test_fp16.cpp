// IEEE half conversion: exhaustive over all 65,536 halves, and against the
// F16C instructions where the CPU has them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "cpu/fp16.h"
#include "cpu/kernels.h"
#include "folio_test.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using folio::cpu::fp16_to_fp32;
using folio::cpu::fp32_to_fp16;

namespace {

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
bool is_nan_half(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

#if defined(__x86_64__)
bool have_f16c() { return folio::cpu::cpu_has_f16c(); }
__attribute__((target("f16c"))) float hw_to_float(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t hw_to_half(float f) {
    return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
#endif

}  // namespace

class TestFp16 : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    // The no-Qt runner's generated main() takes the slots' addresses.
    friend int main();
#endif

private slots:
    void every_half_round_trips() {
        for (uint32_t h = 0; h < 65536; ++h) {
            const auto half = static_cast<uint16_t>(h);
            const float f = fp16_to_fp32(half);
            if (is_nan_half(half)) {
                QVERIFY2(std::isnan(f), (std::to_string(h)).c_str());
                QVERIFY2(is_nan_half(fp32_to_fp16(f)), (std::to_string(h)).c_str());
                continue;
            }
            QVERIFY2(fp32_to_fp16(f) == half, ("half " + std::to_string(h)).c_str());
        }
    }

    void known_values() {
        QCOMPARE(fp16_to_fp32(0x3c00), 1.0f);
        QCOMPARE(fp16_to_fp32(0xc000), -2.0f);
        QCOMPARE(fp16_to_fp32(0x7bff), 65504.0f);
        QCOMPARE(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
        QCOMPARE(fp32_to_fp16(65520.0f), static_cast<uint16_t>(0x7c00));  // rounds to inf
        QCOMPARE(fp32_to_fp16(std::ldexp(1.0f, -25)), static_cast<uint16_t>(0x0000));  // tie to even: 0
        QCOMPARE(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), static_cast<uint16_t>(0x3c00));  // tie to even
        QCOMPARE(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), static_cast<uint16_t>(0x3c02));
    }

    void matches_f16c_exhaustively() {
#if defined(__x86_64__)
        if (!have_f16c()) QSKIP("no F16C on this CPU");
        for (uint32_t h = 0; h < 65536; ++h) {
            const auto half = static_cast<uint16_t>(h);
            const float sw = fp16_to_fp32(half), hw = hw_to_float(half);
            if (is_nan_half(half)) QVERIFY(std::isnan(sw) && std::isnan(hw));
            else QVERIFY2(bits_of(sw) == bits_of(hw), ("half " + std::to_string(h)).c_str());
        }
        // float -> half: around every rounding boundary (midpoints between
        // neighbouring halves, one ulp either side) and random bit patterns.
        for (uint32_t h = 0; h < 0x7c00; ++h) {
            const float lo = fp16_to_fp32(static_cast<uint16_t>(h));
            const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
            const uint32_t mid = bits_of(0.5f * (lo + hi));
            for (uint32_t probe : {mid - 1, mid, mid + 1})
                for (uint32_t sign : {0u, 0x80000000u}) {
                    const float f = float_of(probe | sign);
                    QVERIFY2(fp32_to_fp16(f) == hw_to_half(f), ("float bits " + std::to_string(probe | sign)).c_str());
                }
        }
        std::mt19937 rng(7);
        for (int i = 0; i < 1 << 20; ++i) {
            const float f = float_of(static_cast<uint32_t>(rng()));
            if (std::isnan(f)) QVERIFY(is_nan_half(fp32_to_fp16(f)));
            else QVERIFY2(fp32_to_fp16(f) == hw_to_half(f), ("float bits " + std::to_string(bits_of(f))).c_str());
        }
#else
        QSKIP("F16C is x86 only");
#endif
    }
};

FOLIO_TEST_MAIN(TestFp16)
#include "test_fp16.moc"
