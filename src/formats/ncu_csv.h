// Reads `ncu --import REPORT.ncu-rep --csv --page raw`: one header row of metric names ("ID",
// "Kernel Name", ..., "gpu__time_duration.sum", ...), one row of their units ("", "ms", "%", ...),
// then one row per profiled launch. Fields are quoted; numbers may carry thousands separators
// ("2,560"); a metric ncu could not collect reads "n/a" or "no data".
//
// Usage:
//   const s2tp::NcuRawPage page = s2tp::parse_ncu_raw_csv(text, "reports/ncu-baseline.csv");
//   std::optional<double> ms = page.number(0, "gpu__time_duration.sum");   // launch 0
//   std::string unit = page.unit("gpu__time_duration.sum");                // "ms"
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

// One CSV record: RFC 4180 quoting ("" inside quotes is one quote). Error(internal) on an
// unterminated quote, naming `where` and the line.
std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string &where);

// A field as a number: "3.608896", "2,560", "1e-05". Nothing for "n/a", "no data", "" or text.
std::optional<double> parse_ncu_number(std::string_view field);

struct NcuRawPage {
    std::vector<std::string> names;               // header row
    std::vector<std::string> units;               // same length as names
    std::vector<std::vector<std::string>> rows;   // one per launch, same length as names

    std::optional<std::size_t> column(const std::string &metric) const;
    std::string unit(const std::string &metric) const;  // "" when absent or unitless
    // The field as text / as a number; nothing when the metric or the launch is absent.
    std::optional<std::string> text(std::size_t launch, const std::string &metric) const;
    std::optional<double> number(std::size_t launch, const std::string &metric) const;
};

// Error(internal) naming `where` when the header or units row is missing or a row's width differs.
// Lines before the header that ncu prints as "==PROF==" or "==WARNING==" are skipped.
NcuRawPage parse_ncu_raw_csv(std::string_view text, const std::string &where);

}  // namespace s2tp
