// Reusable working memory for the CPU kernels (quantized activations and
// the like): grows to the largest request and then stays, so a warm decode
// loop allocates nothing.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace folio::cpu {

class ScratchBuffer {
public:
    ScratchBuffer() = default;
    ~ScratchBuffer() { std::free(data_); }
    ScratchBuffer(const ScratchBuffer&) = delete;
    ScratchBuffer& operator=(const ScratchBuffer&) = delete;

    // At least `bytes` bytes, 64-byte aligned; earlier contents are not kept
    // when it grows. nullptr when the memory is not available.
    std::byte* reserve(size_t bytes) {
        if (bytes <= capacity_) return data_;
        std::free(data_);
        capacity_ = (bytes + 63) / 64 * 64;
        data_ = static_cast<std::byte*>(std::aligned_alloc(64, capacity_));
        if (!data_) capacity_ = 0;
        return data_;
    }
    size_t capacity() const { return capacity_; }

private:
    std::byte* data_ = nullptr;
    size_t capacity_ = 0;
};

}  // namespace folio::cpu
