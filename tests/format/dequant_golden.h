// Reading tests/data/format/dequant_goldens.json (made by
// tools/make_gguf_goldens.py) and the hash it records.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "folio/tensor_type.h"

namespace dequant_golden {

inline nlohmann::json load() {
    std::ifstream in(folio_test::data_path("format/dequant_goldens.json"));
    return nlohmann::json::parse(in, nullptr, false);
}

inline std::optional<folio::TensorType> type_named(const std::string& name) {
    for (uint32_t id = 0; id < 64; ++id)
        if (auto t = folio::tensor_type_traits(id); t && t->name == name) return t->type;
    return std::nullopt;
}

inline std::vector<std::byte> from_hex(const std::string& hex) {
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    std::vector<std::byte> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::byte(uint8_t(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1])));
    return out;
}

inline uint32_t bits_of(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

// "weighted-sum-64": sum of bits_i * (2i + 1) * 0x9E3779B97F4A7C15 mod 2^64,
// fed in pieces; `first_index` is the index of values[0] in the tensor.
inline uint64_t weighted_sum_64(const float* values, size_t n, uint64_t first_index, uint64_t sum) {
    for (size_t i = 0; i < n; ++i)
        sum += uint64_t(bits_of(values[i])) * ((2 * (first_index + i) + 1) * 0x9E3779B97F4A7C15ull);
    return sum;
}

}  // namespace dequant_golden
