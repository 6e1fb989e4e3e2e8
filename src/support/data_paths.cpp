#include "support/data_paths.h"
#include "build_config.h"

#include "support/errors.h"
#include "support/process_runner.h"

#include <cstdlib>
#include <vector>

namespace fs = std::filesystem;

namespace s2tp {

fs::path data_root() {
    std::vector<fs::path> candidates;
    if (const char *env = std::getenv("SAGE2TP_DATA_DIR"); env && *env) candidates.emplace_back(env);
    std::error_code ec;
    fs::path exe_dir = current_executable().parent_path();
    candidates.push_back(exe_dir / ".." / "share" / "sage2tp");
    candidates.emplace_back(S2TP_INSTALLED_DATA_DIR);
    candidates.push_back(exe_dir / "..");
    candidates.emplace_back(S2TP_SOURCE_ROOT);
    std::string tried;
    for (const auto &c : candidates) {
        if (fs::is_regular_file(c / "data/experiments/temporal-pair.toml", ec)) return fs::weakly_canonical(c, ec);
        tried += "\n  " + c.string();
    }
    fail(ExitCode::usage, "cannot find sage2tp's data directory (kernels/ and data/); set SAGE2TP_DATA_DIR. Tried:" + tried);
}

}  // namespace s2tp
