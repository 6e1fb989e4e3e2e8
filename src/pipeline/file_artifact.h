// A file a stage wrote or read, as a checkpoint (or the phases record) keeps it: a table
// { path = "<relative to the run>", sha256 = "<of its bytes>" }, possibly with keys of the stage's own
// beside them (a compile's log and seconds). Every such record is made with FileArtifact::of and checked
// with FileArtifact::damage: inspect_run checks every one a checkpoint holds, so a stage checks only
// facts that no artifact holds (the pin of the time stage).
//
// Usage:
//   result.artifacts.insert("time_json", FileArtifact::of(run, json).to_toml());
//   if (auto recorded = FileArtifact::from_toml(checkpoint.artifacts["time_json"]))
//       if (std::string why = recorded->damage(run); !why.empty()) ...;
#pragma once

#include "pipeline/run_directory.h"

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <string>

namespace s2tp {

struct FileArtifact {
    std::string path;    // relative to the run (RunDirectory::relative)
    std::string sha256;  // lowercase hex

    // `file` (inside the run) as it is now.
    static FileArtifact of(const RunDirectory &run, const std::filesystem::path &file);
    // The record of a table holding both string keys; nullopt for anything else.
    static std::optional<FileArtifact> from_toml(toml::node_view<const toml::node> node);
    toml::table to_toml() const;

    // Whether the file is still as recorded; Error(usage) when the path would leave the run.
    enum class State { intact, missing, changed };
    State state(const RunDirectory &run) const;
    // Why it is not: "artifact P is missing", "artifact P no longer has the sha256 its checkpoint
    // records", or why P cannot be in the run; "" when it is intact.
    std::string damage(const RunDirectory &run) const;
};

}  // namespace s2tp
