// matmul(): checks the arguments and hands the product to the quantized or
// the float family.
#include <cstdlib>
#include <cstring>

#include "folio_kernels/matmul.h"
#include "matmul_layout.cuh"

namespace folio::kernels {

bool detail::pdl_enabled() {
    static const bool enabled = [] {
        const char* v = std::getenv("FOLIO_CUDA_PDL");
        return !(v && std::strcmp(v, "0") == 0);
    }();
    return enabled;
}

namespace {

bool is_float(WeightType t) { return t == WeightType::F32 || t == WeightType::F16 || t == WeightType::BF16; }

}  // namespace

size_t matmul_workspace_bytes(WeightType t, int64_t n, int64_t rows, int64_t cols) {
    if (device_matrix_bytes(t, rows, cols) == 0 || n <= 0) return 0;
    return is_float(t) ? detail::float_workspace_bytes(t, n, cols) : detail::quantized_workspace_bytes(t, n, cols);
}

cudaError_t matmul(const DeviceMatrix& w, const float* x, int64_t n, float* y, const MatmulWorkspace& ws,
                   cudaStream_t s) {
    if (device_matrix_bytes(w.type, w.rows, w.cols) == 0 || !w.data || n < 0) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    if (!x || !y || reinterpret_cast<uintptr_t>(x) % 16 != 0) return cudaErrorInvalidValue;
    const size_t need = matmul_workspace_bytes(w.type, n, w.rows, w.cols);
    if (need > 0 && (ws.bytes < need || !ws.data || reinterpret_cast<uintptr_t>(ws.data) % 256 != 0))
        return cudaErrorInvalidValue;
    return is_float(w.type) ? detail::float_matmul(w, x, n, y, ws, s) : detail::quantized_matmul(w, x, n, y, ws.data, s);
}

}  // namespace folio::kernels
