#include "support/table_printer.h"

#include <algorithm>
#include <cctype>

namespace s2tp {
namespace {

std::string joined_line(const std::vector<std::string> &cells, std::string (*cell)(const std::string &),
                        const char *separator) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) line += (i ? separator : "") + cell(cells[i]);
    return line;
}

std::vector<std::string> header_of(const TextTable &table, bool upper_case) {
    std::vector<std::string> header;
    for (const TableColumn &column : table.columns) {
        std::string name = column.name;
        if (upper_case)
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
        header.push_back(name);
    }
    return header;
}

}  // namespace

std::string table_text(const TextTable &table, const TextLayout &layout) {
    std::vector<std::vector<std::string>> lines{header_of(table, layout.upper_case_header)};
    lines.insert(lines.end(), table.rows.begin(), table.rows.end());
    std::vector<std::size_t> widths(table.columns.size(), 0);
    for (const auto &line : lines)
        for (std::size_t i = 0; i < line.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
    std::string out;
    for (const auto &line : lines) {
        out += layout.indent;
        for (std::size_t i = 0; i < line.size() && i < widths.size(); ++i) {
            const std::string pad(widths[i] - line[i].size(), ' ');
            const bool last = i + 1 == line.size();
            if (i) out += std::string(layout.gap, ' ');
            if (table.columns[i].align == Align::right) out += pad + line[i];
            else out += last ? line[i] : line[i] + pad;
        }
        out += "\n";
    }
    return out;
}

std::string table_markdown(const TextTable &table) {
    std::string out = "| " + joined_line(header_of(table, false), markdown_cell, " | ") + " |\n|";
    for (std::size_t i = 0; i < table.columns.size(); ++i) out += "---|";
    out += "\n";
    for (const auto &row : table.rows) out += "| " + joined_line(row, markdown_cell, " | ") + " |\n";
    return out;
}

std::string table_csv(const TextTable &table) {
    std::string out = joined_line(header_of(table, false), csv_field, ",") + "\n";
    for (const auto &row : table.rows) out += joined_line(row, csv_field, ",") + "\n";
    return out;
}

toml::array table_json(const TextTable &table) {
    toml::array rows;
    for (const auto &row : table.rows) {
        toml::table entry;
        for (std::size_t i = 0; i < row.size() && i < table.columns.size(); ++i)
            if (!row[i].empty() || !table.columns[i].omitted_when_empty) entry.insert(table.columns[i].name, row[i]);
        rows.push_back(std::move(entry));
    }
    return rows;
}

std::string csv_field(const std::string &text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

std::string markdown_cell(const std::string &text) {
    std::string cell;
    for (char ch : text) cell += ch == '|' ? std::string("\\|") : ch == '\n' ? std::string(" ") : std::string(1, ch);
    return cell;
}

}  // namespace s2tp
