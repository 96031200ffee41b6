// Small helpers shared by the CUDA launch functions.
#pragma once

#include <cuda_runtime.h>

// Returns the error of a CUDA call from the enclosing function when it fails.
#define FOLIO_CUDA_TRY(call)                        \
    do {                                            \
        const cudaError_t folio_err_ = (call);      \
        if (folio_err_ != cudaSuccess) return folio_err_; \
    } while (0)

namespace folio::kernels {

// Blocks of `threads` covering `count` items (at least one).
inline unsigned blocks_for(long long count, int threads) {
    const long long b = (count + threads - 1) / threads;
    return static_cast<unsigned>(b > 0 ? b : 1);
}

// cudaSuccess when this build holds code the current device can run (machine
// code for its architecture, or PTX it can compile); cudaErrorNoKernelImageForDevice
// (or the driver's error) otherwise.
cudaError_t kernel_image_status();

}  // namespace folio::kernels
