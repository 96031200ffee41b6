// Quantizers of the K-quant super-blocks of 256 values (Q4_K Q5_K Q6_K).
// Each sub-block gets its own scale (and offset) from a weighted search
// (scale_search.h); the sub-block scales are then quantized themselves
// (6 bits under an fp16 super-block scale, 8 bits for Q6_K), and every value
// is rounded again against the scale it will be decoded with.
//
// Without `importance` the weights are GGML's reference ones (|x| plus the
// sub-block's RMS) and the bytes equal llama-quantize's; with it (one weight
// per value, an imatrix column) the search is llama.cpp's imatrix search.
#pragma once

#include "cpu/quant_blocks.h"

namespace folio::quant {

void quantize_block_q4_k(const float* x, const float* importance, cpu::BlockQ4_K& block);
void quantize_block_q5_k(const float* x, const float* importance, cpu::BlockQ5_K& block);
void quantize_block_q6_k(const float* x, const float* importance, cpu::BlockQ6_K& block);

}  // namespace folio::quant
