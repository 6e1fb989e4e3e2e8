// The prepare checkpoint's figures as a struct (sage2tp-checkpoint(5), "Figures of prepare"): where the
// run's trees came from and their digests. Every later stage trusts prepare through them, so each
// figure that prepare always writes is required: a checkpoint that lacks one, or holds it as another
// type, is an error naming the checkpoint file and the key, never a tree read as "".
//
// Usage:
//   checkpoint.figures = figures.to_toml();
//   const PrepareFigures f = PrepareFigures::from_toml(checkpoint.figures, checkpoint_file);
#pragma once

#include "figures/figure_fields.h"
#include "model/experiment_manifest.h"
#include "pipeline/cli.h"

#include <toml++/toml.h>

#include <string>
#include <vector>

namespace s2tp {

// What prepare recorded about one candidate, under [figures.candidates.<name>].
struct PreparedCandidateFigures {
    std::string name;
    std::string source;        // its source kind: embedded | git
    std::string commit;        // its tree's commit before the patch
    std::string patch;         // the manifest's patch path ("" without a patch)
    std::string patch_sha256;  // "" without a patch
    std::string tree_xxh3;     // XXH3-128 over trees/<name>

    static const std::vector<figure_fields::Field<PreparedCandidateFigures>> &fields();
};

// prepare's --repository, --commit, --candidate-commit and --patch values, under [figures.overrides].
const std::vector<figure_fields::Field<SourceOverrides>> &figure_fields_of(const SourceOverrides *);

struct PrepareFigures {
    std::string manifest;          // absolute path of the manifest the run was prepared from
    SourceOverrides overrides;     // prepare's --repository, --commit and --candidate-commit values
    std::string source;            // the baseline's source kind
    std::string commit;            // the baseline tree's commit
    std::string arch;              // [build] arch of the manifest
    std::string baseline_tree_xxh3;
    std::string support_tree_xxh3;  // "" without a support tree
    std::vector<PreparedCandidateFigures> candidates;  // by name
    std::string summary;           // one line: sources, commits, patches

    static const std::vector<figure_fields::Field<PrepareFigures>> &fields();
    toml::table to_toml() const;
    // Error(usage) naming `checkpoint` (the file the figures were read from) and the key when a
    // required figure is missing or of the wrong type.
    static PrepareFigures from_toml(const toml::table &figures, const std::string &checkpoint);
};

// The human summary: the baseline line, then two lines per candidate.
void print_prepare_figures(const PrepareFigures &figures, const Reporter &reporter);

}  // namespace s2tp
