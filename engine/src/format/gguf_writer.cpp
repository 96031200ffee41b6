// GgufWriter: lays out a GGUF v3 file (header, metadata, tensor infos,
// padding, aligned tensor data) and writes it atomically.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "folio/gguf.h"
#include "format/durable_file.h"
#include "format/gguf_layout.h"
#include "format/gguf_header.h"

namespace folio {

namespace {

// Appends the file's bytes to a buffer, or streams them to a FILE.
class ByteSink {
public:
    explicit ByteSink(std::vector<std::byte>* buffer) : buffer_(buffer) {}
    explicit ByteSink(std::FILE* file) : file_(file) {}

    void bytes(const void* p, size_t n) {
        if (n == 0) return;
        const auto* b = static_cast<const std::byte*>(p);
        if (buffer_) buffer_->insert(buffer_->end(), b, b + n);
        if (file_ && ok_) ok_ = std::fwrite(p, 1, n, file_) == n;
        written_ += n;
    }
    void integer(uint64_t v, size_t width) {
        std::byte le[8];
        gguf_store_le(le, v, width);
        bytes(le, width);
    }
    void string(const std::string& s) {
        integer(s.size(), 8);
        bytes(s.data(), s.size());
    }
    void pad_to(uint64_t alignment) {
        static const std::byte zeros[256] = {};
        while (written_ % alignment != 0) {
            const uint64_t n = std::min<uint64_t>(alignment - written_ % alignment, sizeof(zeros));
            bytes(zeros, size_t(n));
        }
    }
    bool ok() const { return ok_; }

private:
    std::vector<std::byte>* buffer_ = nullptr;
    std::FILE* file_ = nullptr;
    uint64_t written_ = 0;
    bool ok_ = true;
};

void write_value(ByteSink& out, const GgufValue& value);

void write_array(ByteSink& out, const GgufArray& array) {
    out.integer(uint32_t(array.element_type()), 4);
    out.integer(array.size(), 8);
    if (array.element_type() == GgufValueType::String) {
        for (const std::string& s : array.strings()) out.string(s);
    } else if (array.element_type() == GgufValueType::Array) {
        for (const GgufArray& a : array.arrays()) write_array(out, a);
    } else {
        out.bytes(array.raw().data(), array.raw().size());  // already little endian
    }
}

void write_value(ByteSink& out, const GgufValue& value) {
    const GgufValueType type = value.type();
    switch (type) {
        case GgufValueType::String: out.string(*value.as_string()); return;
        case GgufValueType::Array: write_array(out, *value.as_array()); return;
        case GgufValueType::Bool: out.integer(*value.as_bool() ? 1 : 0, 1); return;
        case GgufValueType::F32: {
            const float f = float(*value.as_f64());
            uint32_t bits;
            std::memcpy(&bits, &f, 4);
            out.integer(bits, 4);
            return;
        }
        case GgufValueType::F64: {
            const double d = *value.as_f64();
            uint64_t bits;
            std::memcpy(&bits, &d, 8);
            out.integer(bits, 8);
            return;
        }
        case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32: case GgufValueType::I64:
            out.integer(uint64_t(*value.as_i64()), gguf_fixed_size(type));
            return;
        default:
            out.integer(*value.as_u64(), gguf_fixed_size(type));
            return;
    }
}

uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
    if (alignment_ != kGgufDefaultAlignment) set("general.alignment", GgufValue::u32(alignment_));
}

void GgufWriter::set(std::string key, GgufValue value) {
    for (GgufKeyValue& kv : metadata_) {
        if (kv.key == key) {
            kv.value = std::move(value);
            return;
        }
    }
    metadata_.push_back({std::move(key), std::move(value)});
}

Status GgufWriter::check_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& shape,
                                size_t nbytes) const {
    const std::string what = "gguf writer: tensor '" + name + "'";
    if (name.empty()) return make_error("gguf writer: a tensor needs a name");
    for (const PendingTensor& t : tensors_)
        if (t.name == name) return make_error(what + " was added twice");
    const auto traits = tensor_type_traits(uint32_t(type));
    if (!traits) return make_error(what + ": unsupported type id " + std::to_string(uint32_t(type)));
    if (shape.empty() || shape.size() > size_t(kGgufMaxDims))
        return make_error(what + " has " + std::to_string(shape.size()) + " dimensions (1 to 4 allowed)");
    uint64_t n = 1;
    for (int64_t d : shape) {
        if (d <= 0) return make_error(what + " has a dimension of " + std::to_string(d));
        if (uint64_t(d) > uint64_t(std::numeric_limits<int64_t>::max()) / n)
            return make_error(what + " element count overflows");
        n *= uint64_t(d);
    }
    if (uint64_t(shape[0]) % traits->block_elems != 0)
        return make_error(what + " row of " + std::to_string(shape[0]) + " is not a multiple of the " +
                          std::string(traits->name) + " block of " + std::to_string(traits->block_elems));
    const uint64_t expected = n / traits->block_elems * traits->block_bytes;
    if (expected != nbytes)
        return make_error(what + " holds " + std::to_string(nbytes) + " bytes but its shape and type need " +
                          std::to_string(expected));
    return {};
}

Status GgufWriter::add_tensor(std::string name, TensorType type, std::vector<int64_t> shape,
                              std::span<const std::byte> data) {
    if (auto ok = check_tensor(name, type, shape, data.size()); !ok) return ok;
    tensors_.push_back({std::move(name), type, std::move(shape), data, nullptr});
    return {};
}

Status GgufWriter::add_tensor(std::string name, TensorType type, std::vector<int64_t> shape,
                              std::vector<std::byte> data) {
    if (auto ok = check_tensor(name, type, shape, data.size()); !ok) return ok;
    auto owned = std::make_shared<const std::vector<std::byte>>(std::move(data));
    tensors_.push_back({std::move(name), type, std::move(shape), std::span<const std::byte>(*owned), owned});
    return {};
}

namespace {

// Header, metadata, tensor infos and the padding before the data section;
// `nbytes_of(t)` is each tensor's data size.
template <typename Tensors, typename NBytes>
Status emit_header(ByteSink& out, uint32_t alignment, const std::vector<GgufKeyValue>& metadata,
                   const Tensors& tensors, NBytes nbytes_of) {
    for (const GgufKeyValue& kv : metadata) {
        if (kv.key.empty()) return make_error("gguf writer: empty metadata key");
        if (kv.key == "general.alignment") {
            auto a = kv.value.as_u64();
            if (kv.value.type() != GgufValueType::U32 || !a || *a != alignment)
                return make_error("gguf writer: general.alignment must be the UINT32 the writer was made with (" +
                                  std::to_string(alignment) + ")");
        }
    }
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        return make_error("gguf writer: alignment " + std::to_string(alignment) + " is not a power of two");
    out.integer(kGgufMagic, 4);
    out.integer(3, 4);
    out.integer(tensors.size(), 8);
    out.integer(metadata.size(), 8);
    for (const GgufKeyValue& kv : metadata) {
        out.string(kv.key);
        out.integer(uint32_t(kv.value.type()), 4);
        write_value(out, kv.value);
    }
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        out.string(t.name);
        out.integer(t.shape.size(), 4);
        for (int64_t d : t.shape) out.integer(uint64_t(d), 8);
        out.integer(uint32_t(t.type), 4);
        out.integer(offset, 8);
        offset = align_up(offset + nbytes_of(t), alignment);
    }
    out.pad_to(alignment);
    return {};
}

Status emit(ByteSink& out, uint32_t alignment, const std::vector<GgufKeyValue>& metadata,
            const auto& tensors) {
    if (auto ok = emit_header(out, alignment, metadata, tensors, [](const auto& t) { return t.data.size(); }); !ok)
        return ok;
    for (const auto& t : tensors) {
        out.bytes(t.data.data(), t.data.size());
        out.pad_to(alignment);
    }
    return {};
}

}  // namespace

Result<std::vector<std::byte>> GgufWriter::to_bytes() const {
    std::vector<std::byte> buffer;
    ByteSink sink(&buffer);
    if (auto ok = emit(sink, alignment_, metadata_, tensors_); !ok) return ok.error();
    return buffer;
}

Status GgufWriter::write(const std::string& path) const {
    const std::string tmp = path + ".tmp";
    std::FILE* file = std::fopen(tmp.c_str(), "wb");
    if (!file) return make_error("gguf writer: cannot create '" + tmp + "': " + std::strerror(errno));
    ByteSink sink(file);
    Status emitted = emit(sink, alignment_, metadata_, tensors_);
    // Flushed to the disk before the rename, so a crash leaves the old file or the new one.
    const bool written = sink.ok() && flush_to_disk(file);
    const int write_errno = errno;
    const bool closed = std::fclose(file) == 0;
    if (!emitted || !written || !closed) {
        std::remove(tmp.c_str());
        if (!emitted) return emitted;
        return make_error("gguf writer: cannot write '" + tmp + "': " + std::strerror(write_errno));
    }
    if (Status moved = replace_file(tmp, path); !moved) return make_error("gguf writer: " + moved.error().message);
    return {};
}

}  // namespace folio

namespace folio {

Result<std::vector<std::byte>> encode_gguf_header(uint32_t alignment, const std::vector<GgufKeyValue>& metadata,
                                                  const std::vector<GgufTensorHeader>& tensors) {
    for (const GgufTensorHeader& t : tensors)
        if (!gguf_tensor_header_nbytes(t))
            return make_error("gguf writer: tensor '" + t.name + "' has a shape its type cannot hold");
    std::vector<std::byte> buffer;
    ByteSink sink(&buffer);
    Status ok = emit_header(sink, alignment, metadata, tensors,
                            [](const GgufTensorHeader& t) { return *gguf_tensor_header_nbytes(t); });
    if (!ok) return ok.error();
    return buffer;
}

std::optional<uint64_t> gguf_tensor_header_nbytes(const GgufTensorHeader& t) {
    const auto traits = tensor_type_traits(uint32_t(t.type));
    if (!traits || t.shape.empty() || t.shape.size() > size_t(kGgufMaxDims)) return std::nullopt;
    uint64_t n = 1;
    for (int64_t d : t.shape) {
        if (d <= 0 || uint64_t(d) > uint64_t(std::numeric_limits<int64_t>::max()) / n) return std::nullopt;
        n *= uint64_t(d);
    }
    if (uint64_t(t.shape[0]) % traits->block_elems != 0) return std::nullopt;
    return n / traits->block_elems * traits->block_bytes;
}

}  // namespace folio
