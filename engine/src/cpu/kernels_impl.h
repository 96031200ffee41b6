// Internal to the kernels: the per-ISA tables that kernels.cpp dispatches
// over, and helpers shared by the scalar and vector files.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu/kernels.h"

namespace folio::cpu {

const DotKernels* scalar_kernels(TensorType weight);
const DotKernels* avx2_kernels(TensorType weight);  // nullptr off x86-64
#if defined(__x86_64__)
// The K-quant part of the AVX2 table (kernels_avx2_kquant.cpp) and the
// quantizer it pairs with (kernels_avx2.cpp).
const DotKernels* avx2_kquant_kernels(TensorType weight);
void quantize_row_q8_K_avx2(const float* x, void* out, int64_t n);
#endif

// Scalar activation quantizers; the AVX2 ones produce the same bytes.
void quantize_row_q8_0_scalar(const float* x, void* out, int64_t n);
void quantize_row_q8_1_scalar(const float* x, void* out, int64_t n);
void quantize_row_q8_K_scalar(const float* x, void* out, int64_t n);

inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The tile of dot products computed one pair at a time.
template <VecDotFn Dot>
void tile_by_dots(int64_t n, const void* w, size_t w_stride, int n_w, const void* a, size_t a_stride,
                  const float* /*a_scales*/, int n_a, float* y, size_t ldy) {
    const auto* wb = static_cast<const std::byte*>(w);
    const auto* ab = static_cast<const std::byte*>(a);
    for (int c = 0; c < n_a; ++c)
        for (int r = 0; r < n_w; ++r) y[c * ldy + r] = Dot(n, wb + r * w_stride, ab + c * a_stride);
}

}  // namespace folio::cpu
