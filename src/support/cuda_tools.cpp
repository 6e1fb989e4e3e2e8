#include "support/cuda_tools.h"

#include "support/process_runner.h"

#include <cstdlib>

namespace fs = std::filesystem;

namespace s2tp {

std::optional<fs::path> find_cuda_tool(const std::string &name) {
    for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
        if (const char *root = std::getenv(variable); root && *root)
            if (auto found = find_program((fs::path(root) / "bin" / name).string())) return found;
    if (auto found = find_program(name)) return found;
    return find_program("/usr/local/cuda/bin/" + name);
}

const char *cuda_tool_search_order() { return "$CUDA_HOME/bin, $CUDA_PATH/bin, PATH, then /usr/local/cuda/bin"; }

}  // namespace s2tp
