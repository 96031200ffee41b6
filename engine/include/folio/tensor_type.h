// The tensor element types Folio reads and writes, with GGML's numbering
// (the ids stored in GGUF files) and their block geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace folio {

enum class TensorType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    BF16 = 30,
};

struct TensorTypeTraits {
    TensorType type;
    std::string_view name;   // "Q4_K", as GGUF tools print it
    uint32_t block_elems;    // elements per block (1 for plain floats)
    uint32_t block_bytes;    // bytes per block
};

// Traits for a GGML type id; nullopt for ids Folio does not support.
std::optional<TensorTypeTraits> tensor_type_traits(uint32_t ggml_type_id);
inline TensorTypeTraits traits(TensorType t) { return *tensor_type_traits(static_cast<uint32_t>(t)); }

// Name of any GGML type id, including ones Folio cannot read ("IQ2_XS"), for messages.
std::string_view ggml_type_name(uint32_t ggml_type_id);

}  // namespace folio
