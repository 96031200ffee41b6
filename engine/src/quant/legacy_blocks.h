// Quantizers of GGML's legacy 32-element blocks (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0):
// one scale (and offset) from the block's extremes, every value rounded to
// it. They are GGML's reference quantizers, which gguf-py repeats in numpy,
// so the bytes equal gguf.quants.quantize's.
#pragma once

#include "cpu/quant_blocks.h"

namespace folio::quant {

void quantize_block_q4_0(const float* x, cpu::BlockQ4_0& block);
void quantize_block_q4_1(const float* x, cpu::BlockQ4_1& block);
void quantize_block_q5_0(const float* x, cpu::BlockQ5_0& block);
void quantize_block_q5_1(const float* x, cpu::BlockQ5_1& block);
void quantize_block_q8_0(const float* x, cpu::BlockQ8_0& block);

// Importance-weighted Q4_0 / Q5_0 / Q4_1 / Q5_1 (llama.cpp's imatrix path):
// the scale (and for Q4_1 / Q5_1 the offset) is searched to minimise
// sum w_j (x_j - x'_j)^2; `weights` has 32 entries.
void quantize_block_q4_0_weighted(const float* x, const float* weights, cpu::BlockQ4_0& block);
void quantize_block_q5_0_weighted(const float* x, const float* weights, cpu::BlockQ5_0& block);
void quantize_block_q4_1_weighted(const float* x, const float* weights, cpu::BlockQ4_1& block);
void quantize_block_q5_1_weighted(const float* x, const float* weights, cpu::BlockQ5_1& block);

}  // namespace folio::quant
