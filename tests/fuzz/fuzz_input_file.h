// For harnesses whose parser takes a path: one scratch directory per fuzzer process, holding a copy
// of the project's data/ (so manifests can name the shipped patch and workloads), removed at exit.
#pragma once

#include "build_config.h"
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace s2tp::fuzz {

class ScratchData {
public:
    ScratchData() {
        // tmpfs when there is one: on ext4, rewriting a truncated file flushes it on close
        // (auto_da_alloc), which made a harness wait on the disk for every input.
        std::error_code ec;
        const std::filesystem::path base =
            std::filesystem::is_directory("/dev/shm", ec) ? std::filesystem::path("/dev/shm")
                                                          : std::filesystem::temp_directory_path();
        std::string pattern = (base / "s2tp-fuzz-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) std::abort();
        root_ = pattern;
        std::filesystem::copy(std::filesystem::path(S2TP_SOURCE_ROOT) / "data", root_ / "data",
                              std::filesystem::copy_options::recursive);
    }
    ~ScratchData() {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
    // Writes the input to data/<relative> and returns its path.
    std::filesystem::path write(const std::string &relative, const std::uint8_t *data, std::size_t size) const {
        const std::filesystem::path file = root_ / "data" / relative;
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
        out.close();
        if (!out) std::abort();
        return file;
    }

private:
    std::filesystem::path root_;
};

// A function-local static: created on the first input, removed by the exit handlers libFuzzer runs.
inline const ScratchData &scratch() {
    static const ScratchData data;
    return data;
}

}  // namespace s2tp::fuzz
