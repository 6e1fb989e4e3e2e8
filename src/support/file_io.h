// Files and time stamps, the way every stage writes them: a reader never sees half a file, and every
// recorded time is UTC.
#pragma once

#include <filesystem>
#include <string>

namespace s2tp {

// Atomically replaces `file` with `content` (temp file in the same directory, fsync, rename, fsync dir).
void write_file_atomically(const std::filesystem::path &file, const std::string &content);

// write_file_atomically for a path a user named on the command line (compare --svg FILE, --output
// FILE): Error(usage) when something other than a regular file is at `file` (a FIFO, a device, a
// directory, a link), which would otherwise be replaced.
void write_user_file(const std::filesystem::path &file, const std::string &content);

// The whole file as bytes. Error(usage) naming the file when it cannot be read.
std::string read_text_file(const std::filesystem::path &file);

// The current UTC time; the default format is ISO 8601 ("2026-11-29T13:59:54Z").
std::string utc_now(const char *strftime_format = "%Y-%m-%dT%H:%M:%SZ");

}  // namespace s2tp
