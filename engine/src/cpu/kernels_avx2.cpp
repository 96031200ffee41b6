// AVX2 kernels for the 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0), plain float rows, and the activation quantizers.
#include "cpu/kernels_impl.h"

#if defined(__x86_64__)

#include "cpu/avx2_common.h"
#include "cpu/avx2_tile.h"
#include "cpu/quant_blocks.h"

namespace folio::cpu {
namespace {

// ---- activation quantizers (same bytes as the scalar ones) -----------------

FOLIO_AVX2 void quantize_row_q8_0(const float* x, void* out, int64_t n) {
    auto* blocks = static_cast<BlockQ8_0*>(out);
    for (int64_t b = 0; b < n / kBlock32; ++b, x += kBlock32) {
        const float d = amax32(x, kBlock32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d = float_to_half(d);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(blocks[b].qs), quantize32(x, id).bytes);
    }
}

FOLIO_AVX2 void quantize_row_q8_1(const float* x, void* out, int64_t n) {
    auto* blocks = static_cast<BlockQ8_1*>(out);
    for (int64_t b = 0; b < n / kBlock32; ++b, x += kBlock32) {
        const float d = amax32(x, kBlock32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const Quantized32 q = quantize32(x, id);
        const __m256i sums = _mm256_add_epi32(q.lo, q.hi);
        const int sum = hsum_i32(_mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1)));
        blocks[b].d = float_to_half(d);
        blocks[b].s = float_to_half(d * static_cast<float>(sum));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(blocks[b].qs), q.bytes);
    }
}

// ---- float weights -----------------------------------------------------------

// F32 weights as a register tile: NW weight rows against NA activation rows,
// each weight vector loaded once for all NA rows and each activation vector
// once for all NW rows. Dot products one pair at a time (this file's kernel
// until 2026-12-01, tile_by_dots) load two vectors per FMA, which bounds a
// verify pass of K + 1 rows at one FMA a cycle: on SmolLM2's F32 folder each
// row past the first cost ~2.9 ms of a 34 ms step
// (bench/results/spec-cpu-vs-llamacpp-2026-12-01.txt). Every pair
// has one accumulator (lane j sums elements j, j + 8, ...), reduced by
// store_tile's tree, then the scalar tail added: the same arithmetic for every
// tile shape, so a row's result does not depend on the rows beside it.
// The next tile's weight rows are prefetched while this one computes (as the
// quantized decode tiles do): a 2-row tile alone keeps too few rows in flight
// to stream from memory, and 2-9 rows cost a quarter more CPU time without it.
struct F32Tile {
    template <int NW, int NA>
    FOLIO_AVX2 static void run(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride,
                               const float* /*a_scales*/, float* y, size_t ldy) {
        const auto* wb = static_cast<const char*>(w);
        const auto* ab = static_cast<const char*>(a);
        __m256 acc[NW][NA];
        FOLIO_UNROLL
        for (int r = 0; r < NW; ++r)
            FOLIO_UNROLL
            for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_setzero_ps();
        NextTilePrefetch<NW> prefetch(w, w_stride, n / 8);
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            prefetch.block(i / 8);
            __m256 av[NA];
            FOLIO_UNROLL
            for (int c = 0; c < NA; ++c) av[c] = _mm256_loadu_ps(reinterpret_cast<const float*>(ab + c * a_stride) + i);
            FOLIO_UNROLL
            for (int r = 0; r < NW; ++r) {
                const __m256 wv = _mm256_loadu_ps(reinterpret_cast<const float*>(wb + r * w_stride) + i);
                FOLIO_UNROLL
                for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_fmadd_ps(wv, av[c], acc[r][c]);
            }
        }
        float tail[NW][NA] = {};
        for (int r = 0; r < NW; ++r)
            for (int c = 0; c < NA; ++c) {
                const auto* wr = reinterpret_cast<const float*>(wb + r * w_stride);
                const auto* ar = reinterpret_cast<const float*>(ab + c * a_stride);
                for (int64_t j = i; j < n; ++j) tail[r][c] += wr[j] * ar[j];
            }
        store_tile<NW, NA>(acc, tail, y, ldy);
    }
};

FOLIO_AVX2 inline __m256 load_half8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

FOLIO_AVX2 float dot_f16(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const float*>(a);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(load_half8(x + i), _mm256_loadu_ps(y + i), acc0);
        acc1 = _mm256_fmadd_ps(load_half8(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(load_half8(x + i + 16), _mm256_loadu_ps(y + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(load_half8(x + i + 24), _mm256_loadu_ps(y + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_half8(x + i), _mm256_loadu_ps(y + i), acc0);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; ++i) sum += half_to_float(x[i]) * y[i];
    return sum;
}

// ---- 32-element blocks -------------------------------------------------------
// Each format says how to turn a block into 32 quant bytes. Signed formats
// pair with Q8_0 (sign trick in dot_i8_abs); formats with an offset m pair
// with Q8_1 and add m * s per block.

struct Q4_0 {
    using Block = BlockQ4_0;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static FOLIO_AVX2 __m256i quants(const Block& b) {
        return _mm256_sub_epi8(unpack_nibbles16(b.qs), _mm256_set1_epi8(8));
    }
};

struct Q5_0 {
    using Block = BlockQ5_0;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static FOLIO_AVX2 __m256i quants(const Block& b) {
        // q - 16 as a signed byte: the nibble, with 0xF0 filled in where bit 4 is clear.
        const __m256i high = _mm256_andnot_si256(bytes_from_bits32(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0)));
        return _mm256_or_si256(unpack_nibbles16(b.qs), high);
    }
};

struct Q8_0 {
    using Block = BlockQ8_0;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static FOLIO_AVX2 __m256i quants(const Block& b) { return load256(b.qs); }
};

struct Q4_1 {
    using Block = BlockQ4_1;
    using Act = BlockQ8_1;
    static constexpr bool kHasMin = true;
    static FOLIO_AVX2 __m256i quants(const Block& b) { return unpack_nibbles16(b.qs); }
};

struct Q5_1 {
    using Block = BlockQ5_1;
    using Act = BlockQ8_1;
    static constexpr bool kHasMin = true;
    static FOLIO_AVX2 __m256i quants(const Block& b) {
        const __m256i high = _mm256_and_si256(bytes_from_bits32(b.qh), _mm256_set1_epi8(0x10));
        return _mm256_or_si256(unpack_nibbles16(b.qs), high);
    }
};

// The scales of block b of NW (<= 4) weight rows as floats, one conversion
// for all: [d0, m0, d1, m1, ...], m = 0 for formats without an offset and
// zeros past NW (d and m are adjacent halves).
template <typename Format, int NW>
FOLIO_AVX2 inline __m256 weight_scales(const typename Format::Block* const* wrow, int64_t b) {
    static_assert(NW <= 4);
    int packed[4] = {};
    FOLIO_UNROLL
    for (int r = 0; r < NW; ++r) {
        if constexpr (Format::kHasMin) packed[r] = static_cast<int>(load_u32(reinterpret_cast<const uint8_t*>(&wrow[r][b].d)));
        else packed[r] = wrow[r][b].d;
    }
    return _mm256_cvtph_ps(_mm_setr_epi32(packed[0], packed[1], packed[2], packed[3]));
}

template <typename Format>
struct Block32Tile {
    using Block = typename Format::Block;
    using Act = typename Format::Act;

    // Per block: the weight rows' quants are unpacked and their scales
    // converted once for all NA activation rows; each (weight, activation)
    // pair adds float(sum of products) * (d_w * d_a) to its own 8-lane
    // accumulator. Formats with an offset m also add m * s_a: with one
    // activation row one 8-lane fma covers all the weight rows (lane 2r + 1),
    // else one per weight row covers all the activation rows (lane 2c + 1,
    // see kActScalesPerBlock). Every output is computed by the same
    // operations in the same order whatever NW and NA are: batch invariance.
    template <int NW, int NA>
    static FOLIO_AVX2 void run(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride,
                               const float* a_scales, float* y, size_t ldy) {
        const Block* wrow[NW];
        const Act* arow[NA];
        FOLIO_UNROLL
        for (int r = 0; r < NW; ++r) wrow[r] = reinterpret_cast<const Block*>(static_cast<const char*>(w) + r * w_stride);
        FOLIO_UNROLL
        for (int c = 0; c < NA; ++c) arow[c] = reinterpret_cast<const Act*>(static_cast<const char*>(a) + c * a_stride);
        constexpr int kOffsetVectors = NA == 1 ? 1 : NW;
        __m256 acc[NW][NA];
        __m256 offsets[kOffsetVectors];
        FOLIO_UNROLL
        for (int r = 0; r < NW; ++r)
            FOLIO_UNROLL
            for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_setzero_ps();
        FOLIO_UNROLL
        for (int v = 0; v < kOffsetVectors; ++v) offsets[v] = _mm256_setzero_ps();
        // Without a table (a lone dot), the scales are converted here, to the same floats.
        alignas(32) float converted[kActScalesPerBlock] = {};
        alignas(32) float wscale[8];
        const int64_t nb = n / kBlock32;
        NextTilePrefetch<NW> prefetch(w, w_stride, nb);  // decode only (NA == 1)
        for (int64_t b = 0; b < nb; ++b) {
            const float* ds = converted;
            if (a_scales) {
                ds = a_scales + b * kActScalesPerBlock;
            } else {
                FOLIO_UNROLL
                for (int c = 0; c < NA; ++c) {
                    converted[2 * c] = half_to_float(arow[c][b].d);
                    if constexpr (Format::kHasMin) converted[2 * c + 1] = half_to_float(arow[c][b].s);
                }
            }
            // The weight scales d (the same floats either way). Without an
            // offset each row converts its own: packing four halves through
            // general registers into one conversion cost the decode tile
            // 3-10 % on this Zen core (bench/results/cpu-gemma-prefetch-2026-11-30.txt).
            float d[NW];
            if constexpr (Format::kHasMin) {
                const __m256 dm = weight_scales<Format, NW>(wrow, b);
                _mm256_store_ps(wscale, dm);
                FOLIO_UNROLL
                for (int r = 0; r < NW; ++r) d[r] = wscale[2 * r];
                if constexpr (NA == 1) {
                    offsets[0] = _mm256_fmadd_ps(dm, _mm256_broadcast_ss(ds + 1), offsets[0]);
                } else {
                    const __m256 s = _mm256_load_ps(ds);
                    FOLIO_UNROLL
                    for (int r = 0; r < NW; ++r)
                        offsets[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(wscale + 2 * r + 1), s, offsets[r]);
                }
            } else {
                FOLIO_UNROLL
                for (int r = 0; r < NW; ++r) d[r] = half_to_float(wrow[r][b].d);
            }
            if constexpr (NA == 1) prefetch.block(b);
            __m256i q[NW], q_abs[NW];
            FOLIO_UNROLL
            for (int r = 0; r < NW; ++r) {
                q[r] = Format::quants(wrow[r][b]);
                if constexpr (!Format::kHasMin) q_abs[r] = _mm256_sign_epi8(q[r], q[r]);
            }
            FOLIO_UNROLL
            for (int c = 0; c < NA; ++c) {
                const __m256i aq = load256(arow[c][b].qs);
                const float ad = ds[2 * c];
                FOLIO_UNROLL
                for (int r = 0; r < NW; ++r) {
                    const __m256i sum = Format::kHasMin ? dot_u8(q[r], aq) : dot_i8_abs(q_abs[r], q[r], aq);
                    acc[r][c] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(d[r] * ad), acc[r][c]);
                }
            }
        }
        float offset[NW][NA] = {};
        if constexpr (Format::kHasMin) {
            alignas(32) float lanes[kOffsetVectors][8];
            FOLIO_UNROLL
            for (int v = 0; v < kOffsetVectors; ++v) _mm256_store_ps(lanes[v], offsets[v]);
            FOLIO_UNROLL
            for (int r = 0; r < NW; ++r)
                FOLIO_UNROLL
                for (int c = 0; c < NA; ++c) offset[r][c] = NA == 1 ? lanes[0][2 * r + 1] : lanes[r][2 * c + 1];
        }
        store_tile<NW, NA>(acc, offset, y, ldy);
    }
};

template <typename Format>
constexpr DotKernels block32_kernels(TensorType weight, QuantizeRowFn quantize) {
    using Act = typename Format::Act;
    return DotKernels{weight,
                      Format::kHasMin ? ActivationType::Q8_1 : ActivationType::Q8_0,
                      kBlock32,
                      sizeof(Act),
                      quantize,
                      &dot_by_tile<Block32Tile<Format>>,
                      &tile_dispatch<Block32Tile<Format>>,
                      true};
}

const DotKernels kAvx2[] = {
    DotKernels{TensorType::F32, ActivationType::F32, 1, sizeof(float), nullptr, &dot_by_tile<F32Tile>,
               &tile_dispatch<F32Tile>},
    DotKernels{TensorType::F16, ActivationType::F32, 1, sizeof(float), nullptr, dot_f16, &tile_by_dots<dot_f16>},
    block32_kernels<Q4_0>(TensorType::Q4_0, quantize_row_q8_0),
    block32_kernels<Q4_1>(TensorType::Q4_1, quantize_row_q8_1),
    block32_kernels<Q5_0>(TensorType::Q5_0, quantize_row_q8_0),
    block32_kernels<Q5_1>(TensorType::Q5_1, quantize_row_q8_1),
    block32_kernels<Q8_0>(TensorType::Q8_0, quantize_row_q8_0),
};

}  // namespace

FOLIO_AVX2 void quantize_row_q8_K_avx2(const float* x, void* out, int64_t n) {
    auto* blocks = static_cast<BlockQ8_K*>(out);
    for (int64_t b = 0; b < n / kSuperBlock; ++b, x += kSuperBlock) {
        BlockQ8_K& block = blocks[b];
        const float amax = amax32(x, kSuperBlock);
        if (amax == 0.0f) {
            std::memset(&block, 0, sizeof block);
            continue;
        }
        const float iscale = 127.0f / amax;
        for (int g = 0; g < kSuperBlock / 32; ++g) {
            const Quantized32 q = quantize32(x + 32 * g, iscale);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.qs + 32 * g), q.bytes);
            // lanes 0-3 of lo/hi plus lanes 4-7: the two sums of 16.
            __m256i h = _mm256_hadd_epi32(q.lo, q.hi);
            h = _mm256_hadd_epi32(h, h);
            const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            block.bsums[2 * g] = static_cast<int16_t>(_mm_cvtsi128_si32(s));
            block.bsums[2 * g + 1] = static_cast<int16_t>(_mm_extract_epi32(s, 1));
        }
        block.d = 1.0f / iscale;
    }
}

const DotKernels* avx2_kernels(TensorType weight) {
    for (const DotKernels& k : kAvx2)
        if (k.weight == weight) return &k;
    return avx2_kquant_kernels(weight);
}

}  // namespace folio::cpu

#else  // not x86-64: no vector kernels

namespace folio::cpu {
const DotKernels* avx2_kernels(TensorType) { return nullptr; }
}  // namespace folio::cpu

#endif
