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
    ~ScratchBuffer() { release(); }
    ScratchBuffer(const ScratchBuffer&) = delete;
    ScratchBuffer& operator=(const ScratchBuffer&) = delete;

    // At least `bytes` bytes, 64-byte aligned; earlier contents are not kept
    // when it grows. nullptr when the memory is not available.
    std::byte* reserve(size_t bytes) {
        if (bytes <= capacity_) return data_;
        release();
        capacity_ = (bytes + 63) / 64 * 64;
        // Aligned operator new: std::aligned_alloc is not in Windows' C runtime.
        data_ = static_cast<std::byte*>(::operator new(capacity_, kAlignment, std::nothrow));
        if (!data_) capacity_ = 0;
        return data_;
    }
    size_t capacity() const { return capacity_; }

private:
    static constexpr std::align_val_t kAlignment{64};
    void release() {
        if (data_) ::operator delete(data_, kAlignment);
        data_ = nullptr;
    }
    std::byte* data_ = nullptr;
    size_t capacity_ = 0;
};

}  // namespace folio::cpu
