// The mixture-of-experts FFN (Ops::moe_ffn) on the CPU against a plain dense
// reference: every expert computed for every row, the chosen ones' outputs
// weighted by a softmax worked out here in double and summed. Also: the
// routing rule on hand-made logits (order, ties, normalisation), the grouping
// of rows by expert, that experts no row chose are never computed (their
// weights are NaN and the output stays finite), and that a row's result does
// not depend on the rows batched with it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "folio/dequant.h"
#include "folio_test.h"
#include "model/moe.h"

using folio::TensorType;
using folio::model::ExpertMatrix;
using folio::model::MoeFfn;
using folio::model::Weight;

namespace {

constexpr int64_t kEmbd = 64, kFf = 96;
constexpr int32_t kExperts = 8, kUsed = 2;

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// Float rows stored as `type` (F32, F16, or Q8_0 blocks of 32: an F16 scale, 32 int8).
std::vector<std::byte> encode(const std::vector<float>& v, TensorType type) {
    std::vector<std::byte> out;
    if (type == TensorType::F32) {
        out.resize(v.size() * 4);
        std::memcpy(out.data(), v.data(), out.size());
    } else if (type == TensorType::F16) {
        out.resize(v.size() * 2);
        for (size_t i = 0; i < v.size(); ++i) {
            const uint16_t h = folio::fp32_to_fp16(v[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    } else {  // Q8_0
        for (size_t b = 0; b < v.size() / 32; ++b) {
            float amax = 0;
            for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b * 32 + i]));
            const float d = amax / 127.0f;
            const uint16_t h = folio::fp32_to_fp16(d);
            const size_t at = out.size();
            out.resize(at + 34);
            std::memcpy(out.data() + at, &h, 2);
            for (size_t i = 0; i < 32; ++i) {
                const auto q = static_cast<int8_t>(d == 0 ? 0 : std::lround(v[b * 32 + i] / d));
                std::memcpy(out.data() + at + 2 + i, &q, 1);
            }
        }
    }
    return out;
}

// A router and three stacked expert tensors of one type, owned here.
struct MoeLayer {
    std::vector<float> router;
    std::vector<std::byte> gate, up, down;
    MoeFfn ffn;

    MoeLayer(TensorType type, uint32_t seed) {
        // A peaked router (logit std ~4): the top two are far apart from the rest.
        router = random_values(size_t{kExperts} * kEmbd, seed, 4.0f / std::sqrt(float(kEmbd)));
        gate = encode(random_values(size_t{kExperts} * kFf * kEmbd, seed + 1, 1.0f / 8), type);
        up = encode(random_values(size_t{kExperts} * kFf * kEmbd, seed + 2, 1.0f / 8), type);
        down = encode(random_values(size_t{kExperts} * kEmbd * kFf, seed + 3, 0.1f), type);
        ffn.router = Weight{TensorType::F32, reinterpret_cast<const std::byte*>(router.data()), kEmbd, kExperts};
        ffn.gate = ExpertMatrix{type, gate.data(), kEmbd, kFf, kExperts, gate.size() / kExperts};
        ffn.up = ExpertMatrix{type, up.data(), kEmbd, kFf, kExperts, up.size() / kExperts};
        ffn.down = ExpertMatrix{type, down.data(), kFf, kEmbd, kExperts, down.size() / kExperts};
        ffn.n_used = kUsed;
        ffn.norm_weights = true;
    }
};

// Every expert on every row, then each row's chosen experts weighted by the
// softmax over all experts (double), renormalised over the chosen when norm.
std::vector<float> dense_reference(folio::cpu::CpuOps& ops, const MoeFfn& ffn, const std::vector<float>& x,
                                   int64_t n_rows) {
    const int64_t n_expert = ffn.router.out_features;
    std::vector<float> logits(static_cast<size_t>(n_rows * n_expert));
    if (!ops.matmul(ffn.router, x.data(), n_rows, logits.data())) return {};
    std::vector<std::vector<float>> expert_out(static_cast<size_t>(n_expert));
    std::vector<float> gate(static_cast<size_t>(n_rows * kFf)), up(gate.size());
    for (int32_t e = 0; e < n_expert; ++e) {
        const Weight gate_up[] = {ffn.gate.expert(e), ffn.up.expert(e)};
        expert_out[static_cast<size_t>(e)].resize(static_cast<size_t>(n_rows * kEmbd));
        if (!ops.gated_matmuls(gate_up, folio::model::Ops::Glu::Silu, x.data(), n_rows, gate.data(), up.data()) ||
            !ops.matmul(ffn.down.expert(e), gate.data(), n_rows, expert_out[static_cast<size_t>(e)].data()))
            return {};
    }
    std::vector<float> out(static_cast<size_t>(n_rows * kEmbd), 0.0f);
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* l = logits.data() + r * n_expert;
        const double max = *std::max_element(l, l + n_expert);
        std::vector<double> p(static_cast<size_t>(n_expert));
        double sum = 0;
        for (int64_t e = 0; e < n_expert; ++e) sum += p[static_cast<size_t>(e)] = std::exp(l[e] - max);
        for (double& v : p) v /= sum;
        std::vector<int32_t> order(static_cast<size_t>(n_expert));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
        double chosen = 0;
        for (int32_t s = 0; s < ffn.n_used; ++s) chosen += p[static_cast<size_t>(order[static_cast<size_t>(s)])];
        for (int32_t s = 0; s < ffn.n_used; ++s) {
            const int32_t e = order[static_cast<size_t>(s)];
            const double w = p[static_cast<size_t>(e)] / (ffn.norm_weights ? chosen : 1.0);
            for (int64_t j = 0; j < kEmbd; ++j)
                out[static_cast<size_t>(r * kEmbd + j)] +=
                    static_cast<float>(w * expert_out[static_cast<size_t>(e)][static_cast<size_t>(r * kEmbd + j)]);
        }
    }
    return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return a.size() == b.size() ? d : 1e30;
}

}  // namespace

class MoeFfnTest : public QObject {
    Q_OBJECT
private slots:
    void routingPicksTheBestAndNormalises() {
        // logits ln(1), ln(4), ln(2), ln(4), ln(3): experts 1 and 3 tie, the lower id first.
        const float logits[] = {0.0f, std::log(4.0f), std::log(2.0f), std::log(4.0f), std::log(3.0f)};
        int32_t ids[3];
        float weights[3];
        folio::model::route_experts(logits, 1, 5, 3, true, ids, weights);
        QCOMPARE(ids[0], 1);
        QCOMPARE(ids[1], 3);
        QCOMPARE(ids[2], 4);
        QVERIFY(std::fabs(weights[0] - 4.0f / 11) < 1e-6f && std::fabs(weights[2] - 3.0f / 11) < 1e-6f);
        folio::model::route_experts(logits, 1, 5, 3, false, ids, weights);
        QVERIFY2(std::fabs(weights[0] - 4.0f / 14) < 1e-6f && std::fabs(weights[2] - 3.0f / 14) < 1e-6f,
                 "without normalisation the weights are the softmax over all experts");
    }

    void groupsHoldEveryEntryOnceByExpert() {
        const int32_t ids[] = {3, 0, 0, 3, 1, 3};  // 3 rows, 2 used
        folio::model::ExpertGroups g;
        folio::model::group_by_expert(ids, 3, 2, 4, g);
        QVERIFY(g.offsets == (std::vector<int32_t>{0, 2, 3, 3, 6}));
        QVERIFY(g.entries == (std::vector<int32_t>{1, 2, 4, 0, 3, 5}));
        QCOMPARE(g.rows(2), 0);
    }

    void matchesDenseReference_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("rows");
        for (int rows : {1, 5, 37}) {
            QTest::newRow(("F32 x" + std::to_string(rows)).c_str()) << int(TensorType::F32) << rows;
            QTest::newRow(("F16 x" + std::to_string(rows)).c_str()) << int(TensorType::F16) << rows;
            QTest::newRow(("Q8_0 x" + std::to_string(rows)).c_str()) << int(TensorType::Q8_0) << rows;
        }
    }
    void matchesDenseReference() {
        QFETCH(int, type);
        QFETCH(int, rows);
        folio::cpu::KvCache cache;
        folio::cpu::CpuOps ops(2, cache, 16);
        MoeLayer layer(static_cast<TensorType>(type), 7);
        const std::vector<float> x = random_values(static_cast<size_t>(rows * kEmbd), 11, 1.0f);
        const std::vector<float> reference = dense_reference(ops, layer.ffn, x, rows);
        QVERIFY(!reference.empty());
        std::vector<float> out(x.size());
        QVERIFY(ops.moe_ffn(layer.ffn, x.data(), rows, out.data()));
        double scale = 0;
        for (float v : reference) scale = std::max(scale, double(std::fabs(v)));
        const double diff = max_abs_diff(out, reference);
        QVERIFY2(scale > 0.05, "the reference is ~0: the test would check nothing");
        QVERIFY2(diff <= 1e-5 * scale, ("moe_ffn differs from the dense reference by " + std::to_string(diff) +
                                        " (largest value " + std::to_string(scale) + ")").c_str());

        // In place (out == x), as the architectures call it.
        std::vector<float> in_place = x;
        QVERIFY(ops.moe_ffn(layer.ffn, in_place.data(), rows, in_place.data()));
        QVERIFY2(in_place == out, "moe_ffn in place differs from moe_ffn into another buffer");

        // Batch invariance: each row alone gives its batched result bit for bit.
        for (int r = 0; r < rows; r += std::max(1, rows / 4)) {
            std::vector<float> alone(x.begin() + r * kEmbd, x.begin() + (r + 1) * kEmbd), one(kEmbd);
            QVERIFY(ops.moe_ffn(layer.ffn, alone.data(), 1, one.data()));
            QVERIFY2(std::equal(one.begin(), one.end(), out.begin() + r * kEmbd),
                     ("row " + std::to_string(r) + " alone differs from the same row batched").c_str());
        }
    }

    void unchosenExpertsAreNeverComputed() {
        // Experts 6 and 7 score far below the rest on positive inputs, and
        // their matrices are NaN: if the op touched them (a dense loop, NaN * 0)
        // the output would not be finite.
        folio::cpu::KvCache cache;
        folio::cpu::CpuOps ops(2, cache, 16);
        MoeLayer layer(TensorType::F32, 21);
        for (int32_t e : {6, 7})
            for (int64_t j = 0; j < kEmbd; ++j) layer.router[static_cast<size_t>(e * kEmbd + j)] = -1.0f;
        const int rows = 9;
        std::vector<float> x = random_values(static_cast<size_t>(rows * kEmbd), 5, 1.0f);
        for (float& v : x) v = std::fabs(v) + 0.1f;
        const std::vector<float> clean = dense_reference(ops, layer.ffn, x, rows);
        for (std::vector<std::byte>* m : {&layer.gate, &layer.up, &layer.down}) {
            const size_t bytes = m->size() / kExperts;
            for (size_t i = 6 * bytes; i < m->size(); i += 4) {
                const float nan = std::nanf("");
                std::memcpy(m->data() + i, &nan, 4);
            }
        }
        std::vector<float> out(x.size());
        QVERIFY(ops.moe_ffn(layer.ffn, x.data(), rows, out.data()));
        QVERIFY2(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }),
                 "an expert no row chose was computed");
        QVERIFY(max_abs_diff(out, clean) < 1e-5);
    }

    void mismatchedShapesAreAnError() {
        folio::cpu::KvCache cache;
        folio::cpu::CpuOps ops(1, cache, 16);
        MoeLayer layer(TensorType::F32, 3);
        layer.ffn.down.n_expert = kExperts - 1;
        std::vector<float> x(kEmbd, 1.0f), out(kEmbd);
        QVERIFY(!ops.moe_ffn(layer.ffn, x.data(), 1, out.data()));
        layer.ffn.down.n_expert = kExperts;
        layer.ffn.n_used = kExperts + 1;
        QVERIFY(!ops.moe_ffn(layer.ffn, x.data(), 1, out.data()));
    }
};

FOLIO_TEST_MAIN(MoeFfnTest)
#include "test_moe.moc"
