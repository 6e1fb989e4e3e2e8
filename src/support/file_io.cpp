#include "support/file_io.h"

#include "support/errors.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <vector>

namespace s2tp {
namespace {

void fsync_path(const std::filesystem::path &path, int flags) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) fail(ExitCode::internal, "cannot open '" + path.string() + "' for fsync: " + std::strerror(errno));
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) fail(ExitCode::internal, "fsync '" + path.string() + "': " + std::strerror(errno));
}

}  // namespace

std::string utc_now(const char *strftime_format) {
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char buffer[64];
    std::strftime(buffer, sizeof buffer, strftime_format, &tm);
    return buffer;
}

int create_temporary_file(const std::filesystem::path &directory, const std::string &prefix,
                          std::filesystem::path &temporary) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; ++attempt) {
        unsigned char random[12];
        if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random))
            fail(ExitCode::internal, std::string("getrandom: ") + std::strerror(errno));
        std::string suffix;
        for (unsigned char byte : random) suffix += alphabet[byte % (sizeof alphabet - 1)];
        temporary = directory / (prefix + suffix);
        const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) return fd;
        if (errno != EEXIST) fail(ExitCode::usage, "cannot create '" + temporary.string() + "': " + std::strerror(errno));
    }
    fail(ExitCode::usage, "cannot create a temporary file in '" + directory.string() + "': every name tried exists");
}

void write_file_atomically(const std::filesystem::path &file, const std::string &content) {
    auto directory = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    // A refusal of the file system (a file where a directory should be, permissions, a full disk) is
    // the user's setup to fix: exit 2, naming the path.
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    if (ec) fail(ExitCode::usage, "cannot create directory '" + directory.string() + "': " + ec.message());
    std::filesystem::path temporary;
    const int fd = create_temporary_file(directory, "." + file.filename().string() + ".tmp-", temporary);
    std::size_t written = 0;
    while (written < content.size()) {
        ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int saved = errno;
            ::close(fd);
            ::unlink(temporary.c_str());
            fail(ExitCode::usage, "cannot write '" + temporary.string() + "': " + std::strerror(saved));
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        ::unlink(temporary.c_str());
        fail(ExitCode::usage, "cannot flush '" + temporary.string() + "': " + std::strerror(errno));
    }
    if (::rename(temporary.c_str(), file.c_str()) != 0) {
        int saved = errno;
        ::unlink(temporary.c_str());
        fail(ExitCode::usage, "cannot rename onto '" + file.string() + "': " + std::strerror(saved));
    }
    fsync_path(directory, O_RDONLY | O_DIRECTORY);
}

void write_user_file(const std::filesystem::path &file, const std::string &content) {
    struct stat st {};
    if (::lstat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        fail(ExitCode::usage, "will not write '" + file.string() + "': it exists and is " +
                                  (S_ISLNK(st.st_mode)   ? "a symbolic link"
                                   : S_ISDIR(st.st_mode) ? "a directory"
                                                         : "not a regular file (a FIFO, socket or device)") +
                                  "; name a regular file or a new path");
    write_file_atomically(file, content);
}

std::string read_text_file(const std::filesystem::path &file, std::size_t max_bytes) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below like any other
    // file that is not regular (a directory, a device such as /dev/zero).
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fail(ExitCode::usage, "cannot read '" + file.string() + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(ExitCode::usage, "cannot read '" + file.string() + "': it is " +
                                  (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file (a FIFO, socket or device)"));
    }
    if (static_cast<std::size_t>(st.st_size) > max_bytes) {
        ::close(fd);
        fail(ExitCode::usage, "cannot read '" + file.string() + "': it holds " + std::to_string(st.st_size) +
                                  " bytes, more than the " + std::to_string(max_bytes) + " a file of this kind may");
    }
    std::string text;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int saved = errno;
            ::close(fd);
            fail(ExitCode::usage, "cannot read '" + file.string() + "': " + std::strerror(saved));
        }
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > max_bytes) {  // grew while being read
            ::close(fd);
            fail(ExitCode::usage, "cannot read '" + file.string() + "': it grew past " + std::to_string(max_bytes) + " bytes");
        }
    }
    ::close(fd);
    return text;
}

namespace {

[[noreturn]] void removal_failed(const std::filesystem::path &shown, ExitCode code) {
    fail(code, "cannot remove '" + shown.string() + "': " + std::strerror(errno));
}

// Removes the entry `name` of the directory open as `directory_fd`; `shown` is its path for messages.
void remove_entry_at(int directory_fd, const std::string &name, const std::filesystem::path &shown, ExitCode code) {
    struct stat st {};
    if (::fstatat(directory_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return;
        removal_failed(shown, code);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(directory_fd, name.c_str(), 0) != 0 && errno != ENOENT) removal_failed(shown, code);
        return;
    }
    const int fd = ::openat(directory_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) removal_failed(shown, code);
    DIR *listing = ::fdopendir(fd);
    if (!listing) {
        ::close(fd);
        removal_failed(shown, code);
    }
    std::vector<std::string> children;
    while (const dirent *entry = ::readdir(listing)) {
        const std::string child = entry->d_name;
        if (child != "." && child != "..") children.push_back(child);
    }
    try {
        for (const std::string &child : children) remove_entry_at(::dirfd(listing), child, shown / child, code);
    } catch (...) {
        ::closedir(listing);
        throw;
    }
    ::closedir(listing);
    if (::unlinkat(directory_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) removal_failed(shown, code);
}

}  // namespace

void remove_without_following(const std::filesystem::path &path, ExitCode code) {
    const std::filesystem::path absolute = std::filesystem::absolute(path).lexically_normal();
    std::filesystem::path name = absolute.filename();
    std::filesystem::path parent = absolute.parent_path();
    if (name.empty()) {  // "dir/" names dir
        name = parent.filename();
        parent = parent.parent_path();
    }
    const int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent_fd < 0) {
        if (errno == ENOENT) return;
        removal_failed(absolute, code);
    }
    try {
        remove_entry_at(parent_fd, name.string(), absolute, code);
    } catch (...) {
        ::close(parent_fd);
        throw;
    }
    ::close(parent_fd);
}

}  // namespace s2tp
