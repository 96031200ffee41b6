// Device memory for the kernel suites: one array, freed with its owner,
// filled from and read back into std::vector.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

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
