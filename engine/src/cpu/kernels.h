// The dot-product kernels behind the CPU matmul, one set per weight type and
// instruction set. A weight row in its GGUF block format is multiplied with
// an activation row that was first quantized to the partner format GGML uses
// (Q8_0, Q8_1 or Q8_K; plain floats for F32/F16 weights), so the inner loop
// is integer multiply-adds with one float scale per block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "folio/tensor_type.h"

namespace folio::cpu {

enum class ActivationType { F32, Q8_0, Q8_1, Q8_K };

enum class Isa { Scalar, Avx2 };  // Avx2 means AVX2 + FMA + F16C

// The best instruction set this CPU runs (checked once, at run time).
Isa best_isa();
bool isa_supported(Isa isa);
// Whether the processor converts halves in hardware (F16C).
bool cpu_has_f16c();
const char* isa_name(Isa isa);

// float row of n -> activation row. n is a multiple of the format's block.
using QuantizeRowFn = void (*)(const float* x, void* out, int64_t n);

// Dot product of one weight row with one activation row of n elements.
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);

// A block of dot products: y[c * ldy + r] = dot(weight row r, activation row c)
// for r < n_w (any count), c < n_a (<= kTileActRows); rows are w_stride /
// a_stride bytes apart. The vector kernels load each weight block once for
// all n_a activation rows (register tiles of 2 weight x 4 activation rows),
// which is what makes prefill fast. a_scales: null, or (kernels whose
// `tile_scales` is set) the activation rows' block scales as floats, see
// kActScalesPerBlock. Each y is bit-identical to dot() of its two rows.
using TileFn = void (*)(int64_t n, const void* w, size_t w_stride, int n_w, const void* a,
                        size_t a_stride, const float* a_scales, int n_a, float* y, size_t ldy);
inline constexpr int kTileActRows = 4;
// Scales of a group of kTileActRows activation rows (Q8_0 / Q8_1), per
// block: d0, s0, d1, s1, d2, s2, d3, s3 (s = 0 for Q8_0 and for rows past the
// end). Converted from halves once per matmul instead of once per weight row.
inline constexpr int kActScalesPerBlock = 2 * kTileActRows;

struct DotKernels {
    TensorType weight = TensorType::F32;
    ActivationType activation = ActivationType::F32;
    int block_elems = 1;           // weight and activation block length
    size_t activation_block_bytes = 0;
    QuantizeRowFn quantize = nullptr;  // null for F32 activations: x is used as is
    VecDotFn dot = nullptr;
    TileFn tile = nullptr;
    bool tile_scales = false;  // tile reads a_scales (may still be given null)
};

// Kernels for a weight type on an instruction set, or nullptr when the type
// has no kernels (BF16, Q5_1 for now) or the ISA is not compiled in.
const DotKernels* dot_kernels(TensorType weight, Isa isa);

// Bytes of one activation row of n elements (n a multiple of the block).
size_t activation_row_bytes(ActivationType type, int64_t n);

}  // namespace folio::cpu
