#include "support/hashing.h"

#include "support/errors.h"

#include <openssl/evp.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <vector>

namespace s2tp {
namespace {

std::string to_hex(const unsigned char *bytes, std::size_t size) {
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(size * 2);
    for (std::size_t i = 0; i < size; ++i) {
        hex.push_back(digits[bytes[i] >> 4]);
        hex.push_back(digits[bytes[i] & 15]);
    }
    return hex;
}

class Sha256 {
public:
    Sha256() : ctx_(EVP_MD_CTX_new()) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1)
            fail(ExitCode::internal, "OpenSSL: cannot initialise SHA-256");
    }
    ~Sha256() { EVP_MD_CTX_free(ctx_); }
    void update(const void *data, std::size_t size) {
        if (EVP_DigestUpdate(ctx_, data, size) != 1) fail(ExitCode::internal, "OpenSSL: SHA-256 update failed");
    }
    std::string hex() {
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int length = 0;
        if (EVP_DigestFinal_ex(ctx_, out, &length) != 1) fail(ExitCode::internal, "OpenSSL: SHA-256 final failed");
        return to_hex(out, length);
    }

private:
    EVP_MD_CTX *ctx_;
};

// Reads a file in chunks and hands each chunk to `sink`; a file that cannot be read is a usage error
// because every path reaching here came from the user, a manifest or the run directory.
template <typename Sink>
void for_each_chunk(const std::filesystem::path &path, Sink sink) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(ExitCode::usage, "cannot read '" + path.string() + "'");
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        std::streamsize got = in.gcount();
        if (got > 0) sink(buffer.data(), static_cast<std::size_t>(got));
    }
    if (in.bad()) fail(ExitCode::usage, "error while reading '" + path.string() + "'");
}

std::string xxh128_canonical_hex(XXH128_hash_t hash) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, hash);
    return to_hex(canonical.digest, sizeof(canonical.digest));
}

}  // namespace

std::string sha256_hex(const void *data, std::size_t size) {
    Sha256 sha;
    sha.update(data, size);
    return sha.hex();
}

std::string sha256_hex(std::string_view text) { return sha256_hex(text.data(), text.size()); }

std::string sha256_file(const std::filesystem::path &path) {
    Sha256 sha;
    for_each_chunk(path, [&](const char *p, std::size_t n) { sha.update(p, n); });
    return sha.hex();
}

struct Fingerprint::State {
    XXH3_state_t *xxh = XXH3_createState();
    ~State() { XXH3_freeState(xxh); }
};

Fingerprint::Fingerprint() : state_(std::make_unique<State>()) {
    if (!state_->xxh || XXH3_128bits_reset(state_->xxh) != XXH_OK)
        fail(ExitCode::internal, "xxHash: cannot initialise XXH3-128 state");
}

Fingerprint::~Fingerprint() = default;

Fingerprint &Fingerprint::add(std::string_view name, const void *data, std::size_t size) {
    // Frame: name length, name, value length, value. Lengths are fixed-width little-endian.
    auto put_length = [&](std::uint64_t n) {
        unsigned char le[8];
        for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(n >> (8 * i));
        XXH3_128bits_update(state_->xxh, le, sizeof le);
    };
    put_length(name.size());
    XXH3_128bits_update(state_->xxh, name.data(), name.size());
    put_length(size);
    XXH3_128bits_update(state_->xxh, data, size);
    return *this;
}

Fingerprint &Fingerprint::add(std::string_view name, std::string_view value) {
    return add(name, value.data(), value.size());
}

Fingerprint &Fingerprint::add(std::string_view name, std::int64_t value) {
    return add(name, std::to_string(value));
}

Fingerprint &Fingerprint::add_file(std::string_view name, const std::filesystem::path &path) {
    // Files are framed by their content digest so their size need not be known in advance.
    Fingerprint content;
    for_each_chunk(path, [&](const char *p, std::size_t n) { XXH3_128bits_update(content.state_->xxh, p, n); });
    return add(name, content.hex());
}

Fingerprint &Fingerprint::add_tree(std::string_view name, const std::filesystem::path &root) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
    if (ec) fail(ExitCode::usage, "cannot read directory '" + root.string() + "': " + ec.message());
    for (; it != end; it.increment(ec)) {
        if (ec) fail(ExitCode::usage, "cannot read directory '" + root.string() + "': " + ec.message());
        // lexically: fs::relative would resolve a symbolic link to wherever it points.
        std::string relative = it->path().lexically_relative(root).generic_string();
        // A git worktree's ".git" (file or directory) is git's bookkeeping, not tree content.
        if (relative == ".git" || relative.rfind(".git/", 0) == 0) {
            if (it->is_directory()) it.disable_recursion_pending();
            continue;
        }
        // A symbolic link is hashed as a link (its target's text) and never followed: its target may
        // lie outside the tree.
        if (it->is_symlink() || it->is_regular_file()) files.push_back(relative);
    }
    std::sort(files.begin(), files.end());
    Fingerprint tree;
    for (const auto &relative : files) {
        const fs::path path = root / relative;
        if (fs::is_symlink(path)) tree.add("symlink " + relative, fs::read_symlink(path).string());
        else tree.add_file(relative, path);
    }
    return add(name, tree.hex());
}

std::string Fingerprint::hex() const {
    return xxh128_canonical_hex(XXH3_128bits_digest(state_->xxh));
}

}  // namespace s2tp
