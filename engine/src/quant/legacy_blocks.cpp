// The legacy block quantizers (legacy_blocks.h). Truncating (x * id + 8.5)
// is round-half-up of x * id + 8 in one step, as GGML writes it.
#include "quant/legacy_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "folio/dequant.h"
#include "quant/scale_search.h"

namespace folio::quant {

namespace {

constexpr int kQK = cpu::kBlock32;

// The value of largest magnitude, signed (the first one on ties), so that
// the grid ends exactly on it.
float signed_absmax(const float* x) {
    float amax = 0, max = 0;
    for (int j = 0; j < kQK; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

float inverse(float d) { return d != 0 ? 1.0f / d : 0.0f; }

// Element j's 5th bit goes to bit j of qh (elements 0..15 low nibbles, 16..31 high).
void pack_fifth_bits(const uint8_t* q, uint8_t qh_bytes[4]) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK; ++j) qh |= uint32_t(q[j] >> 4) << j;
    for (int b = 0; b < 4; ++b) qh_bytes[b] = uint8_t(qh >> (8 * b));
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
    for (int j = 0; j < kQK / 2; ++j) qs[j] = uint8_t((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
}

}  // namespace

void quantize_block_q4_0(const float* x, cpu::BlockQ4_0& block) {
    const float d = signed_absmax(x) / -8;
    const float id = inverse(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(15, int(int8_t(x[j] * id + 8.5f))));
    block.d = fp32_to_fp16(d);
    pack_nibbles(q, block.qs);
}

void quantize_block_q4_1(const float* x, cpu::BlockQ4_1& block) {
    const float min = *std::min_element(x, x + kQK);
    const float max = *std::max_element(x, x + kQK);
    const float d = (max - min) / 15;
    const float id = inverse(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(15, int(int8_t((x[j] - min) * id + 0.5f))));
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    pack_nibbles(q, block.qs);
}

void quantize_block_q5_0(const float* x, cpu::BlockQ5_0& block) {
    const float d = signed_absmax(x) / -16;
    const float id = inverse(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
    block.d = fp32_to_fp16(d);
    pack_fifth_bits(q, block.qh);
    pack_nibbles(q, block.qs);
}

void quantize_block_q5_1(const float* x, cpu::BlockQ5_1& block) {
    const float min = *std::min_element(x, x + kQK);
    const float max = *std::max_element(x, x + kQK);
    const float d = (max - min) / 31;
    const float id = inverse(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(31, int(int8_t((x[j] - min) * id + 0.5f))));
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    pack_fifth_bits(q, block.qh);
    pack_nibbles(q, block.qs);
}

void quantize_block_q8_0(const float* x, cpu::BlockQ8_0& block) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = inverse(d);
    for (int j = 0; j < kQK; ++j) block.qs[j] = int8_t(std::round(x[j] * id));  // half away from zero
    block.d = fp32_to_fp16(d);
}

void quantize_block_q4_0_weighted(const float* x, const float* weights, cpu::BlockQ4_0& block) {
    int8_t L[kQK];
    block.d = fp32_to_fp16(search_symmetric_scale(kQK, 8, x, L, weights));
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(L[j]);
    pack_nibbles(q, block.qs);
}

void quantize_block_q5_0_weighted(const float* x, const float* weights, cpu::BlockQ5_0& block) {
    int8_t L[kQK];
    block.d = fp32_to_fp16(search_symmetric_scale(kQK, 16, x, L, weights));
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(L[j]);
    pack_fifth_bits(q, block.qh);
    pack_nibbles(q, block.qs);
}

// Asymmetric, imatrix-weighted: x ~ d * L + m with m = -offset, the offset
// search the K-quants' sub-blocks use (the same range and steps).
void quantize_block_q4_1_weighted(const float* x, const float* weights, cpu::BlockQ4_1& block) {
    uint8_t L[kQK];
    float offset = 0;
    block.d = fp32_to_fp16(search_offset_scale(kQK, 15, x, weights, L, &offset, -0.9f, 0.05f, 36));
    block.m = fp32_to_fp16(-offset);
    pack_nibbles(L, block.qs);
}

void quantize_block_q5_1_weighted(const float* x, const float* weights, cpu::BlockQ5_1& block) {
    uint8_t L[kQK];
    float offset = 0;
    block.d = fp32_to_fp16(search_offset_scale(kQK, 31, x, weights, L, &offset, -0.9f, 0.05f, 36));
    block.m = fp32_to_fp16(-offset);
    pack_fifth_bits(L, block.qh);
    pack_nibbles(L, block.qs);
}

}  // namespace folio::quant
