#include "support/file_io.h"

#include "support/errors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>

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

void write_file_atomically(const std::filesystem::path &file, const std::string &content) {
    auto directory = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    // A refusal of the file system (a file where a directory should be, permissions, a full disk) is
    // the user's setup to fix: exit 2, naming the path.
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    if (ec) fail(ExitCode::usage, "cannot create directory '" + directory.string() + "': " + ec.message());
    auto temporary = directory / ("." + file.filename().string() + ".tmp-" + std::to_string(::getpid()));
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail(ExitCode::usage, "cannot create '" + temporary.string() + "': " + std::strerror(errno));
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
    std::error_code ec;
    const auto status = std::filesystem::symlink_status(file, ec);
    if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        fail(ExitCode::usage, "will not write '" + file.string() + "': it exists and is " +
                                  (std::filesystem::is_symlink(status)     ? "a symbolic link"
                                   : std::filesystem::is_directory(status) ? "a directory"
                                                                           : "not a regular file (a FIFO, socket or device)") +
                                  "; name a regular file or a new path");
    write_file_atomically(file, content);
}

std::string read_text_file(const std::filesystem::path &file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(ExitCode::usage, "cannot read '" + file.string() + "'");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace s2tp
