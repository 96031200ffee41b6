#include "cuda/nvml.h"

#include <dlfcn.h>

namespace folio::cuda {
namespace {

// The few NVML entry points and structures used, as nvml.h declares them
// (the header is not part of the CUDA toolkit packages everywhere).
using Ret = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using Device = void*;
struct Utilization {
    unsigned gpu, memory;
};
struct Memory {
    unsigned long long total, free, used;
};
constexpr int kClockSm = 1, kClockMem = 2, kTemperatureGpu = 0;

}  // namespace

struct Nvml::Api {
    void* lib = nullptr;
    Ret (*init)() = nullptr;
    Ret (*shutdown)() = nullptr;
    Ret (*by_pci)(const char*, Device*) = nullptr;
    Ret (*utilization)(Device, Utilization*) = nullptr;
    Ret (*memory)(Device, Memory*) = nullptr;
    Ret (*clock)(Device, int, unsigned*) = nullptr;
    Ret (*power)(Device, unsigned*) = nullptr;
    Ret (*temperature)(Device, int, unsigned*) = nullptr;
};

std::unique_ptr<Nvml> Nvml::open(const std::string& pci_bus_id) {
    auto api = std::make_unique<Api>();
    api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) return nullptr;
    auto load = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(api->lib, name));
        return fn != nullptr;
    };
    const bool all = load(api->init, "nvmlInit_v2") && load(api->shutdown, "nvmlShutdown") &&
                     load(api->by_pci, "nvmlDeviceGetHandleByPciBusId_v2") &&
                     load(api->utilization, "nvmlDeviceGetUtilizationRates") &&
                     load(api->memory, "nvmlDeviceGetMemoryInfo") && load(api->clock, "nvmlDeviceGetClockInfo") &&
                     load(api->power, "nvmlDeviceGetPowerUsage") && load(api->temperature, "nvmlDeviceGetTemperature");
    if (!all || api->init() != 0) {
        dlclose(api->lib);
        return nullptr;
    }
    std::unique_ptr<Nvml> nvml(new Nvml);
    nvml->api_ = std::move(api);
    if (nvml->api_->by_pci(pci_bus_id.c_str(), &nvml->device_) != 0) return nullptr;  // ~Nvml shuts down
    return nvml;
}

Nvml::~Nvml() {
    if (!api_) return;
    api_->shutdown();
    dlclose(api_->lib);
}

DeviceReadings Nvml::read() const {
    DeviceReadings r;
    Utilization u{};
    Memory m{};
    unsigned sm = 0, mem = 0, milliwatts = 0, celsius = 0;
    if (api_->utilization(device_, &u) != 0 || api_->memory(device_, &m) != 0) return r;
    r.valid = true;
    r.utilization_perc = u.gpu;
    r.memory_used_bytes = static_cast<double>(m.used);
    r.memory_total_bytes = static_cast<double>(m.total);
    if (api_->clock(device_, kClockSm, &sm) == 0) r.sm_clock_mhz = sm;
    if (api_->clock(device_, kClockMem, &mem) == 0) r.memory_clock_mhz = mem;
    if (api_->power(device_, &milliwatts) == 0) r.power_watts = milliwatts / 1000.0;
    if (api_->temperature(device_, kTemperatureGpu, &celsius) == 0) r.temperature_celsius = celsius;
    return r;
}

}  // namespace folio::cuda
