// How the KV cache stores K and V: IEEE half values (F16), or GGML Q8_0
// blocks (32 values share an fp16 scale d = amax / 127, each value an int8
// q = round(x / d); 34 bytes per 32 values), block by block along each
// head's row, so a head dimension must be a multiple of 32 for Q8_0.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "folio/model.h"

namespace folio {

enum class KvType : uint8_t { F16, Q8_0 };

inline constexpr uint32_t kKvQ8BlockValues = 32;
inline constexpr uint32_t kKvQ8BlockBytes = 34;  // fp16 d + 32 int8

// "f16", "q8_0": the names --kv-type and the settings file use.
inline std::string_view kv_type_name(KvType type) { return type == KvType::Q8_0 ? "q8_0" : "f16"; }

inline std::optional<KvType> parse_kv_type(std::string_view name) {
    if (name == "f16" || name == "F16") return KvType::F16;
    if (name == "q8_0" || name == "Q8_0") return KvType::Q8_0;
    return std::nullopt;
}

// Whether rows of `head_dim` values can be stored as `type`.
inline bool kv_type_fits(KvType type, uint64_t head_dim) {
    return type == KvType::F16 || (head_dim > 0 && head_dim % kKvQ8BlockValues == 0);
}

// Bytes that `n_values` values take (a multiple of 32 for Q8_0).
inline uint64_t kv_type_bytes(KvType type, uint64_t n_values) {
    return type == KvType::Q8_0 ? n_values / kKvQ8BlockValues * kKvQ8BlockBytes : n_values * 2;
}

// KV cache bytes of one token over all layers (K and V) when stored as `type`.
inline uint64_t kv_bytes_per_token(const ModelDescription& model, KvType type) {
    return kv_type_bytes(type, model.kv_bytes_per_token(1));
}

}  // namespace folio
