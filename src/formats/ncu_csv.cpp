#include "formats/ncu_csv.h"

#include "support/errors.h"

#include <cerrno>
#include <cstdlib>

namespace s2tp {

std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string &where) {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> record;
    std::string field;
    bool quoted = false, any = false;
    int line = 1, quote_line = 0;
    const auto end_record = [&] {
        if (any || !field.empty() || !record.empty()) {
            record.push_back(field);
            records.push_back(record);
        }
        record.clear();
        field.clear();
        any = false;
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                if (c == '\n') ++line;
                field += c;
            }
            continue;
        }
        if (c == '"') {
            quoted = true;
            quote_line = line;
            any = true;
        } else if (c == ',') {
            record.push_back(field);
            field.clear();
            any = true;
        } else if (c == '\n') {
            end_record();
            ++line;
        } else if (c != '\r') {
            field += c;
        }
    }
    if (quoted) fail(ExitCode::internal, where + ":" + std::to_string(quote_line) + ": unterminated quoted field");
    end_record();
    return records;
}

std::optional<double> parse_ncu_number(std::string_view field) {
    std::string digits;
    for (char c : field)
        if (c != ',' && c != ' ') digits += c;
    if (digits.empty()) return std::nullopt;
    errno = 0;
    char *end = nullptr;
    const double value = std::strtod(digits.c_str(), &end);
    // strtod also reads "nan" and "inf", which ncu never prints for a measured value.
    if (errno != 0 || end != digits.c_str() + digits.size() || digits.find_first_of("nNiI") != std::string::npos)
        return std::nullopt;
    return value;
}

std::optional<std::size_t> NcuRawPage::column(const std::string &metric) const {
    for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == metric) return i;
    return std::nullopt;
}

std::string NcuRawPage::unit(const std::string &metric) const {
    const auto c = column(metric);
    return c ? units[*c] : std::string();
}

std::optional<std::string> NcuRawPage::text(std::size_t launch, const std::string &metric) const {
    const auto c = column(metric);
    if (!c || launch >= rows.size()) return std::nullopt;
    return rows[launch][*c];
}

std::optional<double> NcuRawPage::number(std::size_t launch, const std::string &metric) const {
    const auto field = text(launch, metric);
    return field ? parse_ncu_number(*field) : std::nullopt;
}

NcuRawPage parse_ncu_raw_csv(std::string_view text, const std::string &where) {
    // ncu may print its own messages before the table when the import itself warns.
    std::size_t start = 0;
    while (start < text.size() && text.compare(start, 2, "==") == 0) {
        const std::size_t next = text.find('\n', start);
        start = next == std::string_view::npos ? text.size() : next + 1;
    }
    std::vector<std::vector<std::string>> records = parse_csv(text.substr(start), where);
    if (records.size() < 2)
        fail(ExitCode::internal, where + ": expected a header row of metric names and a row of units, got " +
                                     std::to_string(records.size()) + " rows");
    if (records[0].empty() || records[0][0] != "ID")
        fail(ExitCode::internal, where + ":1: the header does not start with \"ID\": not an `ncu --csv --page raw` table");
    for (std::size_t r = 1; r < records.size(); ++r)
        if (records[r].size() != records[0].size())
            fail(ExitCode::internal, where + ": row " + std::to_string(r + 1) + " has " +
                                         std::to_string(records[r].size()) + " fields, the header " +
                                         std::to_string(records[0].size()));
    NcuRawPage page;
    page.names = std::move(records[0]);
    page.units = std::move(records[1]);
    for (std::size_t r = 2; r < records.size(); ++r) page.rows.push_back(std::move(records[r]));
    return page;
}

}  // namespace s2tp
