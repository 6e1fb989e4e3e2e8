#include "tools/torch_headers.h"

#include "support/errors.h"
#include "support/process_runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

const char *const how_to_install =
    "install torch's headers with 'pip install torch' (the python3 on PATH is asked for them), or Debian's with "
    "'apt install libtorch-dev python3-dev', or name the directories with 'sage2tp build --torch-include DIR' "
    "(repeatable) or [build] torch_include_dirs";

std::string joined(const std::vector<std::string> &items, const std::string &separator) {
    std::string text;
    for (const auto &item : items) text += (text.empty() ? "" : separator) + item;
    return text;
}

TorchHeaders checked(TorchHeaders headers) {
    std::vector<std::string> missing = missing_torch_headers(headers.include_dirs);
    if (!missing.empty())
        fail(ExitCode::missing_tool, headers.found_by + " (" + joined(headers.include_dirs, ", ") + ") lacks " +
                                         joined(missing, " and ") + "; " + how_to_install);
    return headers;
}

// The python3 on PATH, if it imports torch: its include paths, then Python's own include directory.
std::optional<TorchHeaders> python_torch_headers() {
    const auto python = find_program("python3");
    if (!python) return std::nullopt;
    ProcessOptions options;
    options.timeout = std::chrono::seconds(120);  // importing torch takes seconds on a cold cache
    ProcessResult r = run_process({python->string(), "-c",
                                   "import sysconfig, torch, torch.utils.cpp_extension as c\n"
                                   "print(torch.__version__)\n"
                                   "for d in c.include_paths(): print(d)\n"
                                   "print(sysconfig.get_paths()['include'])\n"},
                                  options);
    if (r.exit_code != 0) return std::nullopt;
    std::istringstream lines(r.out);
    std::string version, line;
    std::getline(lines, version);
    TorchHeaders headers;
    while (std::getline(lines, line))
        if (!line.empty()) headers.include_dirs.push_back(line);
    headers.found_by = "python3 (" + python->string() + ", torch " + version + ")";
    if (!missing_torch_headers(headers.include_dirs).empty()) return std::nullopt;
    return headers;
}

// Debian 12's libtorch-dev puts torch/extension.h in /usr/include and torch/all.h under
// torch/csrc/api/include; python3-dev puts Python.h in /usr/include/python3.X (the newest is taken).
std::optional<TorchHeaders> debian_torch_headers() {
    std::error_code ec;
    std::vector<std::string> pythons;
    for (const auto &entry : fs::directory_iterator("/usr/include", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("python3.", 0) == 0 && fs::is_regular_file(entry.path() / "Python.h", ec))
            pythons.push_back(entry.path().string());
    }
    if (pythons.empty()) return std::nullopt;
    std::sort(pythons.begin(), pythons.end(), [](const std::string &a, const std::string &b) {
        // python3.9 < python3.11: compare the minor version as a number
        return std::stoi(a.substr(a.rfind('.') + 1)) < std::stoi(b.substr(b.rfind('.') + 1));
    });
    TorchHeaders headers{"libtorch-dev", {"/usr/include", "/usr/include/torch/csrc/api/include", pythons.back()}};
    if (!missing_torch_headers(headers.include_dirs).empty()) return std::nullopt;
    return headers;
}

}  // namespace

std::vector<std::string> missing_torch_headers(const std::vector<std::string> &include_dirs) {
    std::vector<std::string> missing;
    std::error_code ec;
    for (const char *header : {"torch/extension.h", "torch/all.h", "Python.h"}) {
        bool found = false;
        for (const auto &dir : include_dirs) found = found || fs::is_regular_file(fs::path(dir) / header, ec);
        if (!found) missing.push_back(header);
    }
    return missing;
}

TorchHeaders find_torch_headers(const std::vector<std::string> &command_line, const std::vector<std::string> &manifest) {
    if (!command_line.empty()) return checked({"--torch-include", command_line});
    if (!manifest.empty()) return checked({"[build] torch_include_dirs", manifest});
    if (auto headers = python_torch_headers()) return *headers;
    if (auto headers = debian_torch_headers()) return *headers;
    fail(ExitCode::missing_tool,
         std::string("a kernel source needs torch's headers (needs_torch_headers = true), and none were found: the "
                     "python3 on PATH does not import torch, and /usr/include has no libtorch-dev with python3-dev; ") +
             how_to_install);
}

}  // namespace s2tp
