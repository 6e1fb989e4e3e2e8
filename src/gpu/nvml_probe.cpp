#include "gpu/nvml_probe.h"

#include <dlfcn.h>

#include <utility>

namespace s2tp {

namespace {

// The few NVML entry points used here, declared by their documented C signatures (NVML API reference):
// the toolkit carries no nvml.h, and the library is the driver's. nvmlReturn_t is an int-sized enum
// whose success is 0; nvmlDevice_t an opaque pointer.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque *;
constexpr NvmlReturn nvml_success = 0;
constexpr int nvml_temperature_gpu = 0;  // NVML_TEMPERATURE_GPU

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using HandleByPciFn = NvmlReturn (*)(const char *, NvmlDevice *);
using ReasonsFn = NvmlReturn (*)(NvmlDevice, unsigned long long *);
using UintFn = NvmlReturn (*)(NvmlDevice, unsigned int *);
using TemperatureFn = NvmlReturn (*)(NvmlDevice, int, unsigned int *);

template <typename Fn>
Fn symbol(void *handle, const char *name) {
    return reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

struct NvmlProbe::Library {
    void *handle = nullptr;
    ShutdownFn shutdown = nullptr;
    ReasonsFn reasons = nullptr;
    UintFn power_usage = nullptr, power_limit = nullptr;
    TemperatureFn temperature = nullptr;
    NvmlDevice device = nullptr;

    ~Library() {
        if (shutdown) shutdown();
        if (handle) dlclose(handle);
    }
};

std::unique_ptr<NvmlProbe> NvmlProbe::open(const std::string &pci_bus_id, std::string &why_not) {
    auto library = std::make_unique<Library>();
    library->handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library->handle) {
        const char *error = dlerror();
        why_not = std::string("NVML (libnvidia-ml.so.1) could not be loaded: ") + (error ? error : "unknown error");
        return nullptr;
    }
    const auto init = symbol<InitFn>(library->handle, "nvmlInit_v2");
    const auto by_pci = symbol<HandleByPciFn>(library->handle, "nvmlDeviceGetHandleByPciBusId_v2");
    // The reasons' newer name (driver 535 and later), else the one it replaced.
    library->reasons = symbol<ReasonsFn>(library->handle, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!library->reasons) library->reasons = symbol<ReasonsFn>(library->handle, "nvmlDeviceGetCurrentClocksThrottleReasons");
    library->power_usage = symbol<UintFn>(library->handle, "nvmlDeviceGetPowerUsage");
    library->power_limit = symbol<UintFn>(library->handle, "nvmlDeviceGetEnforcedPowerLimit");
    library->temperature = symbol<TemperatureFn>(library->handle, "nvmlDeviceGetTemperature");
    if (!init || !by_pci) {
        why_not = "NVML lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2";
        return nullptr;
    }
    if (const NvmlReturn r = init(); r != nvml_success) {
        why_not = "nvmlInit_v2 failed (NVML error " + std::to_string(r) + ")";
        return nullptr;
    }
    library->shutdown = symbol<ShutdownFn>(library->handle, "nvmlShutdown");
    if (const NvmlReturn r = by_pci(pci_bus_id.c_str(), &library->device); r != nvml_success) {
        why_not = "NVML does not know the GPU at PCI " + pci_bus_id + " (NVML error " + std::to_string(r) + ")";
        return nullptr;
    }
    return std::unique_ptr<NvmlProbe>(new NvmlProbe(std::move(library)));
}

NvmlProbe::NvmlProbe(std::unique_ptr<Library> library) : library_(std::move(library)) {}

NvmlProbe::~NvmlProbe() = default;

PowerReading NvmlProbe::read() const {
    PowerReading reading;
    const Library &l = *library_;
    unsigned long long reasons = 0;
    if (l.reasons && l.reasons(l.device, &reasons) == nvml_success) reading.clock_reasons = reasons;
    unsigned int milliwatts = 0;
    if (l.power_usage && l.power_usage(l.device, &milliwatts) == nvml_success) reading.power_w = milliwatts / 1000.0;
    unsigned int celsius = 0;
    if (l.temperature && l.temperature(l.device, nvml_temperature_gpu, &celsius) == nvml_success)
        reading.temperature_c = celsius;
    return reading;
}

std::optional<double> NvmlProbe::enforced_power_limit_w() const {
    unsigned int milliwatts = 0;
    if (library_->power_limit && library_->power_limit(library_->device, &milliwatts) == nvml_success)
        return milliwatts / 1000.0;
    return std::nullopt;
}

}  // namespace s2tp
