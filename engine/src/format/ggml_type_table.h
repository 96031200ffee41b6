// Block geometry of every GGML tensor type id known to GGUF files, including
// the ones Folio cannot compute with: the GGUF reader needs the byte size of
// any tensor to validate where its data lies.
#pragma once

#include <cstdint>
#include <string_view>

namespace folio {

struct GgmlTypeInfo {
    uint32_t id;
    std::string_view name;
    uint32_t block_elems;
    uint32_t block_bytes;
    bool supported;  // Folio can dequantize / compute with it (see tensor_type.h)
};

// nullptr for ids that no GGML version has defined.
const GgmlTypeInfo* ggml_type_info(uint32_t ggml_type_id);

}  // namespace folio
