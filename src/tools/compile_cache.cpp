#include "tools/compile_cache.h"

#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"

#include <sys/stat.h>
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
constexpr const char *kLayout = "v2";
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

// One part of a key: its name, its length and its bytes, so that no two sequences of parts share a text.
void add_part(std::string &text, const std::string &name, const std::string &value) {
    text += name + " " + std::to_string(value.size()) + " " + value + "\n";
}

// The direct key's whole text (see the header).
std::string direct_key_text(const CacheableCompile &compile) {
    std::string text = std::string("sage2tp compile cache ") + kLayout + "\n";
    add_part(text, "nvcc", compile.compiler_version);
    // nvcc adds these to every command line it runs, and takes its host compiler from NVCC_CCBIN.
    for (const char *variable : {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN"}) {
        const char *value = std::getenv(variable);
        add_part(text, variable, value ? std::string("set ") + value : std::string("unset"));
    }
    for (std::size_t i = 1; i < compile.argv.size(); ++i) {
        const bool output = std::find(compile.output_arguments.begin(), compile.output_arguments.end(), i) !=
                            compile.output_arguments.end();
        add_part(text, output ? "output" : "arg", output ? std::string() : compile.argv[i]);
    }
    add_part(text, "source", sha256_file(compile.working_directory / compile.source));
    return text;
}

fs::path resolved(const CacheableCompile &compile, const std::string &file) {
    const fs::path path(file);
    return path.is_absolute() ? path : compile.working_directory / path;
}

// A manifest: "sha256 path" per file the compile read, in the dependency file's order, then
// "entry NAME", the entry that compile made.
struct Manifest {
    std::string files;  // the "sha256 path" lines
    std::string entry;  // 64 hex digits
};

bool is_digest(const std::string &text) {
    return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::optional<Manifest> parse_manifest(const std::string &text) {
    const std::size_t last = text.rfind("entry ");
    if (last == std::string::npos || (last != 0 && text[last - 1] != '\n') || text.back() != '\n') return std::nullopt;
    Manifest manifest{text.substr(0, last), text.substr(last + 6, text.size() - last - 7)};
    if (!is_digest(manifest.entry)) return std::nullopt;
    std::istringstream lines(manifest.files);
    for (std::string line; std::getline(lines, line);)
        if (line.size() < 66 || line[64] != ' ' || !is_digest(line.substr(0, 64))) return std::nullopt;
    return manifest;
}

bool files_unchanged(const CacheableCompile &compile, const std::string &files) {
    std::istringstream lines(files);
    for (std::string line; std::getline(lines, line);) {
        std::error_code ec;
        const fs::path file = resolved(compile, line.substr(65));
        if (!fs::is_regular_file(file, ec)) return false;
        if (sha256_file(file) != line.substr(0, 64)) return false;
    }
    return true;
}

// The entry key's whole text: the direct key's and the manifest's files.
std::string entry_key_text(const std::string &direct_text, const std::string &files) {
    std::string text = direct_text;
    add_part(text, "read", files);
    return text;
}

std::string digests_text(const CachedOutputs &outputs) {
    return "cubin " + sha256_hex(outputs.cubin) + "\noutput " + sha256_hex(outputs.output) + "\n" +
           (outputs.library.empty() ? "" : "library " + sha256_hex(outputs.library) + "\n");
}

std::string entry_name(const std::string &key_text, const std::string &digests) {
    std::string text;
    add_part(text, "key", key_text);
    add_part(text, "digests", digests);
    return sha256_hex(text);
}

std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    return std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

bool is_real_directory(const fs::path &path) {
    std::error_code ec;
    return fs::symlink_status(path, ec).type() == fs::file_type::directory;
}

// What is at `path` without following a link there: "a symbolic link", "a regular file", ...
std::string what_is_at(const fs::path &path) {
    std::error_code ec;
    switch (fs::symlink_status(path, ec).type()) {
        case fs::file_type::symlink: return "a symbolic link";
        case fs::file_type::regular: return "a regular file";
        case fs::file_type::directory: return "a directory";
        case fs::file_type::not_found: return "missing";
        default: return "not a regular file (a FIFO, socket or device)";
    }
}

// Removes an entry as one step for every reader: renamed aside first, then deleted, never following
// a link (a linked entry loses the link, not what it points to).
void remove_whole(const fs::path &entry, const fs::path &trash_root) {
    std::error_code ec;
    fs::create_directories(trash_root, ec);
    const fs::path aside = trash_root / (entry.filename().string() + "." + unique_suffix());
    if (fs::rename(entry, aside, ec); ec) return;  // already gone, or moved by another process
    try {
        remove_without_following(aside);
    } catch (const Error &) {
        // Left in the trash: never read again.
    }
}

// A store directory (manifests, entries, tmp) as a real directory: anything else there, a link
// above all, is removed (never followed) and a directory made in its place. A directory is never
// removed here, so that fillers racing to make it never remove each other's.
fs::path store_directory(const fs::path &path) {
    if (!is_real_directory(path)) {
        if (what_is_at(path) != "missing") remove_without_following(path);
        std::error_code ec;
        fs::create_directories(path, ec);
        if (ec) fail(ExitCode::usage, "cannot create '" + path.string() + "': " + ec.message());
        if (!is_real_directory(path)) fail(ExitCode::usage, "'" + path.string() + "' is not a directory");
    }
    return path;
}

// A plain file of the store, or nothing when it is missing or is anything else (a link is not read).
std::optional<std::string> read_store_file(const fs::path &file) {
    if (what_is_at(file) != "a regular file") return std::nullopt;
    try {
        return read_text_file(file);
    } catch (const Error &) {
        return std::nullopt;
    }
}

// The outputs of the entry at `entry` when it is whole and is `key_text`'s, else what is wrong with it.
struct EntryCheck {
    std::optional<CachedOutputs> outputs;
    std::string problem;  // empty when evicted while being read: a miss, not damage
};
EntryCheck check_entry(const fs::path &entry, const std::string &key_text) {
    if (what_is_at(entry) == "missing") return {};
    if (!is_real_directory(entry)) return {std::nullopt, "it is " + what_is_at(entry) + ", not an entry's directory"};
    for (const char *name : {"key", "digests", "cubin", "output"})
        if (const std::string what = what_is_at(entry / name); what != "a regular file")
            return {std::nullopt, is_real_directory(entry) ? std::string("its ") + name + " is " + what : std::string()};
    const std::optional<std::string> key = read_store_file(entry / "key");
    const std::optional<std::string> digests = read_store_file(entry / "digests");
    const std::optional<std::string> cubin = read_store_file(entry / "cubin");
    const std::optional<std::string> output = read_store_file(entry / "output");
    // A library is there only for a compile that linked one; its digest line says so either way.
    const bool with_library = what_is_at(entry / "library") != "missing";
    const std::optional<std::string> library = with_library ? read_store_file(entry / "library") : std::string();
    if (!is_real_directory(entry)) return {};  // evicted while being read
    if (!key || !digests || !cubin || !output || !library) return {std::nullopt, "a file of it cannot be read"};
    const CachedOutputs outputs{*cubin, *output, *library};
    if (*key != key_text) return {std::nullopt, "it records another compile's key (an entry copied, swapped or moved)"};
    if (*digests != digests_text(outputs)) return {std::nullopt, "its files do not match their SHA-256 digests"};
    if (entry.filename() != entry_name(*key, *digests))
        return {std::nullopt, "its name does not match its key and digests (its files or digests were rewritten)"};
    return {outputs, ""};
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

CompileCache::CompileCache(fs::path root, std::uint64_t max_bytes) : max_bytes_(max_bytes) {
    std::error_code ec;
    if (!fs::exists(root, ec)) {
        fs::create_directories(root.parent_path(), ec);
        if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST)
            fail(ExitCode::usage, "the compile cache '" + root.string() + "' cannot be made: " + std::strerror(errno) +
                                      "; point SAGE2TP_CACHE at another directory, or turn the cache off with SAGE2TP_CACHE=off");
    }
    root_ = fs::canonical(root, ec);
    struct stat st {};
    const std::string problem =
        ec || ::stat(root_.c_str(), &st) != 0 ? "it cannot be resolved: " + (ec ? ec.message() : std::string(std::strerror(errno)))
        : !S_ISDIR(st.st_mode)                ? std::string("it is not a directory")
        : st.st_uid != ::geteuid()            ? "it belongs to user " + std::to_string(st.st_uid) + ", not to this one"
        : (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 ? std::string("others may write to it (chmod go-w)")
                                              : std::string();
    if (!problem.empty())
        fail(ExitCode::usage, "the compile cache '" + root.string() + "' is refused: " + problem +
                                  "; an entry there could be anyone's. Point SAGE2TP_CACHE at a directory of your own, "
                                  "or turn the cache off with SAGE2TP_CACHE=off or build --no-cache");
}

std::optional<CachedOutputs> CompileCache::lookup(const CacheableCompile &compile, std::vector<std::string> &corrupt) const {
    const fs::path store = root_ / kLayout;
    for (const fs::path &dir : {store, store / "manifests", store / "entries"})
        if (what_is_at(dir) != "missing" && !is_real_directory(dir)) {
            corrupt.push_back(dir.string() + ": it is " + what_is_at(dir) + ", not the store's directory");
            try {
                remove_without_following(dir);
            } catch (const Error &) {
                // store() makes it again, or says why it cannot.
            }
            return std::nullopt;
        }
    const std::string direct_text = direct_key_text(compile);
    const fs::path manifest_file = store / "manifests" / sha256_hex(direct_text);
    if (what_is_at(manifest_file) == "missing") return std::nullopt;
    const std::optional<std::string> text = read_store_file(manifest_file);
    const std::optional<Manifest> manifest = text ? parse_manifest(*text) : std::nullopt;
    if (!manifest) {
        corrupt.push_back(manifest_file.string() + ": it is " +
                          (text ? std::string("not a manifest of this cache") : what_is_at(manifest_file)));
        remove_whole(manifest_file, store / "trash");
        return std::nullopt;
    }
    if (!files_unchanged(compile, manifest->files)) return std::nullopt;
    const fs::path entry = store / "entries" / manifest->entry;
    EntryCheck check = check_entry(entry, entry_key_text(direct_text, manifest->files));
    if (!check.outputs) {
        if (!check.problem.empty()) {
            corrupt.push_back(entry.string() + ": " + check.problem);
            remove_whole(entry, store / "trash");
        }
        return std::nullopt;
    }
    std::error_code ec;
    fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);  // the least recently used is trimmed first
    return check.outputs;
}

void CompileCache::store(const CacheableCompile &compile, const fs::path &dependency_file, const CachedOutputs &outputs) const {
    const fs::path store = root_ / kLayout;
    fs::path temporary;
    try {
        std::string files;
        for (const std::string &file : dependency_files(read_text_file(dependency_file))) {
            const fs::path path = resolved(compile, file);
            std::error_code ec;
            // A dependency that is not a plain file (or a name with a newline) cannot be checked again.
            if (!fs::is_regular_file(path, ec) || file.find('\n') != std::string::npos) return;
            files += sha256_file(path) + " " + file + "\n";
        }
        const std::string direct_text = direct_key_text(compile);
        const std::string key_text = entry_key_text(direct_text, files);
        const std::string digests = digests_text(outputs);
        const std::string name = entry_name(key_text, digests);
        store_directory(store);
        const fs::path entry = store_directory(store / "entries") / name;
        temporary = store_directory(store / "tmp") / unique_suffix();
        write_file_atomically(temporary / "key", key_text);
        write_file_atomically(temporary / "cubin", outputs.cubin);
        write_file_atomically(temporary / "output", outputs.output);
        if (!outputs.library.empty()) write_file_atomically(temporary / "library", outputs.library);
        write_file_atomically(temporary / "digests", digests);
        // Whole or not at all. An entry of this name that is whole holds these very bytes (its name is
        // their digest) and is kept; anything else there is removed and replaced.
        for (int attempt = 0; attempt < 2; ++attempt) {
            if (::rename(temporary.c_str(), entry.c_str()) == 0) break;
            const int error = errno;
            if (error != EEXIST && error != ENOTEMPTY && error != ENOTDIR && error != EISDIR)
                fail(ExitCode::usage, "cannot rename '" + temporary.string() + "' to '" + entry.string() + "': " + std::strerror(error));
            if (check_entry(entry, key_text).outputs) break;
            remove_whole(entry, store / "trash");
        }
        std::error_code ec;
        fs::remove_all(temporary, ec);
        const fs::path manifest_file = store_directory(store / "manifests") / sha256_hex(direct_text);
        if (what_is_at(manifest_file) != "missing" && what_is_at(manifest_file) != "a regular file")
            remove_without_following(manifest_file);
        write_file_atomically(manifest_file, files + "entry " + name + "\n");
    } catch (const Error &e) {
        std::error_code ec;
        if (!temporary.empty()) fs::remove_all(temporary, ec);
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
        for (const char *name : {"cubin", "output", "library", "digests", "key"}) {
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
