// Files and time stamps, the way every stage writes them: a reader never sees half a file, no write or
// delete follows a symbolic link planted in a run, and every recorded time is UTC.
#pragma once

#include "support/errors.h"

#include <cstddef>
#include <filesystem>
#include <string>

namespace s2tp {

// Atomically replaces `file` with `content`: a temporary file of a random name in the same directory,
// made with O_EXCL | O_NOFOLLOW (so that a link planted at any predictable name is never written
// through), fsync, rename (which replaces a link at `file` itself, never its target), fsync dir.
void write_file_atomically(const std::filesystem::path &file, const std::string &content);

// write_file_atomically for a path a user named on the command line (compare --svg FILE, --output
// FILE): Error(usage) when something other than a regular file is at `file` (a FIFO, a device, a
// directory, a link), which would otherwise be replaced.
void write_user_file(const std::filesystem::path &file, const std::string &content);

// Creates `temporary` (which must not exist: O_EXCL | O_NOFOLLOW) next to where it will be renamed,
// with a random suffix after `prefix`; returns its file descriptor and sets `temporary`.
int create_temporary_file(const std::filesystem::path &directory, const std::string &prefix,
                          std::filesystem::path &temporary);

// The largest file read_text_file reads unless told otherwise, and the largest TOML file (a manifest, a
// checkpoint, pins): far above any real one, far below what would exhaust memory.
constexpr std::size_t max_file_bytes = std::size_t(4) << 30;
constexpr std::size_t max_toml_bytes = std::size_t(64) << 20;

// The whole file as bytes. Error(usage) naming the file when it cannot be read, is not a regular file
// (a directory, a FIFO, a device such as /dev/zero: never read, never waited on) or holds more than
// `max_bytes`.
std::string read_text_file(const std::filesystem::path &file, std::size_t max_bytes = max_file_bytes);

// Removes `path` (a file, a link, or a directory with everything in it) without ever following a
// symbolic link: a link inside is removed itself, never what it points to. Nothing when `path` does not
// exist. Error(`code`) naming the entry that cannot be removed.
void remove_without_following(const std::filesystem::path &path, ExitCode code = ExitCode::usage);

// The current UTC time; the default format is ISO 8601 ("2026-11-29T13:59:54Z").
std::string utc_now(const char *strftime_format = "%Y-%m-%dT%H:%M:%SZ");

}  // namespace s2tp
