// Where sage2tp finds a CUDA toolkit program (nvcc, compute-sanitizer, ncu, cuobjdump, nvdisasm), in
// one search order for all of them, so that build and the GPU stages never pick tools from two
// different toolkits: $CUDA_HOME/bin, then $CUDA_PATH/bin, then PATH, then /usr/local/cuda/bin.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace s2tp {

std::optional<std::filesystem::path> find_cuda_tool(const std::string &name);

// That search order in words, for the message of a tool that was not found.
const char *cuda_tool_search_order();

}  // namespace s2tp
