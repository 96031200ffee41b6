// Lookups and typed getters of a parsed GgufFile.
#include <cmath>
#include <limits>

#include "folio/gguf.h"
#include "format/gguf_layout.h"

namespace folio {

std::optional<TensorType> GgufTensorInfo::type() const {
    if (auto t = tensor_type_traits(ggml_type)) return t->type;
    return std::nullopt;
}

int64_t GgufTensorInfo::n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;  // the reader checked this cannot overflow
    return n;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = key_index_.find(std::string(key));
    return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view tensor_name) const {
    auto it = tensor_index_.find(std::string(tensor_name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Error GgufFile::key_error(std::string_view key, std::string_view problem) const {
    return make_error("gguf: " + name_ + ": key '" + std::string(key) + "' " + std::string(problem));
}

namespace {

std::string type_of(const GgufValue& v) {
    std::string name(gguf_value_type_name(v.type()));
    if (const GgufArray* a = v.as_array()) name += " of " + std::string(gguf_value_type_name(a->element_type()));
    return name;
}

template <typename T>
std::optional<T> integer_as(const GgufValue& v) {
    if constexpr (std::is_signed_v<T>) {
        auto i = v.as_i64();
        if (!i || *i < std::numeric_limits<T>::min() || *i > std::numeric_limits<T>::max()) return std::nullopt;
        return T(*i);
    } else {
        auto u = v.as_u64();
        if (!u || *u > std::numeric_limits<T>::max()) return std::nullopt;
        return T(*u);
    }
}

}  // namespace

#define FOLIO_GGUF_REQUIRE(key)                                   \
    const GgufValue* value = find(key);                           \
    if (!value) return key_error(key, "is missing")

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    if (auto v = integer_as<uint32_t>(*value)) return *v;
    return key_error(key, "should be an unsigned 32-bit integer, not " + type_of(*value) +
                              (value->is_integer() ? " out of range" : ""));
}

Result<uint64_t> GgufFile::get_u64(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    if (auto v = integer_as<uint64_t>(*value)) return *v;
    return key_error(key, "should be an unsigned integer, not " + type_of(*value));
}

Result<int32_t> GgufFile::get_i32(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    if (auto v = integer_as<int32_t>(*value)) return *v;
    return key_error(key, "should be a 32-bit integer, not " + type_of(*value));
}

Result<float> GgufFile::get_f32(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    if (auto d = value->as_f64()) return float(*d);
    if (auto i = value->as_i64()) return float(*i);
    if (auto u = value->as_u64()) return float(*u);
    return key_error(key, "should be a number, not " + type_of(*value));
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    if (auto b = value->as_bool()) return *b;
    return key_error(key, "should be a BOOL, not " + type_of(*value));
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    if (const std::string* s = value->as_string()) return *s;
    return key_error(key, "should be a STRING, not " + type_of(*value));
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    const GgufArray* a = value->as_array();
    if (a && (a->element_type() == GgufValueType::String || a->size() == 0)) return a->strings();
    return key_error(key, "should be an ARRAY of STRING, not " + type_of(*value));
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    const GgufArray* a = value->as_array();
    if (!a || (a->element_type() != GgufValueType::F32 && a->element_type() != GgufValueType::F64 && a->size() != 0))
        return key_error(key, "should be an ARRAY of FLOAT32, not " + type_of(*value));
    std::vector<float> out(a->size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = float(*a->element(i).as_f64());
    return out;
}

Result<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
    FOLIO_GGUF_REQUIRE(key);
    const GgufArray* a = value->as_array();
    const bool integers = a && a->element_type() != GgufValueType::String && a->element_type() != GgufValueType::Array &&
                          a->element_type() != GgufValueType::F32 && a->element_type() != GgufValueType::F64 &&
                          a->element_type() != GgufValueType::Bool;
    if (!integers && !(a && a->size() == 0))
        return key_error(key, "should be an ARRAY of INT32, not " + type_of(*value));
    std::vector<int32_t> out(a->size());
    for (size_t i = 0; i < out.size(); ++i) {
        auto v = integer_as<int32_t>(a->element(i));
        if (!v) return key_error(key, "element " + std::to_string(i) + " does not fit in INT32");
        out[i] = *v;
    }
    return out;
}

#undef FOLIO_GGUF_REQUIRE

Result<uint32_t> GgufFile::get_u32_or(std::string_view key, uint32_t fallback) const {
    return has(key) ? get_u32(key) : Result<uint32_t>(fallback);
}
Result<float> GgufFile::get_f32_or(std::string_view key, float fallback) const {
    return has(key) ? get_f32(key) : Result<float>(fallback);
}
Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
    return has(key) ? get_bool(key) : Result<bool>(fallback);
}
Result<std::string> GgufFile::get_string_or(std::string_view key, std::string fallback) const {
    return has(key) ? get_string(key) : Result<std::string>(std::move(fallback));
}

}  // namespace folio
