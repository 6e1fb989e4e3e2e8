// The baseline/candidate comparison of Nsight Compute metrics that `time --ncu` records: one figure
// per requested raw metric (its unit, both values, the relative change) and the largest relative
// changes picked out, which is where the explanation of a slower candidate usually starts.
//
// Usage:
//   NcuComparison c = compare_ncu_metrics(metrics, base_page, 0, cand_page, 0);
//   checkpoint_figures.insert("metrics", c.to_toml());
//   reporter.say(c.table_text());
#pragma once

#include "formats/ncu_csv.h"

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct NcuMetricFigure {
    std::string name;  // raw ncu name, e.g. "gpu__time_duration.sum"
    std::string unit;  // as the raw page's units row gives it: "ms", "%", "cycle", ""
    std::optional<double> baseline, candidate;  // nothing where ncu printed no number ("n/a")

    // (candidate - baseline) / |baseline|; nothing when either is missing or the baseline is 0.
    std::optional<double> relative_change() const;
};

struct NcuComparison {
    std::vector<NcuMetricFigure> metrics;  // in the requested order
    std::vector<std::string> largest_changes;  // names of up to three metrics, largest |relative change| first

    toml::table to_toml() const;
    static NcuComparison from_toml(const toml::table &table);  // what to_toml wrote; tolerant of absent keys
    // METRIC | UNIT | BASELINE | CANDIDATE | DELTA, then the line of the largest changes.
    std::string table_text() const;
    // "stall: barrier +922.0% (0.078 -> 0.802); ..." for the largest changes; "" when none.
    std::string largest_changes_text() const;
};

// A short reader's label for the metrics of the default list ("tensor pipe active"); "" for others.
std::string ncu_metric_label(const std::string &name);

// Figures of `metrics` from one launch of each page (rows `baseline_row` and `candidate_row`).
NcuComparison compare_ncu_metrics(const std::vector<std::string> &metrics, const NcuRawPage &baseline,
                                  std::size_t baseline_row, const NcuRawPage &candidate, std::size_t candidate_row);

}  // namespace s2tp
