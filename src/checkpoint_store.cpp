#include "checkpoint_store.h"

#include "errors.h"
#include "hashing.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace s2tp {
namespace {

constexpr const char *integrity_key = "integrity";

toml::table to_table(const Checkpoint &c) {
    toml::table t;
    t.insert("stage", c.stage);
    t.insert("schema_version", checkpoint_schema_version);
    t.insert("status", to_string(c.status));
    t.insert("started_utc", c.started_utc);
    t.insert("finished_utc", c.finished_utc);
    t.insert("input_fingerprint", c.input_fingerprint);
    t.insert("previous_digest", c.previous_digest);
    t.insert("host", c.host);
    t.insert("artifacts", c.artifacts);
    t.insert("figures", c.figures);
    toml::array reasons;
    for (const auto &r : c.reasons) reasons.push_back(r);
    t.insert("reasons", reasons);
    return t;
}

std::string canonical_text(const toml::table &content) {
    std::ostringstream out;
    out << content;
    return out.str();
}

std::optional<StageStatus> parse_status(std::string_view text) {
    if (text == "passed") return StageStatus::passed;
    if (text == "failed") return StageStatus::failed;
    if (text == "skipped") return StageStatus::skipped;
    return std::nullopt;
}

void fsync_path(const std::filesystem::path &path, int flags) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) fail(ExitCode::internal, "cannot open '" + path.string() + "' for fsync: " + std::strerror(errno));
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) fail(ExitCode::internal, "fsync '" + path.string() + "': " + std::strerror(errno));
}

}  // namespace

std::string to_string(StageStatus status) {
    switch (status) {
        case StageStatus::passed: return "passed";
        case StageStatus::failed: return "failed";
        case StageStatus::skipped: return "skipped";
    }
    return "failed";
}

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
    std::filesystem::create_directories(directory);
    auto temporary = directory / ("." + file.filename().string() + ".tmp-" + std::to_string(::getpid()));
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail(ExitCode::internal, "cannot create '" + temporary.string() + "': " + std::strerror(errno));
    std::size_t written = 0;
    while (written < content.size()) {
        ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int saved = errno;
            ::close(fd);
            ::unlink(temporary.c_str());
            fail(ExitCode::internal, "cannot write '" + temporary.string() + "': " + std::strerror(saved));
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        ::unlink(temporary.c_str());
        fail(ExitCode::internal, "cannot flush '" + temporary.string() + "': " + std::strerror(errno));
    }
    if (::rename(temporary.c_str(), file.c_str()) != 0) {
        int saved = errno;
        ::unlink(temporary.c_str());
        fail(ExitCode::internal, "cannot rename onto '" + file.string() + "': " + std::strerror(saved));
    }
    fsync_path(directory, O_RDONLY | O_DIRECTORY);
}

void write_checkpoint(const std::filesystem::path &file, Checkpoint &checkpoint) {
    toml::table content = to_table(checkpoint);
    checkpoint.digest = sha256_hex(canonical_text(content));
    toml::table integrity;
    integrity.insert("digest", checkpoint.digest);
    integrity.insert("algorithm", "sha256 of this file's TOML re-serialised without [integrity]");
    content.insert(integrity_key, integrity);
    write_file_atomically(file, canonical_text(content) + "\n");
}

CheckpointRead read_checkpoint(const std::filesystem::path &file) {
    CheckpointRead result;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return result;
    result.exists = true;

    toml::table content;
    try {
        content = toml::parse_file(file.string());
    } catch (const toml::parse_error &e) {
        result.problem = "not valid TOML (" + std::string(e.description()) + " at line " +
                         std::to_string(e.source().begin.line) + "), probably truncated";
        return result;
    }
    auto recorded = content[integrity_key]["digest"].value<std::string>();
    const toml::table *integrity = content[integrity_key].as_table();
    // The [integrity] table is outside the digest, so it may hold nothing but what write_checkpoint put there.
    if (recorded && integrity && integrity->size() != 2) {
        result.problem = "digest mismatch: unexpected keys in [integrity], the file was edited";
        return result;
    }
    if (!recorded) {
        result.problem = "no [integrity] digest, probably truncated or written by hand";
        return result;
    }
    content.erase(integrity_key);
    if (sha256_hex(canonical_text(content)) != *recorded) {
        result.problem = "digest mismatch: the file was edited or truncated after it was written";
        return result;
    }

    Checkpoint c;
    auto version = content["schema_version"].value<int64_t>();
    auto status = parse_status(content["status"].value_or(std::string_view{}));
    if (!version || *version != checkpoint_schema_version || !status) {
        result.problem = "unsupported schema version or status";
        return result;
    }
    c.stage = content["stage"].value_or(std::string{});
    c.status = *status;
    c.started_utc = content["started_utc"].value_or(std::string{});
    c.finished_utc = content["finished_utc"].value_or(std::string{});
    c.input_fingerprint = content["input_fingerprint"].value_or(std::string{});
    c.previous_digest = content["previous_digest"].value_or(std::string{});
    if (auto *t = content["host"].as_table()) c.host = *t;
    if (auto *t = content["artifacts"].as_table()) c.artifacts = *t;
    if (auto *t = content["figures"].as_table()) c.figures = *t;
    if (auto *reasons = content["reasons"].as_array())
        for (const auto &r : *reasons)
            if (auto s = r.value<std::string>()) c.reasons.push_back(*s);
    c.digest = *recorded;
    result.checkpoint = std::move(c);
    return result;
}

}  // namespace s2tp
