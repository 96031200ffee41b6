// What the matrix suites share (test_gpu_matmul, test_gpu_moe): random GGUF
// matrices of every type, random activation rows, weights on the device in
// their prepared layout, and y = x · Wᵀ through kernels::matmul.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/kernels.h"
// After cpu/kernels.h, which it uses without including.
#include "../cpu/quant_reference.h"
#include "folio/dequant.h"
#include "folio_kernels/matmul.h"

namespace gpu_matrix {

namespace fk = folio::kernels;
using folio::TensorType;

inline std::string name_of(TensorType t) { return std::string(folio::traits(t).name); }
inline fk::WeightType kind(TensorType t) { return static_cast<fk::WeightType>(static_cast<int32_t>(t)); }

inline bool gpu_present() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

inline std::string cuda_message(cudaError_t e, const char* what) {
    return std::string(what) + ": " + cudaGetErrorString(e);
}

// Device memory freed on scope exit.
class DeviceBuffer {
public:
    explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
        if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) ptr_ = nullptr;
    }
    ~DeviceBuffer() { cudaFree(ptr_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    template <typename T = void>
    T* get() const { return static_cast<T*>(ptr_); }
    size_t bytes() const { return bytes_; }
    bool ok() const { return ptr_ != nullptr || bytes_ == 0; }

private:
    void* ptr_ = nullptr;
    size_t bytes_ = 0;
};

// GGUF bytes of a random rows x cols matrix of the type (valid blocks, scales
// of realistic size; BF16 from normal floats).
inline std::vector<std::byte> random_gguf(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
    cpu_test::BlockFactory factory(seed);
    if (type == TensorType::BF16) {
        std::vector<std::byte> out(static_cast<size_t>(rows * cols) * 2);
        for (int64_t i = 0; i < rows * cols; ++i) {
            const float v = factory.normal();
            uint32_t bits;
            std::memcpy(&bits, &v, 4);
            const auto b = static_cast<uint16_t>(bits >> 16);
            std::memcpy(out.data() + 2 * i, &b, 2);
        }
        return out;
    }
    std::vector<std::byte> out;
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<std::byte> row = factory.row(type, cols);
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

inline std::vector<float> random_activations(int64_t n, int64_t cols, uint32_t seed) {
    cpu_test::BlockFactory factory(seed);
    std::vector<float> x;
    x.reserve(static_cast<size_t>(n * cols));
    for (int64_t j = 0; j < n; ++j) {
        const std::vector<float> row = factory.activations(cols);
        x.insert(x.end(), row.begin(), row.end());
    }
    if (n > 5) std::fill(x.begin() + 5 * cols, x.begin() + 6 * cols, 0.0f);  // an all-zero row
    return x;
}

inline std::vector<float> dequantized(TensorType type, const std::vector<std::byte>& gguf, int64_t rows, int64_t cols) {
    std::vector<float> w(static_cast<size_t>(rows * cols));
    const folio::Status st = folio::dequantize(type, gguf.data(), gguf.size(), w.data(), rows * cols);
    if (!st) w.clear();
    return w;
}

// A weight matrix on the device in its prepared layout.
struct GpuMatrix {
    std::unique_ptr<DeviceBuffer> data;
    fk::DeviceMatrix m;
};

inline cudaError_t upload(TensorType type, const std::vector<std::byte>& gguf, int64_t rows, int64_t cols, GpuMatrix& out) {
    DeviceBuffer staging(gguf.size());
    out.data = std::make_unique<DeviceBuffer>(fk::device_matrix_bytes(kind(type), rows, cols));
    if (!staging.ok() || !out.data->ok() || out.data->bytes() == 0) return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMemcpy(staging.get(), gguf.data(), gguf.size(), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = fk::prepare_matrix(kind(type), staging.get(), rows, cols, out.data->get(), nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    out.m = fk::DeviceMatrix{kind(type), out.data->get(), rows, cols};
    return e;
}

// Runs y = x · Wᵀ on the GPU with a NaN-poisoned output.
inline cudaError_t gpu_matmul(const GpuMatrix& w, const std::vector<float>& x, int64_t n, std::vector<float>& y,
                       cublasHandle_t cublas) {
    const int64_t rows = w.m.rows, cols = w.m.cols;
    DeviceBuffer dx(x.size() * sizeof(float)), dy(static_cast<size_t>(n * rows) * sizeof(float));
    DeviceBuffer ws(fk::matmul_workspace_bytes(w.m.type, n, rows, cols));
    if (!dx.ok() || !dy.ok() || !ws.ok()) return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMemcpy(dx.get(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemset(dy.get(), 0xff, dy.bytes());  // NaN
    if (e != cudaSuccess) return e;
    fk::MatmulWorkspace workspace{ws.get(), ws.bytes(), cublas};
    e = fk::matmul(w.m, dx.get<float>(), n, dy.get<float>(), workspace, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return e;
    y.resize(static_cast<size_t>(n * rows));
    return cudaMemcpy(y.data(), dy.get(), dy.bytes(), cudaMemcpyDeviceToHost);
}

}  // namespace gpu_matrix
