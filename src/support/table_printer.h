// One printer for sage2tp's tables of text cells (compare, report, the cluster verdicts, a workload set's
// time figures), in each format the commands offer: text, markdown, CSV and JSON. A table is named columns and
// rows of cells, as nvbench's printers walk a summary's named columns; the printer alone decides
// padding, escaping and quoting.
//
// Usage:
//   TextTable table{{{"run"}, {"ratio", Align::right}}, {{"tp-1", "0.9890"}}};
//   std::cout << table_text(table) << table_markdown(table) << table_csv(table);
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

namespace s2tp {

enum class Align { left, right };

struct TableColumn {
    std::string name;
    Align align = Align::left;
    bool omitted_when_empty = false;  // in JSON, an empty cell of this column is left out of its row
};

struct TextTable {
    std::vector<TableColumn> columns;
    std::vector<std::vector<std::string>> rows;  // each as long as `columns`
};

// How table_text lays a table out: each line starts with `indent`, cells are `gap` spaces apart, each
// column as wide as its widest cell (the header's included) except a last left-aligned column, which is
// not padded; `upper_case_header` prints the column names in capitals.
struct TextLayout {
    std::string indent;
    std::size_t gap = 2;
    bool upper_case_header = false;
};

// The header line and one line per row, each ending in a newline.
std::string table_text(const TextTable &table, const TextLayout &layout = {});
// "| a | b |", "|---|---|", then one such line per row; '|' escaped, newlines as spaces.
std::string table_markdown(const TextTable &table);
// The header and the rows as RFC 4180 lines.
std::string table_csv(const TextTable &table);
// One table per row, each cell keyed by its column's name.
toml::array table_json(const TextTable &table);

// A CSV field, quoted (RFC 4180) when it holds a comma, a quote or a newline.
std::string csv_field(const std::string &text);
// A markdown table cell, with '|' escaped and newlines as spaces.
std::string markdown_cell(const std::string &text);

}  // namespace s2tp
