// The build stage's compile cache: a content-addressed store of nvcc's outputs (the cubin and what
// nvcc printed, whose ptxas -v lines the build parses), so that a compile whose inputs were compiled
// before, in this run or another, on this arch or the one before, is copied instead of run.
//
// Why a store of our own and not ccache (sage2tp-build(1), COMPILE CACHE): ccache 4.7 refuses nvcc
// -cubin as "called for link", it keys nvcc by the compiler's path and mtime rather than its version,
// it cannot say per compile whether it hit, and it falls back to compiling on a corrupt entry or a full
// disk without a word; the build must report all three.
//
// Keys, in two levels as a make-style dependency file needs (the headers a compile reads are known
// only after it ran):
//   * the direct key: nvcc's version, the environment variables nvcc reads its flags and host compiler
//     from, the argument vector (each argument framed by its length; the nvcc path and the output
//     paths, which the caller names by position, stand as placeholders, so that a moved toolkit or a
//     staging directory is the same compile) and the compiled file's bytes. It names a manifest: every
//     file the last compile with that key read (nvcc -MD), with its SHA-256, and the entry it made.
//   * the entry key: the direct key's whole text and the manifest's files. An entry records that
//     text, and the SHA-256 of the cubin and the output; its name is the SHA-256 of both.
// A lookup re-hashes every file of the manifest (any difference is a miss), then serves an entry only
// when the key it records is the one the compile derives, its files match its digests and its name
// matches both: an entry copied, swapped or linked from another compile, or re-digested after its cubin
// was replaced, is reported, removed and compiled again. No link inside the store is followed.
// Entries appear whole (written into a temporary directory in the store and renamed into place), so
// two fillers never see each other's half-written entries.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct CompileCacheSettings {
    std::optional<std::filesystem::path> root;  // unset: the cache is off
    std::string off_reason;                     // why it is off, for build's output
    std::uint64_t max_bytes = 0;
};

// SAGE2TP_CACHE=DIR (or "off"), else $XDG_CACHE_HOME/sage2tp, else $HOME/.cache/sage2tp, else off;
// SAGE2TP_CACHE_SIZE=N[K|M|G] bounds it (default 2G). Error(usage) naming the variable for a bad value.
CompileCacheSettings compile_cache_settings();

// One compile as the cache sees it.
struct CacheableCompile {
    std::vector<std::string> argv;                  // as run; argv[0] is nvcc
    std::filesystem::path working_directory;        // relative paths in argv and the dependency file
    std::filesystem::path source;                   // the compiled file, relative to working_directory
    std::string compiler_version;                   // nvcc_version()
    // Positions in argv of the output paths (the values of -o and -MF): not inputs, left out of the key.
    std::vector<std::size_t> output_arguments;
};

struct CachedOutputs {
    std::string cubin;
    std::string output;
    std::string library;  // a host-call library the compile also linked; empty (and not stored) otherwise
};

class CompileCache {
public:
    // `root` is resolved once (a link to the cache is followed here, and nowhere inside it) and made
    // when missing. Error(usage) naming it when it is not a directory, is not owned by this user, or
    // others may write to it: an entry there could be anyone's.
    CompileCache(std::filesystem::path root, std::uint64_t max_bytes);

    const std::filesystem::path &root() const { return root_; }

    // The stored outputs when every file the stored compile read is unchanged. A corrupt entry is
    // removed and its description appended to `corrupt` (so that it is reported once and then rebuilt).
    std::optional<CachedOutputs> lookup(const CacheableCompile &compile, std::vector<std::string> &corrupt) const;

    // Stores a successful compile's outputs, with the files listed in `dependency_file` (nvcc -MD -MF)
    // as what it read; then trims the store to its size limit, oldest use first. Error(usage) naming the
    // cache and the reason when the store cannot be written (a full disk): nothing the build recorded is
    // touched by that. Storing an entry that another process stored first keeps theirs.
    void store(const CacheableCompile &compile, const std::filesystem::path &dependency_file, const CachedOutputs &outputs) const;

private:
    std::filesystem::path root_;
    std::uint64_t max_bytes_;
};

// The files of a make-style dependency rule ("out: a.cu b.h \\\n c.h"), with "\ " unescaped.
std::vector<std::string> dependency_files(const std::string &rule);

}  // namespace s2tp
