// Readings of a GPU through NVML, loaded at run time (libnvidia-ml.so.1 comes
// with the driver, not the toolkit): no link-time dependency, and nothing
// but invalid readings where it is missing.
#pragma once

#include <memory>
#include <string>

#include "folio/backend.h"

namespace folio::cuda {

class Nvml {
public:
    // NVML's handle of the GPU on PCI bus `pci_bus_id` (cudaDeviceGetPCIBusId), or none.
    static std::unique_ptr<Nvml> open(const std::string& pci_bus_id);
    ~Nvml();
    DeviceReadings read() const;

    struct Api;

private:
    Nvml() = default;
    std::unique_ptr<Api> api_;
    void* device_ = nullptr;
};

}  // namespace folio::cuda
