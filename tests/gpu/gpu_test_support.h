// What the kernel suites share: whether a GPU is there, CUDA errors as
// messages, and device arrays filled from and read back into std::vector.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

inline bool have_gpu() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Empty on success, else "what: the CUDA error".
inline std::string cuda_error(cudaError_t e, const char* what) {
    return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(e);
}

// One device array, freed with its owner.
template <typename T>
struct DeviceArray {
    T* ptr = nullptr;
    size_t count = 0;
    cudaError_t status = cudaSuccess;
    explicit DeviceArray(size_t n) : count(n) {
        if (n) status = cudaMalloc(&ptr, n * sizeof(T));
    }
    explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
        if (status == cudaSuccess && count)
            status = cudaMemcpy(ptr, host.data(), count * sizeof(T), cudaMemcpyHostToDevice);
    }
    ~DeviceArray() { cudaFree(ptr); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    // All bytes 0xff: NaN floats and halves, -1 ids, so unwritten output shows.
    cudaError_t poison() { return cudaMemset(ptr, 0xff, count * sizeof(T)); }
    cudaError_t download(std::vector<T>& host) const {
        host.resize(count);
        return cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost);
    }
};
