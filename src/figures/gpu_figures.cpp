#include "figures/gpu_figures.h"

namespace s2tp {

using namespace figure_fields;

GpuFigures GpuFigures::of(const DeviceFacts &device) {
    GpuFigures g;
    g.index = device.index;
    g.name = device.name;
    g.uuid = device.uuid;
    g.pci_bus_id = device.pci_bus_id;
    g.driver = cuda_version_string(device.driver_version);
    g.sm_count = device.sm_count;
    g.sm_clock_mhz = device.sm_clock_khz / 1000.0;
    g.checks = g.passed = g.failed = 0;
    return g;
}

const std::vector<Field<GpuFigures>> &GpuFigures::fields() {
    using G = GpuFigures;
    static const std::vector<Field<G>> table{field("index", &G::index, "GPU index", Presence::always),
                                             field("name", &G::name, "GPU model"),
                                             field("uuid", &G::uuid, "GPU UUID"),
                                             field("pci_bus_id", &G::pci_bus_id, "PCI bus id"),
                                             field("driver", &G::driver, "CUDA version of the driver"),
                                             field("sm_count", &G::sm_count, "SMs"),
                                             field("sm_clock_mhz", &G::sm_clock_mhz, "MHz"),
                                             field("checks", &G::checks, "checks"),
                                             field("passed", &G::passed, "checks"),
                                             field("failed", &G::failed, "checks"),
                                             field("lost", &G::lost, "device error")};
    return table;
}

bool GpuFigures::operator==(const GpuFigures &o) const {
    return index == o.index && name == o.name && uuid == o.uuid && pci_bus_id == o.pci_bus_id && driver == o.driver &&
           sm_count == o.sm_count && sm_clock_mhz == o.sm_clock_mhz && checks == o.checks && passed == o.passed &&
           failed == o.failed && lost == o.lost;
}

std::string gpu_table(const std::vector<GpuFigures> &gpus) {
    std::string out;
    for (const GpuFigures &g : gpus) {
        out += "  GPU " + (g.index ? std::to_string(*g.index) : std::string("?")) + " " + g.name +
               (g.pci_bus_id.empty() ? "" : " (" + g.pci_bus_id + ")") + ": " +
               std::to_string(g.passed.value_or(0)) + " of " + std::to_string(g.checks.value_or(0)) + " checks passed";
        if (g.failed.value_or(0) > 0) out += ", " + std::to_string(*g.failed) + " failed";
        if (!g.lost.empty()) out += ", LOST: " + g.lost;
        out += "\n";
    }
    return out;
}

bool shows_gpu_table(const std::vector<GpuFigures> &gpus) {
    return gpus.size() > 1 || (gpus.size() == 1 && !gpus.front().lost.empty());
}

}  // namespace s2tp
