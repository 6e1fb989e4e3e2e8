#include "pipeline/file_artifact.h"

#include "support/errors.h"
#include "support/hashing.h"

namespace s2tp {

FileArtifact FileArtifact::of(const RunDirectory &run, const std::filesystem::path &file) {
    return {run.relative(file), sha256_file(file)};
}

std::optional<FileArtifact> FileArtifact::from_toml(toml::node_view<const toml::node> node) {
    const auto path = node["path"].value<std::string>();
    const auto sha256 = node["sha256"].value<std::string>();
    if (!path || !sha256) return std::nullopt;
    return FileArtifact{*path, *sha256};
}

toml::table FileArtifact::to_toml() const { return toml::table{{"path", path}, {"sha256", sha256}}; }

FileArtifact::State FileArtifact::state(const RunDirectory &run) const {
    const std::filesystem::path file = run.resolve(path);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) return State::missing;
    return sha256_file(file) == sha256 ? State::intact : State::changed;
}

std::string FileArtifact::damage(const RunDirectory &run) const {
    try {
        switch (state(run)) {
        case State::intact: return "";
        case State::missing: return "artifact " + path + " is missing";
        case State::changed: return "artifact " + path + " no longer has the sha256 its checkpoint records";
        }
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

}  // namespace s2tp
