// Why the GPU runs at the clock it runs at: NVML's clock-event reasons (power cap, thermal slowdown,
// sync boost, ...), its power draw and temperature, read on the host right after each timed launch. An
// H200 under sustained load sits at its 700 W power cap and lowers its SM clock to stay there, so one
// kernel's absolute time depends on what runs beside it; these readings say so per arm.
//
// NVML is the driver's library (libnvidia-ml.so.1), loaded at run time: sage2tp links no driver library,
// so it still starts on a host without one, and where NVML is missing the readings are simply absent.
//
// Usage:
//   std::string why_not;
//   std::unique_ptr<s2tp::NvmlProbe> power = s2tp::NvmlProbe::open(device.pci_bus_id, why_not);  // nullptr without NVML
//   s2tp::PowerReading now = power->read();
//   std::string why = s2tp::clock_event_reason_names(*now.clock_reasons);  // "power cap, thermal slowdown"
#pragma once

#include "model/ab_timing.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace s2tp {

class NvmlProbe {
public:
    // The GPU at PCI bus id `pci_bus_id` ("0000:19:00.0", as DeviceFacts has it); nullptr when NVML cannot
    // be loaded or does not know the GPU, with the reason in `why_not`.
    static std::unique_ptr<NvmlProbe> open(const std::string &pci_bus_id, std::string &why_not);
    ~NvmlProbe();
    NvmlProbe(const NvmlProbe &) = delete;
    NvmlProbe &operator=(const NvmlProbe &) = delete;

    // Now: the clock-event reasons, the power draw and the temperature; a value NVML refuses is absent.
    PowerReading read() const;
    // The power limit the driver enforces, in watts, when NVML gives it.
    std::optional<double> enforced_power_limit_w() const;

private:
    struct Library;
    explicit NvmlProbe(std::unique_ptr<Library> library);
    std::unique_ptr<Library> library_;
};

}  // namespace s2tp
