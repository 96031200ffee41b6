// GgufValue and GgufArray: the metadata values of a GGUF file.
#include <cstring>
#include <limits>

#include "folio/gguf.h"
#include "format/gguf_layout.h"

namespace folio {

std::string_view gguf_value_type_name(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8: return "UINT8";
        case GgufValueType::I8: return "INT8";
        case GgufValueType::U16: return "UINT16";
        case GgufValueType::I16: return "INT16";
        case GgufValueType::U32: return "UINT32";
        case GgufValueType::I32: return "INT32";
        case GgufValueType::F32: return "FLOAT32";
        case GgufValueType::Bool: return "BOOL";
        case GgufValueType::String: return "STRING";
        case GgufValueType::Array: return "ARRAY";
        case GgufValueType::U64: return "UINT64";
        case GgufValueType::I64: return "INT64";
        case GgufValueType::F64: return "FLOAT64";
    }
    return "UNKNOWN";
}

size_t gguf_fixed_size(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
        case GgufValueType::U16: case GgufValueType::I16: return 2;
        case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
        case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
        case GgufValueType::String: case GgufValueType::Array: return 0;
    }
    return 0;
}

bool gguf_valid_value_type(uint32_t id) { return id <= static_cast<uint32_t>(GgufValueType::F64); }

uint64_t gguf_load_le(const std::byte* p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(std::to_integer<uint8_t>(p[i])) << (8 * i);
    return v;
}

void gguf_store_le(std::byte* p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = std::byte(uint8_t(v >> (8 * i)));
}

GgufValue gguf_decode_scalar(GgufValueType type, const std::byte* p) {
    const uint64_t bits = gguf_load_le(p, gguf_fixed_size(type));
    switch (type) {
        case GgufValueType::U8: return GgufValue::u8(uint8_t(bits));
        case GgufValueType::I8: return GgufValue::i8(int8_t(uint8_t(bits)));
        case GgufValueType::U16: return GgufValue::u16(uint16_t(bits));
        case GgufValueType::I16: return GgufValue::i16(int16_t(uint16_t(bits)));
        case GgufValueType::U32: return GgufValue::u32(uint32_t(bits));
        case GgufValueType::I32: return GgufValue::i32(int32_t(uint32_t(bits)));
        case GgufValueType::U64: return GgufValue::u64(bits);
        case GgufValueType::I64: return GgufValue::i64(int64_t(bits));
        case GgufValueType::Bool: return GgufValue::boolean(bits != 0);
        case GgufValueType::F32: {
            const uint32_t b32 = uint32_t(bits);
            float f;
            std::memcpy(&f, &b32, 4);
            return GgufValue::f32(f);
        }
        case GgufValueType::F64: {
            double d;
            std::memcpy(&d, &bits, 8);
            return GgufValue::f64(d);
        }
        case GgufValueType::String: case GgufValueType::Array: break;
    }
    return {};
}

// ---- GgufArray -------------------------------------------------------------

size_t GgufArray::size() const {
    if (element_type_ == GgufValueType::String) return strings_.size();
    if (element_type_ == GgufValueType::Array) return arrays_.size();
    return raw_.size() / gguf_fixed_size(element_type_);
}

GgufValue GgufArray::element(size_t index) const {
    if (element_type_ == GgufValueType::String) return GgufValue::string(strings_.at(index));
    if (element_type_ == GgufValueType::Array) return GgufValue::array(arrays_.at(index));
    const size_t width = gguf_fixed_size(element_type_);
    if (index >= size()) return {};
    return gguf_decode_scalar(element_type_, raw_.data() + index * width);
}

GgufArray GgufArray::of_strings(std::vector<std::string> values) {
    GgufArray a;
    a.element_type_ = GgufValueType::String;
    a.strings_ = std::move(values);
    return a;
}

GgufArray GgufArray::of_arrays(std::vector<GgufArray> values) {
    GgufArray a;
    a.element_type_ = GgufValueType::Array;
    a.arrays_ = std::move(values);
    return a;
}

GgufArray GgufArray::of_raw(GgufValueType element_type, std::vector<std::byte> raw) {
    GgufArray a;
    a.element_type_ = element_type;
    const size_t width = gguf_fixed_size(element_type);
    if (width == 0) {
        a.element_type_ = GgufValueType::U8;  // misuse: keep the bytes, as u8
    } else {
        raw.resize(raw.size() / width * width);
    }
    a.raw_ = std::move(raw);
    return a;
}

namespace {
template <typename T>
std::vector<std::byte> pack(const std::vector<T>& values) {
    std::vector<std::byte> raw(values.size() * sizeof(T));
    for (size_t i = 0; i < values.size(); ++i) {
        uint64_t bits = 0;
        std::memcpy(&bits, &values[i], sizeof(T));  // little-endian host
        gguf_store_le(raw.data() + i * sizeof(T), bits, sizeof(T));
    }
    return raw;
}
}  // namespace

GgufArray GgufArray::of_f32(const std::vector<float>& values) { return of_raw(GgufValueType::F32, pack(values)); }
GgufArray GgufArray::of_i32(const std::vector<int32_t>& values) { return of_raw(GgufValueType::I32, pack(values)); }
GgufArray GgufArray::of_u32(const std::vector<uint32_t>& values) { return of_raw(GgufValueType::U32, pack(values)); }

// ---- GgufValue -------------------------------------------------------------

bool GgufValue::is_integer() const {
    return std::holds_alternative<uint64_t>(value_) || std::holds_alternative<int64_t>(value_);
}

std::optional<uint64_t> GgufValue::as_u64() const {
    if (const auto* u = std::get_if<uint64_t>(&value_)) return *u;
    if (const auto* i = std::get_if<int64_t>(&value_); i && *i >= 0) return uint64_t(*i);
    return std::nullopt;
}

std::optional<int64_t> GgufValue::as_i64() const {
    if (const auto* i = std::get_if<int64_t>(&value_)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&value_);
        u && *u <= uint64_t(std::numeric_limits<int64_t>::max()))
        return int64_t(*u);
    return std::nullopt;
}

std::optional<double> GgufValue::as_f64() const {
    if (const auto* d = std::get_if<double>(&value_)) return *d;
    return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
    if (const auto* b = std::get_if<bool>(&value_)) return *b;
    return std::nullopt;
}

const std::string* GgufValue::as_string() const { return std::get_if<std::string>(&value_); }
const GgufArray* GgufValue::as_array() const { return std::get_if<GgufArray>(&value_); }

}  // namespace folio
