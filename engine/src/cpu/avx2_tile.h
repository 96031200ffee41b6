// Turns a kernel's fixed-size tile, Kernel::run<NW, NA>, into the run-time
// TileFn / VecDotFn shapes of cpu/kernels.h.
#pragma once

#if defined(__x86_64__)

#include <algorithm>

#include "cpu/avx2_common.h"
#include "cpu/kernels.h"

namespace folio::cpu {
namespace {

// One accumulator's horizontal sum in exactly the order of store_tile's
// four-at-a-time hadd tree: ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)). Every
// output of every tile shape is reduced the same way, so a row's result does
// not depend on which rows share its tile (batch invariance).
FOLIO_AVX2 inline float hsum_tree(__m256 v) {
    const __m256 pairs = _mm256_hadd_ps(v, v);
    const __m256 quads = _mm256_hadd_ps(pairs, pairs);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(quads), _mm256_extractf128_ps(quads, 1)));
}

// Writes the tile's sums: y[c * ldy + r] = hsum_tree(acc[r][c]) + offset[r][c].
// Four accumulators at a time go through one hadd tree instead of four
// horizontal sums: with short rows (576 elements = 18 blocks) the reduction
// is a visible share of a tile's work.
template <int NW, int NA>
FOLIO_AVX2 inline void store_tile(const __m256 (&acc)[NW][NA], const float (&offset)[NW][NA], float* y, size_t ldy) {
    constexpr int kCount = NW * NA;
    int i = 0;
    FOLIO_UNROLL
    for (; i + 4 <= kCount; i += 4) {
        const __m256 t0 = _mm256_hadd_ps(acc[i % NW][i / NW], acc[(i + 1) % NW][(i + 1) / NW]);
        const __m256 t1 = _mm256_hadd_ps(acc[(i + 2) % NW][(i + 2) / NW], acc[(i + 3) % NW][(i + 3) / NW]);
        const __m256 t2 = _mm256_hadd_ps(t0, t1);
        alignas(16) float sums[4];
        _mm_store_ps(sums, _mm_add_ps(_mm256_castps256_ps128(t2), _mm256_extractf128_ps(t2, 1)));
        FOLIO_UNROLL
        for (int j = 0; j < 4; ++j) {
            const int r = (i + j) % NW, c = (i + j) / NW;
            y[c * ldy + r] = sums[j] + offset[r][c];
        }
    }
    FOLIO_UNROLL
    for (; i < kCount; ++i) {
        const int r = i % NW, c = i / NW;
        y[c * ldy + r] = hsum_tree(acc[r][c]) + offset[r][c];
    }
}

// Decode (one activation row) streams every weight byte from memory once.
// A tile kernel makes one of these and calls block(b) for each of its nb
// blocks: it asks for that block's share of the next tile's rows (the NW
// rows after these, contiguous), so the prefetches are spread over the
// tile's work instead of issued in one burst at its start. The burst (43
// lines for a 4-row tile of Gemma's Q8_0 head) filled the core's miss
// buffers and stalled: spread, Gemma's tied head ran 1.3x faster and tg128
// 1.2-1.3x (bench/results/cpu-gemma-prefetch-2026-11-30.txt). Past the last
// tile this touches lines it does not need; a prefetch never faults.
template <int NW>
class NextTilePrefetch {
public:
    FOLIO_AVX2 NextTilePrefetch(const void* w, size_t w_stride, int64_t nb)
        : next_(static_cast<const char*>(w) + NW * w_stride),
          span_(NW * w_stride),
          per_block_(nb > 0 ? (span_ + static_cast<size_t>(nb) - 1) / static_cast<size_t>(nb) : span_) {}

    FOLIO_AVX2 void block(int64_t b) {
        const size_t end = std::min(span_, static_cast<size_t>(b + 1) * per_block_);
        // An asm statement, not _mm_prefetch: GCC 12 deleted a loop of
        // builtin prefetches as work without effects once it was inlined.
        for (; done_ < end; done_ += 64) asm volatile("prefetcht0 %0" : : "m"(*(next_ + done_)));
    }

private:
    const char* next_;
    size_t span_;
    size_t per_block_;
    size_t done_ = 0;
};

// Walks any number of weight rows against n_a (<= kTileActRows) activation
// rows: four weight rows at a time for one activation row (decode: more
// independent accumulators), two for prefill tiles.
template <typename Kernel, int NA>
FOLIO_AVX2 void tile_rows(int64_t n, const char* w, size_t w_stride, int n_w, const void* a, size_t a_stride,
                          const float* a_scales, float* y, size_t ldy) {
    constexpr int kWide = NA == 1 ? 4 : 2;
    int r = 0;
    for (; r + kWide <= n_w; r += kWide)
        Kernel::template run<kWide, NA>(n, w + r * w_stride, w_stride, a, a_stride, a_scales, y + r, ldy);
    for (; r < n_w; ++r)
        Kernel::template run<1, NA>(n, w + r * w_stride, w_stride, a, a_stride, a_scales, y + r, ldy);
}

template <typename Kernel>
FOLIO_AVX2 void tile_dispatch(int64_t n, const void* w, size_t w_stride, int n_w, const void* a, size_t a_stride,
                              const float* a_scales, int n_a, float* y, size_t ldy) {
    static_assert(kTileActRows == 4);
    const char* wb = static_cast<const char*>(w);
    switch (n_a) {
        case 1: tile_rows<Kernel, 1>(n, wb, w_stride, n_w, a, a_stride, a_scales, y, ldy); break;
        case 2: tile_rows<Kernel, 2>(n, wb, w_stride, n_w, a, a_stride, a_scales, y, ldy); break;
        case 3: tile_rows<Kernel, 3>(n, wb, w_stride, n_w, a, a_stride, a_scales, y, ldy); break;
        default: tile_rows<Kernel, 4>(n, wb, w_stride, n_w, a, a_stride, a_scales, y, ldy); break;
    }
}

template <typename Kernel>
FOLIO_AVX2 float dot_by_tile(int64_t n, const void* w, const void* a) {
    float y;
    Kernel::template run<1, 1>(n, w, 0, a, 0, nullptr, &y, 1);
    return y;
}

}  // namespace
}  // namespace folio::cpu

#endif
