// What the kernel suites share: whether a GPU is there, CUDA errors as
// messages, device arrays filled from and read back into std::vector, random
// inputs that are never zero, and an output's relative error against a
// double-precision reference.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
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

// Relative L2 error of out against ref; counts out's non-finite values.
inline double rel_error(const std::vector<float>& out, const std::vector<double>& ref, size_t* non_finite) {
    double num = 0, den = 0;
    *non_finite = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (!std::isfinite(out[i])) ++*non_finite;
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return std::sqrt(num / std::max(den, 1e-300));
}

// "" when out is within `tolerance` (relative L2) of ref and all finite, else what failed.
inline std::string check_close(const char* what, const std::vector<float>& out, const std::vector<double>& ref,
                               double tolerance, double* error_out = nullptr) {
    size_t bad = 0;
    const double err = rel_error(out, ref, &bad);
    if (error_out) *error_out = err;
    if (bad || !(err <= tolerance))
        return std::string(what) + ": rel error " + std::to_string(err) + " (tolerance " +
               std::to_string(tolerance) + "), " + std::to_string(bad) + " non-finite of " +
               std::to_string(out.size());
    return {};
}

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) {
        do x = dist(rng);
        while (x == 0.0f);
    }
    return v;
}
