// IEEE half <-> float for the CPU backend (KV cache, F16 weights): the
// exact scalar conversions of folio_format (folio/dequant.h); vector paths
// use F16C.
#pragma once

#include <cstdint>

#include "folio/dequant.h"

namespace folio::cpu {

using folio::fp16_to_fp32;
using folio::fp32_to_fp16;

}  // namespace folio::cpu
