#include "figures/gpu_figures.h"
#include "support/number_format.h"

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
    g.checks = g.ran = 0;
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
                                             field("sample_clock_mhz", &G::sample_clock_mhz, "MHz"),
                                             field("checks", &G::checks, "checks"),
                                             field("ran", &G::ran, "checks"),
                                             field("passed", &G::passed, "checks"),
                                             field("failed", &G::failed, "checks"),
                                             field("lost", &G::lost, "device error")};
    return table;
}

bool GpuFigures::operator==(const GpuFigures &o) const {
    return index == o.index && name == o.name && uuid == o.uuid && pci_bus_id == o.pci_bus_id && driver == o.driver &&
           sm_count == o.sm_count && sm_clock_mhz == o.sm_clock_mhz && sample_clock_mhz == o.sample_clock_mhz && checks == o.checks && ran == o.ran &&
           passed == o.passed &&
           failed == o.failed && lost == o.lost;
}

std::vector<std::string> gpu_table_lines(const std::vector<GpuFigures> &gpus) {
    std::vector<std::string> lines;
    for (const GpuFigures &g : gpus) {
        std::string line = "GPU " + (g.index ? std::to_string(*g.index) : std::string(missing_figure)) + " " + g.name +
                           (g.pci_bus_id.empty() ? "" : " (" + g.pci_bus_id + ")") + ": ran " +
                           std::to_string(g.ran.value_or(0)) + " of " + std::to_string(g.checks.value_or(0)) + " checks";
        if (g.passed) line += ", " + std::to_string(*g.passed) + " passed";
        if (g.failed.value_or(0) > 0) line += ", " + std::to_string(*g.failed) + " failed";
        if (g.sample_clock_mhz)
            line += ", SM clock " + std::to_string(static_cast<long>(*g.sample_clock_mhz)) + " MHz while sampled";
        if (!g.lost.empty()) line += ", LOST: " + g.lost;
        lines.push_back(std::move(line));
    }
    return lines;
}

bool shows_gpu_table(const std::vector<GpuFigures> &gpus) {
    return gpus.size() > 1 || (gpus.size() == 1 && !gpus.front().lost.empty());
}

std::string with_gpu_table(const std::string &text, const std::vector<GpuFigures> &gpus) {
    std::string out = text;
    if (shows_gpu_table(gpus))
        for (const std::string &line : gpu_table_lines(gpus)) out += "\n  " + line;
    return out;
}

}  // namespace s2tp
