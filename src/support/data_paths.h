// Where sage2tp finds what it ships: the default experiment manifest, workloads, patches, the
// per-arch limits table and the embedded kernels/ sources. The same relative layout is used in the
// source tree and in the installed share/sage2tp directory: <root>/kernels and <root>/data.
#pragma once

#include <filesystem>

namespace s2tp {

// The first of: $SAGE2TP_DATA_DIR, <exe>/../share/sage2tp, the configured install directory,
// <exe>/.. (a build directory inside the source tree), the configured source root, that holds
// data/experiments/temporal-pair.toml. Throws Error(usage) listing the places tried.
std::filesystem::path data_root();

inline std::filesystem::path default_manifest() { return data_root() / "data/experiments/temporal-pair.toml"; }
inline std::filesystem::path embedded_kernels() { return data_root() / "kernels"; }
inline std::filesystem::path arch_limits_table() { return data_root() / "data/arch_limits.toml"; }
inline std::filesystem::path timing_calibration_table() { return data_root() / "data/timing_calibration.toml"; }

}  // namespace s2tp
