// The quantized KV caches on the CPU, over a prefix from an earlier step, a
// prefill chunk, decode rows, GQA and a sliding window; a row's result does
// not depend on its batch-mates.
//  - Q8_0: rows quantized with GGML's reference rounding, and paged attention
//    over Q8_0 blocks equal, bit for bit, to a plain dequantize-then-attend
//    reference (Q8_0 queries, each block's dot product exact, blocks summed
//    in order; probabilities in F32; values dequantized into a fused
//    multiply-add sum).
//  - fp8 (MXFP8 E4M3): each value the nearest E4M3 (ties to even, checked
//    against a search over all 256 codes) of x over the smallest power-of-two
//    scale that fits its block, and attention over an fp8 cache equal, bit
//    for bit, to the F16 cache's attention over the dequantized values.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/vec.h"
#include "cpu/fp16.h"
#include "cpu/fp8.h"
#include "folio_test.h"

using folio::Batch;
using folio::BatchSequence;

namespace {

constexpr int kQ8 = 32;

using folio_test::random_vector;

// GGML's quantize_row_q8_0_ref then dequantize_row_q8_0, written out here:
// the values a Q8_0 cache holds for x.
struct Q8Row {
    std::vector<float> d;       // per block
    std::vector<int> q;         // per value
    std::vector<float> values;  // d * q
};

Q8Row q8_reference(const float* x, int n) {
    Q8Row r;
    for (int b = 0; b < n / kQ8; ++b) {
        float amax = 0;
        for (int i = 0; i < kQ8; ++i) amax = std::max(amax, std::fabs(x[b * kQ8 + i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        r.d.push_back(folio::cpu::fp16_to_fp32(folio::cpu::fp32_to_fp16(d)));
        for (int i = 0; i < kQ8; ++i) {
            r.q.push_back(static_cast<int>(std::roundf(x[b * kQ8 + i] * id)));
            r.values.push_back(r.d.back() * static_cast<float>(r.q.back()));
        }
    }
    return r;
}

struct Tokens {
    std::vector<float> q, k, v;  // per token: [n_head*hd], [n_kv*hd], [n_kv*hd]
};

struct Shape {
    int n_head = 8, n_kv = 2, hd = 64, block = 4;
};

folio::model::AttentionParams params(const Shape& s, uint32_t window) {
    folio::model::AttentionParams p;
    p.n_head = s.n_head;
    p.n_head_kv = s.n_kv;
    p.head_dim = s.hd;
    p.scale = 0.125f;
    p.sliding_window = window;
    return p;
}

// One step's rows: tokens [from, to) of a sequence whose block table is `table`.
struct Step {
    Batch batch;
    std::vector<float> q, k, v;
    std::vector<int32_t> row_sequence;

    void add(const Tokens& t, const Shape& s, const std::vector<int32_t>& table, int from, int to) {
        const int32_t seq = static_cast<int32_t>(batch.sequences.size());
        batch.sequences.push_back(BatchSequence{static_cast<int32_t>(batch.token_ids.size()), to - from, to, table});
        for (int j = from; j < to; ++j) {
            batch.token_ids.push_back(0);
            batch.positions.push_back(j);
            batch.slot_mapping.push_back(int64_t{table[static_cast<size_t>(j / s.block)]} * s.block + j % s.block);
            const auto row = [&](const std::vector<float>& x, int width) {
                return std::vector<float>(x.begin() + j * width, x.begin() + (j + 1) * width);
            };
            for (float x : row(t.q, s.n_head * s.hd)) q.push_back(x);
            for (float x : row(t.k, s.n_kv * s.hd)) k.push_back(x);
            for (float x : row(t.v, s.n_kv * s.hd)) v.push_back(x);
            row_sequence.push_back(seq);
        }
    }

    std::vector<float> run(folio::cpu::CpuOps& ops, const folio::model::AttentionParams& p, const Shape& s) {
        std::vector<float> out(batch.token_ids.size() * static_cast<size_t>(s.n_head * s.hd));
        ops.set_row_sequences(&row_sequence);
        std::vector<float> q_in = q, k_in = k;  // attention rotates them in place
        if (!ops.attention(p, batch, q_in.data(), k_in.data(), v.data(), out.data())) return {};
        return out;
    }
};

Tokens random_tokens(const Shape& s, int len, uint32_t seed) {
    return {random_vector(static_cast<size_t>(len * s.n_head * s.hd), seed),
            random_vector(static_cast<size_t>(len * s.n_kv * s.hd), seed + 1, 2.0f),
            random_vector(static_cast<size_t>(len * s.n_kv * s.hd), seed + 2)};
}

}  // namespace

class KvQuantTest : public QObject {
    Q_OBJECT
private slots:
    void rowsQuantizeWithGgmlsReferenceRounding() {
        std::vector<float> x = random_vector(256, 1, 3.0f);
        for (int i = 64; i < 96; ++i) x[static_cast<size_t>(i)] = 0.0f;  // an all-zero block: d = 0, q = 0
        x[100] = 127.0f * 0.5f;                                       // ties: roundf goes away from zero
        x[101] = -0.5f * x[100] / 127.0f * 2.0f;
        std::vector<uint8_t> blocks(256 / kQ8 * 34);
        folio::cpu::vec::quantize_q8_0(x.data(), blocks.data(), 256);
        const Q8Row want = q8_reference(x.data(), 256);
        std::vector<float> back(256);
        folio::cpu::vec::dequantize_q8_0(blocks.data(), back.data(), 256);
        for (int b = 0; b < 256 / kQ8; ++b) {
            uint16_t d;
            std::memcpy(&d, blocks.data() + b * 34, 2);
            QCOMPARE(folio::cpu::fp16_to_fp32(d), want.d[static_cast<size_t>(b)]);
            for (int i = 0; i < kQ8; ++i)
                QCOMPARE(int{static_cast<int8_t>(blocks[static_cast<size_t>(b * 34 + 2 + i)])},
                         want.q[static_cast<size_t>(b * kQ8 + i)]);
        }
        for (size_t i = 0; i < back.size(); ++i) QCOMPARE(back[i], want.values[i]);
    }

    void attentionMatchesDequantizedReference() { check_against_reference(0); }
    void slidingWindowMatchesDequantizedReference() { check_against_reference(5); }

    void rowsDoNotDependOnTheirBatchMates() {
        for (const folio::KvType type : {folio::KvType::Q8_0, folio::KvType::Fp8}) check_batch_mates(type);
    }

    // Every finite E4M3 value round-trips; every other float goes to the
    // nearest finite value by a search over the codes, ties to the even code,
    // beyond 448 to 448.
    void e4m3RoundsToTheNearestValueTiesToEven() {
        using folio::cpu::e4m3_to_fp32;
        using folio::cpu::fp32_to_e4m3;
        QCOMPARE(e4m3_to_fp32(0x38), 1.0f);
        QCOMPARE(e4m3_to_fp32(0x7E), 448.0f);
        QCOMPARE(e4m3_to_fp32(0x08), std::ldexp(1.0f, -6));  // the smallest normal
        QCOMPARE(e4m3_to_fp32(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
        QCOMPARE(e4m3_to_fp32(0xC4), -3.0f);
        QVERIFY(std::isnan(e4m3_to_fp32(0x7F)) && std::isnan(e4m3_to_fp32(0xFF)));
        std::vector<float> finite;  // the non-negative finite values, ascending with the code
        for (int c = 0; c < 0x7F; ++c) finite.push_back(e4m3_to_fp32(static_cast<uint8_t>(c)));
        for (size_t c = 1; c < finite.size(); ++c) QVERIFY(finite[c] > finite[c - 1]);
        auto nearest = [&](float x) {
            const float a = std::fabs(x);
            int best = 0;
            for (int c = 1; c < 0x7F; ++c) {
                const float d = std::fabs(finite[static_cast<size_t>(c)] - a), bd = std::fabs(finite[static_cast<size_t>(best)] - a);
                if (d < bd || (d == bd && c % 2 == 0)) best = c;
            }
            return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
        };
        std::vector<float> xs;
        for (size_t c = 0; c < finite.size(); ++c) {
            xs.push_back(finite[c]);
            if (c + 1 < finite.size()) {
                const float mid = 0.5f * (finite[c] + finite[c + 1]);  // exact: a tie
                xs.push_back(mid);
                xs.push_back(std::nextafter(mid, 0.0f));
                xs.push_back(std::nextafter(mid, 1e9f));
            }
        }
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> exponent(-14.0f, 10.0f);
        for (int i = 0; i < 20000; ++i) xs.push_back(std::exp2(exponent(rng)));
        for (float x : {450.0f, 464.0f, 479.9f, 480.0f, 1e6f, 1e-30f}) xs.push_back(x);
        int wrong = 0;
        for (float x : xs)
            for (float sx : {x, -x})
                if (fp32_to_e4m3(sx) != nearest(sx) && ++wrong < 5)
                    std::fprintf(stderr, "e4m3(%a) = 0x%02x, the nearest is 0x%02x\n", static_cast<double>(sx),
                                 fp32_to_e4m3(sx), nearest(sx));
        QCOMPARE(wrong, 0);
        QCOMPARE(fp32_to_e4m3(0.0f), uint8_t{0x00});
        QCOMPARE(fp32_to_e4m3(-0.0f), uint8_t{0x80});
    }

    // A block's scale is the smallest power of two that brings its largest
    // magnitude to 448 or under; a block's bytes read back as e4m3 * scale.
    void fp8BlocksTakeTheSmallestScaleThatFits() {
        std::vector<float> x = random_vector(32 * 40, 3, 1.0f);
        for (int b = 0; b < 40; ++b)  // magnitudes from 2^-20 to 2^19
            for (int i = 0; i < 32; ++i) x[static_cast<size_t>(b * 32 + i)] *= std::ldexp(1.0f, b - 20);
        for (int i = 0; i < 32; ++i) x[static_cast<size_t>(5 * 32 + i)] = 0.0f;  // an all-zero block
        x[7 * 32 + 3] = 448.0f * std::ldexp(1.0f, -13);                           // amax exactly 448 * 2^-13
        x[9 * 32] = 3.3e38f;  // a scale near the top of float: too large for the AVX2 way (scale * 2^8)
        std::vector<uint8_t> blocks(40 * 33);
        folio::cpu::vec::quantize_fp8(x.data(), blocks.data(), 32 * 40);
        std::vector<float> back(x.size());
        folio::cpu::vec::dequantize_fp8(blocks.data(), back.data(), 32 * 40);
        for (int b = 0; b < 40; ++b) {
            float amax = 0.0f;
            for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[static_cast<size_t>(b * 32 + i)]));
            const uint8_t e = blocks[static_cast<size_t>(b * 33)];
            const float scale = folio::cpu::mx_scale(e);
            if (amax == 0.0f) {
                QCOMPARE(int{e}, 127);
            } else {
                QVERIFY2(amax / scale <= 448.0f && amax / (scale / 2) > 448.0f, std::to_string(b).c_str());
            }
            for (int i = 0; i < 32; ++i) {
                const auto at = static_cast<size_t>(b * 32 + i);
                QCOMPARE(blocks[static_cast<size_t>(b * 33 + 1 + i)], folio::cpu::fp32_to_e4m3(x[at] / scale));
                QCOMPARE(back[at], folio::cpu::e4m3_to_fp32(blocks[static_cast<size_t>(b * 33 + 1 + i)]) * scale);
            }
        }
        QCOMPARE(int{blocks[7 * 33]}, 127 - 13);
        std::vector<uint16_t> half(x.size());
        folio::cpu::vec::dequantize_fp8_f16(blocks.data(), half.data(), 32 * 40);
        for (size_t i = 0; i < x.size(); ++i) QCOMPARE(half[i], folio::cpu::fp32_to_fp16(back[i]));
    }

    // The attention of an fp8 cache is the F16 cache's attention over the
    // values the fp8 blocks hold: the same steps, once into an fp8 cache and
    // once into an F16 cache given the fp8-rounded K and V. RoPE is the
    // identity here (frequency factors of infinity: every angle 0), so that
    // what goes into the F16 cache is what the fp8 one reads back.
    void fp8AttentionIsF16AttentionOverItsValues() {
        for (const uint32_t window : {0u, 5u}) check_fp8_attention(window);
    }

    void oddHeadSizesAreRefused() {
        folio::cpu::KvCache cache;
        cache.allocate(1, 1, 48, 4, 4, folio::KvType::Q8_0);
        folio::cpu::CpuOps ops(1, cache, 16);
        Shape s;
        s.n_head = 1;
        s.n_kv = 1;
        s.hd = 48;
        Step step;
        step.add(random_tokens(s, 2, 5), s, {0}, 0, 2);
        QVERIFY(step.run(ops, params(s, 0), s).empty());
    }

private:
    // The fp8 cache's and the F16 cache's runs of fp8AttentionIsF16AttentionOverItsValues.
    void check_fp8_attention(uint32_t window) {
        const Shape s;
        auto p = params(s, window);
        const std::vector<float> no_turn(static_cast<size_t>(s.hd / 2), INFINITY);
        p.rope.freq_factors = no_turn.data();
        auto fp8_rounded = [&](Tokens t) {
            std::vector<uint8_t> bytes(t.k.size() / 32 * 33);
            for (std::vector<float>* x : {&t.k, &t.v}) {
                folio::cpu::vec::quantize_fp8(x->data(), bytes.data(), static_cast<int64_t>(x->size()));
                folio::cpu::vec::dequantize_fp8(bytes.data(), x->data(), static_cast<int64_t>(x->size()));
            }
            return t;
        };
        const Tokens a = random_tokens(s, 8, 10), b = random_tokens(s, 6, 20), c = random_tokens(s, 10, 60);
        const std::vector<int32_t> ta = {5, 2}, tb = {7, 0}, tc = {11, 3, 14};
        auto run = [&](folio::KvType type, const Tokens& ra, const Tokens& rb, const Tokens& rc) {
            folio::cpu::KvCache cache;
            cache.allocate(1, s.n_kv, s.hd, static_cast<uint32_t>(s.block), 16, type);
            folio::cpu::CpuOps ops(2, cache, 64);
            Step step1, step2;
            step1.add(ra, s, ta, 0, 7);
            step1.add(rc, s, tc, 0, 9);
            step2.add(ra, s, ta, 7, 8);
            step2.add(rb, s, tb, 0, 6);
            step2.add(rc, s, tc, 9, 10);
            std::vector<float> out = step1.run(ops, p, s);
            const std::vector<float> out2 = step2.run(ops, p, s);
            if (out.empty() || out2.empty()) return std::vector<float>{};
            out.insert(out.end(), out2.begin(), out2.end());
            return out;
        };
        const std::vector<float> got = run(folio::KvType::Fp8, a, b, c);
        const std::vector<float> want = run(folio::KvType::F16, fp8_rounded(a), fp8_rounded(b), fp8_rounded(c));
        QVERIFY(!got.empty() && got.size() == want.size());
        QVERIFY2(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0,
                 "fp8 attention differs from F16 attention over the fp8 values");
        const std::vector<float> plain = run(folio::KvType::F16, a, b, c);  // and fp8 is not F16 unrounded
        QVERIFY(std::memcmp(got.data(), plain.data(), got.size() * sizeof(float)) != 0);
    }

    // Sequence A decodes token 13 alone, then beside B's prefill chunk and
    // C's decode row: its output is the same bits.
    void check_batch_mates(folio::KvType type) {
        const Shape s;
        const auto p = params(s, 0);
        const Tokens a = random_tokens(s, 14, 30), b = random_tokens(s, 9, 40), c = random_tokens(s, 6, 50);
        const std::vector<int32_t> ta = {3, 8, 1, 12}, tb = {5, 0, 9}, tc = {2, 7};
        auto a_row = [&](bool with_mates) {
            folio::cpu::KvCache cache;
            cache.allocate(1, s.n_kv, s.hd, static_cast<uint32_t>(s.block), 16, type);
            folio::cpu::CpuOps ops(2, cache, 64);
            Step prefix;
            prefix.add(a, s, ta, 0, 13);
            prefix.add(c, s, tc, 0, 5);
            if (prefix.run(ops, p, s).empty()) return std::vector<float>{};
            Step step;
            if (with_mates) step.add(b, s, tb, 0, 9);
            step.add(a, s, ta, 13, 14);
            if (with_mates) step.add(c, s, tc, 5, 6);
            const std::vector<float> out = step.run(ops, p, s);
            if (out.empty()) return out;
            const size_t width = static_cast<size_t>(s.n_head * s.hd), row = with_mates ? 9 : 0;
            return std::vector<float>(out.begin() + static_cast<std::ptrdiff_t>(row * width),
                                      out.begin() + static_cast<std::ptrdiff_t>((row + 1) * width));
        };
        const std::vector<float> alone = a_row(false), together = a_row(true);
        QVERIFY(!alone.empty() && !together.empty());
        QVERIFY2(std::memcmp(alone.data(), together.data(), alone.size() * sizeof(float)) == 0,
                 "a decode row's attention over a quantized cache changed with its batch-mates");
    }

    // Step 1: A's first 7 tokens (a prefill chunk). Step 2: A's decode row
    // 7, B's prefill of 6 and C's decode row 9 (its 9 tokens from step 1 too).
    void check_against_reference(uint32_t window) {
        const Shape s;
        const auto p = params(s, window);
        folio::cpu::KvCache cache;
        cache.allocate(1, s.n_kv, s.hd, static_cast<uint32_t>(s.block), 16, folio::KvType::Q8_0);
        folio::cpu::CpuOps ops(2, cache, 64);
        const Tokens a = random_tokens(s, 8, 10), b = random_tokens(s, 6, 20), c = random_tokens(s, 10, 60);
        const std::vector<int32_t> ta = {5, 2}, tb = {7, 0}, tc = {11, 3, 14};
        Step step1, step2;
        step1.add(a, s, ta, 0, 7);
        step1.add(c, s, tc, 0, 9);
        step2.add(a, s, ta, 7, 8);
        step2.add(b, s, tb, 0, 6);
        step2.add(c, s, tc, 9, 10);
        const std::vector<float> out1 = step1.run(ops, p, s), out2 = step2.run(ops, p, s);
        QVERIFY(!out1.empty() && !out2.empty());

        // The reference's inputs: queries and keys rotated by their positions
        // (the same RoPE), then everything through Q8_0.
        auto rotated = [&](Tokens t, int len) {
            std::vector<int32_t> pos(static_cast<size_t>(len));
            for (int j = 0; j < len; ++j) pos[static_cast<size_t>(j)] = j;
            ops.rope(t.q.data(), len, s.n_head, s.hd, pos, p.rope);
            ops.rope(t.k.data(), len, s.n_kv, s.hd, pos, p.rope);
            return t;
        };
        auto reference = [&](const Tokens& t, int pos, int head, float* want) {
            const int kvh = head / (s.n_head / s.n_kv);
            const int first = window ? std::max(0, pos + 1 - static_cast<int>(window)) : 0;
            const Q8Row q = q8_reference(&t.q[static_cast<size_t>((pos * s.n_head + head) * s.hd)], s.hd);
            std::vector<float> scores;
            for (int j = first; j <= pos; ++j) {
                const Q8Row k = q8_reference(&t.k[static_cast<size_t>((j * s.n_kv + kvh) * s.hd)], s.hd);
                float acc = 0;
                for (int blk = 0; blk < s.hd / kQ8; ++blk) {
                    double dot = 0;  // exact: a multiple of d_q * d_k below 2^42 of it
                    for (int i = blk * kQ8; i < (blk + 1) * kQ8; ++i)
                        dot += double{q.values[static_cast<size_t>(i)]} * k.values[static_cast<size_t>(i)];
                    acc += static_cast<float>(dot);
                }
                scores.push_back(acc * p.scale);
            }
            // The softmax is the F16 path's own (vec::exp_sum), over the row's keys alone.
            const float max = *std::max_element(scores.begin(), scores.end());
            const float inv_sum =
                1.0f / folio::cpu::vec::exp_sum(scores.data(), static_cast<int64_t>(scores.size()), max);
            for (float& x : scores) x *= inv_sum;
            for (int d = 0; d < s.hd; ++d) want[d] = 0.0f;
            for (int j = first; j <= pos; ++j) {
                const Q8Row v = q8_reference(&t.v[static_cast<size_t>((j * s.n_kv + kvh) * s.hd)], s.hd);
                for (int d = 0; d < s.hd; ++d)
                    want[d] = std::fma(scores[static_cast<size_t>(j - first)], v.values[static_cast<size_t>(d)], want[d]);
            }
        };
        const Tokens ra = rotated(a, 8), rb = rotated(b, 6), rc = rotated(c, 10);
        int mismatches = 0;
        std::vector<float> want(static_cast<size_t>(s.hd));
        auto compare = [&](const Tokens& t, int pos, const float* got) {
            for (int h = 0; h < s.n_head; ++h) {
                reference(t, pos, h, want.data());
                for (int d = 0; d < s.hd; ++d)
                    if (std::memcmp(&got[h * s.hd + d], &want[static_cast<size_t>(d)], sizeof(float)) != 0) ++mismatches;
            }
        };
        const size_t width = static_cast<size_t>(s.n_head * s.hd);
        for (int j = 0; j < 7; ++j) compare(ra, j, out1.data() + static_cast<size_t>(j) * width);
        for (int j = 0; j < 9; ++j) compare(rc, j, out1.data() + static_cast<size_t>(7 + j) * width);
        compare(ra, 7, out2.data());
        for (int j = 0; j < 6; ++j) compare(rb, j, out2.data() + static_cast<size_t>(1 + j) * width);
        compare(rc, 9, out2.data() + 7 * width);
        QVERIFY2(mismatches == 0, (std::to_string(mismatches) + " values differ from the Q8_0 reference").c_str());
    }
};

FOLIO_TEST_MAIN(KvQuantTest)
#include "test_kv_quant.moc"
