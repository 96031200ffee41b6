// The K-quant super-block quantizers (kquant_blocks.h).
#include "quant/kquant_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "folio/dequant.h"
#include "quant/scale_search.h"

namespace folio::quant {

namespace {

constexpr int kQK_K = cpu::kSuperBlock;
constexpr int kSubBlocks = kQK_K / 32;

// Eight 6-bit scales and mins into Q4_K / Q5_K's 12 bytes (the inverse of cpu::k_scale_min).
void pack_scales_mins(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
    std::memset(scales, 0, cpu::kKScaleBytes);
    for (int j = 0; j < kSubBlocks; ++j) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            scales[j - 4] |= uint8_t((ls[j] >> 4) << 6);
            scales[j] |= uint8_t((lm[j] >> 4) << 6);
        }
    }
}

// Per-sub-block levels L (0..nmax) and their decoded 6-bit scales/mins for
// Q4_K (nmax 15) and Q5_K (nmax 31): fills d, dmin, scales and L.
void quantize_offset_superblock(const float* x, const float* importance, int nmax, float ref_rmin, int ref_nstep,
                                uint16_t& d_out, uint16_t& dmin_out, uint8_t* scale_bytes, uint8_t* L) {
    float scales[kSubBlocks];
    float mins[kSubBlocks];
    float weights[32];
    uint8_t ls[kSubBlocks];
    uint8_t lm[kSubBlocks];
    float d_block, m_block;
    if (!importance) {
        // Reference: weight |x| + RMS of the sub-block; scales by max / 63.
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < kSubBlocks; ++j) {
            const float* xs = x + 32 * j;
            float sum_x2 = 0;
            for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
            const float av_x = std::sqrt(sum_x2 / 32);
            for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
            scales[j] = search_offset_scale(32, nmax, xs, weights, L + 32 * j, &mins[j], ref_rmin, 0.1f, ref_nstep);
            max_scale = std::max(max_scale, scales[j]);
            max_min = std::max(max_min, mins[j]);
        }
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < kSubBlocks; ++j) {
            ls[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
            lm[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
        }
        d_block = max_scale / 63.f;
        m_block = max_min / 63.f;
    } else {
        // Importance-weighted: weight imatrix * sqrt(sigma^2 + x^2), a finer
        // search, and the sub-block scales themselves fitted under the
        // sub-blocks' total weight.
        float sum_x2 = 0;
        for (int l = 0; l < kQK_K; ++l) sum_x2 += x[l] * x[l];
        const float sigma2 = 2 * sum_x2 / kQK_K;
        float sub_weight[kSubBlocks];
        for (int j = 0; j < kSubBlocks; ++j) {
            const float* xs = x + 32 * j;
            const float* qw = importance + 32 * j;
            for (int l = 0; l < 32; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + xs[l] * xs[l]);
            float sumw = 0;
            for (int l = 0; l < 32; ++l) sumw += weights[l];
            sub_weight[j] = sumw;
            scales[j] = search_offset_scale(32, nmax, xs, weights, L + 32 * j, &mins[j], -0.9f, 0.05f, 36);
        }
        d_block = search_positive_scale(kSubBlocks, 63, scales, ls, sub_weight);
        m_block = search_positive_scale(kSubBlocks, 63, mins, lm, sub_weight);
        for (int j = 0; j < kSubBlocks; ++j) {
            ls[j] = std::min<uint8_t>(63, ls[j]);
            lm[j] = std::min<uint8_t>(63, lm[j]);
        }
    }
    pack_scales_mins(ls, lm, scale_bytes);
    d_out = fp32_to_fp16(d_block);
    dmin_out = fp32_to_fp16(m_block);

    // Round again against the scales as they will be decoded.
    const float d = fp16_to_fp32(d_out);
    const float dmin = fp16_to_fp32(dmin_out);
    for (int j = 0; j < kSubBlocks; ++j) {
        uint8_t sc, m;
        cpu::k_scale_min(j, scale_bytes, sc, m);
        const float dj = d * sc;
        if (!dj) continue;  // the levels of a zero scale decode to -offset whatever they are
        const float mj = dmin * m;
        for (int l = 0; l < 32; ++l)
            L[32 * j + l] = uint8_t(std::clamp(nearest_int((x[32 * j + l] + mj) / dj), 0, nmax));
    }
}

}  // namespace

void quantize_block_q4_k(const float* x, const float* importance, cpu::BlockQ4_K& block) {
    uint8_t L[kQK_K];
    quantize_offset_superblock(x, importance, 15, -1.f, 20, block.d, block.dmin, block.scales, L);
    for (int p = 0; p < kQK_K / 64; ++p)
        for (int l = 0; l < 32; ++l) block.qs[32 * p + l] = uint8_t(L[64 * p + l] | (L[64 * p + 32 + l] << 4));
}

void quantize_block_q5_k(const float* x, const float* importance, cpu::BlockQ5_K& block) {
    uint8_t L[kQK_K];
    quantize_offset_superblock(x, importance, 31, -0.5f, 15, block.d, block.dmin, block.scales, L);
    std::memset(block.qh, 0, sizeof block.qh);
    for (int p = 0; p < kQK_K / 64; ++p) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t lo = L[64 * p + l];
            const uint8_t hi = L[64 * p + 32 + l];
            block.qh[l] |= uint8_t(((lo >> 4) << (2 * p)) | ((hi >> 4) << (2 * p + 1)));
            block.qs[32 * p + l] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
        }
    }
}

void quantize_block_q6_k(const float* x, const float* importance, cpu::BlockQ6_K& block) {
    constexpr int kGroups = kQK_K / 16;
    int8_t L[kQK_K];
    float scales[kGroups];
    float max_scale = 0, max_abs_scale = 0;
    for (int g = 0; g < kGroups; ++g) {
        scales[g] = search_symmetric_scale(16, 32, x + 16 * g, L + 16 * g, importance ? importance + 16 * g : nullptr);
        if (std::fabs(scales[g]) > max_abs_scale) {
            max_abs_scale = std::fabs(scales[g]);
            max_scale = scales[g];
        }
    }
    std::memset(&block, 0, sizeof block);
    if (max_abs_scale < 1e-15f) return;  // all zeros: d = 0

    // The group scales as signed bytes under one fp16 step, largest at -128.
    const float iscale = -128.f / max_scale;
    block.d = fp32_to_fp16(1 / iscale);
    for (int g = 0; g < kGroups; ++g) block.scales[g] = int8_t(std::min(127, nearest_int(iscale * scales[g])));
    const float d = fp16_to_fp32(block.d);
    for (int g = 0; g < kGroups; ++g) {
        const float dg = d * block.scales[g];
        if (!dg) continue;
        for (int i = 0; i < 16; ++i)
            L[16 * g + i] = int8_t(std::clamp(nearest_int(x[16 * g + i] / dg), -32, 31) + 32);
    }
    // Four 32-value quarters of each half share ql (low nibbles) and qh (two bits each).
    for (int h = 0; h < kQK_K / 128; ++h) {
        const int8_t* q = L + 128 * h;
        uint8_t* ql = block.ql + 64 * h;
        uint8_t* qh = block.qh + 32 * h;
        for (int l = 0; l < 32; ++l) {
            ql[l] = uint8_t((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
            ql[l + 32] = uint8_t((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
            qh[l] = uint8_t((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
        }
    }
}

}  // namespace folio::quant
