// Strict reading of hand-written TOML (manifests, workloads, data tables): every key is expected,
// typed and positioned. Unknown keys, wrong types and missing keys are errors that name
// file:line:column, because a silently ignored typo in an experiment manifest invalidates a result.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

// What a key of a hand-written table holds, as the manuals name it.
enum class SchemaKind { string, integer, number, boolean, strings, integers, table, tables };

// One key of a hand-written table, defined once: the table (a TOML path, "gate.waiver"), the key, what
// it holds, its range (inclusive; a number's or an integer's, else both 0), its default as the file
// would write it ("" for a required key or one without a default) and what it means. A table of these
// drives the reader's ranges, its did-you-mean and the manual's test.
struct SchemaKey {
    const char *table;
    const char *key;
    SchemaKind kind;
    double low, high;
    const char *fallback;
    const char *doc;
};

// Parses TOML text; `source` names it in messages. Invalid UTF-8 becomes Error(usage) "source: invalid
// UTF-8 at byte offset N (line L)", a syntax error Error(usage) "source:line:column: message". No input
// aborts (see support/toml_config.h for what that takes with toml++ 3.3.0).
toml::table parse_toml_text(std::string_view text, const std::string &source);
// The same for a file; one that cannot be read is Error(usage) naming it.
toml::table parse_toml_file(const std::string &path);

class TableReader {
public:
    // `where` names the table in messages, e.g. "[build]".
    TableReader(const toml::table &table, std::string file, std::string where);

    std::string string(const std::string &key);
    std::optional<std::string> optional_string(const std::string &key);
    std::string string_or(const std::string &key, const std::string &fallback);
    std::string choice(const std::string &key, const std::vector<std::string> &allowed, const std::string &fallback);
    std::int64_t integer(const std::string &key);
    std::int64_t integer_or(const std::string &key, std::int64_t fallback, std::int64_t min, std::int64_t max);
    double number_or(const std::string &key, double fallback, double min, double max);
    // The same within the range of `key`.
    std::int64_t integer_or(const SchemaKey &key, std::int64_t fallback);
    double number_or(const SchemaKey &key, double fallback);
    bool boolean_or(const std::string &key, bool fallback);
    std::vector<std::string> strings_or(const std::string &key, const std::vector<std::string> &fallback);
    std::vector<std::int64_t> integers_or(const std::string &key, const std::vector<std::int64_t> &fallback);
    // A string naming a file, resolved against `base_dir` when relative; the file must exist.
    std::string existing_file(const std::string &key, const std::string &base_dir);
    const toml::table *optional_table(const std::string &key);
    const toml::array *optional_array_of_tables(const std::string &key);
    // Marks a key as known without reading it (read elsewhere).
    void accept(const std::string &key);
    // The keys the table may hold, whether read or not: an unknown key one edit away from one of them
    // is reported as its misspelling.
    void expect(const std::vector<std::string> &keys);

    // Throws for the first key that no read above asked for.
    void finish() const;
    // Throws as finish() would for an unread key one edit away from `key` (a misspelling of it): for a
    // required key that is missing, the typo is the error to report, not the absence.
    void reject_misspelling_of(const std::string &key) const;

    std::string position(const toml::node &node) const;  // "file:line:column"
    std::string position() const;                        // of the table itself
    const std::string &file() const { return file_; }

private:
    const toml::node &node_or_fail(const std::string &key);
    [[noreturn]] void type_error(const std::string &key, const toml::node &node, const char *expected) const;
    [[noreturn]] void unknown_key(const toml::key &key, const toml::node &node) const;

    const toml::table &table_;
    std::string file_;
    std::string where_;
    std::set<std::string> known_;
    std::set<std::string> expected_;
};

}  // namespace s2tp
