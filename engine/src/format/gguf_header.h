// The header part of a GGUF v3 file (magic, metadata, tensor infos, padding
// up to the data section), shared by GgufWriter and GgufStreamWriter.
#pragma once

#include <optional>

#include "folio/gguf.h"

namespace folio {

// The bytes of one tensor's data; nullopt when its shape cannot hold its type.
std::optional<uint64_t> gguf_tensor_header_nbytes(const GgufTensorHeader& tensor);

Result<std::vector<std::byte>> encode_gguf_header(uint32_t alignment, const std::vector<GgufKeyValue>& metadata,
                                                  const std::vector<GgufTensorHeader>& tensors);

}  // namespace folio
