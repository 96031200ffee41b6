#include <cstdlib>

#include "folio_kernels/check.h"
#include "launch.cuh"

namespace folio::kernels {
namespace {
__global__ void image_probe_kernel() {}
}  // namespace

cudaError_t kernel_image_status() {
    cudaFuncAttributes attributes{};
    const cudaError_t err = cudaFuncGetAttributes(&attributes, image_probe_kernel);
    if (err != cudaSuccess) cudaGetLastError();  // not sticky: clear it for the caller's next call
    return err;
}

}  // namespace folio::kernels

namespace folio::kernels::detail {

bool pdl_enabled(PdlKind kind) {
    static const unsigned mask = [] {
        const char* v = std::getenv("FOLIO_CUDA_PDL");
        return v && *v ? static_cast<unsigned>(std::strtoul(v, nullptr, 0)) : ~0u;
    }();
    return (mask & kind) != 0;
}

}  // namespace folio::kernels::detail
