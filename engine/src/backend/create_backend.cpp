// Picks the backend BackendOptions::device names.
#include <string>

#include "folio/backend.h"

namespace folio {

Result<std::unique_ptr<Backend>> create_backend(const ModelDescription& model, const BackendOptions& options) {
    const std::string& device = options.device;
    if (device.empty() || device == "cpu") return create_cpu_backend(model, options);
    if (device == "cuda" || device.starts_with("cuda:")) return create_cuda_backend(model, options);
    return make_error("unknown device '" + device + "' (cpu, cuda or cuda:N)");
}

#ifndef FOLIO_HAVE_CUDA
Result<std::unique_ptr<Backend>> create_cuda_backend(const ModelDescription&, const BackendOptions&) {
    return make_error("this build of Folio has no CUDA backend (it was built without nvcc)");
}

int cuda_device_count() { return 0; }

std::string describe_cuda_devices() { return "no CUDA backend in this build (built without nvcc)"; }
#endif

}  // namespace folio
