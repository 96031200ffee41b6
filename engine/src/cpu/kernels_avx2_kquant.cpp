// AVX2 kernels for the K-quants (Q4_K, Q5_K, Q6_K) against Q8_K activations.
// Per super-block, each weight row is unpacked once into eight vectors of 32
// unsigned quants plus their per-sub-block scales (as 16-bit multipliers);
// every activation row of the tile then costs one maddubs + one madd per 32
// elements. Sub-block offsets (mins, Q6_K's -32) come from Q8_K's bsums.
#include "cpu/kernels_impl.h"

#include <cmath>

#if defined(__x86_64__)

#include "cpu/avx2_common.h"
#include "cpu/avx2_tile.h"
#include "cpu/quant_blocks.h"

namespace folio::cpu {
namespace {

struct UnpackedK {
    __m256i q[8];       // elements 32k .. 32k+31, unsigned
    __m256i scale[8];   // int16 multiplier of each pair-sum in q[k]
    float d = 0.0f;
    float dmin = 0.0f;  // Q4_K / Q5_K
    __m128i mins;       // Q4_K / Q5_K: eight int16 sub-block mins
    __m256i scales16;   // Q6_K: sixteen int16 sub-block scales
};

// The six-bit scales and mins of a Q4_K / Q5_K block: bytes 0-7 scales, 8-15 mins.
FOLIO_AVX2 inline void unpack_k_scales(const uint8_t* packed, UnpackedK& out) {
    constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
    uint32_t u[4];
    std::memcpy(u, packed, kKScaleBytes);
    u[3] = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
    const uint32_t mins_lo = u[1] & kLow6;
    u[1] = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
    u[2] = mins_lo;
    u[0] &= kLow6;
    uint8_t bytes[16];
    std::memcpy(bytes, u, sizeof bytes);
    FOLIO_UNROLL
    for (int k = 0; k < 8; ++k) out.scale[k] = _mm256_set1_epi16(bytes[k]);
    out.mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + 8)));
}

FOLIO_AVX2 inline void unpack_nibble_pairs(const uint8_t* qs, UnpackedK& out) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    FOLIO_UNROLL
    for (int p = 0; p < 4; ++p) {
        const __m256i raw = load256(qs + 32 * p);
        out.q[2 * p] = _mm256_and_si256(raw, low4);
        out.q[2 * p + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    }
}

// offset - d_a * dmin * sum_j mins[j] * sum(a in sub-block j), as one
// explicit fma so that every tile shape rounds it the same way.
FOLIO_AVX2 inline float minus_mins_term(const UnpackedK& w, const BlockQ8_K& a, float offset) {
    const __m256i bsums = load256(a.bsums);
    const __m128i sub_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
    return std::fma(-(a.d * w.dmin), static_cast<float>(hsum_i32(_mm_madd_epi16(w.mins, sub_sums))), offset);
}

struct Q4_K {
    using Block = BlockQ4_K;
    static FOLIO_AVX2 void unpack(const Block& b, UnpackedK& out) {
        unpack_nibble_pairs(b.qs, out);
        unpack_k_scales(b.scales, out);
        out.d = half_to_float(b.d);
        out.dmin = half_to_float(b.dmin);
    }
    static FOLIO_AVX2 void finish(const UnpackedK& w, const BlockQ8_K& a, __m256i&, float& offset) {
        offset = minus_mins_term(w, a, offset);
    }
};

struct Q5_K {
    using Block = BlockQ5_K;
    static FOLIO_AVX2 void unpack(const Block& b, UnpackedK& out) {
        unpack_nibble_pairs(b.qs, out);
        const __m256i high = load256(b.qh);
        const __m256i one = _mm256_set1_epi8(1);
        FOLIO_UNROLL
        for (int k = 0; k < 8; ++k) {
            const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(high, k), one);
            out.q[k] = _mm256_or_si256(out.q[k], _mm256_slli_epi16(bit, 4));
        }
        unpack_k_scales(b.scales, out);
        out.d = half_to_float(b.d);
        out.dmin = half_to_float(b.dmin);
    }
    static FOLIO_AVX2 void finish(const UnpackedK& w, const BlockQ8_K& a, __m256i&, float& offset) {
        offset = minus_mins_term(w, a, offset);
    }
};

struct Q6_K {
    using Block = BlockQ6_K;
    static FOLIO_AVX2 void unpack(const Block& b, UnpackedK& out) {
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        const __m256i bits45 = _mm256_set1_epi8(0x30);
        FOLIO_UNROLL
        for (int half = 0; half < 2; ++half) {
            const __m256i ql0 = load256(b.ql + 64 * half);
            const __m256i ql1 = load256(b.ql + 64 * half + 32);
            const __m256i qh = load256(b.qh + 32 * half);
            // qh bits (2i, 2i+1) become bits 4-5 of quant vector i of this half.
            out.q[4 * half + 0] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                                                  _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
            out.q[4 * half + 1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                                  _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
            out.q[4 * half + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                                  _mm256_and_si256(qh, bits45));
            out.q[4 * half + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                                  _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
        }
        FOLIO_UNROLL
        for (int k = 0; k < 8; ++k)
            out.scale[k] = _mm256_set_m128i(_mm_set1_epi16(b.scales[2 * k + 1]), _mm_set1_epi16(b.scales[2 * k]));
        out.scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        out.d = half_to_float(b.d);
    }
    // The stored quants are q + 32: take 32 * scale * sum(a) back off per sub-block.
    static FOLIO_AVX2 void finish(const UnpackedK& w, const BlockQ8_K& a, __m256i& sumi, float&) {
        const __m256i bias = _mm256_madd_epi16(load256(a.bsums), w.scales16);
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(bias, 5));
    }
};

template <typename Format>
struct KQuantTile {
    using Block = typename Format::Block;

    template <int NW, int NA>
    static FOLIO_AVX2 void run(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride,
                               const float* /*a_scales*/, float* y, size_t ldy) {
        const Block* wrow[NW];
        const BlockQ8_K* arow[NA];
        FOLIO_UNROLL
        for (int r = 0; r < NW; ++r) wrow[r] = reinterpret_cast<const Block*>(static_cast<const char*>(w) + r * w_stride);
        FOLIO_UNROLL
        for (int c = 0; c < NA; ++c)
            arow[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(a) + c * a_stride);
        __m256 acc[NW][NA];
        float offset[NW][NA];
        FOLIO_UNROLL
        for (int r = 0; r < NW; ++r)
            FOLIO_UNROLL
            for (int c = 0; c < NA; ++c) {
                acc[r][c] = _mm256_setzero_ps();
                offset[r][c] = 0.0f;
            }
        UnpackedK unpacked[NW];
        const int64_t nb = n / kSuperBlock;
        NextTilePrefetch<NW> prefetch(w, w_stride, nb);  // decode only (NA == 1)
        for (int64_t b = 0; b < nb; ++b) {
            if constexpr (NA == 1) prefetch.block(b);
            FOLIO_UNROLL
            for (int r = 0; r < NW; ++r) Format::unpack(wrow[r][b], unpacked[r]);
            FOLIO_UNROLL
            for (int c = 0; c < NA; ++c) {
                const BlockQ8_K& ab = arow[c][b];
                __m256i sumi[NW];
                FOLIO_UNROLL
                for (int r = 0; r < NW; ++r) sumi[r] = _mm256_setzero_si256();
                FOLIO_UNROLL
                for (int k = 0; k < 8; ++k) {
                    const __m256i aq = load256(ab.qs + 32 * k);
                    FOLIO_UNROLL
                    for (int r = 0; r < NW; ++r) {
                        const __m256i pairs = _mm256_maddubs_epi16(unpacked[r].q[k], aq);
                        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(pairs, unpacked[r].scale[k]));
                    }
                }
                FOLIO_UNROLL
                for (int r = 0; r < NW; ++r) {
                    Format::finish(unpacked[r], ab, sumi[r], offset[r][c]);
                    acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[r]), _mm256_set1_ps(unpacked[r].d * ab.d),
                                                acc[r][c]);
                }
            }
        }
        store_tile<NW, NA>(acc, offset, y, ldy);
    }
};

template <typename Format>
constexpr DotKernels kquant_kernels(TensorType weight) {
    return DotKernels{weight,
                      ActivationType::Q8_K,
                      kSuperBlock,
                      sizeof(BlockQ8_K),
                      quantize_row_q8_K_avx2,
                      &dot_by_tile<KQuantTile<Format>>,
                      &tile_dispatch<KQuantTile<Format>>};
}

const DotKernels kAvx2KQuant[] = {
    kquant_kernels<Q4_K>(TensorType::Q4_K),
    kquant_kernels<Q5_K>(TensorType::Q5_K),
    kquant_kernels<Q6_K>(TensorType::Q6_K),
};

}  // namespace

const DotKernels* avx2_kquant_kernels(TensorType weight) {
    for (const DotKernels& k : kAvx2KQuant)
        if (k.weight == weight) return &k;
    return nullptr;
}

}  // namespace folio::cpu

#endif
