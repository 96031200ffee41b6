// Every dot-product kernel (scalar and AVX2) against a double-precision
// reference built from the dequantized weight and activation rows, and the
// activation quantizers against each other.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/kernels_impl.h"
#include "folio_test.h"
#include "quant_reference.h"

using namespace cpu_test;

namespace {

const TensorType kWeightTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::Q4_0, TensorType::Q4_1,
                                   TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q4_K,
                                   TensorType::Q5_K, TensorType::Q6_K};

std::vector<int64_t> lengths_for(int block) {
    if (block == 1) return {1, 7, 64, 576, 1000};
    if (block == 32) return {32, 96, 576, 1536, 2048};
    return {256, 1536, 2048};
}

std::vector<Isa> isas() {
    std::vector<Isa> out{Isa::Scalar};
    if (isa_supported(Isa::Avx2)) out.push_back(Isa::Avx2);
    return out;
}

std::string describe(TensorType type, Isa isa, int64_t n) {
    return std::string(folio::traits(type).name) + "/" + isa_name(isa) + " n=" + std::to_string(n);
}

// Float rounding bound for what the kernels do in single precision: one
// product and one accumulation per block (u = 2^-24 each), so the error
// grows with the number of blocks summed; x2 for slack in the vector order.
double relative_tolerance(int64_t n, int block) {
    return 2.0 * std::ldexp(1.0, -24) * (static_cast<double>(n / block) + 8.0);
}

struct Case {
    std::vector<std::byte> weights;
    std::vector<std::byte> activations;  // quantized (or the floats as bytes)
    double reference = 0;  // exact dot of the dequantized rows
    double tolerance = 0;
};

Case make_case(const DotKernels& k, int64_t n, uint32_t seed) {
    BlockFactory factory(seed);
    Case c;
    c.weights = factory.row(k.weight, n);
    const std::vector<float> x = factory.activations(n);
    c.activations.resize(activation_row_bytes(k.activation, n));
    // Both ISAs get the scalar quantizer's bytes so their dots see identical input.
    if (k.activation == ActivationType::Q8_0) quantize_row_q8_0_scalar(x.data(), c.activations.data(), n);
    else if (k.activation == ActivationType::Q8_1) quantize_row_q8_1_scalar(x.data(), c.activations.data(), n);
    else if (k.activation == ActivationType::Q8_K) quantize_row_q8_K_scalar(x.data(), c.activations.data(), n);
    else std::memcpy(c.activations.data(), x.data(), c.activations.size());

    std::vector<double> s_error;
    const Dequantized w = dequantize(k.weight, c.weights.data(), n);
    const std::vector<double> a = dequantize_activations(k.activation, c.activations.data(), n, &s_error);
    double magnitude = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        c.reference += w.value[i] * a[i];
        magnitude += w.magnitude[i] * std::fabs(a[i]);
    }
    c.tolerance = relative_tolerance(n, k.block_elems) * magnitude + 1e-30;
    // Q8_1's s is a half: the offset term m * s carries its rounding, as in GGML.
    const size_t block_bytes = folio::traits(k.weight).block_bytes;
    for (size_t b = 0; b < s_error.size(); ++b) {
        uint16_t m;
        std::memcpy(&m, c.weights.data() + b * block_bytes + 2, 2);
        c.tolerance += std::fabs(half(m)) * s_error[b] * 1.0001;
    }
    return c;
}

}  // namespace

class TestVecDot : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    // The no-Qt runner's generated main() takes the slots' addresses.
    friend int main();
#endif

private slots:
    void every_type_has_scalar_and_simd_kernels() {
        for (TensorType type : kWeightTypes)
            for (Isa isa : isas()) {
                const DotKernels* k = dot_kernels(type, isa);
                QVERIFY2(k && k->dot && k->tile, (describe(type, isa, 0)).c_str());
                QCOMPARE(k->weight, type);
                QCOMPARE(static_cast<uint32_t>(k->block_elems), folio::traits(type).block_elems == 1
                                                                    ? 1u
                                                                    : folio::traits(type).block_elems);
            }
        QVERIFY(dot_kernels(TensorType::BF16, Isa::Scalar) == nullptr);
    }

    void dots_match_double_reference() {
        int checked = 0;
        for (TensorType type : kWeightTypes)
            for (Isa isa : isas()) {
                const DotKernels& k = *dot_kernels(type, isa);
                for (int64_t n : lengths_for(k.block_elems))
                    for (uint32_t seed = 1; seed <= 4; ++seed) {
                        const Case c = make_case(k, n, seed * 7919 + static_cast<uint32_t>(type));
                        const double got = k.dot(n, c.weights.data(), c.activations.data());
                        const double err = std::fabs(got - c.reference);
                        QVERIFY2(err <= c.tolerance, (describe(type, isa, n) + " seed " + std::to_string(seed) +
                                                         ": got " + std::to_string(got) + " want " +
                                                         std::to_string(c.reference) + " tol " +
                                                         std::to_string(c.tolerance)).c_str());
                        ++checked;
                    }
            }
        QVERIFY(checked > 100);
    }

    void simd_matches_scalar() {
        if (!isa_supported(Isa::Avx2)) QSKIP("no AVX2 on this CPU");
        for (TensorType type : kWeightTypes) {
            const DotKernels& scalar = *dot_kernels(type, Isa::Scalar);
            const DotKernels& simd = *dot_kernels(type, Isa::Avx2);
            QCOMPARE(simd.activation, scalar.activation);
            for (int64_t n : lengths_for(scalar.block_elems)) {
                const Case c = make_case(scalar, n, 4242);
                const double a = scalar.dot(n, c.weights.data(), c.activations.data());
                const double b = simd.dot(n, c.weights.data(), c.activations.data());
                QVERIFY2(std::fabs(a - b) <= c.tolerance, (describe(type, Isa::Avx2, n) + ": scalar " + std::to_string(a) + " simd " + std::to_string(b)).c_str());
            }
        }
    }

    // A tile must give each (weight row, activation row) pair exactly what
    // dot gives it (batch invariance: a row's result cannot depend on the
    // tile it lands in).
    void tiles_match_single_dots() {
        for (TensorType type : kWeightTypes)
            for (Isa isa : isas()) {
                const DotKernels& k = *dot_kernels(type, isa);
                const int64_t n = k.block_elems == 1 ? 100 : 2 * 256;
                std::vector<Case> w_rows, a_rows;
                constexpr int kMaxWeightRows = 7;  // 4-row and 2-row register tiles plus remainders
                for (int r = 0; r < kMaxWeightRows; ++r) w_rows.push_back(make_case(k, n, 100 + r));
                for (int c = 0; c < kTileActRows; ++c) a_rows.push_back(make_case(k, n, 200 + c));
                std::vector<std::byte> w, a;
                for (auto& r : w_rows) w.insert(w.end(), r.weights.begin(), r.weights.end());
                for (auto& c : a_rows) a.insert(a.end(), c.activations.begin(), c.activations.end());
                const size_t ws = w_rows[0].weights.size(), as = a_rows[0].activations.size();
                for (int n_w = 1; n_w <= kMaxWeightRows; ++n_w)
                    for (int n_a = 1; n_a <= kTileActRows; ++n_a) {
                        float y[kTileActRows][8];
                        for (auto& row : y)
                            for (float& v : row) v = -12345.0f;
                        k.tile(n, w.data(), ws, n_w, a.data(), as, nullptr, n_a, &y[0][0], 8);
                        for (int c = 0; c < n_a; ++c)
                            for (int r = 0; r < n_w; ++r) {
                                const float want = k.dot(n, w.data() + r * ws, a.data() + c * as);
                                QVERIFY2(std::memcmp(&y[c][r], &want, sizeof want) == 0,
                                         (describe(type, isa, n) + " tile " + std::to_string(n_w) + "x" +
                                          std::to_string(n_a))
                                             .c_str());
                            }
                        QCOMPARE(y[0][n_w], -12345.0f);  // nothing written past the tile
                    }
            }
    }

    void simd_quantizers_write_scalar_bytes() {
        if (!isa_supported(Isa::Avx2)) QSKIP("no AVX2 on this CPU");
        const TensorType partners[] = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q4_K};
        for (TensorType type : partners) {
            const DotKernels& scalar = *dot_kernels(type, Isa::Scalar);
            const DotKernels& simd = *dot_kernels(type, Isa::Avx2);
            for (uint32_t seed = 1; seed <= 8; ++seed) {
                BlockFactory factory(seed);
                const int64_t n = 2048;
                const std::vector<float> x = factory.activations(n);
                std::vector<std::byte> a(activation_row_bytes(scalar.activation, n)), b(a.size());
                scalar.quantize(x.data(), a.data(), n);
                simd.quantize(x.data(), b.data(), n);
                QVERIFY2(a == b, (std::string(folio::traits(type).name) + " partner, seed " + std::to_string(seed)).c_str());
            }
        }
    }

    // Each quantized activation is within half a step of the float, and the
    // stored sums (Q8_1's s, Q8_K's bsums) are those of the stored quants.
    void quantizers_round_to_nearest_step() {
        BlockFactory factory(99);
        const int64_t n = 1024;
        const std::vector<float> x = factory.activations(n);
        for (TensorType type : {TensorType::Q8_0, TensorType::Q4_1, TensorType::Q6_K})
            for (Isa isa : isas()) {
                const DotKernels& k = *dot_kernels(type, isa);
                std::vector<std::byte> q(activation_row_bytes(k.activation, n));
                k.quantize(x.data(), q.data(), n);
                const std::vector<double> a = dequantize_activations(k.activation, q.data(), n);
                for (int64_t i = 0; i < n; ++i) {
                    double step;
                    if (k.activation == ActivationType::Q8_K) step = reinterpret_cast<const BlockQ8_K*>(q.data())[i / 256].d;
                    else step = half(reinterpret_cast<const uint16_t*>(q.data() + (i / 32) * k.activation_block_bytes)[0]);
                    // d is rounded to a half for Q8_0/Q8_1: allow that relative slack (127 steps * 2^-11).
                    const double slack = k.activation == ActivationType::Q8_K ? 1e-6 : 127.0 * std::ldexp(1.0, -11);
                    QVERIFY2(std::fabs(a[static_cast<size_t>(i)] - x[static_cast<size_t>(i)]) <= step * (0.5 + slack) + 1e-12, (describe(type, isa, n) + " element " + std::to_string(i)).c_str());
                }
                if (k.activation == ActivationType::Q8_K) {
                    const auto* blocks = reinterpret_cast<const BlockQ8_K*>(q.data());
                    for (int64_t b = 0; b < n / 256; ++b)
                        for (int g = 0; g < 16; ++g) {
                            int sum = 0;
                            for (int i = 0; i < 16; ++i) sum += blocks[b].qs[16 * g + i];
                            QCOMPARE(static_cast<int>(blocks[b].bsums[g]), sum);
                        }
                }
                if (k.activation == ActivationType::Q8_1) {
                    const auto* blocks = reinterpret_cast<const BlockQ8_1*>(q.data());
                    for (int64_t b = 0; b < n / 32; ++b) {
                        int sum = 0;
                        for (int i = 0; i < 32; ++i) sum += blocks[b].qs[i];
                        // s = d * sum before d and s are each rounded to a half.
                        const double want = half(blocks[b].d) * sum;
                        QVERIFY(std::fabs(half(blocks[b].s) - want) <= std::fabs(want) * std::ldexp(1.0, -10) + 1e-7);
                    }
                }
            }
    }
};

FOLIO_TEST_MAIN(TestVecDot)
#include "test_vec_dot.moc"
