// The structural half of validation: every tensor of a written file is
// reopened and each block's scales (fp16 d, dmin / m) and every float value
// checked to be finite, so a file that would give NaN logits is caught
// before anyone loads it.
#pragma once

#include "folio/gguf.h"

namespace folio::quant {

// An Error naming the first tensor and block with a non-finite scale or value.
Status check_tensor_blocks(const GgufTensorInfo& tensor);

}  // namespace folio::quant
