// A whole file mapped read-only into memory. Tensors of a loaded model are
// views into it, so weights are never copied at load time.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "folio/error.h"

namespace folio {

class MappedFile {
public:
    static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);
    // Anonymous memory standing in for a file (a dummy model): `fill` writes
    // it before it becomes read-only; without `fill` it is only reserved
    // (reads as zeros, takes no memory).
    static Result<std::shared_ptr<const MappedFile>> anonymous(const std::string& name, size_t size,
                                                                const std::function<void(std::byte*)>& fill);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    MappedFile(std::string path, const std::byte* data, size_t size, bool anonymous)
        : path_(std::move(path)), data_(data), size_(size), anonymous_(anonymous) {}
    std::string path_;
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
    bool anonymous_ = false;  // Windows frees a file view and anonymous memory differently
};

}  // namespace folio
