// The sanitize checkpoint's figures as a struct (sage2tp-checkpoint(5), "Figures of sanitize"): every
// check, the totals over all of them, and the error and failed-check counts of the baseline once and
// of each candidate, keyed by its name.
#pragma once

#include "figures/figure_fields.h"
#include "figures/gpu_figures.h"

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct SanitizeCheck {
    std::string variant, tool, shape;
    std::optional<std::int64_t> errors;
    std::optional<bool> passed;
    std::string log;  // run-relative
    std::optional<std::int64_t> gpu;  // the index of the GPU that settled it

    static const std::vector<figure_fields::Field<SanitizeCheck>> &fields();
    bool operator==(const SanitizeCheck &o) const {
        return variant == o.variant && tool == o.tool && shape == o.shape && errors == o.errors &&
               passed == o.passed && log == o.log && gpu == o.gpu;
    }
};

// Over one variant's checks.
struct VariantSanitize {
    std::optional<std::int64_t> errors, failed_checks;

    static const std::vector<figure_fields::Field<VariantSanitize>> &fields();
    bool operator==(const VariantSanitize &o) const { return errors == o.errors && failed_checks == o.failed_checks; }
};

struct SanitizeFigures {
    std::vector<std::string> tools;
    std::vector<SanitizeCheck> checks;
    std::optional<std::int64_t> total_errors, failed_checks;  // over every check
    VariantSanitize baseline;                                 // [figures.baseline]
    std::map<std::string, VariantSanitize> candidates;        // [figures.candidates.<name>]
    std::string device;           // the first GPU's summary line
    std::vector<GpuFigures> gpus;  // every GPU of --devices, in its order
    std::optional<std::int64_t> seed;
    std::string summary;

    // The errors a candidate's verdict rests on: its own checks' and the baseline's. Unset when either
    // count is not recorded, so that a missing count is never read as a clean run.
    std::optional<std::int64_t> errors_for(const std::string &candidate) const;

    static const std::vector<figure_fields::Field<SanitizeFigures>> &fields();
    toml::table to_toml() const;
    static SanitizeFigures from_toml(const toml::table &figures);
    bool operator==(const SanitizeFigures &o) const;

    // What `sage2tp sanitize` prints: the summary, the per-GPU table when there were several GPUs or one
    // was lost, then each failed check (each check with `verbose`).
    std::string text(bool verbose) const;
};

}  // namespace s2tp
