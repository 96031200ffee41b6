// The CPU forward-pass operations against plain reference formulas: RoPE in
// both pair layouts, RMSNorm, the GLU activations, and paged attention with
// block tables spanning several (shuffled) blocks, GQA, a prefix from an
// earlier step, two sequences in one batch, and a sliding window.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/vec.h"
#include "cpu/fp16.h"
#include "folio/backend.h"
#include "folio/sampling.h"
#include "folio_test.h"

using folio::Batch;
using folio::BatchSequence;
using folio::RopeStyle;

namespace {

using folio_test::random_vector;

float round_f16(float x) { return folio::cpu::fp16_to_fp32(folio::cpu::fp32_to_fp16(x)); }

struct Tokens {
    std::vector<float> q, k, v;  // per token: [n_head*hd], [n_kv*hd], [n_kv*hd]
};

}  // namespace

class InferenceOpsTest : public QObject {
    Q_OBJECT
private slots:
    void ropeStylesAgreeUnderTheRowPermutation() {
        // GGUF llama files permute Q/K rows so that interleaved pairs (2i, 2i+1)
        // hold what HF's split halves (i, i + d/2) hold: both must rotate alike.
        folio::cpu::KvCache cache;
        folio::cpu::CpuOps ops(1, cache, 16);
        const int n_heads = 3, hd = 16, n_rows = 4;
        const std::vector<int32_t> positions = {0, 1, 7, 300};
        std::vector<float> interleaved = random_vector(static_cast<size_t>(n_rows * n_heads * hd), 1);
        std::vector<float> split(interleaved.size());
        for (int r = 0; r < n_rows * n_heads; ++r)
            for (int i = 0; i < hd / 2; ++i) {
                split[static_cast<size_t>(r * hd + i)] = interleaved[static_cast<size_t>(r * hd + 2 * i)];
                split[static_cast<size_t>(r * hd + i + hd / 2)] = interleaved[static_cast<size_t>(r * hd + 2 * i + 1)];
            }
        const std::vector<float> before = interleaved;
        ops.rope(interleaved.data(), n_rows, n_heads, hd, positions, {10000.0f, 1.0f, RopeStyle::Interleaved});
        ops.rope(split.data(), n_rows, n_heads, hd, positions, {10000.0f, 1.0f, RopeStyle::SplitHalf});
        float max_diff = 0.0f;
        for (int r = 0; r < n_rows * n_heads; ++r)
            for (int i = 0; i < hd / 2; ++i) {
                max_diff = std::max(max_diff, std::fabs(split[static_cast<size_t>(r * hd + i)] -
                                                        interleaved[static_cast<size_t>(r * hd + 2 * i)]));
                max_diff = std::max(max_diff, std::fabs(split[static_cast<size_t>(r * hd + i + hd / 2)] -
                                                        interleaved[static_cast<size_t>(r * hd + 2 * i + 1)]));
            }
        QVERIFY2(max_diff < 1e-6f, "interleaved and split-half RoPE disagree");
        // Position 0 is the identity; position 1 rotates pair 0 by exactly 1 radian.
        for (int i = 0; i < n_heads * hd; ++i) QCOMPARE(interleaved[static_cast<size_t>(i)], before[static_cast<size_t>(i)]);
        const size_t row1 = static_cast<size_t>(n_heads * hd);
        const float x0 = before[row1], x1 = before[row1 + 1];
        QVERIFY(std::fabs(interleaved[row1] - (x0 * std::cos(1.0f) - x1 * std::sin(1.0f))) < 1e-6f);
        QVERIFY(std::fabs(interleaved[row1 + 1] - (x0 * std::sin(1.0f) + x1 * std::cos(1.0f))) < 1e-6f);
    }

    void tokenChoiceMatchesTheSamplersOrder() {
        // Ties (values from a few levels), -inf and NaN: top_k gives
        // select_top_k's entries, choose_tokens the first highest.
        folio::cpu::KvCache cache;
        folio::cpu::CpuOps ops(1, cache, 16);
        const int64_t rows = 5, vocab = 300;
        const int32_t k = 17;
        std::vector<float> logits(static_cast<size_t>(rows * vocab));
        std::mt19937 rng(9);
        for (float& x : logits) x = static_cast<float>(rng() % 6);
        for (int64_t i = 0; i < vocab; ++i) {
            logits[static_cast<size_t>(3 * vocab + i)] = -INFINITY;
            logits[static_cast<size_t>(4 * vocab + i)] = i % 3 ? NAN : -1.0f * static_cast<float>(i);
        }
        std::vector<float> values(static_cast<size_t>(rows * k));
        std::vector<int32_t> ids(values.size()), chosen(static_cast<size_t>(rows));
        const std::vector<float> temperatures = {0.5f, 1.0f, 0.8f, 1.0f, 2.0f};
        std::vector<double> softmax_sums(static_cast<size_t>(rows));
        std::vector<float> log_normalizers(static_cast<size_t>(rows));
        const folio::RowSums sums{temperatures, softmax_sums, log_normalizers};
        QVERIFY(ops.top_k(logits.data(), rows, vocab, k, values, ids, sums));
        QVERIFY(ops.choose_tokens(logits.data(), rows, vocab, chosen));
        std::vector<folio::sampling_detail::Candidate> want;
        for (int64_t r = 0; r < rows; ++r) {
            const std::span<const float> row(logits.data() + r * vocab, static_cast<size_t>(vocab));
            folio::select_top_k(row, k, want);
            const folio::RowSum sum = folio::row_sums(row, temperatures[static_cast<size_t>(r)]);
            QCOMPARE(softmax_sums[static_cast<size_t>(r)], sum.softmax_sum);
            QCOMPARE(log_normalizers[static_cast<size_t>(r)], sum.log_normalizer);
            for (int32_t j = 0; j < k; ++j) {
                QCOMPARE(ids[static_cast<size_t>(r * k + j)], want[static_cast<size_t>(j)].id);
                QCOMPARE(values[static_cast<size_t>(r * k + j)], want[static_cast<size_t>(j)].logit);
            }
            int32_t first_highest = 0;
            for (int32_t i = 1; i < vocab; ++i)
                if (row[static_cast<size_t>(i)] > row[static_cast<size_t>(first_highest)] ||
                    (std::isnan(row[static_cast<size_t>(first_highest)]) && !std::isnan(row[static_cast<size_t>(i)])))
                    first_highest = i;
            QCOMPARE(chosen[static_cast<size_t>(r)], first_highest);
        }
        std::vector<folio::sampling_detail::Candidate> none;
        QCOMPARE(folio::select_top_k(std::span<const float>(logits), 0, none), size_t{0});  // k = 0: nothing, no read
        QCOMPARE(log_normalizers[3], -INFINITY);  // nothing possible
        QCOMPARE(softmax_sums[3], 0.0);
        QVERIFY(softmax_sums[0] >= 1.0 && std::isfinite(log_normalizers[0]));
        QCOMPARE(chosen[3], 0);  // all -inf: the first
        QCOMPARE(chosen[4], 0);  // -0 at 0 beats every other number and NaN
        std::vector<int32_t> small(1);
        QVERIFY(!ops.choose_tokens(logits.data(), rows, vocab, small));
        QVERIFY(!ops.top_k(logits.data(), rows, vocab, vocab + 1, values, ids, {}));
        const std::vector<float> zero_temperatures(static_cast<size_t>(rows), 0.0f);
        QVERIFY(!ops.top_k(logits.data(), rows, vocab, k, values, ids,
                           folio::RowSums{zero_temperatures, softmax_sums, log_normalizers}));
        QVERIFY(!ops.top_k(logits.data(), rows, vocab, k, values, ids,
                           folio::RowSums{temperatures, std::span<double>(softmax_sums).first(2), log_normalizers}));
    }

    void rmsNormMatchesTheFormula() {
        for (int64_t n : {7, 64, 640, 1000}) {
            const std::vector<float> x = random_vector(static_cast<size_t>(n), 2, 3.0f);
            const std::vector<float> w = random_vector(static_cast<size_t>(n), 3);
            std::vector<float> out(static_cast<size_t>(n));
            folio::cpu::vec::rms_norm(x.data(), w.data(), 1e-6f, n, out.data());
            double ss = 0;
            for (float v : x) ss += double{v} * v;
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-6);
            for (int64_t i = 0; i < n; ++i) {
                const double want = x[static_cast<size_t>(i)] * inv * w[static_cast<size_t>(i)];
                QVERIFY2(std::fabs(out[static_cast<size_t>(i)] - want) < 1e-5 * (1 + std::fabs(want)), "rms_norm off");
            }
        }
    }

    void gluActivationsMatchTheFormulas() {
        const int64_t n = 1003;
        const std::vector<float> g = random_vector(static_cast<size_t>(n), 4, 12.0f);
        const std::vector<float> u = random_vector(static_cast<size_t>(n), 5, 2.0f);
        std::vector<float> silu = g, gelu = g;
        folio::cpu::vec::silu_mul(silu.data(), u.data(), n);
        folio::cpu::vec::gelu_mul(gelu.data(), u.data(), n);
        for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
            const double x = g[i];
            const double want_silu = x / (1 + std::exp(-x)) * u[i];
            const double want_gelu = 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * u[i];
            QVERIFY2(std::fabs(silu[i] - want_silu) < 1e-5 * (1 + std::fabs(want_silu)), "silu off");
            QVERIFY2(std::fabs(gelu[i] - want_gelu) < 1e-5 * (1 + std::fabs(want_gelu)), "gelu off");
        }
    }

    void pagedAttentionMatchesDenseReference() { check_attention(0); }
    void slidingWindowAttentionMatchesDenseReference() { check_attention(3); }

    // A sink window that slides in place turns its kept keys back by the
    // tokens it dropped (Backend::shift_keys): each must become the key its
    // token would have had at the new position, in the cache's type, with
    // the other blocks and every value left alone.
    void shiftKeysTurnsCachedKeysToTheirNewPositions() {
        const int n_kv = 2, hd = 64, n_head = 2, block = 4, n_tokens = 16, delta = 5;
        const std::vector<int32_t> table = {6, 1, 4, 2};  // positions 0..15
        const std::vector<int32_t> shifted = {4, 2};      // positions 8..15 -> 3..10
        const float factors[hd / 2] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8,
                                       8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
        folio::model::RopeParams yarn =
            folio::model::yarn_rope({10000.0f, 1.0f, RopeStyle::SplitHalf}, hd, 256, 4.0f, 1.0f);
        QVERIFY(yarn.mscale != 1.0f);  // the shift must not apply it twice
        const folio::model::RopeParams ropes[] = {{10000.0f, 1.0f, RopeStyle::Interleaved},
                                                  {500000.0f, 1.0f, RopeStyle::Interleaved, factors},
                                                  yarn};
        for (folio::KvType type : folio::kKvTypes)
            for (const folio::model::RopeParams& rope : ropes) {
                folio::cpu::KvCache cache;
                cache.allocate(1, n_kv, hd, block, 8, type);
                folio::cpu::CpuOps ops(2, cache, 64);
                folio::model::AttentionParams p;
                p.n_head = n_head;
                p.n_head_kv = n_kv;
                p.head_dim = hd;
                p.rope = rope;
                const std::vector<float> raw_k = random_vector(n_tokens * n_kv * hd, 21);
                std::vector<float> q = random_vector(n_tokens * n_head * hd, 22), k = raw_k;
                const std::vector<float> v = random_vector(n_tokens * n_kv * hd, 23);
                Batch batch;
                for (int j = 0; j < n_tokens; ++j) {
                    batch.token_ids.push_back(0);
                    batch.positions.push_back(j);
                    batch.slot_mapping.push_back(int64_t{table[static_cast<size_t>(j / block)]} * block + j % block);
                }
                batch.sequences.push_back(BatchSequence{0, n_tokens, n_tokens, table});
                const std::vector<int32_t> rows_seq(n_tokens, 0);
                ops.set_row_sequences(&rows_seq);
                std::vector<float> out(static_cast<size_t>(n_tokens * n_head * hd));
                QVERIFY(ops.attention(p, batch, q.data(), k.data(), v.data(), out.data()));
                const int64_t layer_bytes = int64_t{8} * block * cache.slot_bytes();
                const std::vector<uint8_t> k_before(cache.k[0].get(), cache.k[0].get() + layer_bytes);
                const std::vector<uint8_t> v_before(cache.v[0].get(), cache.v[0].get() + layer_bytes);

                ops.shift_keys(0, shifted, delta, rope);

                QVERIFY(std::equal(v_before.begin(), v_before.end(), cache.v[0].get()));
                const int64_t slot_bytes = cache.slot_bytes();
                std::vector<float> got(static_cast<size_t>(n_kv * hd));
                for (int j = 0; j < n_tokens; ++j) {
                    const int64_t slot = int64_t{table[static_cast<size_t>(j / block)]} * block + j % block;
                    const uint8_t* bytes = cache.k[0].get() + slot * slot_bytes;
                    if (j < 8) {  // the sinks' blocks: untouched, bit for bit
                        QVERIFY(std::equal(bytes, bytes + slot_bytes, k_before.begin() + slot * slot_bytes));
                        continue;
                    }
                    // What the key of token j is at position j - delta.
                    std::vector<float> want(raw_k.begin() + j * n_kv * hd, raw_k.begin() + (j + 1) * n_kv * hd);
                    const int32_t pos[] = {j - delta};
                    ops.rope(want.data(), 1, n_kv, hd, pos, rope);
                    float amax = 0.0f;
                    for (float w : want) amax = std::max(amax, std::fabs(w));
                    if (type == folio::KvType::Q8_0) {
                        folio::cpu::vec::dequantize_q8_0(bytes, got.data(), n_kv * hd);
                    } else if (type == folio::KvType::Fp8) {
                        folio::cpu::vec::dequantize_fp8(bytes, got.data(), n_kv * hd);
                    } else {
                        const auto* h = reinterpret_cast<const uint16_t*>(bytes);
                        for (int i = 0; i < n_kv * hd; ++i) got[static_cast<size_t>(i)] = folio::cpu::fp16_to_fp32(h[i]);
                    }
                    // Stored, read, turned and stored again: two roundings in the cache's type.
                    // E4M3 keeps 3 bits of mantissa: half a step is 1/16 of the value.
                    const float tol = type == folio::KvType::Q8_0  ? 2.5f * amax / 127.0f
                                      : type == folio::KvType::Fp8 ? 2.0f * amax / 16.0f
                                                                   : 2.0f * amax / 1024.0f;
                    for (int i = 0; i < n_kv * hd; ++i) {
                        const float d = std::fabs(got[static_cast<size_t>(i)] - want[static_cast<size_t>(i)]);
                        if (d > tol)
                            QFAIL(qPrintable(QString("token %1 value %2: %3, want %4 (type %5, style %6)")
                                                 .arg(j).arg(i).arg(got[static_cast<size_t>(i)]).arg(want[static_cast<size_t>(i)])
                                                 .arg(int(type)).arg(int(rope.style))));
                    }
                }
            }
    }

    void unknownArchitectureIsAClearError() {
        folio::ModelDescription model;
        model.name = "mystery";
        model.hparams.architecture = "mamba";
        auto backend = folio::create_cpu_backend(model, {});
        QVERIFY(!backend);
        QVERIFY2(backend.error().message.find("'mamba' is not supported") != std::string::npos,
                 backend.error().message.c_str());
        // ... and lists every architecture Folio runs.
        for (const char* name : {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3"})
            QVERIFY2(backend.error().message.find(name) != std::string::npos, backend.error().message.c_str());
    }

private:
    // Two sequences in one step: A has 7 tokens cached from an earlier step
    // and adds 3; B prefills 5. Blocks of 4 tokens, block tables shuffled.
    void check_attention(uint32_t window) {
        const int n_head = 4, n_kv = 2, hd = 16, block = 4;
        folio::cpu::KvCache cache;
        cache.allocate(1, n_kv, hd, block, 16);
        folio::cpu::CpuOps ops(2, cache, 64);
        folio::model::AttentionParams p;
        p.n_head = n_head;
        p.n_head_kv = n_kv;
        p.head_dim = hd;
        p.scale = 0.25f;
        p.sliding_window = window;

        const int len_a = 10, len_b = 5;
        Tokens a{random_vector(len_a * n_head * hd, 10), random_vector(len_a * n_kv * hd, 11),
                 random_vector(len_a * n_kv * hd, 12)};
        Tokens b{random_vector(len_b * n_head * hd, 13), random_vector(len_b * n_kv * hd, 14),
                 random_vector(len_b * n_kv * hd, 15)};
        // The reference attends with queries and keys rotated by their positions.
        auto rotated = [&](Tokens t, int len) {
            std::vector<int32_t> pos(static_cast<size_t>(len));
            for (int j = 0; j < len; ++j) pos[static_cast<size_t>(j)] = j;
            ops.rope(t.q.data(), len, n_head, hd, pos, p.rope);
            ops.rope(t.k.data(), len, n_kv, hd, pos, p.rope);
            return t;
        };
        const Tokens a_rot = rotated(a, len_a), b_rot = rotated(b, len_b);
        const std::vector<int32_t> table_a = {5, 2, 9}, table_b = {7, 0};
        auto slot = [&](const std::vector<int32_t>& t, int j) { return int64_t{t[static_cast<size_t>(j / block)]} * block + j % block; };

        // Step 1: A's first 7 tokens.
        std::vector<int32_t> rows_seq;
        Batch step1;
        for (int j = 0; j < 7; ++j) {
            step1.token_ids.push_back(0);
            step1.positions.push_back(j);
            step1.slot_mapping.push_back(slot(table_a, j));
        }
        step1.sequences.push_back(BatchSequence{0, 7, 7, table_a});
        rows_seq.assign(7, 0);
        ops.set_row_sequences(&rows_seq);
        std::vector<float> out1(7 * n_head * hd);
        QVERIFY(ops.attention(p, step1, a.q.data(), a.k.data(), a.v.data(), out1.data()));

        // Step 2: A's last 3 tokens, then B's 5, in one flat batch.
        Batch step2;
        std::vector<float> q2, k2, v2;
        auto add_rows = [&](const Tokens& t, const std::vector<int32_t>& table, int from, int to) {
            for (int j = from; j < to; ++j) {
                step2.token_ids.push_back(0);
                step2.positions.push_back(j);
                step2.slot_mapping.push_back(slot(table, j));
                q2.insert(q2.end(), t.q.begin() + j * n_head * hd, t.q.begin() + (j + 1) * n_head * hd);
                k2.insert(k2.end(), t.k.begin() + j * n_kv * hd, t.k.begin() + (j + 1) * n_kv * hd);
                v2.insert(v2.end(), t.v.begin() + j * n_kv * hd, t.v.begin() + (j + 1) * n_kv * hd);
            }
        };
        add_rows(a, table_a, 7, 10);
        add_rows(b, table_b, 0, 5);
        step2.sequences.push_back(BatchSequence{0, 3, 10, table_a});
        step2.sequences.push_back(BatchSequence{3, 5, 5, table_b});
        rows_seq = {0, 0, 0, 1, 1, 1, 1, 1};
        std::vector<float> out2(8 * n_head * hd);
        QVERIFY(ops.attention(p, step2, q2.data(), k2.data(), v2.data(), out2.data()));

        // Dense reference over f16-rounded queries, keys, values and probabilities.
        auto reference = [&](const Tokens& t, int pos, int head, float* want) {
            const int kvh = head / (n_head / n_kv);
            const int first = window ? std::max(0, pos + 1 - static_cast<int>(window)) : 0;
            std::vector<double> s;
            double max = -1e30;
            for (int j = first; j <= pos; ++j) {
                double dot = 0;
                for (int d = 0; d < hd; ++d)
                    dot += double{round_f16(t.q[static_cast<size_t>((pos * n_head + head) * hd + d)])} *
                           round_f16(t.k[static_cast<size_t>((j * n_kv + kvh) * hd + d)]);
                s.push_back(dot * p.scale);
                max = std::max(max, s.back());
            }
            double sum = 0;
            for (double& x : s) sum += (x = std::exp(x - max));
            for (double& x : s) x = round_f16(static_cast<float>(x / sum));  // as llama.cpp: probabilities in half
            for (int d = 0; d < hd; ++d) {
                double acc = 0;
                for (int j = first; j <= pos; ++j)
                    acc += s[static_cast<size_t>(j - first)] * round_f16(t.v[static_cast<size_t>((j * n_kv + kvh) * hd + d)]);
                want[d] = static_cast<float>(acc);
            }
        };
        float max_diff = 0;
        std::vector<float> want(hd);
        auto compare = [&](const Tokens& t, int pos, const float* got) {
            for (int h = 0; h < n_head; ++h) {
                reference(t, pos, h, want.data());
                for (int d = 0; d < hd; ++d) max_diff = std::max(max_diff, std::fabs(got[h * hd + d] - want[static_cast<size_t>(d)]));
            }
        };
        for (int j = 0; j < 7; ++j) compare(a_rot, j, out1.data() + j * n_head * hd);
        for (int r = 0; r < 3; ++r) compare(a_rot, 7 + r, out2.data() + r * n_head * hd);
        for (int r = 0; r < 5; ++r) compare(b_rot, r, out2.data() + (3 + r) * n_head * hd);
        QVERIFY2(max_diff < 1e-5f, ("paged attention differs from the dense reference by " + std::to_string(max_diff)).c_str());
    }
};

FOLIO_TEST_MAIN(InferenceOpsTest)
#include "test_ops.moc"
