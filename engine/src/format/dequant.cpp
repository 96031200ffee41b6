// Scalar dequantization of the GGML block formats. Each formula is written
// in the operation order of gguf-py's numpy code (ggml-quants.c agrees), and
// this file is compiled with -ffp-contract=off: a fused multiply-add would
// round once where numpy rounds twice and break bitwise agreement.
#include "folio/dequant.h"

#include <cstring>
#include <string>

namespace folio {

namespace {

constexpr int kQK = 32;    // elements per block of the legacy formats

uint16_t load_u16(const std::byte* p) {
    return uint16_t(std::to_integer<uint16_t>(p[0]) | (std::to_integer<uint16_t>(p[1]) << 8));
}
uint8_t u8(const std::byte* p, int i) { return std::to_integer<uint8_t>(p[i]); }
float half(const std::byte* p) { return fp16_to_fp32(load_u16(p)); }

void dequant_q4_0(const std::byte* b, float* y) {  // d(f16) qs[16]
    const float d = half(b);
    const std::byte* qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * float(int(u8(qs, j) & 0x0F) - 8);
        y[j + kQK / 2] = d * float(int(u8(qs, j) >> 4) - 8);
    }
}

void dequant_q4_1(const std::byte* b, float* y) {  // d(f16) m(f16) qs[16]
    const float d = half(b);
    const float m = half(b + 2);
    const std::byte* qs = b + 4;
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * float(u8(qs, j) & 0x0F) + m;
        y[j + kQK / 2] = d * float(u8(qs, j) >> 4) + m;
    }
}

uint32_t load_u32(const std::byte* p) { return uint32_t(load_u16(p)) | (uint32_t(load_u16(p + 2)) << 16); }

void dequant_q5_0(const std::byte* b, float* y) {  // d(f16) qh[4] qs[16]
    const float d = half(b);
    const uint32_t qh = load_u32(b + 2);
    const std::byte* qs = b + 6;
    for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (u8(qs, j) & 0x0F) | int(((qh >> j) & 1) << 4);
        const int hi = (u8(qs, j) >> 4) | int(((qh >> (j + 16)) & 1) << 4);
        y[j] = d * float(lo - 16);
        y[j + kQK / 2] = d * float(hi - 16);
    }
}

void dequant_q5_1(const std::byte* b, float* y) {  // d(f16) m(f16) qh[4] qs[16]
    const float d = half(b);
    const float m = half(b + 2);
    const uint32_t qh = load_u32(b + 4);
    const std::byte* qs = b + 8;
    for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (u8(qs, j) & 0x0F) | int(((qh >> j) & 1) << 4);
        const int hi = (u8(qs, j) >> 4) | int(((qh >> (j + 16)) & 1) << 4);
        y[j] = d * float(lo) + m;
        y[j + kQK / 2] = d * float(hi) + m;
    }
}

void dequant_q8_0(const std::byte* b, float* y) {  // d(f16) qs[32] (int8)
    const float d = half(b);
    for (int j = 0; j < kQK; ++j) y[j] = float(int8_t(u8(b + 2, j))) * d;
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block.
void scale_min_k4(int j, const std::byte* s, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = u8(s, j) & 63;
        min = u8(s, j + 4) & 63;
    } else {
        scale = uint8_t((u8(s, j + 4) & 0x0F) | ((u8(s, j - 4) >> 6) << 4));
        min = uint8_t((u8(s, j + 4) >> 4) | ((u8(s, j) >> 6) << 4));
    }
}

void dequant_q4_k(const std::byte* b, float* y) {  // d dmin scales[12] qs[128]
    const float d = half(b);
    const float dmin = half(b + 2);
    const std::byte* scales = b + 4;
    const std::byte* qs = b + 16;
    for (int sub = 0; sub < 8; ++sub) {
        uint8_t sc, m;
        scale_min_k4(sub, scales, sc, m);
        const float d1 = d * float(sc);
        const float m1 = dmin * float(m);
        const std::byte* q = qs + (sub / 2) * 32;
        const int shift = (sub % 2) * 4;
        for (int l = 0; l < 32; ++l) y[sub * 32 + l] = d1 * float((u8(q, l) >> shift) & 0x0F) - m1;
    }
}

void dequant_q5_k(const std::byte* b, float* y) {  // d dmin scales[12] qh[32] qs[128]
    const float d = half(b);
    const float dmin = half(b + 2);
    const std::byte* scales = b + 4;
    const std::byte* qh = b + 16;
    const std::byte* qs = b + 48;
    for (int sub = 0; sub < 8; ++sub) {
        uint8_t sc, m;
        scale_min_k4(sub, scales, sc, m);
        const float d1 = d * float(sc);
        const float m1 = dmin * float(m);
        const std::byte* q = qs + (sub / 2) * 32;
        const int shift = (sub % 2) * 4;
        for (int l = 0; l < 32; ++l) {
            const int v = ((u8(q, l) >> shift) & 0x0F) | (((u8(qh, l) >> sub) & 1) << 4);
            y[sub * 32 + l] = d1 * float(v) - m1;
        }
    }
}

void dequant_q6_k(const std::byte* b, float* y) {  // ql[128] qh[64] scales[16] (int8) d
    const std::byte* ql = b;
    const std::byte* qh = b + 128;
    const std::byte* scales = b + 192;
    const float d = half(b + 208);
    for (int group = 0; group < 8; ++group) {  // 32 elements each
        const int h = group / 4;
        const int k = group % 4;
        const std::byte* low = ql + h * 64 + (k % 2) * 32;
        const int low_shift = (k / 2) * 4;
        for (int l = 0; l < 32; ++l) {
            const int e = group * 32 + l;
            const int q = ((u8(low, l) >> low_shift) & 0x0F) | (((u8(qh + h * 32, l) >> (2 * k)) & 3) << 4);
            const float ds = d * float(int8_t(u8(scales, e / 16)));
            y[e] = ds * float(q - 32);
        }
    }
}

}  // namespace

float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exponent = (h >> 10) & 0x1F;
    uint32_t mantissa = h & 0x3FF;
    uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13);  // inf, nan (payload kept)
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal half: normalize
        exponent = 113;
        while ((mantissa & 0x400) == 0) {
            mantissa <<= 1;
            --exponent;
        }
        bits = sign | (exponent << 23) | ((mantissa & 0x3FF) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t fp32_to_fp16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or NaN (keep NaN quiet)
        return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs < 0x38800000u) {
        // result is subnormal or zero: shift with round-to-nearest-even
        if (abs < 0x33000001u) return static_cast<uint16_t>(sign);
        const uint32_t exponent = abs >> 23;
        const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exponent;  // 14..24
        uint32_t half = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = ((abs - 0x38000000u) >> 13);
    const uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
}

float bf16_to_fp32(uint16_t bits16) {
    const uint32_t bits = uint32_t(bits16) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

Status dequantize(TensorType type, const std::byte* src, size_t src_bytes, float* dst, int64_t n_elements) {
    const auto traits = tensor_type_traits(uint32_t(type));
    if (!traits) return make_error("dequantize: unsupported tensor type id " + std::to_string(uint32_t(type)));
    const std::string what = "dequantize " + std::string(traits->name) + ": ";
    if (n_elements < 0 || n_elements % traits->block_elems != 0)
        return make_error(what + std::to_string(n_elements) + " elements is not a whole number of " +
                          std::to_string(traits->block_elems) + "-element blocks");
    const uint64_t n_blocks = uint64_t(n_elements) / traits->block_elems;
    if (n_blocks * traits->block_bytes != src_bytes)
        return make_error(what + std::to_string(n_elements) + " elements need " +
                          std::to_string(n_blocks * traits->block_bytes) + " bytes, got " + std::to_string(src_bytes));
    if (n_elements > 0 && (!src || !dst)) return make_error(what + "null buffer");

    using BlockFn = void (*)(const std::byte*, float*);
    BlockFn block = nullptr;
    switch (type) {
        case TensorType::F32:
            std::memcpy(dst, src, src_bytes);
            return {};
        case TensorType::F16:
            for (int64_t i = 0; i < n_elements; ++i) dst[i] = fp16_to_fp32(load_u16(src + 2 * i));
            return {};
        case TensorType::BF16:
            for (int64_t i = 0; i < n_elements; ++i) dst[i] = bf16_to_fp32(load_u16(src + 2 * i));
            return {};
        case TensorType::Q4_0: block = dequant_q4_0; break;
        case TensorType::Q4_1: block = dequant_q4_1; break;
        case TensorType::Q5_0: block = dequant_q5_0; break;
        case TensorType::Q5_1: block = dequant_q5_1; break;
        case TensorType::Q8_0: block = dequant_q8_0; break;
        case TensorType::Q4_K: block = dequant_q4_k; break;
        case TensorType::Q5_K: block = dequant_q5_k; break;
        case TensorType::Q6_K: block = dequant_q6_k; break;
    }
    for (uint64_t i = 0; i < n_blocks; ++i) block(src + i * traits->block_bytes, dst + i * traits->block_elems);
    return {};
}

}  // namespace folio
