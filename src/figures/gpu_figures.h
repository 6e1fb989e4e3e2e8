// One GPU of a stage run over several (`--devices`), as the checkpoint records it (figures.gpus of
// sanitize, parity and time, sage2tp-checkpoint(5)): who the GPU is, as nvbench names a device (name,
// UUID, PCI bus id, SM count, SM clock, driver), and what it did: the checks it settled, passed and
// failed, and the device error that ended it when it was lost.
#pragma once

#include "figures/figure_fields.h"
#include "gpu/gpu_runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct GpuFigures {
    std::optional<std::int64_t> index;  // within CUDA_VISIBLE_DEVICES
    std::string name, uuid, pci_bus_id, driver;
    std::optional<std::int64_t> sm_count;
    std::optional<double> sm_clock_mhz;      // the default (boost) clock
    std::optional<double> sample_clock_mhz;  // time: the median SM clock during its kept samples
    std::optional<std::int64_t> checks;          // dealt to it (moved ones included)
    std::optional<std::int64_t> ran;             // of those, run to the end
    std::optional<std::int64_t> passed, failed;  // of those, where a check has a verdict of its own (sanitize)
    std::string lost;  // the device error that ended it; "" while it was not lost

    static GpuFigures of(const DeviceFacts &device);  // who it is; checks and ran at 0

    static const std::vector<figure_fields::Field<GpuFigures>> &fields();
    bool operator==(const GpuFigures &o) const;
};

// The per-GPU table that the stage commands, status and report print: one line per GPU, its index,
// name, PCI bus id, the checks it ran of those dealt to it (and passed, where recorded), its clock
// while sampled (time), and LOST with the error when it was.
std::vector<std::string> gpu_table_lines(const std::vector<GpuFigures> &gpus);
// Whether a stage's text, status and report show that table: with several GPUs, or when its one GPU
// was lost.
bool shows_gpu_table(const std::vector<GpuFigures> &gpus);
// `text` followed by that table, indented, on lines of its own when it shows; no final newline.
std::string with_gpu_table(const std::string &text, const std::vector<GpuFigures> &gpus);

}  // namespace s2tp
