// GGUF files (versions 2 and 3): GgufFile reads one, validating every count,
// length, type, shape and offset before use, so a truncated or hostile file
// is an Error naming the problem and its byte offset; GgufWriter builds one
// (version 3) from metadata and tensors in memory; GgufStreamWriter writes
// one tensor at a time (the quantizer's output).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "folio/error.h"
#include "folio/mapped_file.h"
#include "folio/tensor_type.h"

namespace folio {

// The metadata value types, numbered as in the file.
enum class GgufValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6,
    Bool = 7, String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType type);  // "UINT32", as gguf-py prints it

class GgufValue;

// A metadata array. Fixed-size elements stay packed as in the file (little
// endian) so a 262,144-entry score table costs its size, not 48 bytes an entry.
class GgufArray {
public:
    GgufValueType element_type() const { return element_type_; }
    size_t size() const;
    GgufValue element(size_t index) const;  // index < size()

    // Typed views; empty when the element type differs.
    const std::vector<std::string>& strings() const { return strings_; }
    const std::vector<GgufArray>& arrays() const { return arrays_; }
    std::span<const std::byte> raw() const { return raw_; }  // fixed-size elements

    static GgufArray of_strings(std::vector<std::string> values);
    static GgufArray of_arrays(std::vector<GgufArray> values);  // each with its own element type
    // element_type is fixed-size; raw holds size * element size bytes, little endian.
    static GgufArray of_raw(GgufValueType element_type, std::vector<std::byte> raw);
    static GgufArray of_f32(const std::vector<float>& values);
    static GgufArray of_i32(const std::vector<int32_t>& values);
    static GgufArray of_u32(const std::vector<uint32_t>& values);

private:
    GgufValueType element_type_ = GgufValueType::U8;
    std::vector<std::byte> raw_;
    std::vector<std::string> strings_;
    std::vector<GgufArray> arrays_;
};

// One metadata value. Integers are widened to 64 bits and floats to double
// (both exact); type() keeps the width stored in the file.
class GgufValue {
public:
    GgufValue() = default;
    static GgufValue u8(uint8_t v) { return {GgufValueType::U8, uint64_t{v}}; }
    static GgufValue i8(int8_t v) { return {GgufValueType::I8, int64_t{v}}; }
    static GgufValue u16(uint16_t v) { return {GgufValueType::U16, uint64_t{v}}; }
    static GgufValue i16(int16_t v) { return {GgufValueType::I16, int64_t{v}}; }
    static GgufValue u32(uint32_t v) { return {GgufValueType::U32, uint64_t{v}}; }
    static GgufValue i32(int32_t v) { return {GgufValueType::I32, int64_t{v}}; }
    static GgufValue u64(uint64_t v) { return {GgufValueType::U64, v}; }
    static GgufValue i64(int64_t v) { return {GgufValueType::I64, v}; }
    static GgufValue f32(float v) { return {GgufValueType::F32, double{v}}; }
    static GgufValue f64(double v) { return {GgufValueType::F64, v}; }
    static GgufValue boolean(bool v) { return {GgufValueType::Bool, v}; }
    static GgufValue string(std::string v) { return {GgufValueType::String, std::move(v)}; }
    static GgufValue array(GgufArray v) { return {GgufValueType::Array, std::move(v)}; }

    GgufValueType type() const { return type_; }
    bool is_integer() const;
    // Any integer type whose value fits; nullopt otherwise.
    std::optional<uint64_t> as_u64() const;
    std::optional<int64_t> as_i64() const;
    std::optional<double> as_f64() const;  // F32 or F64
    std::optional<bool> as_bool() const;
    const std::string* as_string() const;
    const GgufArray* as_array() const;

private:
    using Storage = std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string, GgufArray>;
    GgufValue(GgufValueType type, Storage value) : type_(type), value_(std::move(value)) {}
    GgufValueType type_ = GgufValueType::U8;
    Storage value_;
};

struct GgufKeyValue {
    std::string key;
    GgufValue value;
};

// A tensor as described in the file. `ggml_type` may be a type Folio cannot
// compute with (type() is then nullopt); its bytes are still validated.
struct GgufTensorInfo {
    std::string name;
    uint32_t ggml_type = 0;
    std::vector<int64_t> shape;     // GGML order: shape[0] is contiguous
    uint64_t offset = 0;            // relative to the data section
    uint64_t nbytes = 0;
    const std::byte* data = nullptr;  // into the file's bytes

    std::optional<TensorType> type() const;
    int64_t n_elements() const;
};

class GgufFile {
public:
    // Maps the file and parses it; the mapping lives as long as the GgufFile.
    static Result<GgufFile> open(const std::string& path);
    // Parses bytes that the caller keeps alive; `name` is used in messages.
    static Result<GgufFile> parse(std::span<const std::byte> bytes, std::string name);

    const std::string& name() const { return name_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
    uint64_t file_size() const { return bytes_.size(); }
    const std::shared_ptr<const MappedFile>& mapping() const { return mapping_; }  // null after parse()

    const std::vector<GgufKeyValue>& metadata() const { return metadata_; }  // in file order
    const GgufValue* find(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // in file order
    const GgufTensorInfo* find_tensor(std::string_view tensor_name) const;

    // Typed getters: missing key or a value of another type (or out of range)
    // is an Error naming the key. Integer getters take any integer type that fits.
    Result<uint32_t> get_u32(std::string_view key) const;
    Result<uint64_t> get_u64(std::string_view key) const;
    Result<int32_t> get_i32(std::string_view key) const;
    Result<float> get_f32(std::string_view key) const;  // F32, F64 (rounded) or integer
    Result<bool> get_bool(std::string_view key) const;
    Result<std::string> get_string(std::string_view key) const;
    Result<std::vector<std::string>> get_string_array(std::string_view key) const;
    Result<std::vector<float>> get_f32_array(std::string_view key) const;
    Result<std::vector<int32_t>> get_i32_array(std::string_view key) const;
    // The same, with `fallback` when the key is absent (a wrong type is still an Error).
    Result<uint32_t> get_u32_or(std::string_view key, uint32_t fallback) const;
    Result<float> get_f32_or(std::string_view key, float fallback) const;
    Result<bool> get_bool_or(std::string_view key, bool fallback) const;
    Result<std::string> get_string_or(std::string_view key, std::string fallback) const;

private:
    friend class GgufParser;
    Error key_error(std::string_view key, std::string_view problem) const;

    std::string name_;
    std::shared_ptr<const MappedFile> mapping_;
    std::span<const std::byte> bytes_;
    uint32_t version_ = 0;
    uint32_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<GgufKeyValue> metadata_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_map<std::string, size_t> key_index_;
    std::unordered_map<std::string, size_t> tensor_index_;
};

// Builds a GGUF v3 file. Keys and tensors keep the order they were added in;
// general.alignment is written when it is not the default 32.
class GgufWriter {
public:
    explicit GgufWriter(uint32_t alignment = 32);

    // Adds or replaces a key (a replaced key keeps its position).
    void set(std::string key, GgufValue value);
    // `data` must stay valid until write(); it holds exactly the bytes of
    // `shape` (GGML order) in `type`.
    Status add_tensor(std::string name, TensorType type, std::vector<int64_t> shape,
                      std::span<const std::byte> data);
    // The same, owning its bytes.
    Status add_tensor(std::string name, TensorType type, std::vector<int64_t> shape,
                      std::vector<std::byte> data);

    // Writes "<path>.tmp", then renames it over `path`, so a reader never sees
    // half a file.
    Status write(const std::string& path) const;
    // The whole file in memory (small files, tests).
    Result<std::vector<std::byte>> to_bytes() const;

private:
    struct PendingTensor {
        std::string name;
        TensorType type;
        std::vector<int64_t> shape;
        std::span<const std::byte> data;
        std::shared_ptr<const std::vector<std::byte>> owned;
    };
    Status check_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& shape,
                        size_t nbytes) const;

    uint32_t alignment_;
    std::vector<GgufKeyValue> metadata_;
    std::vector<PendingTensor> tensors_;
};


// One tensor of a GgufStreamWriter: what its info in the header says; its
// bytes come later.
struct GgufTensorHeader {
    std::string name;
    TensorType type = TensorType::F32;
    std::vector<int64_t> shape;  // GGML order
};

// Writes a GGUF v3 file one tensor at a time, for outputs larger than memory
// (the quantizer streams tensor by tensor). All sizes are known up front, so
// the header is written first and file_size() is exact before any data.
// The bytes go to "<path>.tmp" beside the target; commit() flushes and fsyncs
// it and renames it over `path`. Until then nothing exists under `path`:
// abort(), a failed write or destruction without commit() removes the
// temporary file (a crash can leave "<path>.tmp", never a partial `path`).
class GgufStreamWriter {
public:
    static Result<std::unique_ptr<GgufStreamWriter>> create(const std::string& path,
                                                            const std::vector<GgufKeyValue>& metadata,
                                                            std::vector<GgufTensorHeader> tensors,
                                                            uint32_t alignment = 32);
    // The size the finished file will have, without creating anything.
    static Result<uint64_t> planned_size(const std::vector<GgufKeyValue>& metadata,
                                         const std::vector<GgufTensorHeader>& tensors, uint32_t alignment = 32);
    ~GgufStreamWriter();
    GgufStreamWriter(const GgufStreamWriter&) = delete;
    GgufStreamWriter& operator=(const GgufStreamWriter&) = delete;

    uint64_t file_size() const { return file_size_; }
    size_t tensors_written() const { return next_; }
    const std::string& temp_path() const { return temp_path_; }

    // The next tensor's bytes, in header order; exactly its size. An error
    // (e.g. the disk is full) removes the temporary file.
    Status write_next(std::span<const std::byte> data);
    Status commit();
    void abort();

private:
    GgufStreamWriter() = default;
    Status fail(const std::string& what, int err);

    std::string path_;
    std::string temp_path_;
    std::FILE* file_ = nullptr;
    uint32_t alignment_ = 32;
    std::vector<GgufTensorHeader> tensors_;
    std::vector<uint64_t> nbytes_;
    size_t next_ = 0;
    uint64_t written_ = 0;
    uint64_t file_size_ = 0;
};

}  // namespace folio
