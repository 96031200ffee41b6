// How the KV cache stores K and V, each head's row of head_dim values cut
// into blocks along the row:
//   f16   IEEE half values;
//   q8_0  GGML Q8_0 blocks: 32 values share an fp16 scale d = amax / 127,
//         each value an int8 q = round(x / d) (34 bytes per 32 values);
//   fp8   OCP MXFP8 blocks: 32 values share a power-of-two scale 2^(e - 127)
//         (an E8M0 byte, the smallest that puts amax / scale at or under
//         448), each value an FP8 E4M3 byte of x / scale rounded to nearest
//         even (33 bytes per 32 values: 1.94x the tokens of f16 in the
//         same memory). Read back as half(e4m3 * scale): attention over an
//         fp8 cache is the f16 attention over those values.
// A head dimension must be a multiple of the block for q8_0 and fp8.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "folio/model.h"

namespace folio {

enum class KvType : uint8_t { F16, Q8_0, Fp8 };

inline constexpr uint32_t kKvQ8BlockValues = 32;
inline constexpr uint32_t kKvQ8BlockBytes = 34;   // fp16 d + 32 int8
inline constexpr uint32_t kKvFp8BlockValues = 32;
inline constexpr uint32_t kKvFp8BlockBytes = 33;  // E8M0 scale + 32 E4M3

inline constexpr KvType kKvTypes[] = {KvType::F16, KvType::Q8_0, KvType::Fp8};

// "f16", "q8_0", "fp8": the names --kv-type and the settings file use.
inline std::string_view kv_type_name(KvType type) {
    switch (type) {
        case KvType::Q8_0: return "q8_0";
        case KvType::Fp8: return "fp8";
        default: return "f16";
    }
}

inline std::optional<KvType> parse_kv_type(std::string_view name) {
    for (const KvType type : kKvTypes)
        if (name == kv_type_name(type)) return type;
    if (name == "F16") return KvType::F16;
    if (name == "Q8_0") return KvType::Q8_0;
    if (name == "FP8" || name == "fp8_e4m3") return KvType::Fp8;
    return std::nullopt;
}

// Values and bytes of one storage block of `type`.
inline uint32_t kv_type_block_values(KvType type) {
    return type == KvType::Q8_0 ? kKvQ8BlockValues : type == KvType::Fp8 ? kKvFp8BlockValues : 1;
}
inline uint32_t kv_type_block_bytes(KvType type) {
    return type == KvType::Q8_0 ? kKvQ8BlockBytes : type == KvType::Fp8 ? kKvFp8BlockBytes : 2;
}

// Whether rows of `head_dim` values can be stored as `type`.
inline bool kv_type_fits(KvType type, uint64_t head_dim) {
    return head_dim > 0 && head_dim % kv_type_block_values(type) == 0;
}

// Bytes that `n_values` values take (a multiple of the type's block).
inline uint64_t kv_type_bytes(KvType type, uint64_t n_values) {
    return n_values / kv_type_block_values(type) * kv_type_block_bytes(type);
}

// KV cache bytes of one token over all layers (K and V) when stored as `type`.
inline uint64_t kv_bytes_per_token(const ModelDescription& model, KvType type) {
    return kv_type_bytes(type, model.kv_bytes_per_token(1));
}

}  // namespace folio
