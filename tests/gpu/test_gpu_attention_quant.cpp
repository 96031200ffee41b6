// The CUDA attention kernels over quantized KV caches (fp8, Q8_0):
// rope_store_kv writes them as the host's rounding does (cpu/fp8.h, GGML's
// Q8_0), and paged attention over them is, bit for bit, the attention over
// the F16 cache holding the values they read back. Skips without a GPU.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cpu/fp8.h"
#include "folio_kernels/attention.h"
#include "folio_test.h"
#include "gpu_paged_batch.h"
#include "gpu_test_support.h"

namespace {

// ---- quantized caches ---------------------------------------------------------------

// A block of 32 values as fp8 (cpu/fp8.h) or Q8_0 (GGML's quantize_row_q8_0_ref): the scale's bytes, each
// value's byte, and what the value reads back as (float, exact).
struct HostBlock {
    unsigned char scale[2];
    unsigned char values[32];
    float back[32];
};

HostBlock quantize_block(fk::KvFormat format, const float* x) {
    using namespace folio::cpu;
    HostBlock blk{};
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    if (format == fk::KvFormat::Q8_0) {
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = float_to_half(d);
        std::memcpy(blk.scale, &dh, 2);
        for (int i = 0; i < 32; ++i) {
            const auto q = static_cast<int8_t>(std::isnan(x[i]) ? 0.0f : std::roundf(x[i] * id));  // NaN: poison
            blk.values[i] = static_cast<unsigned char>(q);
            blk.back[i] = half_to_float(dh) * static_cast<float>(q);
        }
    } else {
        const uint8_t e = mx_scale_byte(amax);
        blk.scale[0] = e;
        for (int i = 0; i < 32; ++i) {
            blk.values[i] = fp32_to_e4m3(x[i] / mx_scale(e));
            blk.back[i] = e4m3_to_fp32(blk.values[i]) * mx_scale(e);
        }
    }
    return blk;
}

size_t quantized_block_bytes(fk::KvFormat format, const Shape& sh) {
    const size_t values = static_cast<size_t>(sh.block_size) * sh.n_head_kv * sh.head_dim;
    return values + values / 32 * (format == fk::KvFormat::Q8_0 ? 2 : 1);
}

// The quantized form of a HostBatch's half cache (kernels::PagedKvLayer's layouts), rounded on the host; the
// half cache is given the values the quantized one reads back (half of them). Poisoned (NaN) rows stay NaN
// for fp8; Q8_0 rows of NaN are not read by any query, and become zeros.
struct QuantizedCache {
    std::vector<unsigned char> k, v;
};

QuantizedCache to_quantized(fk::KvFormat format, HostBatch& hb, const Shape& sh) {
    const int D = sh.head_dim, bs = sh.block_size, H = sh.n_head_kv;
    const int width = format == fk::KvFormat::Q8_0 ? 2 : 1;
    const size_t block_values = static_cast<size_t>(bs) * H * D, block_bytes = quantized_block_bytes(format, sh);
    QuantizedCache c;
    c.k.assign(static_cast<size_t>(hb.n_blocks) * block_bytes, 0);
    c.v = c.k;
    for (auto [half, bytes] : {std::pair{&hb.k_cache, &c.k}, std::pair{&hb.v_cache, &c.v}})
        for (int b = 0; b < hb.n_blocks; ++b)
            for (int row = 0; row < H * bs; ++row)  // (head, offset) rows of the block
                for (int g = 0; g < D / 32; ++g) {
                    uint16_t* x = half->data() + b * block_values + static_cast<size_t>(row) * D + g * 32;
                    float values[32];
                    for (int i = 0; i < 32; ++i) values[i] = half_to_float(x[i]);
                    const HostBlock blk = quantize_block(format, values);
                    unsigned char* base = bytes->data() + b * block_bytes;
                    std::memcpy(base + block_values + (static_cast<size_t>(row) * (D / 32) + g) * width, blk.scale,
                                static_cast<size_t>(width));
                    std::memcpy(base + static_cast<size_t>(row) * D + g * 32, blk.values, 32);
                    for (int i = 0; i < 32; ++i) x[i] = float_to_half(blk.back[i]);
                }
    return c;
}

// paged_attention of the same queries over a quantized cache and over the F16 cache of its values: the same bits.
std::string check_quantized_attention(fk::KvFormat format, std::mt19937& rng, const Shape& sh,
                                      const std::vector<SeqSpec>& seqs, const char* name) {
    HostBatch hb = make_batch(rng, sh, seqs);
    const QuantizedCache fp8 = to_quantized(format, hb, sh);
    DeviceBatch db(hb, sh, 5);
    DeviceArray<unsigned char> k8(fp8.k), v8(fp8.v);
    if (std::string e = cuda_error(db.status() != cudaSuccess ? db.status() : k8.status != cudaSuccess ? k8.status : v8.status, "upload");
        !e.empty())
        return e;
    fk::PagedKvLayer kv8 = db.kv;
    kv8.k = k8.ptr;
    kv8.v = v8.ptr;
    kv8.format = format;
    if (kv8.block_bytes() != quantized_block_bytes(format, sh))
        return std::string(name) + ": PagedKvLayer::block_bytes disagrees";
    const size_t q_size = static_cast<size_t>(hb.n_tokens) * sh.n_head * sh.head_dim;
    const std::vector<float> q = random_floats(rng, q_size, -sh.q_range, sh.q_range);
    DeviceArray<float> dq(q), out16(q_size), out8(q_size);
    const size_t ws_bytes = fk::attention_workspace_bytes(db.b, sh.n_head, sh.head_dim);
    DeviceArray<unsigned char> ws(ws_bytes);
    fk::AttentionParams p;
    p.n_head = sh.n_head;
    p.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    p.sliding_window = sh.window;
    p.softcap = sh.softcap;
    for (auto [kv, out] : {std::pair{&db.kv, &out16}, std::pair{&kv8, &out8}}) {
        if (std::string e = cuda_error(out->poison(), "poison"); !e.empty()) return e;
        if (std::string e = cuda_error(fk::paged_attention(dq.ptr, *kv, db.b, p, out->ptr, ws.ptr, ws_bytes, nullptr),
                                       "paged_attention");
            !e.empty())
            return std::string(name) + ": " + e;
    }
    if (std::string e = cuda_error(cudaDeviceSynchronize(), "sync"); !e.empty()) return std::string(name) + ": " + e;
    std::vector<float> a, b;
    if (std::string e = cuda_error(out16.download(a) != cudaSuccess ? cudaErrorUnknown : out8.download(b), "download");
        !e.empty())
        return e;
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    if (differ) return std::string(name) + ": " + std::to_string(differ) + " of " + std::to_string(a.size()) +
                       " outputs differ from the F16 cache's";
    return {};
}

}  // namespace

class TestGpuAttentionQuant : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    friend int main();
#endif

private slots:
    // rope_store_kv into fp8 and Q8_0 caches: values stored exactly as the host rounds them (the values
    // are not rotated; nor are the keys at position 0), the rotated keys within half a step of the
    // rotation, nothing written outside the rows' slots.
    void rope_store_kv_writes_quantized_blocks() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(21);
        for (const fk::KvFormat format : {fk::KvFormat::Fp8, fk::KvFormat::Q8_0})
        for (const Shape sh : {Shape{9, 3, 64, 16}, Shape{32, 8, 128, 16}, Shape{4, 2, 256, 32}})
            for (const bool split_half : {false, true}) {
                HostBatch hb = make_batch(rng, sh, {{20, 50}, {4, 4}, {1, 900}, {1, 1}});
                hb.slot_mapping.back() = -1;
                DeviceBatch db(hb, sh, 0);
                const size_t cache_bytes = static_cast<size_t>(hb.n_blocks) * quantized_block_bytes(format, sh);
                const int width = format == fk::KvFormat::Q8_0 ? 2 : 1;
                DeviceArray<unsigned char> k8(std::vector<unsigned char>(cache_bytes, 0xA5)), v8(cache_bytes);
                QVERIFY(db.status() == cudaSuccess && k8.status == cudaSuccess && v8.status == cudaSuccess);
                QVERIFY(cudaMemset(v8.ptr, 0xA5, cache_bytes) == cudaSuccess);
                fk::PagedKvLayer kv = db.kv;
                kv.k = k8.ptr, kv.v = v8.ptr, kv.format = format;
                const int D = sh.head_dim;
                const size_t kv_size = static_cast<size_t>(hb.n_tokens) * sh.n_head_kv * D;
                const auto q = random_floats(rng, static_cast<size_t>(hb.n_tokens) * sh.n_head * D, -2, 2);
                const auto k = random_floats(rng, kv_size, -3, 3), v = random_floats(rng, kv_size, -0.01f, 0.01f);
                DeviceArray<float> dq(q), dk(k), dv(v);
                fk::RopeParams rope{10000.f, 1.f, split_half, nullptr};
                QVERIFY(fk::rope_store_kv(dq.ptr, dk.ptr, dv.ptr, sh.n_head, kv, rope, db.b, nullptr) == cudaSuccess);
                std::vector<unsigned char> k_got, v_got;
                QVERIFY(k8.download(k_got) == cudaSuccess && v8.download(v_got) == cudaSuccess);
                const size_t block_values = static_cast<size_t>(sh.block_size) * sh.n_head_kv * D;
                const float theta_scale = std::pow(10000.f, -2.0f / static_cast<float>(D));
                int exact_rows = 0;
                for (int r = 0; r < hb.n_tokens; ++r) {
                    const int64_t slot = hb.slot_mapping[static_cast<size_t>(r)];
                    if (slot < 0) continue;
                    const int pos = hb.positions[static_cast<size_t>(r)];
                    for (int h = 0; h < sh.n_head_kv; ++h) {
                        const size_t row = static_cast<size_t>(h) * sh.block_size + static_cast<size_t>(slot % sh.block_size);
                        const size_t base = static_cast<size_t>(slot / sh.block_size) * quantized_block_bytes(format, sh);
                        // The key rotated in double (the kernel's float angles).
                        std::vector<double> rot(static_cast<size_t>(D));
                        const float* kr = k.data() + (static_cast<size_t>(r) * sh.n_head_kv + h) * D;
                        float theta = static_cast<float>(pos);
                        for (int i = 0; i < D / 2; ++i, theta *= theta_scale) {
                            const int a = split_half ? i : 2 * i, b = split_half ? i + D / 2 : 2 * i + 1;
                            const double cs = std::cos(double{theta}), sn = std::sin(double{theta});
                            rot[static_cast<size_t>(a)] = kr[a] * cs - kr[b] * sn;
                            rot[static_cast<size_t>(b)] = kr[a] * sn + kr[b] * cs;
                        }
                        for (int g = 0; g < D / 32; ++g) {
                            const float* vr = v.data() + (static_cast<size_t>(r) * sh.n_head_kv + h) * D + g * 32;
                            const HostBlock v_want = quantize_block(format, vr), k0 = quantize_block(format, kr + g * 32);
                            const size_t scale_at = base + block_values + (row * (D / 32) + g) * static_cast<size_t>(width);
                            QVERIFY(std::memcmp(&v_got[scale_at], v_want.scale, static_cast<size_t>(width)) == 0);
                            if (pos == 0) QVERIFY(std::memcmp(&k_got[scale_at], k0.scale, static_cast<size_t>(width)) == 0);
                            // The stored key block read back: its scale, then each value.
                            float rot_block[32];
                            for (int i = 0; i < 32; ++i) rot_block[i] = static_cast<float>(rot[static_cast<size_t>(g * 32 + i)]);
                            HostBlock k_read = quantize_block(format, rot_block);
                            std::memcpy(k_read.scale, &k_got[scale_at], static_cast<size_t>(width));
                            uint16_t dh = 0;
                            std::memcpy(&dh, k_read.scale, 2);
                            const double step = format == fk::KvFormat::Q8_0 ? half_to_float(dh)
                                                                              : folio::cpu::mx_scale(k_read.scale[0]) * std::ldexp(1.0, -9);
                            for (int i = 0; i < 32; ++i) {
                                const size_t at = base + row * D + g * 32 + i;
                                QCOMPARE(v_got[at], v_want.values[i]);
                                if (pos == 0) QCOMPARE(k_got[at], k0.values[i]);
                                const double want = rot[static_cast<size_t>(g * 32 + i)];
                                const double got = format == fk::KvFormat::Q8_0
                                                       ? half_to_float(dh) * static_cast<double>(static_cast<int8_t>(k_got[at]))
                                                       : double{folio::cpu::e4m3_to_fp32(k_got[at])} *
                                                             folio::cpu::mx_scale(k_read.scale[0]);
                                // Half a step (Q8_0: d / 2 and d's own rounding; fp8: 1/16 of the value).
                                const double tol = format == fk::KvFormat::Q8_0 ? 0.51 * step + 1e-3 * std::fabs(want)
                                                                                 : std::fabs(want) / 15.0 + step;
                                if (std::fabs(got - want) > tol)
                                    QFAIL(("row " + std::to_string(r) + " head " + std::to_string(h) + " key " +
                                           std::to_string(g * 32 + i) + ": " + std::to_string(got) + ", want " +
                                           std::to_string(want)).c_str());
                                k_got[at] = v_got[at] = 0xA5;  // checked: only the fill may remain
                            }
                            for (int w = 0; w < width; ++w) k_got[scale_at + static_cast<size_t>(w)] = v_got[scale_at + static_cast<size_t>(w)] = 0xA5;
                        }
                        exact_rows += pos == 0;
                    }
                }
                QVERIFY(exact_rows > 0);
                for (size_t i = 0; i < cache_bytes; ++i)
                    QVERIFY2(k_got[i] == 0xA5 && v_got[i] == 0xA5,
                             ("fp8 cache byte " + std::to_string(i) + " written outside the rows' slots").c_str());
            }
    }

    // Attention over an fp8 or Q8_0 cache is attention over the F16 cache of its values, bit for bit:
    // decode rows, prefill chunks, long prefixes (split-K), GQA, windows and softcap, head sizes 64 / 128 / 256.
    void quantized_attention_is_f16_attention_over_its_values() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        if (const char* k = std::getenv("FOLIO_ATTENTION_KERNEL"); k && std::string(k) == "simt")
            QSKIP("quantized caches are read by the tensor-core kernels only");
        std::mt19937 rng(22);
        const std::vector<BatchCase> cases = {
            {"d64 gqa3 mixed", {9, 3, 64, 16}, {{1, 37}, {45, 65}, {1, 300}, {70, 70}}},
            {"d128 gqa4 mixed", {32, 8, 128, 16}, {{1, 200}, {1, 1}, {33, 33}, {17, 150}}},
            {"d256 gqa8 window softcap", {8, 1, 256, 32, 40, 30.f, 4.f}, {{1, 100}, {60, 90}, {1, 41}, {5, 300}}},
            {"d128 gqa4 decode 4096+", {32, 8, 128, 16}, {{1, 4096}, {1, 6000}, {1, 17}}},
            {"d64 gqa2 chunk after 2048", {8, 4, 64, 16}, {{1, 2100}, {64, 2112}}},
            {"d256 gqa2 decode", {8, 4, 256, 16}, {{1, 1}, {1, 520}, {2, 33}}},
        };
        for (const fk::KvFormat format : {fk::KvFormat::Fp8, fk::KvFormat::Q8_0})
            for (const BatchCase& c : cases) {
                const std::string e = check_quantized_attention(format, rng, c.shape, c.seqs, c.name);
                QVERIFY2(e.empty(), (std::string(format == fk::KvFormat::Q8_0 ? "q8_0 " : "fp8 ") + e).c_str());
            }
    }
};

FOLIO_TEST_MAIN(TestGpuAttentionQuant)
#include "test_gpu_attention_quant.moc"
