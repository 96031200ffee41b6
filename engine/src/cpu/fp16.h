// IEEE half <-> float conversion for the CPU backend (KV cache, F16 weights).
// Scalar and exact (round-to-nearest-even); vector paths use F16C.
#pragma once

#include <cstdint>

namespace folio::cpu {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);

}  // namespace folio::cpu
