// matmul() / matmul_parts(): check the arguments and hand the product to the
// quantized or the float family (matmul() is the one-part case).
#include "folio_kernels/matmul.h"
#include "matmul_layout.cuh"

namespace folio::kernels {

using detail::is_float;

ActivationFormat fused_activation_format(WeightType t) {
    switch (t) {
        case WeightType::Q4_0:
        case WeightType::Q5_0:
        case WeightType::Q8_0: return ActivationFormat::Q8_0;
        case WeightType::Q4_1:
        case WeightType::Q5_1: return ActivationFormat::Q8_1;
        case WeightType::F16: return ActivationFormat::F16;
        case WeightType::BF16: return ActivationFormat::BF16;
        default: return ActivationFormat::None;
    }
}

size_t activation_workspace_bytes(ActivationFormat f, int64_t count) {
    const auto n = static_cast<size_t>(count > 0 ? count : 0);
    switch (f) {
        case ActivationFormat::Q8_0:
        case ActivationFormat::Q8_1: return detail::align256(n) + detail::align256(n / 32 * sizeof(float2));
        case ActivationFormat::F16:
        case ActivationFormat::BF16: return detail::align256(2 * n);
        default: return 0;
    }
}

size_t matmul_workspace_bytes(WeightType t, int64_t n, int64_t rows, int64_t cols) {
    if (device_matrix_bytes(t, rows, cols) == 0 || n <= 0) return 0;
    return is_float(t) ? detail::float_workspace_bytes(t, n, cols) : detail::quantized_workspace_bytes(t, n, cols);
}

bool matmul_parts_split(WeightType t, int64_t n) { return is_float(t) && n > kFloatMatvecMaxRows; }

size_t matmul_parts_workspace_bytes(WeightType t, int64_t n, int64_t rows, int64_t cols) {
    const size_t bytes = matmul_workspace_bytes(t, n, rows, cols);
    // cuBLAS products: the stacked y follows cuBLAS's part (float_matmul).
    if (bytes == 0 || !is_float(t) || n <= kFloatMatvecMaxRows) return bytes;
    return bytes + detail::align256(static_cast<size_t>(n * rows) * sizeof(float));
}

cudaError_t matmul_parts(const DeviceMatrix& w, const float* x, int64_t n, const SplitParts& parts,
                         const MatmulWorkspace& ws, cudaStream_t s) {
    if (device_matrix_bytes(w.type, w.rows, w.cols) == 0 || !w.data || n < 0) return cudaErrorInvalidValue;
    if (parts.count < 1 || parts.count > kMaxSplitParts) return cudaErrorInvalidValue;
    int64_t rows = 0;
    for (int i = 0; i < parts.count; ++i) {
        if (parts.width[i] <= 0) return cudaErrorInvalidValue;
        rows += parts.width[i];
    }
    if (rows != w.rows) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    for (int i = 0; i < parts.count; ++i)
        if (!parts.dst[i]) return cudaErrorInvalidValue;
    if (!x || reinterpret_cast<uintptr_t>(x) % 16 != 0) return cudaErrorInvalidValue;
    const size_t need = parts.count == 1 ? matmul_workspace_bytes(w.type, n, w.rows, w.cols)
                                         : matmul_parts_workspace_bytes(w.type, n, w.rows, w.cols);
    if (need > 0 && (ws.bytes < need || !ws.data || reinterpret_cast<uintptr_t>(ws.data) % 256 != 0))
        return cudaErrorInvalidValue;
    if (ws.x_in_workspace && fused_activation_format(w.type) == ActivationFormat::None) return cudaErrorInvalidValue;
    return is_float(w.type) ? detail::float_matmul(w, x, n, parts, ws, s)
                            : detail::quantized_matmul(w, x, n, parts, ws.data, ws.x_in_workspace, s);
}

cudaError_t matmul(const DeviceMatrix& w, const float* x, int64_t n, float* y, const MatmulWorkspace& ws,
                   cudaStream_t s) {
    SplitParts whole;
    whole.dst[0] = y;
    whole.width[0] = w.rows;
    whole.count = 1;
    return matmul_parts(w, x, n, whole, ws, s);
}

}  // namespace folio::kernels
