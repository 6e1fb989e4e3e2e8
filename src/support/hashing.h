// Digests used across sage2tp: SHA-256 (OpenSSL libcrypto) for artifacts that people compare by hand
// (outputs, patches, cubins), XXH3-128 for input fingerprints that only sage2tp compares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace s2tp {

std::string sha256_hex(const void *data, std::size_t size);
std::string sha256_hex(std::string_view text);
std::string sha256_file(const std::filesystem::path &path);  // throws Error(usage) if unreadable

// Streaming XXH3-128 over named parts. Every part is framed by its name and length, so
// ("ab","c") and ("a","bc") never collide and reordering parts changes the digest.
class Fingerprint {
public:
    Fingerprint();
    ~Fingerprint();
    Fingerprint(const Fingerprint &) = delete;
    Fingerprint &operator=(const Fingerprint &) = delete;

    Fingerprint &add(std::string_view name, const void *data, std::size_t size);
    Fingerprint &add(std::string_view name, std::string_view value);
    Fingerprint &add(std::string_view name, std::int64_t value);
    Fingerprint &add_file(std::string_view name, const std::filesystem::path &path);
    // Every regular file below root, in sorted relative-path order, with its relative path as name.
    // A top-level ".git" (a worktree's link file or a repository) is left out: it is not content.
    Fingerprint &add_tree(std::string_view name, const std::filesystem::path &root);
    std::string hex() const;  // 32 lowercase hex digits

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace s2tp
