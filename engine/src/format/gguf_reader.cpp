// The GGUF parser. Every count and length is checked against the bytes that
// remain before anything is allocated for it, so a hostile header cannot ask
// for more memory than the file's own size justifies.
#include <algorithm>
#include <limits>
#include <string>

#include "folio/gguf.h"
#include "format/ggml_type_table.h"
#include "format/gguf_layout.h"

namespace folio {

namespace {

constexpr size_t kMaxKeyBytes = 65535;     // the GGUF spec's limit for keys
constexpr size_t kMaxNameBytes = 65535;    // tensor names (GGML itself stops at 64)
constexpr int kMaxArrayDepth = 8;          // nested arrays; real files use none
constexpr size_t kMinKeyValueBytes = 8 + 1 + 4 + 1;  // key length, 1-byte key, type, 1-byte value
constexpr size_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, one dim, type, offset

std::string quoted(std::string_view s) {
    constexpr size_t kShown = 80;
    std::string out = "'";
    for (char c : s.substr(0, kShown)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
    if (s.size() > kShown) out += "...";
    return out + "'";
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

class GgufParser {
public:
    GgufParser(std::span<const std::byte> bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}

    Result<GgufFile> run() {
        GgufFile file;
        file.name_ = name_;
        file.bytes_ = bytes_;
        if (!parse_header(file) || !parse_metadata(file) || !parse_alignment(file) || !parse_tensor_infos(file) ||
            !place_tensor_data(file))
            return make_error(std::move(error_));
        return file;
    }

private:
    size_t remaining() const { return bytes_.size() - pos_; }

    bool fail(size_t offset, const std::string& problem) {
        error_ = "gguf: " + name_ + ": " + problem + " (at byte " + std::to_string(offset) + ")";
        return false;
    }

    bool need(uint64_t n, std::string_view what) {
        if (n <= remaining()) return true;
        return fail(pos_, "file is truncated: " + std::string(what) + " needs " + std::to_string(n) +
                              " bytes but only " + std::to_string(remaining()) + " remain of " +
                              std::to_string(bytes_.size()));
    }

    bool read_int(uint64_t& out, size_t width, std::string_view what) {
        if (!need(width, what)) return false;
        out = gguf_load_le(bytes_.data() + pos_, width);
        pos_ += width;
        return true;
    }
    bool read_u32(uint32_t& out, std::string_view what) {
        uint64_t v = 0;
        if (!read_int(v, 4, what)) return false;
        out = uint32_t(v);
        return true;
    }
    bool read_u64(uint64_t& out, std::string_view what) { return read_int(out, 8, what); }

    bool read_string(std::string& out, std::string_view what, size_t max_bytes = std::numeric_limits<size_t>::max()) {
        const size_t at = pos_;
        uint64_t length = 0;
        if (!read_u64(length, std::string(what) + " length")) return false;
        if (length > max_bytes)
            return fail(at, std::string(what) + " is " + std::to_string(length) + " bytes long, more than the " +
                                std::to_string(max_bytes) + " allowed");
        if (!need(length, std::string(what) + " of " + std::to_string(length) + " bytes")) return false;
        out.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), size_t(length));
        pos_ += size_t(length);
        return true;
    }

    bool read_value_type(GgufValueType& out, std::string_view what) {
        const size_t at = pos_;
        uint32_t id = 0;
        if (!read_u32(id, what)) return false;
        if (!gguf_valid_value_type(id)) return fail(at, std::string(what) + " " + std::to_string(id) + " is not a GGUF value type (0..12)");
        out = static_cast<GgufValueType>(id);
        return true;
    }

    bool check_bools(const std::byte* p, size_t n, std::string_view what) {
        for (size_t i = 0; i < n; ++i)
            if (std::to_integer<uint8_t>(p[i]) > 1)
                return fail(size_t(p - bytes_.data()) + i, std::string(what) + ": bool byte " +
                                                               std::to_string(std::to_integer<int>(p[i])) + " is neither 0 nor 1");
        return true;
    }

    bool read_value(GgufValueType type, GgufValue& out, const std::string& what, int depth) {
        if (type == GgufValueType::String) {
            std::string s;
            if (!read_string(s, what)) return false;
            out = GgufValue::string(std::move(s));
            return true;
        }
        if (type == GgufValueType::Array) {
            GgufArray a;
            if (!read_array(a, what, depth)) return false;
            out = GgufValue::array(std::move(a));
            return true;
        }
        const size_t width = gguf_fixed_size(type);
        if (!need(width, what)) return false;
        if (type == GgufValueType::Bool && !check_bools(bytes_.data() + pos_, 1, what)) return false;
        out = gguf_decode_scalar(type, bytes_.data() + pos_);
        pos_ += width;
        return true;
    }

    bool read_array(GgufArray& out, const std::string& what, int depth) {
        const size_t at = pos_;
        if (depth >= kMaxArrayDepth)
            return fail(at, what + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
        GgufValueType element_type{};
        uint64_t count = 0;
        if (!read_value_type(element_type, what + " element type") || !read_u64(count, what + " element count"))
            return false;
        // The smallest encoding of one element bounds the count before any allocation.
        const size_t min_element = element_type == GgufValueType::String  ? 8
                                   : element_type == GgufValueType::Array ? 12
                                                                          : gguf_fixed_size(element_type);
        if (count > remaining() / min_element)
            return fail(at, what + " claims " + std::to_string(count) + " elements of type " +
                                std::string(gguf_value_type_name(element_type)) + ", more than the " +
                                std::to_string(remaining()) + " remaining bytes can hold");
        if (element_type == GgufValueType::String) {
            std::vector<std::string> values(static_cast<size_t>(count));
            for (size_t i = 0; i < values.size(); ++i)
                if (!read_string(values[i], what + "[" + std::to_string(i) + "]")) return false;
            out = GgufArray::of_strings(std::move(values));
        } else if (element_type == GgufValueType::Array) {
            std::vector<GgufArray> values(static_cast<size_t>(count));
            for (size_t i = 0; i < values.size(); ++i)
                if (!read_array(values[i], what + "[" + std::to_string(i) + "]", depth + 1)) return false;
            out = GgufArray::of_arrays(std::move(values));
        } else {
            const size_t n = size_t(count) * min_element;
            const std::byte* p = bytes_.data() + pos_;
            if (element_type == GgufValueType::Bool && !check_bools(p, n, what)) return false;
            out = GgufArray::of_raw(element_type, std::vector<std::byte>(p, p + n));
            pos_ += n;
        }
        return true;
    }

    bool parse_header(GgufFile& file) {
        uint32_t magic = 0;
        if (!need(4, "magic 'GGUF'")) return false;
        if (!read_u32(magic, "magic")) return false;
        if (magic != kGgufMagic) return fail(0, "not a GGUF file (the first 4 bytes are not 'GGUF')");
        if (!read_u32(file.version_, "version")) return false;
        if (file.version_ == 1)
            return fail(4, "GGUF version 1 is not supported (only 2 and 3); re-convert the model with a current llama.cpp");
        if (file.version_ != 2 && file.version_ != 3) {
            const bool swapped = file.version_ == 0x02000000 || file.version_ == 0x03000000;
            return fail(4, "unsupported GGUF version " + std::to_string(file.version_) +
                               (swapped ? " (a big-endian file; only little-endian GGUF is supported)" : " (only 2 and 3)"));
        }
        return read_u64(tensor_count_, "tensor count") && read_u64(kv_count_, "metadata key count");
    }

    bool parse_metadata(GgufFile& file) {
        if (kv_count_ > remaining() / kMinKeyValueBytes)
            return fail(16, "metadata key count " + std::to_string(kv_count_) + " is more than the " +
                                std::to_string(remaining()) + " remaining bytes can hold");
        file.metadata_.reserve(size_t(kv_count_));
        for (uint64_t i = 0; i < kv_count_; ++i) {
            const size_t at = pos_;
            const std::string what = "metadata entry " + std::to_string(i);
            GgufKeyValue kv;
            if (!read_string(kv.key, what + " key", kMaxKeyBytes)) return false;
            if (kv.key.empty()) return fail(at, what + " has an empty key");
            GgufValueType type{};
            if (!read_value_type(type, "type of key " + quoted(kv.key))) return false;
            if (!read_value(type, kv.value, "value of key " + quoted(kv.key), 0)) return false;
            if (!file.key_index_.emplace(kv.key, file.metadata_.size()).second)
                return fail(at, "duplicate metadata key " + quoted(kv.key));
            file.metadata_.push_back(std::move(kv));
        }
        return true;
    }

    bool parse_alignment(GgufFile& file) {
        const GgufValue* value = file.find("general.alignment");
        if (!value) return true;
        const std::optional<uint64_t> alignment = value->as_u64();
        if (!alignment || value->type() != GgufValueType::U32)
            return fail(0, "general.alignment must be a UINT32, not " + std::string(gguf_value_type_name(value->type())));
        if (!is_power_of_two(*alignment))
            return fail(0, "general.alignment " + std::to_string(*alignment) + " is not a non-zero power of two");
        file.alignment_ = uint32_t(*alignment);
        return true;
    }

    bool parse_tensor_infos(GgufFile& file) {
        if (tensor_count_ > remaining() / kMinTensorInfoBytes)
            return fail(pos_, "tensor count " + std::to_string(tensor_count_) + " is more than the " +
                                  std::to_string(remaining()) + " remaining bytes can hold");
        file.tensors_.reserve(size_t(tensor_count_));
        for (uint64_t i = 0; i < tensor_count_; ++i) {
            const size_t at = pos_;
            GgufTensorInfo info;
            if (!read_string(info.name, "tensor " + std::to_string(i) + " name", kMaxNameBytes)) return false;
            if (info.name.empty()) return fail(at, "tensor " + std::to_string(i) + " has an empty name");
            const std::string what = "tensor " + quoted(info.name);
            if (!read_shape(info, what)) return false;
            const size_t type_at = pos_;
            if (!read_u32(info.ggml_type, what + " type")) return false;
            const GgmlTypeInfo* type = ggml_type_info(info.ggml_type);
            if (!type) return fail(type_at, what + " has unknown GGML type id " + std::to_string(info.ggml_type));
            if (uint64_t(info.shape[0]) % type->block_elems != 0)
                return fail(type_at, what + " row of " + std::to_string(info.shape[0]) + " elements is not a multiple of the " +
                                         std::string(type->name) + " block of " + std::to_string(type->block_elems));
            const uint64_t blocks = uint64_t(info.n_elements()) / type->block_elems;
            if (blocks > std::numeric_limits<uint64_t>::max() / type->block_bytes)
                return fail(type_at, what + " byte size overflows");
            info.nbytes = blocks * type->block_bytes;
            const size_t offset_at = pos_;
            if (!read_u64(info.offset, what + " data offset")) return false;
            if (info.offset % file.alignment_ != 0)
                return fail(offset_at, what + " data offset " + std::to_string(info.offset) + " is not a multiple of the alignment " +
                                           std::to_string(file.alignment_));
            if (!file.tensor_index_.emplace(info.name, file.tensors_.size()).second)
                return fail(at, "duplicate tensor name " + quoted(info.name));
            file.tensors_.push_back(std::move(info));
        }
        return true;
    }

    bool read_shape(GgufTensorInfo& info, const std::string& what) {
        const size_t at = pos_;
        uint32_t n_dims = 0;
        if (!read_u32(n_dims, what + " number of dimensions")) return false;
        if (n_dims == 0 || n_dims > uint32_t(kGgufMaxDims))
            return fail(at, what + " has " + std::to_string(n_dims) + " dimensions (1 to " + std::to_string(kGgufMaxDims) + " allowed)");
        uint64_t product = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const size_t dim_at = pos_;
            uint64_t dim = 0;
            if (!read_u64(dim, what + " dimension " + std::to_string(d))) return false;
            if (dim == 0) return fail(dim_at, what + " dimension " + std::to_string(d) + " is zero");
            if (dim > uint64_t(std::numeric_limits<int64_t>::max()) / product)
                return fail(dim_at, what + " element count overflows 63 bits at dimension " + std::to_string(d));
            product *= dim;
            info.shape.push_back(int64_t(dim));
        }
        return true;
    }

    bool place_tensor_data(GgufFile& file) {
        const uint64_t align = file.alignment_;
        const uint64_t end_of_infos = pos_;
        file.data_offset_ = (end_of_infos + align - 1) / align * align;  // no overflow: pos_ < 2^63
        const uint64_t file_size = bytes_.size();
        for (GgufTensorInfo& info : file.tensors_) {
            const uint64_t start = file.data_offset_ + info.offset;  // both < 2^64 / 2 in practice; checked next
            const bool overflow = info.offset > std::numeric_limits<uint64_t>::max() - file.data_offset_ ||
                                  info.nbytes > std::numeric_limits<uint64_t>::max() - start;
            if (overflow || start + info.nbytes > file_size)
                return fail(size_t(end_of_infos),
                            "tensor " + quoted(info.name) + " data [offset " + std::to_string(overflow ? info.offset : start) +
                                ", " + std::to_string(info.nbytes) + " bytes] runs past end of file (" +
                                std::to_string(file_size) + " bytes)");
            info.data = bytes_.data() + start;
        }
        // Tensors must not share bytes: a writer never produces that, and a
        // quantizer rewriting one would corrupt the other.
        std::vector<const GgufTensorInfo*> by_offset;
        by_offset.reserve(file.tensors_.size());
        for (const GgufTensorInfo& info : file.tensors_) by_offset.push_back(&info);
        std::sort(by_offset.begin(), by_offset.end(),
                  [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
        for (size_t i = 1; i < by_offset.size(); ++i) {
            const GgufTensorInfo& prev = *by_offset[i - 1];
            const GgufTensorInfo& next = *by_offset[i];
            if (prev.offset + prev.nbytes > next.offset)
                return fail(size_t(file.data_offset_ + next.offset),
                            "tensor " + quoted(next.name) + " data overlaps tensor " + quoted(prev.name));
        }
        return true;
    }

    std::span<const std::byte> bytes_;
    std::string name_;
    size_t pos_ = 0;
    uint64_t tensor_count_ = 0;
    uint64_t kv_count_ = 0;
    std::string error_;
};

Result<GgufFile> GgufFile::parse(std::span<const std::byte> bytes, std::string name) {
    return GgufParser(bytes, std::move(name)).run();
}

Result<GgufFile> GgufFile::open(const std::string& path) {
    auto mapping = MappedFile::open(path);
    if (!mapping) return make_error("gguf: " + mapping.error().message);
    auto file = parse(std::span<const std::byte>((*mapping)->data(), (*mapping)->size()), path);
    if (!file) return file.error();
    file->mapping_ = std::move(*mapping);
    return file;
}

}  // namespace folio
