// The CUDA attention kernels (RoPE + KV write, paged attention) against
// plain double-precision references written here: random inputs (never
// zeros), NaN-poisoned outputs and unused cache slots, batches mixing decode rows and prefill chunks of
// several sequences over shuffled block tables, GQA, sliding window, softcap,
// head_dim 64/128/256, long prefixes (split-K), a CUDA-graph replay, and
// batch invariance (a row's bits alone and inside mixed batches, memcmp).
// Quantized caches: test_gpu_attention_quant.cpp.
// Skips without a GPU. Their speed: bench/cuda_attention (folio_bench_cuda_attention).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "folio_kernels/attention.h"
#include "folio_kernels/matmul.h"
#include "folio_test.h"
#include "gpu_paged_batch.h"
#include "gpu_test_support.h"

namespace {

// out[row][head] = softmax(q_half · K · scale [softcapped]) V, in double.
std::vector<double> reference_attention(const HostBatch& hb, const Shape& sh, float scale,
                                        const std::vector<float>& q) {
    const int D = sh.head_dim, group = sh.n_head / sh.n_head_kv;
    std::vector<double> out(static_cast<size_t>(hb.n_tokens) * sh.n_head * D, 0.0);
    std::vector<double> scores, qh(static_cast<size_t>(D));
    for (int r = 0; r < hb.n_tokens; ++r) {
        const int s = hb.row_seq[static_cast<size_t>(r)], pos = hb.positions[static_cast<size_t>(r)];
        const int first = sh.window > 0 ? std::max(0, pos + 1 - sh.window) : 0;
        for (int h = 0; h < sh.n_head; ++h) {
            const int kvh = h / group;
            for (int d = 0; d < D; ++d)
                qh[static_cast<size_t>(d)] = round_half(q[(static_cast<size_t>(r) * sh.n_head + h) * D + d]);
            scores.assign(static_cast<size_t>(pos - first + 1), 0.0);
            auto at = [&](int j, int d) {
                const int64_t block = hb.block_tables[static_cast<size_t>(s * hb.max_blocks + j / sh.block_size)];
                return static_cast<size_t>(((block * sh.n_head_kv + kvh) * sh.block_size + j % sh.block_size) * D +
                                           d);
            };
            double max_score = -1e300;
            for (int j = first; j <= pos; ++j) {
                double dot = 0;
                for (int d = 0; d < D; ++d) dot += qh[static_cast<size_t>(d)] * half_to_float(hb.k_cache[at(j, d)]);
                double sc = dot * scale;
                if (sh.softcap > 0) sc = sh.softcap * std::tanh(sc / sh.softcap);
                scores[static_cast<size_t>(j - first)] = sc;
                max_score = std::max(max_score, sc);
            }
            double sum = 0;
            for (double& sc : scores) sum += (sc = std::exp(sc - max_score));
            double* o = out.data() + (static_cast<size_t>(r) * sh.n_head + h) * D;
            for (int j = first; j <= pos; ++j) {
                const double p = scores[static_cast<size_t>(j - first)] / sum;
                for (int d = 0; d < D; ++d) o[d] += p * half_to_float(hb.v_cache[at(j, d)]);
            }
        }
    }
    return out;
}

// The next matmul's copy of `out` in `format`, as the GPU must write it (elementwise.h ActivationQuant):
// F16 / BF16 each value rounded to nearest even; Q8_0 / Q8_1 the int8 quants, then per block of 32 a
// float2 {d, s} at the next 256-byte boundary: d = amax / 127 (stored rounded to half), q = round_even(x
// * (1 / d)), s = the sum of the quants (Q8_0) or half(d * that sum) (Q8_1).
std::vector<unsigned char> expected_copy(fk::ActivationFormat format, const std::vector<float>& out) {
    const size_t n = out.size();
    // Bytes no kernel writes (the alignment padding) keep DeviceArray::poison()'s 0xff.
    std::vector<unsigned char> want(fk::activation_workspace_bytes(format, static_cast<int64_t>(n)), 0xff);
    if (format == fk::ActivationFormat::F16 || format == fk::ActivationFormat::BF16) {
        for (size_t i = 0; i < n; ++i) {
            const uint16_t h = format == fk::ActivationFormat::BF16 ? float_to_bf16(out[i]) : float_to_half(out[i]);
            std::memcpy(want.data() + 2 * i, &h, 2);
        }
        return want;
    }
    const size_t meta_at = (n + 255) / 256 * 256;
    for (size_t b = 0; b < n / 32; ++b) {
        float amax = 0.0f;
        for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(out[32 * b + i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (size_t i = 0; i < 32; ++i) {
            const int q = static_cast<int>(std::nearbyint(out[32 * b + i] * id));
            want[32 * b + i] = static_cast<unsigned char>(static_cast<int8_t>(q));
            sum += q;
        }
        const float meta[2] = {round_half(d), format == fk::ActivationFormat::Q8_1
                                                  ? round_half(d * static_cast<float>(sum))
                                                  : static_cast<float>(sum)};
        std::memcpy(want.data() + meta_at + 8 * b, meta, 8);
    }
    return want;
}

// The same attention asked to write its output again in each form a matmul reads (ActivationQuant): the
// F32 output is unchanged and the copy is expected_copy's, bit for bit, wherever a row has an output.
std::string check_output_copy(const float* dq, const DeviceBatch& db, const fk::AttentionParams& p,
                              const std::vector<float>& out, DeviceArray<unsigned char>& ws, const char* name) {
    for (const fk::ActivationFormat format : {fk::ActivationFormat::F16, fk::ActivationFormat::BF16,
                                              fk::ActivationFormat::Q8_0, fk::ActivationFormat::Q8_1}) {
        const std::vector<unsigned char> want = expected_copy(format, out);
        const std::string what = std::string(name) + " (format " + std::to_string(static_cast<int>(format)) + ")";
        DeviceArray<float> dout(out.size());
        DeviceArray<unsigned char> copy(want.size());
        if (std::string e = cuda_error(dout.status != cudaSuccess ? dout.status : copy.status, "alloc"); !e.empty())
            return e;
        if (std::string e = cuda_error(copy.poison(), "poison"); !e.empty()) return e;
        const fk::ActivationQuant act{format, copy.ptr};
        if (std::string e = cuda_error(fk::paged_attention(dq, db.kv, db.b, p, dout.ptr, ws.ptr, ws.count, nullptr, act),
                                       "paged_attention with a copy");
            !e.empty())
            return what + ": " + e;
        std::vector<float> again;
        std::vector<unsigned char> got;
        if (std::string e = cuda_error(dout.download(again), "download"); !e.empty()) return e;
        if (std::string e = cuda_error(copy.download(got), "download"); !e.empty()) return e;
        if (std::memcmp(again.data(), out.data(), out.size() * sizeof(float)) != 0)
            return what + ": the output changes when a copy is asked for";
        for (size_t i = 0; i < want.size(); ++i)
            if (got[i] != want[i])
                return what + ": byte " + std::to_string(i) + " of " + std::to_string(want.size()) + " is " +
                       std::to_string(got[i]) + ", not " + std::to_string(want[i]);
    }
    return {};
}

// One attention check: random batch and queries, poisoned output and workspace.
std::string check_attention(std::mt19937& rng, const Shape& sh, const std::vector<SeqSpec>& seqs, double* error,
                            const char* name) {
    const HostBatch hb = make_batch(rng, sh, seqs);
    DeviceBatch db(hb, sh, 5);
    if (std::string e = cuda_error(db.status(), "upload"); !e.empty()) return e;
    const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    const size_t q_size = static_cast<size_t>(hb.n_tokens) * sh.n_head * sh.head_dim;
    const std::vector<float> q = random_floats(rng, q_size, -sh.q_range, sh.q_range);
    DeviceArray<float> dq(q), dout(q_size);
    const size_t ws_bytes = fk::attention_workspace_bytes(db.b, sh.n_head, sh.head_dim);
    DeviceArray<unsigned char> ws(ws_bytes);
    if (std::string e = cuda_error(dq.status != cudaSuccess ? dq.status : dout.status, "alloc"); !e.empty()) return e;
    if (std::string e = cuda_error(ws.status, "alloc workspace"); !e.empty()) return e;
    if (std::string e = cuda_error(dout.poison(), "poison"); !e.empty()) return e;
    if (ws_bytes) {
        if (std::string e = cuda_error(ws.poison(), "poison"); !e.empty()) return e;
    }
    fk::AttentionParams p;
    p.n_head = sh.n_head;
    p.scale = scale;
    p.sliding_window = sh.window;
    p.softcap = sh.softcap;
    if (std::string e = cuda_error(fk::paged_attention(dq.ptr, db.kv, db.b, p, dout.ptr, ws.ptr, ws_bytes, nullptr),
                                   "paged_attention");
        !e.empty())
        return std::string(name) + ": " + e;
    if (std::string e = cuda_error(cudaDeviceSynchronize(), "sync"); !e.empty()) return std::string(name) + ": " + e;
    std::vector<float> out;
    if (std::string e = cuda_error(dout.download(out), "download"); !e.empty()) return e;
    const std::vector<double> ref = reference_attention(hb, sh, scale, q);
    if (std::string e = check_close(name, out, ref, 2e-3, error); !e.empty()) return e;
    return check_output_copy(dq.ptr, db, p, out, ws, name);
}

// ---- batch invariance -----------------------------------------------------------

// A sequence with fixed contents: K and V of every token ([token][kv head][d], half) and the query of every
// position ([position][head][d]). Batches built from it read the same values wherever it sits.
struct FixedSequence {
    int length;
    std::vector<uint16_t> k, v;
    std::vector<float> q;
};

FixedSequence make_fixed_sequence(std::mt19937& rng, const Shape& sh, int length) {
    FixedSequence fs;
    fs.length = length;
    const size_t kv_values = static_cast<size_t>(length) * sh.n_head_kv * sh.head_dim;
    for (float x : random_floats(rng, kv_values, -1, 1)) fs.k.push_back(float_to_half(x));
    for (float x : random_floats(rng, kv_values, -1, 1)) fs.v.push_back(float_to_half(x));
    fs.q = random_floats(rng, static_cast<size_t>(length) * sh.n_head * sh.head_dim, -sh.q_range, sh.q_range);
    return fs;
}

// One sequence of a batch: rows at positions end - n_query .. end - 1 of a FixedSequence.
struct SeqUse {
    int seq, n_query, end;
};

// Runs paged_attention on a batch of the given uses (blocks shuffled, cache poisoned elsewhere, output and
// workspace poisoned) with host bounds loosened by the slacks; returns each row's output, row order as given.
std::string run_fixed_batch(std::mt19937& rng, const Shape& sh, const std::vector<FixedSequence>& seqs,
                            const std::vector<SeqUse>& uses, int len_slack, int query_slack,
                            std::vector<float>* out) {
    HostBatch hb;
    hb.n_seqs = static_cast<int>(uses.size());
    int total_blocks = 0;
    for (const SeqUse& u : uses) {
        const int blocks = (u.end + sh.block_size - 1) / sh.block_size;
        total_blocks += blocks;
        hb.max_blocks = std::max(hb.max_blocks, blocks);
    }
    hb.max_blocks += 2;
    hb.n_blocks = total_blocks + 5;
    std::vector<int32_t> pool(static_cast<size_t>(hb.n_blocks));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    const size_t slot_values = static_cast<size_t>(sh.n_head_kv) * sh.head_dim;
    const size_t row_values = static_cast<size_t>(sh.n_head) * sh.head_dim;
    hb.k_cache.assign(static_cast<size_t>(hb.n_blocks) * sh.block_size * slot_values, kHalfNaN);
    hb.v_cache = hb.k_cache;
    hb.block_tables.assign(static_cast<size_t>(hb.n_seqs) * hb.max_blocks, -1);
    std::vector<float> q;
    size_t next = 0;
    for (int s = 0; s < hb.n_seqs; ++s) {
        const SeqUse& u = uses[static_cast<size_t>(s)];
        const FixedSequence& fs = seqs[static_cast<size_t>(u.seq)];
        const int blocks = (u.end + sh.block_size - 1) / sh.block_size;
        for (int b = 0; b < blocks; ++b) hb.block_tables[static_cast<size_t>(s * hb.max_blocks + b)] = pool[next++];
        hb.query_start.push_back(hb.n_tokens);
        hb.n_query.push_back(u.n_query);
        hb.seq_len.push_back(u.end);
        for (int pos = u.end - u.n_query; pos < u.end; ++pos) {
            hb.positions.push_back(pos);
            hb.row_seq.push_back(s);
            hb.slot_mapping.push_back(
                int64_t{hb.block_tables[static_cast<size_t>(s * hb.max_blocks + pos / sh.block_size)]} * sh.block_size +
                pos % sh.block_size);
            q.insert(q.end(), fs.q.begin() + static_cast<std::ptrdiff_t>(pos * row_values),
                     fs.q.begin() + static_cast<std::ptrdiff_t>((pos + 1) * row_values));
        }
        hb.n_tokens += u.n_query;
        for (int j = 0; j < u.end; ++j) {
            const int64_t block = hb.block_tables[static_cast<size_t>(s * hb.max_blocks + j / sh.block_size)];
            for (int h = 0; h < sh.n_head_kv; ++h) {
                const size_t dst = static_cast<size_t>(((block * sh.n_head_kv + h) * sh.block_size + j % sh.block_size) *
                                                       sh.head_dim);
                const size_t src = (static_cast<size_t>(j) * sh.n_head_kv + h) * sh.head_dim;
                std::copy_n(fs.k.begin() + static_cast<std::ptrdiff_t>(src), sh.head_dim,
                            hb.k_cache.begin() + static_cast<std::ptrdiff_t>(dst));
                std::copy_n(fs.v.begin() + static_cast<std::ptrdiff_t>(src), sh.head_dim,
                            hb.v_cache.begin() + static_cast<std::ptrdiff_t>(dst));
            }
        }
    }
    DeviceBatch db(hb, sh, 0);
    if (std::string e = cuda_error(db.status(), "upload"); !e.empty()) return e;
    db.b.max_seq_len += len_slack;
    db.b.max_n_query += query_slack;
    DeviceArray<float> dq(q), dout(q.size());
    const size_t ws_bytes = fk::attention_workspace_bytes(db.b, sh.n_head, sh.head_dim);
    DeviceArray<unsigned char> ws(ws_bytes);
    if (dq.status != cudaSuccess || dout.status != cudaSuccess || ws.status != cudaSuccess) return "alloc failed";
    if (std::string e = cuda_error(dout.poison(), "poison"); !e.empty()) return e;
    if (ws_bytes) {
        if (std::string e = cuda_error(ws.poison(), "poison"); !e.empty()) return e;
    }
    fk::AttentionParams p;
    p.n_head = sh.n_head;
    p.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    p.sliding_window = sh.window;
    p.softcap = sh.softcap;
    if (std::string e = cuda_error(fk::paged_attention(dq.ptr, db.kv, db.b, p, dout.ptr, ws.ptr, ws_bytes, nullptr),
                                   "paged_attention");
        !e.empty())
        return e;
    if (std::string e = cuda_error(cudaDeviceSynchronize(), "sync"); !e.empty()) return e;
    return cuda_error(dout.download(*out), "download");
}

}  // namespace

class TestGpuAttention : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    friend int main();
#endif

private slots:
    void rope_store_kv_rotates_and_fills_the_slots() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(12);
        struct Case {
            int n_head, n_head_kv, head_dim, block_size;
            bool split_half;
            float base, scale;
            bool freq_factors;  // Llama 3.1's divisors: 1 for the first quarter of the pairs, then up to 8
        };
        for (const Case& c : {Case{9, 3, 64, 16, false, 10000.f, 1.f, false},
                              Case{32, 8, 128, 16, true, 500000.f, 1.f, false},
                              Case{4, 1, 256, 32, true, 1000000.f, 8.f, false},
                              Case{4, 4, 128, 8, false, 10000.f, 2.f, false},
                              Case{8, 2, 128, 16, false, 500000.f, 1.f, true},
                              Case{4, 2, 64, 16, true, 500000.f, 2.f, true}}) {
            const Shape sh{c.n_head, c.n_head_kv, c.head_dim, c.block_size};
            // Prefill chunk, decode rows far into the sequence, and a padding row (slot -1).
            HostBatch hb = make_batch(rng, sh, {{20, 50}, {1, 5000}, {3, 700}, {1, 1}});
            hb.slot_mapping.back() = -1;
            std::fill(hb.k_cache.begin(), hb.k_cache.end(), kHalfNaN);
            std::fill(hb.v_cache.begin(), hb.v_cache.end(), kHalfNaN);
            DeviceBatch db(hb, sh, 0);
            QVERIFY(db.status() == cudaSuccess);
            const int D = c.head_dim, half_dim = D / 2;
            const size_t q_size = static_cast<size_t>(hb.n_tokens) * c.n_head * D;
            const size_t kv_size = static_cast<size_t>(hb.n_tokens) * c.n_head_kv * D;
            const auto q = random_floats(rng, q_size, -2, 2), k = random_floats(rng, kv_size, -2, 2),
                       v = random_floats(rng, kv_size, -2, 2);
            DeviceArray<float> dq(q), dk(k), dv(v);
            std::vector<float> factors;
            if (c.freq_factors)
                for (int i = 0; i < half_dim; ++i)
                    factors.push_back(i < half_dim / 4 ? 1.0f : 1.0f + 7.0f * float(i) / float(half_dim - 1));
            DeviceArray<float> dfactors(factors);
            fk::RopeParams rope{c.base, c.scale, c.split_half, c.freq_factors ? dfactors.ptr : nullptr};
            const cudaError_t err = fk::rope_store_kv(dq.ptr, dk.ptr, dv.ptr, c.n_head, db.kv, rope, db.b, nullptr);
            QVERIFY2(err == cudaSuccess, cuda_error(err, "rope_store_kv").c_str());
            std::vector<float> q_out;
            std::vector<uint16_t> k_cache, v_cache;
            QVERIFY(dq.download(q_out) == cudaSuccess);
            QVERIFY(db.k_cache.download(k_cache) == cudaSuccess);
            QVERIFY(db.v_cache.download(v_cache) == cudaSuccess);

            // The angles as the CPU backend makes them (float: repeated products, then / factor,
            // then * (1 / scale)); the rotation in double.
            const float theta_scale = std::pow(c.base, -2.0f / static_cast<float>(D)), freq_scale = 1.0f / c.scale;
            auto rotate = [&](const float* x, int n_heads, int pos, std::vector<double>& y) {
                y.assign(static_cast<size_t>(n_heads) * D, 0.0);
                float theta = static_cast<float>(pos);
                for (int i = 0; i < half_dim; ++i, theta *= theta_scale) {
                    const float angle = (factors.empty() ? theta : theta / factors[static_cast<size_t>(i)]) * freq_scale;
                    const double cs = std::cos(static_cast<double>(angle)), sn = std::sin(static_cast<double>(angle));
                    for (int h = 0; h < n_heads; ++h) {
                        const int a = c.split_half ? i : 2 * i, b = c.split_half ? i + half_dim : 2 * i + 1;
                        const double x0 = x[h * D + a], x1 = x[h * D + b];
                        y[static_cast<size_t>(h * D + a)] = x0 * cs - x1 * sn;
                        y[static_cast<size_t>(h * D + b)] = x0 * sn + x1 * cs;
                    }
                }
            };
            std::vector<double> ref_q, ref_k, ref_v, y;
            std::vector<float> k_got, v_got;
            for (int r = 0; r < hb.n_tokens; ++r) {
                const int pos = hb.positions[static_cast<size_t>(r)];
                rotate(q.data() + static_cast<size_t>(r) * c.n_head * D, c.n_head, pos, y);
                ref_q.insert(ref_q.end(), y.begin(), y.end());
                const int64_t slot = hb.slot_mapping[static_cast<size_t>(r)];
                if (slot < 0) continue;
                rotate(k.data() + static_cast<size_t>(r) * c.n_head_kv * D, c.n_head_kv, pos, y);
                for (int h = 0; h < c.n_head_kv; ++h)
                    for (int d = 0; d < D; ++d) {
                        const size_t at = static_cast<size_t>(
                            ((slot / c.block_size * c.n_head_kv + h) * c.block_size + slot % c.block_size) * D + d);
                        k_got.push_back(half_to_float(k_cache[at]));
                        v_got.push_back(half_to_float(v_cache[at]));
                        ref_k.push_back(y[static_cast<size_t>(h * D + d)]);
                        ref_v.push_back(v[(static_cast<size_t>(r) * c.n_head_kv + h) * D + d]);
                        k_cache[at] = v_cache[at] = kHalfNaN;  // checked: only poison may remain
                    }
            }
            std::string e = check_close("rope q", q_out, ref_q, 2e-6);
            QVERIFY2(e.empty(), e.c_str());
            QCOMPARE(ref_k.size(), k_got.size());
            e = check_close("rope k cache", k_got, ref_k, 1e-3);
            QVERIFY2(e.empty(), e.c_str());
            e = check_close("v cache", v_got, ref_v, 1e-3);
            QVERIFY2(e.empty(), e.c_str());
            for (size_t i = 0; i < k_cache.size(); ++i)
                QVERIFY2(k_cache[i] == kHalfNaN && v_cache[i] == kHalfNaN,
                         ("cache element " + std::to_string(i) + " written outside the rows' slots").c_str());
        }
    }

    void attention_over_mixed_batches() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(13);
        const std::vector<BatchCase> cases = {
            {"d64 gqa3 mixed", {9, 3, 64, 16}, {{1, 37}, {45, 65}, {1, 300}, {70, 70}}},
            {"d128 gqa4 mixed", {32, 8, 128, 16}, {{1, 200}, {1, 1}, {33, 33}, {17, 150}}},
            {"d256 gqa8 window softcap", {8, 1, 256, 32, 40, 30.f, 4.f}, {{1, 100}, {60, 90}, {1, 41}, {5, 300}}},
            {"d128 mha bs8", {4, 4, 128, 8}, {{1, 77}, {100, 130}, {1, 9}}},
            {"d64 gqa2 bs32 window", {4, 2, 64, 32, 16}, {{1, 50}, {40, 40}, {3, 70}}},
            {"d128 gqa4 decode", {32, 8, 128, 16}, {{1, 1}, {1, 17}, {1, 64}, {1, 65}, {1, 333}, {1, 129}}},
            {"d256 gqa8 decode softcap", {8, 1, 256, 16, 0, 50.f, 4.f}, {{1, 31}, {1, 520}, {1, 2}}},
            {"d64 mha decode", {3, 3, 64, 8}, {{1, 15}, {1, 700}, {1, 3}}},
            {"d128 gqa2 spec rows", {8, 4, 128, 16}, {{2, 90}, {2, 2}, {1, 47}}},
        };
        for (const BatchCase& c : cases) {
            double err = 0;
            const std::string e = check_attention(rng, c.shape, c.seqs, &err, c.name);
            QVERIFY2(e.empty(), e.c_str());
            std::printf("  %-28s rel error %.2e\n", c.name, err);
        }
    }

    void attention_over_long_prefixes_splits_keys() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(14);
        const std::vector<BatchCase> cases = {
            {"d128 gqa4 decode 4096+", {32, 8, 128, 16}, {{1, 4096}, {1, 6000}}},
            {"d128 gqa4 chunk after 4096", {8, 2, 128, 16}, {{1, 4100}, {1, 5000}, {64, 4160}}},
            {"d256 gqa2 window 1024 softcap", {4, 2, 256, 32, 1024, 30.f, 3.f}, {{1, 4500}, {32, 4200}}},
            {"d64 gqa3 decode 8192", {9, 3, 64, 16}, {{1, 8192}}},
            // more than 128 chunks: the merge folds several segments of partials
            {"d128 gqa4 decode 20000", {8, 2, 128, 16}, {{1, 20000}, {1, 16500}}},
        };
        for (const BatchCase& c : cases) {
            double err = 0;
            const std::string e = check_attention(rng, c.shape, c.seqs, &err, c.name);
            QVERIFY2(e.empty(), e.c_str());
            std::printf("  %-28s rel error %.2e\n", c.name, err);
        }
    }

    // A row's output must not depend on the rest of the batch: the same
    // sequences run alone (decode row, short and long prefill chunks, loose
    // host bounds) and inside large shuffled batches of other decode rows and
    // prefill chunks give bit-identical rows (memcmp), positions on both
    // sides of chunk boundaries, with and without a window and softcap.
    void attention_is_batch_invariant() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        if (const char* k = std::getenv("FOLIO_ATTENTION_KERNEL"); k && std::string(k) == "simt")
            QSKIP("the CUDA-core kernel is not batch-invariant");
        std::mt19937 rng(16);
        const Shape shapes[] = {{32, 8, 128, 16}, {9, 3, 64, 16}, {8, 1, 256, 16, 300, 30.f, 3.f}, {8, 4, 128, 32, 200}};
        for (const Shape& sh : shapes) {
            char name_buf[64];
            std::snprintf(name_buf, sizeof name_buf, "d%d heads %d/%d window %d", sh.head_dim, sh.n_head,
                          sh.n_head_kv, sh.window);
            const std::string shape_name = name_buf;
            // Targets (lengths around chunk and tile boundaries), then fillers.
            const std::vector<int> target_lengths = {1, 17, 128, 129, 300, 513, 1100};
            std::vector<FixedSequence> seqs;
            for (int len : target_lengths) seqs.push_back(make_fixed_sequence(rng, sh, len));
            std::uniform_int_distribution<int> filler_len(1, 900);
            for (int i = 0; i < 24; ++i) seqs.push_back(make_fixed_sequence(rng, sh, filler_len(rng)));
            const int n_targets = static_cast<int>(target_lengths.size());
            const size_t row_values = static_cast<size_t>(sh.n_head) * sh.head_dim;
            // (sequence, position) -> the first output seen for it.
            std::vector<std::vector<std::vector<float>>> seen(seqs.size());
            for (size_t i = 0; i < seqs.size(); ++i) seen[i].resize(static_cast<size_t>(seqs[i].length));
            int compared = 0;
            auto run = [&](const std::vector<SeqUse>& uses, int len_slack, int query_slack, const std::string& what) {
                std::vector<float> out;
                const std::string e = run_fixed_batch(rng, sh, seqs, uses, len_slack, query_slack, &out);
                if (!e.empty()) return shape_name + " " + what + ": " + e;
                size_t row = 0;
                for (const SeqUse& u : uses) {
                    for (int pos = u.end - u.n_query; pos < u.end; ++pos, ++row) {
                        const std::vector<float> got(out.begin() + static_cast<std::ptrdiff_t>(row * row_values),
                                                     out.begin() + static_cast<std::ptrdiff_t>((row + 1) * row_values));
                        for (float x : got)
                            if (!std::isfinite(x)) return shape_name + " " + what + ": non-finite output";
                        auto& first = seen[static_cast<size_t>(u.seq)][static_cast<size_t>(pos)];
                        if (first.empty()) {
                            first = got;
                        } else {
                            ++compared;
                            if (std::memcmp(first.data(), got.data(), row_values * sizeof(float)) != 0) {
                                size_t at = 0;
                                while (first[at] == got[at]) ++at;
                                char buf[200];
                                std::snprintf(buf, sizeof buf, ": sequence %d position %d element %zu: %.9g vs %.9g",
                                              u.seq, pos, at, first[at], got[at]);
                                return shape_name + " " + what + buf;
                            }
                        }
                    }
                }
                return std::string();
            };
            // Alone: a decode row at the end, prefill chunks ending there, loose bounds.
            for (int t = 0; t < n_targets; ++t) {
                const int len = seqs[static_cast<size_t>(t)].length;
                for (const auto& [n_query, len_slack, query_slack] :
                     {std::tuple{1, 0, 0}, std::tuple{1, 1000, 0}, std::tuple{1, 7, 40}, std::tuple{2, 0, 0},
                      std::tuple{3, 0, 0}, std::tuple{40, 0, 0}, std::tuple{100, 300, 5}, std::tuple{len, 0, 0}}) {
                    if (n_query > len) continue;
                    const std::string e = run({{t, n_query, len}}, len_slack, query_slack,
                                              "alone, " + std::to_string(n_query) + " rows");
                    QVERIFY2(e.empty(), e.c_str());
                }
            }
            // Mixed batches: every target in some form among fillers, shuffled.
            std::uniform_int_distribution<int> pick(0, 5);
            for (int round = 0; round < 6; ++round) {
                std::vector<SeqUse> uses;
                for (int i = 0; i < static_cast<int>(seqs.size()); ++i) {
                    const int len = seqs[static_cast<size_t>(i)].length;
                    const int forms[] = {1, 1, 2, 5, 33, 77};
                    const int n_query = std::min(len, forms[pick(rng)]);
                    // Targets end at their full length; fillers at a random point.
                    const int end = i < n_targets ? len : std::uniform_int_distribution<int>(n_query, len)(rng);
                    uses.push_back({i, n_query, end});
                }
                std::shuffle(uses.begin(), uses.end(), rng);
                uses.resize(uses.size() - static_cast<size_t>(round));  // different batch sizes
                const std::string e = run(uses, round * 50, round % 2 ? 9 : 0, "mixed batch " + std::to_string(round));
                QVERIFY2(e.empty(), e.c_str());
            }
            std::printf("  %-28s %d rows compared bit for bit\n", shape_name.c_str(), compared);
            QVERIFY(compared > 100);
        }
    }

    // A decode step captured once and replayed with the batch's device arrays
    // rewritten in between (other positions and lengths, fresh queries): no
    // allocation or host sync inside, lengths read from the device.
    void attention_replays_in_a_cuda_graph() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(15);
        const Shape sh{8, 2, 128, 16};
        HostBatch hb = make_batch(rng, sh, {{1, 500}, {1, 2000}});  // cache filled up to these lengths
        DeviceBatch db(hb, sh, 0);
        QVERIFY(db.status() == cudaSuccess);
        fk::AttentionBatch bounds = db.b;
        bounds.max_seq_len = 2048;  // the graph's bound
        const size_t q_size = static_cast<size_t>(hb.n_tokens) * sh.n_head * sh.head_dim;
        DeviceArray<float> dq(q_size), dout(q_size);
        const size_t ws_bytes = fk::attention_workspace_bytes(bounds, sh.n_head, sh.head_dim);
        DeviceArray<unsigned char> ws(ws_bytes);
        QVERIFY(dq.status == cudaSuccess && dout.status == cudaSuccess && ws.status == cudaSuccess);
        fk::AttentionParams p;
        p.n_head = sh.n_head;
        p.scale = 1.0f / std::sqrt(128.0f);
        cudaStream_t stream;
        QVERIFY(cudaStreamCreate(&stream) == cudaSuccess);
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        QVERIFY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
        const cudaError_t launch = fk::paged_attention(dq.ptr, db.kv, bounds, p, dout.ptr, ws.ptr, ws_bytes, stream);
        QVERIFY(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
        QVERIFY2(launch == cudaSuccess, cuda_error(launch, "capture").c_str());
        QVERIFY(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
        const int lengths[][2] = {{500, 2000}, {11, 1000}, {250, 1601}};
        for (const auto& len : lengths) {
            hb.seq_len = {len[0], len[1]};
            hb.positions = {len[0] - 1, len[1] - 1};
            QVERIFY(cudaMemcpy(db.positions.ptr, hb.positions.data(), 8, cudaMemcpyHostToDevice) == cudaSuccess);
            QVERIFY(cudaMemcpy(db.seq_len.ptr, hb.seq_len.data(), 8, cudaMemcpyHostToDevice) == cudaSuccess);
            const auto q = random_floats(rng, q_size, -1, 1);
            QVERIFY(cudaMemcpy(dq.ptr, q.data(), q.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
            QVERIFY(dout.poison() == cudaSuccess);
            QVERIFY(cudaGraphLaunch(exec, stream) == cudaSuccess);
            QVERIFY(cudaStreamSynchronize(stream) == cudaSuccess);
            std::vector<float> out;
            QVERIFY(dout.download(out) == cudaSuccess);
            const std::string e = check_close("graph replay", out, reference_attention(hb, sh, p.scale, q), 2e-3);
            QVERIFY2(e.empty(), e.c_str());
        }
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        cudaStreamDestroy(stream);
    }
};

FOLIO_TEST_MAIN(TestGpuAttention)
#include "test_gpu_attention.moc"
