// Turns a kernel's fixed-size tile, Kernel::run<NW, NA>, into the run-time
// TileFn / VecDotFn shapes of cpu/kernels.h.
#pragma once

#if defined(__x86_64__)

#include "cpu/avx2_common.h"
#include "cpu/kernels.h"

namespace folio::cpu {
namespace {

template <typename Kernel, int NW>
FOLIO_AVX2 void tile_rows(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, int n_a,
                          float* y, size_t ldy) {
    switch (n_a) {
        case 1: Kernel::template run<NW, 1>(n, w, w_stride, a, a_stride, y, ldy); break;
        case 2: Kernel::template run<NW, 2>(n, w, w_stride, a, a_stride, y, ldy); break;
        case 3: Kernel::template run<NW, 3>(n, w, w_stride, a, a_stride, y, ldy); break;
        default: Kernel::template run<NW, 4>(n, w, w_stride, a, a_stride, y, ldy); break;
    }
}

template <typename Kernel>
FOLIO_AVX2 void tile_dispatch(int64_t n, const void* w, size_t w_stride, int n_w, const void* a, size_t a_stride,
                              int n_a, float* y, size_t ldy) {
    static_assert(kTileWeightRows == 2 && kTileActRows == 4);
    if (n_w >= 2) tile_rows<Kernel, 2>(n, w, w_stride, a, a_stride, n_a, y, ldy);
    else tile_rows<Kernel, 1>(n, w, w_stride, a, a_stride, n_a, y, ldy);
}

template <typename Kernel>
FOLIO_AVX2 float dot_by_tile(int64_t n, const void* w, const void* a) {
    float y;
    Kernel::template run<1, 1>(n, w, 0, a, 0, &y, 1);
    return y;
}

}  // namespace
}  // namespace folio::cpu

#endif
