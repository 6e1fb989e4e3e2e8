// Stage checkpoints: one TOML file per stage under <run>/checkpoints/NN-<stage>.toml.
//
// A checkpoint carries a SHA-256 of its own canonical content ([integrity].digest), so a truncated or
// hand-edited file is detected and never trusted. Writes are atomic: temporary file, fsync, rename,
// fsync of the directory. The schema is documented in sage2tp-checkpoint(5).
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

inline constexpr int checkpoint_schema_version = 1;

enum class StageStatus { passed, failed, skipped };
std::string to_string(StageStatus status);

struct Checkpoint {
    std::string stage;
    StageStatus status = StageStatus::failed;
    std::string started_utc;
    std::string finished_utc;
    std::string input_fingerprint;  // XXH3-128 hex over everything the stage consumed
    std::string previous_digest;    // [integrity].digest of the previous stage's checkpoint; "" for prepare
    toml::table host;               // hostname, sage2tp version, tool versions
    toml::table artifacts;          // name -> { path = "relative/to/run", sha256 = "..." }
    toml::table figures;            // the stage's own results
    std::vector<std::string> reasons;  // on failure (or skip): one human-readable line each
    std::string digest;             // filled by write/read: SHA-256 of the canonical content
};

// What reading a checkpoint file found. `problem` is set when the file exists but cannot be trusted.
struct CheckpointRead {
    bool exists = false;
    std::optional<Checkpoint> checkpoint;  // set only when the file is present and intact
    std::string problem;                   // e.g. "digest mismatch: edited or truncated"
};

CheckpointRead read_checkpoint(const std::filesystem::path &file);

// Serialises, stamps the digest into `checkpoint.digest`, and replaces `file` atomically.
void write_checkpoint(const std::filesystem::path &file, Checkpoint &checkpoint);

}  // namespace s2tp
