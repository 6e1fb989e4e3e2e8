#include "model/timing_calibration.h"

#include "formats/toml_schema.h"
#include "support/errors.h"
#include "support/number_format.h"

#include <algorithm>
#include <cmath>

namespace s2tp {

namespace {

// The two-sided normal quantile of a confidence level, by bisection on erfc (levels 0.5 to 0.9999).
double normal_quantile(double confidence) {
    double lo = 0, hi = 6;
    for (int i = 0; i < 100; ++i) {
        const double mid = (lo + hi) / 2;
        (std::erfc(mid / std::sqrt(2.0)) > 1 - confidence ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

}  // namespace

std::vector<CalibrationRow> load_timing_calibration(const std::string &path) {
    const toml::table root = parse_toml_file(path);
    TableReader top(root, path, "the timing calibration table");
    const toml::array *rows = top.optional_array_of_tables("gpu");
    top.finish();
    if (!rows || rows->empty()) fail(ExitCode::usage, path + ": no [[gpu]] rows");
    std::vector<CalibrationRow> table;
    for (const toml::node &node : *rows) {
        TableReader row(*node.as_table(), path, "[[gpu]]");
        CalibrationRow r;
        r.gpu = row.string("name");
        r.relative_sd = row.number_or("between_process_sd", -1, 0, 0.5);
        if (r.relative_sd < 0) fail(ExitCode::usage, row.position() + ": [[gpu]] needs between_process_sd");
        r.basis = row.string("basis");
        row.finish();
        table.push_back(std::move(r));
    }
    return table;
}

BetweenProcess between_process_component(const std::vector<CalibrationRow> &table, const std::string &gpu) {
    const CalibrationRow *largest = nullptr;
    for (const CalibrationRow &row : table) {
        if (row.gpu == gpu) return {row.relative_sd, true, row.basis};
        if (!largest || row.relative_sd > largest->relative_sd) largest = &row;
    }
    if (!largest) return {0, false, "no GPU model was measured"};
    return {largest->relative_sd, false,
            "not measured on " + gpu + "; the largest measured, the " + largest->gpu + "'s (" + largest->basis + ")"};
}

RatioInterval with_between_process(const RatioInterval &interval, double relative_sd) {
    if (relative_sd <= 0) return interval;
    const double z = normal_quantile(interval.confidence > 0 ? interval.confidence : 0.95);
    const double spread = z * relative_sd * interval.median;
    RatioInterval wide = interval;
    wide.lo = interval.median - std::hypot(interval.median - interval.lo, spread);
    wide.hi = interval.median + std::hypot(interval.hi - interval.median, spread);
    wide.half_width_rel = (wide.hi - wide.lo) / 2 / wide.median;
    return wide;
}

}  // namespace s2tp
