// folio::quantize_row writes, for the legacy types, the bytes gguf-py's
// gguf.quants.quantize writes (tests/data/quant/legacy_quant_goldens.json);
// every type decodes (folio::dequantize) to within its error bound; bad rows
// are refused with a message.
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "folio/dequant.h"
#include "folio/quant.h"
#include "folio_test.h"

using namespace folio;

namespace {

std::vector<std::byte> from_hex(const std::string& hex) {
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    std::vector<std::byte> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::byte((nibble(hex[2 * i]) << 4) | nibble(hex[2 * i + 1]));
    return out;
}

std::optional<TensorType> type_named(const std::string& name) {
    for (uint32_t id = 0; id < 64; ++id)
        if (auto t = tensor_type_traits(id); t && t->name == name) return t->type;
    return std::nullopt;
}

std::vector<float> normal_row(size_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> row(n);
    for (float& v : row) v = dist(rng);
    return row;
}

// RMS of (decoded - x) relative to RMS of x.
double relative_rms_error(TensorType type, const std::vector<float>& x, const std::vector<float>* importance = nullptr) {
    std::vector<std::byte> q(quantized_size(type, int64_t(x.size())));
    Status ok = quantize_row(type, x, q, importance ? std::span<const float>(*importance) : std::span<const float>());
    if (!ok) return 1e9;
    std::vector<float> y(x.size());
    if (!dequantize(type, q.data(), q.size(), y.data(), int64_t(y.size()))) return 1e9;
    double err = 0, ref = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
        ref += double(x[i]) * x[i];
    }
    return std::sqrt(err / ref);
}

}  // namespace

class BlockQuantTest : public QObject {
    Q_OBJECT
private slots:
    void legacyTypesMatchGgufPyBitForBit() {
        std::ifstream in(folio_test::data_path("quant/legacy_quant_goldens.json"));
        const nlohmann::json golden = nlohmann::json::parse(in, nullptr, false);
        QVERIFY2(!golden.is_discarded(), "cannot read tests/data/quant/legacy_quant_goldens.json");
        std::set<std::string> types;
        size_t cases = 0;
        for (const auto& c : golden["cases"]) {
            const std::string name = c["type"].get<std::string>();
            const auto type = type_named(name);
            QVERIFY2(type.has_value(), name.c_str());
            const std::vector<std::byte> raw = from_hex(c["values_hex"].get<std::string>());
            std::vector<float> values(raw.size() / 4);
            std::memcpy(values.data(), raw.data(), raw.size());
            const std::vector<std::byte> expected = from_hex(c["expected_hex"].get<std::string>());
            std::vector<std::byte> got(quantized_size(*type, int64_t(values.size())));
            QCOMPARE(got.size(), expected.size());
            Status ok = quantize_row(*type, values, got);
            QVERIFY2(ok.ok(), ok.ok() ? "" : ok.error().message.c_str());
            for (size_t i = 0; i < got.size(); ++i) {
                if (got[i] != expected[i]) {
                    const std::string msg = name + " (" + c["origin"].get<std::string>() + ") byte " +
                                            std::to_string(i) + ": got " + std::to_string(int(got[i])) +
                                            ", gguf-py " + std::to_string(int(expected[i]));
                    QFAIL(msg.c_str());
                }
            }
            types.insert(name);
            ++cases;
        }
        QCOMPARE(types.size(), size_t(5));
        QVERIFY(cases >= 40);
    }

    // Bounds ~12 % above what each type reaches on this N(0, 1) row (Q8_0
    // 0.0052, Q6_K 0.0176, Q5_K 0.0355, Q5_0 0.0415, Q5_1 0.0368, Q4_K
    // 0.0705, Q4_1 0.0771, Q4_0 0.0843): a worse search shows, and a
    // quantizer that packs levels in the wrong place is off by far more.
    void everyTypeDecodesWithinItsErrorBound() {
        const std::vector<float> x = normal_row(4096, 7);
        const std::pair<TensorType, double> bounds[] = {
            {TensorType::Q8_0, 0.0058}, {TensorType::Q6_K, 0.0197}, {TensorType::Q5_K, 0.0398},
            {TensorType::Q5_0, 0.0465}, {TensorType::Q5_1, 0.0412}, {TensorType::Q4_K, 0.079},
            {TensorType::Q4_1, 0.0864}, {TensorType::Q4_0, 0.0944}, {TensorType::F16, 0.00024},
            {TensorType::BF16, 0.0019}, {TensorType::F32, 0.0},
        };
        for (const auto& [type, bound] : bounds) {
            const double e = relative_rms_error(type, x);
            const std::string msg = std::string(traits(type).name) + ": relative RMS error " + std::to_string(e) +
                                    " > " + std::to_string(bound);
            QVERIFY2(e <= bound, msg.c_str());
        }
    }

    void kQuantsKeepOutliersAndZeros() {
        std::vector<float> x = normal_row(512, 11, 0.01f);
        x[3] = 2.0f;    // an outlier sets its sub-block's scale
        for (int i = 256; i < 288; ++i) x[size_t(i)] = 0.0f;  // a zero sub-block
        for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
            std::vector<std::byte> q(quantized_size(type, 512));
            QVERIFY(quantize_row(type, x, q).ok());
            std::vector<float> y(512);
            QVERIFY(dequantize(type, q.data(), q.size(), y.data(), 512).ok());
            QVERIFY2(std::fabs(y[3] - 2.0f) < 0.07f, traits(type).name.data());
            for (int i = 256; i < 288; ++i) QVERIFY2(std::fabs(y[size_t(i)]) < 1e-3f, traits(type).name.data());
        }
        // An all-zero row is all zeros after decoding, in every type.
        const std::vector<float> zeros(256, 0.0f);
        for (TensorType type : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q8_0,
                                TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
            std::vector<std::byte> q(quantized_size(type, 256));
            QVERIFY(quantize_row(type, zeros, q).ok());
            std::vector<float> y(256, 1.0f);
            QVERIFY(dequantize(type, q.data(), q.size(), y.data(), 256).ok());
            for (float v : y) QCOMPARE(v, 0.0f);
        }
    }

    // The importance-weighted search trades error on unimportant columns for
    // error on important ones: the weighted error falls.
    void importanceLowersTheWeightedError() {
        const std::vector<float> x = normal_row(8192, 5);
        std::vector<float> importance(x.size());
        std::mt19937 rng(3);
        std::exponential_distribution<float> dist(1.0f);
        for (float& w : importance) w = dist(rng) * dist(rng) * 10.0f;  // heavy-tailed, as activations are
        for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
            auto weighted_error = [&](bool use) {
                std::vector<std::byte> q(quantized_size(type, int64_t(x.size())));
                (void)quantize_row(type, x, q, use ? std::span<const float>(importance) : std::span<const float>());
                std::vector<float> y(x.size());
                (void)dequantize(type, q.data(), q.size(), y.data(), int64_t(y.size()));
                double e = 0;
                for (size_t i = 0; i < x.size(); ++i) e += importance[i] * (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
                return e;
            };
            const double plain = weighted_error(false), weighted = weighted_error(true);
            const std::string msg = std::string(traits(type).name) + ": weighted error " + std::to_string(weighted) +
                                    " with importance, " + std::to_string(plain) + " without";
            QVERIFY2(weighted < 0.95 * plain, msg.c_str());
        }
    }

    void badRowsAreRefused() {
        std::vector<float> x = normal_row(256, 1);
        std::vector<std::byte> q(quantized_size(TensorType::Q4_K, 256));
        x[17] = std::nanf("");
        Status nan = quantize_row(TensorType::Q4_K, x, q);
        QVERIFY(!nan.ok());
        QVERIFY2(nan.error().message.find("value 17") != std::string::npos, nan.error().message.c_str());
        x[17] = 0.0f;
        QVERIFY(!quantize_row(TensorType::Q4_K, std::span<const float>(x).first(255), q).ok());  // not whole blocks
        std::vector<std::byte> short_out(q.size() - 1);
        QVERIFY(!quantize_row(TensorType::Q4_K, x, short_out).ok());
        const std::vector<float> bad_importance(128, 1.0f);
        QVERIFY(!quantize_row(TensorType::Q4_K, x, q, bad_importance).ok());  // one weight per value
        std::vector<float> negative(256, 1.0f);
        negative[4] = -1.0f;
        QVERIFY(!quantize_row(TensorType::Q4_K, x, q, negative).ok());
        QVERIFY(quantize_row(TensorType::Q4_K, x, q).ok());
    }
};

FOLIO_TEST_MAIN(BlockQuantTest)
#include "block_quant_test.moc"
