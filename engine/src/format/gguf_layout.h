// Byte-level helpers shared by the GGUF reader and writer: element sizes and
// little-endian loads and stores, independent of the host's byte order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "folio/gguf.h"

namespace folio {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;

// Bytes of one element of a fixed-size type; 0 for String and Array.
size_t gguf_fixed_size(GgufValueType type);
bool gguf_valid_value_type(uint32_t id);
uint64_t gguf_load_le(const std::byte* p, size_t n);
void gguf_store_le(std::byte* p, uint64_t v, size_t n);
// Decodes one fixed-size value stored at p.
GgufValue gguf_decode_scalar(GgufValueType type, const std::byte* p);

}  // namespace folio
