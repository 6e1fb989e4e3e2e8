// A directory of one test's own (or one test suite's), for the files it makes.
//
// Usage:
//   ScratchDirectory dir("manifest");             // /tmp/s2tp-manifest-XXXXXX, removed with `dir`
//   std::ofstream(dir / "experiment.toml") << text;
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace s2tp {

// A fresh directory, made atomically with a unique name (mkdtemp), removed with everything in it when
// the test ends: no test reads another's files, and none leaves its own behind.
class ScratchDirectory {
public:
    explicit ScratchDirectory(const std::string &purpose) {
        std::string pattern = (std::filesystem::temp_directory_path() / ("s2tp-" + purpose + "-XXXXXX")).string();
        if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
        path_ = pattern;
    }
    ~ScratchDirectory() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    ScratchDirectory(const ScratchDirectory &) = delete;
    ScratchDirectory &operator=(const ScratchDirectory &) = delete;

    const std::filesystem::path &path() const { return path_; }
    std::filesystem::path operator/(const std::filesystem::path &name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

}  // namespace s2tp
