// Test support for hand-made runs: a run directory whose checkpoints form a chain written by the
// product's own checkpoint writer, at a path of the test's choosing or in a scratch directory.
//
// Usage:
//   ScratchRun run("compare");                    // a run directory (checkpoints/, experiment.toml, .lock)
//   ChainedRun other(dir / "tp-two");             // the same at a path of the test's choosing
//   run.write_chain_to(Stage::parity);            // prepare .. parity, passed, each on the one before
//   run.write(Stage::time, StageStatus::passed, figures);  // chained to the parity checkpoint
#pragma once

#include "formats/checkpoint_store.h"
#include "pipeline/stage_pipeline.h"
#include "scratch_directory.h"

#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace s2tp {

// A run directory at `root` (checkpoints/, experiment.toml, .lock) whose checkpoints each name the
// digest of the one before, as the stage framework writes them.
class ChainedRun {
public:
    explicit ChainedRun(std::filesystem::path root) : root_(std::move(root)) {
        std::filesystem::create_directories(root_ / "checkpoints");
        std::ofstream(root_ / "experiment.toml") << "[experiment]\nname = 'x'\n";
        std::ofstream(root_ / ".lock");
    }
    const std::filesystem::path &root() const { return root_; }
    RunDirectory run() const { return RunDirectory(root_); }

    // The stage's checkpoint chained to the last one this run wrote, not yet written.
    Checkpoint chained(Stage stage, StageStatus status) const {
        Checkpoint c;
        c.stage = stage_name(stage);
        c.status = status;
        c.started_utc = c.finished_utc = "2026-12-01T00:00:00Z";
        c.previous_digest = last_digest_;
        return c;
    }
    // The same, written.
    Checkpoint write(Stage stage, StageStatus status, toml::table figures = {}, std::vector<std::string> reasons = {}) {
        Checkpoint c = chained(stage, status);
        c.figures = std::move(figures);
        c.reasons = std::move(reasons);
        return write(stage, std::move(c));
    }
    // A checkpoint made by the caller, written as it is (its previous_digest included).
    Checkpoint write(Stage stage, Checkpoint c) {
        write_checkpoint(checkpoint_path(run(), stage), c);
        last_digest_ = c.digest;
        return c;
    }
    // prepare up to `last`, passed, each with a one-line summary: what the later stages build on.
    void write_chain_to(Stage last) {
        for (int s = static_cast<int>(Stage::prepare); s <= static_cast<int>(last); ++s) {
            const Stage stage = static_cast<Stage>(s);
            write(stage, StageStatus::passed, toml::table{{"summary", stage_name(stage) + " ok"}});
        }
    }
    const std::string &last_digest() const { return last_digest_; }

private:
    std::filesystem::path root_;
    std::string last_digest_;
};

// A chained run in a scratch directory of its own.
class ScratchRun : private ScratchDirectory, public ChainedRun {
public:
    explicit ScratchRun(const std::string &purpose) : ScratchDirectory(purpose), ChainedRun(ScratchDirectory::path()) {}
};

}  // namespace s2tp
