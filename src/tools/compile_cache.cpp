#include "tools/compile_cache.h"

#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// Bumped whenever the layout or the key changes, so that an older store is never read.
constexpr const char *kLayout = "v1";
constexpr std::uint64_t kDefaultMaxBytes = 2ull << 30;

std::uint64_t parse_size(const std::string &text) {
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
    std::uint64_t scale = 1;
    const std::string suffix = end ? std::string(end) : std::string();
    if (suffix == "K" || suffix == "k") scale = 1ull << 10;
    else if (suffix == "M" || suffix == "m") scale = 1ull << 20;
    else if (suffix == "G" || suffix == "g") scale = 1ull << 30;
    else if (!suffix.empty()) scale = 0;
    if (text.empty() || end == text.c_str() || errno || scale == 0 || n == 0 || text[0] == '-')
        fail(ExitCode::usage, "SAGE2TP_CACHE_SIZE='" + text + "' is not a size (a positive number of bytes, or N followed by K, M or G)");
    return static_cast<std::uint64_t>(n) * scale;
}

// Frames every part (see Fingerprint), so that no two argument vectors share a key.
std::string direct_key(const CacheableCompile &compile) {
    std::string text = std::string("sage2tp compile cache ") + kLayout + "\n";
    auto part = [&text](const std::string &name, const std::string &value) {
        text += name + " " + std::to_string(value.size()) + " " + value + "\n";
    };
    part("nvcc", compile.compiler_version);
    for (std::size_t i = 1; i < compile.argv.size(); ++i) {
        const std::string &arg = compile.argv[i];
        part("arg", arg);
        // Where the outputs go is not an input.
        if ((arg == "-o" || arg == "-MF") && i + 1 < compile.argv.size()) ++i;
    }
    part("source", sha256_file(compile.working_directory / compile.source));
    return sha256_hex(text);
}

fs::path resolved(const CacheableCompile &compile, const std::string &file) {
    const fs::path path(file);
    return path.is_absolute() ? path : compile.working_directory / path;
}

// "sha256 path" per line, in the dependency file's order.
std::optional<std::string> manifest_digests_match(const CacheableCompile &compile, const std::string &manifest) {
    std::istringstream lines(manifest);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.size() < 66 || line[64] != ' ') return std::nullopt;
        std::error_code ec;
        const fs::path file = resolved(compile, line.substr(65));
        if (!fs::is_regular_file(file, ec)) return std::nullopt;
        if (sha256_file(file) != line.substr(0, 64)) return std::nullopt;
    }
    return manifest;
}

std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    return std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// Removes a directory as one step for every reader: renamed aside first, then deleted.
void remove_whole(const fs::path &dir, const fs::path &trash_root) {
    std::error_code ec;
    fs::create_directories(trash_root, ec);
    const fs::path aside = trash_root / (dir.filename().string() + "." + unique_suffix());
    if (fs::rename(dir, aside, ec); ec) return;  // already gone, or moved by another process
    fs::remove_all(aside, ec);
}

std::optional<std::string> read_if_present(const fs::path &file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return std::nullopt;
    try {
        return read_text_file(file);
    } catch (const Error &) {
        return std::nullopt;
    }
}

}  // namespace

CompileCacheSettings compile_cache_settings() {
    CompileCacheSettings settings;
    settings.max_bytes = kDefaultMaxBytes;
    if (const char *size = std::getenv("SAGE2TP_CACHE_SIZE"); size && *size) settings.max_bytes = parse_size(size);
    const char *chosen = std::getenv("SAGE2TP_CACHE");
    if (chosen && std::string(chosen) == "off") {
        settings.off_reason = "SAGE2TP_CACHE=off";
        return settings;
    }
    if (chosen && *chosen) {
        settings.root = fs::absolute(chosen).lexically_normal();
        return settings;
    }
    if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
        settings.root = fs::path(xdg) / "sage2tp";
    else if (const char *home = std::getenv("HOME"); home && *home)
        settings.root = fs::path(home) / ".cache" / "sage2tp";
    else
        settings.off_reason = "neither SAGE2TP_CACHE, XDG_CACHE_HOME nor HOME is set";
    return settings;
}

std::vector<std::string> dependency_files(const std::string &rule) {
    std::vector<std::string> files;
    std::string current;
    bool target_done = false;
    auto flush = [&] {
        if (!current.empty()) {
            if (target_done) files.push_back(current);
            else if (current.back() == ':') target_done = true, current.pop_back();
        }
        current.clear();
    };
    for (std::size_t i = 0; i < rule.size(); ++i) {
        const char c = rule[i];
        if (c == '\\' && i + 1 < rule.size() && (rule[i + 1] == '\n' || rule[i + 1] == '\r')) {
            flush();
            ++i;
        } else if (c == '\\' && i + 1 < rule.size() && rule[i + 1] == ' ') {
            current += ' ';
            ++i;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            flush();
        } else if (c == ':' && !target_done && (i + 1 == rule.size() || rule[i + 1] == ' ' || rule[i + 1] == '\n')) {
            current += c;
            flush();
        } else {
            current += c;
        }
    }
    flush();
    return files;
}

CompileCache::CompileCache(fs::path root, std::uint64_t max_bytes) : root_(std::move(root)), max_bytes_(max_bytes) {}

std::optional<CachedOutputs> CompileCache::lookup(const CacheableCompile &compile, std::vector<std::string> &corrupt) const {
    const fs::path store = root_ / kLayout;
    const std::string direct = direct_key(compile);
    const std::optional<std::string> manifest = read_if_present(store / "manifests" / direct);
    if (!manifest || !manifest_digests_match(compile, *manifest)) return std::nullopt;
    const fs::path entry = store / "entries" / sha256_hex(direct + "\n" + *manifest);
    std::error_code ec;
    if (!fs::is_directory(entry, ec)) return std::nullopt;
    const std::optional<std::string> digests = read_if_present(entry / "digests");
    const std::optional<std::string> cubin = read_if_present(entry / "cubin");
    const std::optional<std::string> output = read_if_present(entry / "output");
    // Evicted while being read: a miss, not damage.
    if (!fs::is_directory(entry, ec)) return std::nullopt;
    const std::string expected = cubin && output ? "cubin " + sha256_hex(*cubin) + "\noutput " + sha256_hex(*output) + "\n" : "";
    if (!digests || expected.empty() || *digests != expected) {
        corrupt.push_back(entry.string() + ": " +
                          (!digests ? std::string("its digests file is missing")
                           : !cubin || !output ? std::string("a file is missing")
                                               : std::string("its files do not match their SHA-256 digests")));
        remove_whole(entry, store / "trash");
        return std::nullopt;
    }
    fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);  // the least recently used is trimmed first
    return CachedOutputs{*cubin, *output};
}

void CompileCache::store(const CacheableCompile &compile, const fs::path &dependency_file, const CachedOutputs &outputs) const {
    const fs::path store = root_ / kLayout;
    const fs::path temporary = store / "tmp" / unique_suffix();
    try {
        std::string manifest;
        for (const std::string &file : dependency_files(read_text_file(dependency_file))) {
            const fs::path path = resolved(compile, file);
            std::error_code ec;
            // A dependency that is not a plain file (or a name with a newline) cannot be checked again.
            if (!fs::is_regular_file(path, ec) || file.find('\n') != std::string::npos) return;
            manifest += sha256_file(path) + " " + file + "\n";
        }
        const std::string direct = direct_key(compile);
        const fs::path entry = store / "entries" / sha256_hex(direct + "\n" + manifest);
        write_file_atomically(temporary / "cubin", outputs.cubin);
        write_file_atomically(temporary / "output", outputs.output);
        write_file_atomically(temporary / "digests",
                              "cubin " + sha256_hex(outputs.cubin) + "\noutput " + sha256_hex(outputs.output) + "\n");
        std::error_code ec;
        fs::create_directories(entry.parent_path(), ec);
        if (ec) fail(ExitCode::usage, "cannot create '" + entry.parent_path().string() + "': " + ec.message());
        // Whole or not at all; a filler that came first keeps its entry, the same compile's outputs.
        if (::rename(temporary.c_str(), entry.c_str()) != 0 && errno != EEXIST && errno != ENOTEMPTY)
            fail(ExitCode::usage, "cannot rename '" + temporary.string() + "' to '" + entry.string() + "': " + std::strerror(errno));
        fs::remove_all(temporary, ec);
        write_file_atomically(store / "manifests" / direct, manifest);
    } catch (const Error &e) {
        std::error_code ec;
        fs::remove_all(temporary, ec);
        fail(ExitCode::usage, "the compile cache " + root_.string() + " cannot be written (" + e.what() +
                                  "); free space there, point SAGE2TP_CACHE at another directory, or turn the cache off "
                                  "with SAGE2TP_CACHE=off or build --no-cache");
    }

    // Trim to the limit, oldest use first.
    struct Aged {
        fs::file_time_type used;
        std::uint64_t bytes;
        fs::path path;
    };
    std::vector<Aged> entries;
    std::uint64_t total = 0;
    std::error_code ec;
    for (fs::directory_iterator it(store / "entries", ec), end; !ec && it != end; it.increment(ec)) {
        Aged aged{it->last_write_time(ec), 0, it->path()};
        for (const char *name : {"cubin", "output", "digests"}) {
            std::error_code size_ec;
            const auto size = fs::file_size(it->path() / name, size_ec);
            if (!size_ec) aged.bytes += size;
        }
        total += aged.bytes;
        entries.push_back(std::move(aged));
    }
    if (total <= max_bytes_) return;
    std::sort(entries.begin(), entries.end(), [](const Aged &a, const Aged &b) { return a.used < b.used; });
    for (const Aged &aged : entries) {
        if (total <= max_bytes_ / 10 * 8) break;
        remove_whole(aged.path, store / "trash");
        total -= aged.bytes;
    }
}

}  // namespace s2tp
