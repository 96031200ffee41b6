// Test-side reference for the CPU kernels: random but valid GGML blocks from
// a seeded generator, and an independent scalar dequantizer written from
// GGML's dequantize_row_* definitions (folio/dequant.h did not exist yet when
// these tests were written). Doubles throughout, so it is the exact value
// the kernels approximate.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/fp16.h"
#include "cpu/quant_blocks.h"
#include "folio/tensor_type.h"

namespace cpu_test {

using folio::TensorType;
using namespace folio::cpu;

inline double half(uint16_t h) { return fp16_to_fp32(h); }

// A dequantized element split into the part the kernels multiply as an
// integer product and the per-block offset they add separately; the error
// bound scales with |value| + |offset| because the two can cancel.
struct Dequantized {
    std::vector<double> value;
    std::vector<double> magnitude;  // |scaled quant| + |offset| per element
};

class BlockFactory {
public:
    explicit BlockFactory(uint32_t seed) : rng_(seed) {}

    std::vector<std::byte> row(TensorType type, int64_t n) {
        const auto t = folio::traits(type);
        std::vector<std::byte> bytes(static_cast<size_t>(n / t.block_elems) * t.block_bytes);
        if (type == TensorType::F32) {
            for (int64_t i = 0; i < n; ++i) put<float>(bytes, i * 4, normal());
            return bytes;
        }
        if (type == TensorType::F16) {
            for (int64_t i = 0; i < n; ++i) put<uint16_t>(bytes, i * 2, fp32_to_fp16(normal()));
            return bytes;
        }
        for (auto& b : bytes) b = static_cast<std::byte>(byte_dist_(rng_));  // quants: any bits are valid
        for (size_t off = 0; off < bytes.size(); off += t.block_bytes) set_scales(type, bytes.data() + off);
        return bytes;
    }

    // Activations: mostly normal, with an occasional outlier and an all-zero block.
    std::vector<float> activations(int64_t n) {
        std::vector<float> x(static_cast<size_t>(n));
        for (auto& v : x) v = normal();
        if (n >= 64) {
            x[static_cast<size_t>(uniform_int(0, static_cast<int>(n) - 1))] = 40.0f;
            for (int i = 0; i < 32; ++i) x[32 + i] = 0.0f;
        }
        return x;
    }

    float normal() { return normal_(rng_); }
    int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

private:
    template <typename T>
    static void put(std::vector<std::byte>& bytes, int64_t offset, T v) {
        std::memcpy(bytes.data() + offset, &v, sizeof v);
    }
    uint16_t scale(float lo, float hi) {
        return fp32_to_fp16(std::uniform_real_distribution<float>(lo, hi)(rng_));
    }

    void set_scales(TensorType type, std::byte* block) {
        auto set16 = [&](size_t offset, uint16_t v) { std::memcpy(block + offset, &v, 2); };
        switch (type) {
            case TensorType::Q4_0: case TensorType::Q5_0: case TensorType::Q8_0:
                set16(0, scale(-0.02f, 0.02f));
                break;
            case TensorType::Q4_1: case TensorType::Q5_1:
                set16(0, scale(0.0f, 0.02f));
                set16(2, scale(-0.2f, 0.05f));
                break;
            case TensorType::Q4_K: case TensorType::Q5_K:
                set16(0, scale(0.0f, 0.002f));
                set16(2, scale(0.0f, 0.002f));
                break;
            case TensorType::Q6_K:
                set16(offsetof(BlockQ6_K, d), scale(-0.001f, 0.001f));
                break;
            default: break;
        }
    }

    std::mt19937 rng_;
    std::normal_distribution<float> normal_{0.0f, 1.0f};
    std::uniform_int_distribution<int> byte_dist_{0, 255};
};

// Dequantizes n elements of a weight row, following GGML's definitions.
inline Dequantized dequantize(TensorType type, const std::byte* data, int64_t n) {
    Dequantized out;
    out.value.resize(static_cast<size_t>(n));
    out.magnitude.resize(static_cast<size_t>(n));
    auto put_element = [&](int64_t i, double scaled, double offset) {
        out.value[static_cast<size_t>(i)] = scaled + offset;
        out.magnitude[static_cast<size_t>(i)] = std::fabs(scaled) + std::fabs(offset);
    };
    switch (type) {
        case TensorType::F32:
            for (int64_t i = 0; i < n; ++i) {
                float v;
                std::memcpy(&v, data + 4 * i, 4);
                put_element(i, v, 0);
            }
            break;
        case TensorType::F16:
            for (int64_t i = 0; i < n; ++i) {
                uint16_t v;
                std::memcpy(&v, data + 2 * i, 2);
                put_element(i, half(v), 0);
            }
            break;
        case TensorType::Q4_0: {
            const auto* b = reinterpret_cast<const BlockQ4_0*>(data);
            for (int64_t k = 0; k < n / 32; ++k)
                for (int j = 0; j < 16; ++j) {
                    put_element(32 * k + j, half(b[k].d) * ((b[k].qs[j] & 0xF) - 8), 0);
                    put_element(32 * k + j + 16, half(b[k].d) * ((b[k].qs[j] >> 4) - 8), 0);
                }
            break;
        }
        case TensorType::Q4_1: {
            const auto* b = reinterpret_cast<const BlockQ4_1*>(data);
            for (int64_t k = 0; k < n / 32; ++k)
                for (int j = 0; j < 16; ++j) {
                    put_element(32 * k + j, half(b[k].d) * (b[k].qs[j] & 0xF), half(b[k].m));
                    put_element(32 * k + j + 16, half(b[k].d) * (b[k].qs[j] >> 4), half(b[k].m));
                }
            break;
        }
        case TensorType::Q5_0: case TensorType::Q5_1: {
            const bool has_min = type == TensorType::Q5_1;
            const size_t size = has_min ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0);
            for (int64_t k = 0; k < n / 32; ++k) {
                const std::byte* blk = data + k * static_cast<int64_t>(size);
                uint16_t d, m = 0;
                uint32_t qh;
                std::memcpy(&d, blk, 2);
                if (has_min) std::memcpy(&m, blk + 2, 2);
                std::memcpy(&qh, blk + (has_min ? 4 : 2), 4);
                const auto* qs = reinterpret_cast<const uint8_t*>(blk + (has_min ? 8 : 6));
                for (int j = 0; j < 16; ++j) {
                    const int x0 = (qs[j] & 0xF) | static_cast<int>(((qh >> j) << 4) & 0x10);
                    const int x1 = (qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
                    const int bias = has_min ? 0 : 16;
                    put_element(32 * k + j, half(d) * (x0 - bias), has_min ? half(m) : 0.0);
                    put_element(32 * k + j + 16, half(d) * (x1 - bias), has_min ? half(m) : 0.0);
                }
            }
            break;
        }
        case TensorType::Q8_0: {
            const auto* b = reinterpret_cast<const BlockQ8_0*>(data);
            for (int64_t k = 0; k < n / 32; ++k)
                for (int j = 0; j < 32; ++j) put_element(32 * k + j, half(b[k].d) * b[k].qs[j], 0);
            break;
        }
        case TensorType::Q4_K: case TensorType::Q5_K: {
            const bool five = type == TensorType::Q5_K;
            for (int64_t k = 0; k < n / 256; ++k) {
                const uint8_t *scales, *qs, *qh = nullptr;
                uint16_t d, dmin;
                if (five) {
                    const auto& b = reinterpret_cast<const BlockQ5_K*>(data)[k];
                    scales = b.scales, qs = b.qs, qh = b.qh, d = b.d, dmin = b.dmin;
                } else {
                    const auto& b = reinterpret_cast<const BlockQ4_K*>(data)[k];
                    scales = b.scales, qs = b.qs, d = b.d, dmin = b.dmin;
                }
                int64_t y = 256 * k;
                uint8_t u1 = 1, u2 = 2;
                for (int j = 0, is = 0; j < 256; j += 64, is += 2) {
                    uint8_t sc, m;
                    k_scale_min(is, scales, sc, m);
                    const double d1 = half(d) * sc, m1 = half(dmin) * m;
                    k_scale_min(is + 1, scales, sc, m);
                    const double d2 = half(d) * sc, m2 = half(dmin) * m;
                    for (int l = 0; l < 32; ++l)
                        put_element(y + l, d1 * ((qs[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)), -m1);
                    for (int l = 0; l < 32; ++l)
                        put_element(y + 32 + l, d2 * ((qs[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)), -m2);
                    y += 64, qs += 32, u1 = static_cast<uint8_t>(u1 << 2), u2 = static_cast<uint8_t>(u2 << 2);
                }
            }
            break;
        }
        case TensorType::Q6_K: {
            const auto* b = reinterpret_cast<const BlockQ6_K*>(data);
            for (int64_t k = 0; k < n / 256; ++k) {
                const double d = half(b[k].d);
                const uint8_t* ql = b[k].ql;
                const uint8_t* qh = b[k].qh;
                const int8_t* sc = b[k].scales;
                int64_t y = 256 * k;
                for (int part = 0; part < 2; ++part) {
                    for (int l = 0; l < 32; ++l) {
                        const int is = l / 16;
                        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                        put_element(y + l, d * sc[is + 0] * q1, 0);
                        put_element(y + l + 32, d * sc[is + 2] * q2, 0);
                        put_element(y + l + 64, d * sc[is + 4] * q3, 0);
                        put_element(y + l + 96, d * sc[is + 6] * q4, 0);
                    }
                    y += 128, ql += 64, qh += 32, sc += 8;
                }
            }
            break;
        }
        default: break;
    }
    return out;
}

// Dequantized activation row (d * q per element) for the formats the
// kernels quantize to; `s_error` collects, per Q8_1 block, |s - d*sum(q)|
// (s is stored as a half, so the kernel's offset term sees that rounding).
inline std::vector<double> dequantize_activations(ActivationType type, const void* data, int64_t n,
                                                  std::vector<double>* s_error = nullptr) {
    std::vector<double> a(static_cast<size_t>(n));
    switch (type) {
        case ActivationType::F32:
            for (int64_t i = 0; i < n; ++i) a[static_cast<size_t>(i)] = static_cast<const float*>(data)[i];
            break;
        case ActivationType::Q8_0: {
            const auto* b = static_cast<const BlockQ8_0*>(data);
            for (int64_t i = 0; i < n; ++i) a[static_cast<size_t>(i)] = half(b[i / 32].d) * b[i / 32].qs[i % 32];
            break;
        }
        case ActivationType::Q8_1: {
            const auto* b = static_cast<const BlockQ8_1*>(data);
            for (int64_t k = 0; k < n / 32; ++k) {
                double sum = 0;
                for (int j = 0; j < 32; ++j) {
                    a[static_cast<size_t>(32 * k + j)] = half(b[k].d) * b[k].qs[j];
                    sum += b[k].qs[j];
                }
                if (s_error) s_error->push_back(std::fabs(half(b[k].s) - half(b[k].d) * sum));
            }
            break;
        }
        case ActivationType::Q8_K: {
            const auto* b = static_cast<const BlockQ8_K*>(data);
            for (int64_t i = 0; i < n; ++i)
                a[static_cast<size_t>(i)] = static_cast<double>(b[i / 256].d) * b[i / 256].qs[i % 256];
            break;
        }
    }
    return a;
}

}  // namespace cpu_test
