// Where a kernel source's host code finds torch's headers (<torch/extension.h>, which includes
// <torch/all.h> and <Python.h>) when it is compiled with plain nvcc instead of torch's extension
// build. Upstream SageAttention's .cu files include them for their host wrappers only; the device
// code does not depend on them, so any torch's headers give the same cubin.
#pragma once

#include <string>
#include <vector>

namespace s2tp {

struct TorchHeaders {
    std::string found_by;                   // "--torch-include", "[build] torch_include_dirs", "python3 ...", "libtorch-dev"
    std::vector<std::string> include_dirs;  // passed to nvcc as -I, in this order
};

// The first of: `command_line` (build --torch-include), `manifest` ([build] torch_include_dirs), the
// torch of the python3 on PATH (torch.utils.cpp_extension.include_paths() plus Python's include
// directory), Debian's libtorch-dev with python3-dev under /usr/include. A setting given explicitly is
// used or refused, never skipped. Throws Error(missing_tool) saying what is missing and both ways to
// install the headers (pip install torch; apt install libtorch-dev python3-dev).
TorchHeaders find_torch_headers(const std::vector<std::string> &command_line, const std::vector<std::string> &manifest);

// The headers a set of include directories lacks, e.g. "Python.h"; empty when complete.
std::vector<std::string> missing_torch_headers(const std::vector<std::string> &include_dirs);

}  // namespace s2tp
