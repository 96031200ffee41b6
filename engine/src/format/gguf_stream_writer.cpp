// GgufStreamWriter: the header at once, then each tensor's bytes as they are
// produced, into a temporary file that becomes the target only when whole.
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "folio/gguf.h"
#include "format/durable_file.h"
#include "format/gguf_header.h"

namespace folio {

namespace {

uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

}  // namespace

Result<uint64_t> GgufStreamWriter::planned_size(const std::vector<GgufKeyValue>& metadata,
                                                const std::vector<GgufTensorHeader>& tensors, uint32_t alignment) {
    auto header = encode_gguf_header(alignment, metadata, tensors);
    if (!header) return header.error();
    uint64_t size = header->size();
    for (const GgufTensorHeader& t : tensors) size += align_up(*gguf_tensor_header_nbytes(t), alignment);
    return size;
}

Result<std::unique_ptr<GgufStreamWriter>> GgufStreamWriter::create(const std::string& path,
                                                                   const std::vector<GgufKeyValue>& metadata,
                                                                   std::vector<GgufTensorHeader> tensors,
                                                                   uint32_t alignment) {
    for (size_t i = 0; i < tensors.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (tensors[i].name == tensors[j].name)
                return make_error("gguf writer: tensor '" + tensors[i].name + "' was added twice");
    auto header = encode_gguf_header(alignment, metadata, tensors);
    if (!header) return header.error();

    std::unique_ptr<GgufStreamWriter> w(new GgufStreamWriter());
    w->path_ = path;
    w->temp_path_ = path + ".tmp";
    w->alignment_ = alignment;
    w->tensors_ = std::move(tensors);
    w->file_size_ = header->size();
    for (const GgufTensorHeader& t : w->tensors_) {
        w->nbytes_.push_back(*gguf_tensor_header_nbytes(t));
        w->file_size_ += align_up(w->nbytes_.back(), alignment);
    }
    w->file_ = std::fopen(w->temp_path_.c_str(), "wb");
    if (!w->file_)
        return make_error("cannot create '" + w->temp_path_ + "': " + std::strerror(errno));
    if (std::fwrite(header->data(), 1, header->size(), w->file_) != header->size())
        return w->fail("write the header of", errno).error();
    w->written_ = header->size();
    return w;
}

GgufStreamWriter::~GgufStreamWriter() { abort(); }

void GgufStreamWriter::abort() {
    if (!file_) return;
    std::fclose(file_);
    file_ = nullptr;
    std::remove(temp_path_.c_str());
}

Status GgufStreamWriter::fail(const std::string& what, int err) {
    abort();
    std::string reason = std::strerror(err);
#ifdef EDQUOT
    const bool full = err == ENOSPC || err == EFBIG || err == EDQUOT;
#else  // Windows has no disk quotas in errno
    const bool full = err == ENOSPC || err == EFBIG;
#endif
    if (full)
        reason += " (the disk or the file size limit is full; nothing was left behind)";
    return make_error("cannot " + what + " '" + temp_path_ + "': " + reason);
}

Status GgufStreamWriter::write_next(std::span<const std::byte> data) {
    if (!file_) return make_error("gguf writer: '" + temp_path_ + "' is no longer open");
    if (next_ >= tensors_.size()) return make_error("gguf writer: all tensors are already written");
    const GgufTensorHeader& t = tensors_[next_];
    if (data.size() != nbytes_[next_]) {
        const std::string msg = "gguf writer: tensor '" + t.name + "' needs " + std::to_string(nbytes_[next_]) +
                                " bytes, got " + std::to_string(data.size());
        abort();
        return make_error(msg);
    }
    static const std::byte zeros[256] = {};
    if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) return fail("write", errno);
    written_ += data.size();
    const uint64_t pad = align_up(written_, alignment_) - written_;
    if (pad && std::fwrite(zeros, 1, size_t(pad), file_) != pad) return fail("write", errno);
    written_ += pad;
    ++next_;
    return {};
}

Status GgufStreamWriter::commit() {
    if (!file_) return make_error("gguf writer: '" + temp_path_ + "' is no longer open");
    if (next_ != tensors_.size())
        return make_error("gguf writer: " + std::to_string(tensors_.size() - next_) + " tensors are not written yet");
    if (!flush_to_disk(file_)) return fail("flush", errno);
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) {
        const int err = errno;
        std::remove(temp_path_.c_str());
        return make_error("cannot close '" + temp_path_ + "': " + std::strerror(err));
    }
    return replace_file(temp_path_, path_);
}

}  // namespace folio
