#include "formats/toml_schema.h"
#include "support/file_io.h"

#include "formats/utf8.h"
#include "support/did_you_mean.h"
#include "support/errors.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace s2tp {
namespace {

const char *type_name(const toml::node &node) {
    switch (node.type()) {
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a float";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::array: return "an array";
        case toml::node_type::table: return "a table";
        default: return "a date/time";
    }
}

}  // namespace

toml::table parse_toml_text(std::string_view text, const std::string &source) {
    if (std::optional<std::size_t> bad = first_invalid_utf8(text)) {
        const std::string_view before = text.substr(0, *bad);
        const auto line = 1 + std::count(before.begin(), before.end(), '\n');
        fail(ExitCode::usage, source + ": invalid UTF-8 at byte offset " + std::to_string(*bad) + " (line " +
                                  std::to_string(line) + "); TOML files must be UTF-8");
    }
    try {
        return toml::parse(text, std::string_view{source});
    } catch (const toml::parse_error &e) {
        const toml::source_position &at = e.source().begin;
        // A failed internal check of toml++ (support/toml_config.h) comes without a position.
        const std::string where = at ? ":" + std::to_string(at.line) + ":" + std::to_string(at.column) : "";
        fail(ExitCode::usage, source + where + ": " + std::string(e.description()));
    }
}

toml::table parse_toml_file(const std::string &path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail(ExitCode::usage, path + ": is a directory, not a TOML file");
    if (!std::filesystem::exists(path, ec)) fail(ExitCode::usage, path + ": no such file");
    return parse_toml_text(read_text_file(path, max_toml_bytes), path);
}

TableReader::TableReader(const toml::table &table, std::string file, std::string where)
    : table_(table), file_(std::move(file)), where_(std::move(where)) {}

std::string TableReader::position(const toml::node &node) const {
    const auto &source = node.source();
    return file_ + ":" + std::to_string(source.begin.line) + ":" + std::to_string(source.begin.column);
}

std::string TableReader::position() const { return position(table_); }

void TableReader::type_error(const std::string &key, const toml::node &node, const char *expected) const {
    fail(ExitCode::usage, position(node) + ": " + where_ + " key '" + key + "' must be " + expected + ", not " +
                              type_name(node));
}

const toml::node &TableReader::node_or_fail(const std::string &key) {
    known_.insert(key);
    const toml::node *node = table_.get(key);
    if (!node) fail(ExitCode::usage, position() + ": " + where_ + " is missing the required key '" + key + "'");
    return *node;
}

void TableReader::accept(const std::string &key) { known_.insert(key); }

void TableReader::expect(const std::vector<std::string> &keys) { expected_.insert(keys.begin(), keys.end()); }

std::string TableReader::string(const std::string &key) {
    const auto &node = node_or_fail(key);
    if (!node.is_string()) type_error(key, node, "a string");
    return *node.value<std::string>();
}

std::optional<std::string> TableReader::optional_string(const std::string &key) {
    known_.insert(key);
    if (!table_.contains(key)) return std::nullopt;
    return string(key);
}

std::string TableReader::string_or(const std::string &key, const std::string &fallback) {
    return optional_string(key).value_or(fallback);
}

std::string TableReader::choice(const std::string &key, const std::vector<std::string> &allowed,
                                const std::string &fallback) {
    auto value = optional_string(key);
    if (!value) {
        if (fallback.empty()) node_or_fail(key);
        return fallback;
    }
    for (const auto &a : allowed)
        if (*value == a) return *value;
    std::string list;
    for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(ExitCode::usage, position(*table_.get(key)) + ": " + where_ + " key '" + key + "' is '" + *value +
                              "'; expected one of: " + list);
}

std::int64_t TableReader::integer(const std::string &key) {
    const auto &node = node_or_fail(key);
    if (!node.is_integer()) type_error(key, node, "an integer");
    return *node.value<std::int64_t>();
}

std::int64_t TableReader::integer_or(const std::string &key, std::int64_t fallback, std::int64_t min,
                                     std::int64_t max) {
    known_.insert(key);
    if (!table_.contains(key)) return fallback;
    std::int64_t value = integer(key);
    if (value < min || value > max)
        fail(ExitCode::usage, position(*table_.get(key)) + ": " + where_ + " key '" + key + "' = " +
                                  std::to_string(value) + " is outside [" + std::to_string(min) + ", " +
                                  std::to_string(max) + "]");
    return value;
}

double TableReader::number_or(const std::string &key, double fallback, double min, double max) {
    known_.insert(key);
    const toml::node *node = table_.get(key);
    if (!node) return fallback;
    if (!node->is_number()) type_error(key, *node, "a number");
    double value = node->is_integer() ? static_cast<double>(*node->value<std::int64_t>()) : *node->value<double>();
    if (!(value >= min && value <= max))
        fail(ExitCode::usage, position(*node) + ": " + where_ + " key '" + key + "' = " + std::to_string(value) +
                                  " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return value;
}

std::int64_t TableReader::integer_or(const SchemaKey &key, std::int64_t fallback) {
    // 2^63 does not convert back to an int64: the top of the range is then INT64_MAX itself.
    const std::int64_t high = key.high >= 0x1p63 ? INT64_MAX : static_cast<std::int64_t>(key.high);
    return integer_or(key.key, fallback, static_cast<std::int64_t>(key.low), high);
}

double TableReader::number_or(const SchemaKey &key, double fallback) {
    return number_or(key.key, fallback, key.low, key.high);
}

bool TableReader::boolean_or(const std::string &key, bool fallback) {
    known_.insert(key);
    const toml::node *node = table_.get(key);
    if (!node) return fallback;
    if (!node->is_boolean()) type_error(key, *node, "a boolean");
    return *node->value<bool>();
}

std::vector<std::string> TableReader::strings_or(const std::string &key, const std::vector<std::string> &fallback) {
    known_.insert(key);
    const toml::node *node = table_.get(key);
    if (!node) return fallback;
    const toml::array *array = node->as_array();
    if (!array) type_error(key, *node, "an array of strings");
    std::vector<std::string> values;
    for (const auto &item : *array) {
        if (!item.is_string()) type_error(key, item, "an array of strings");
        values.push_back(*item.value<std::string>());
    }
    return values;
}

std::vector<std::int64_t> TableReader::integers_or(const std::string &key, const std::vector<std::int64_t> &fallback) {
    known_.insert(key);
    const toml::node *node = table_.get(key);
    if (!node) return fallback;
    const toml::array *array = node->as_array();
    if (!array) type_error(key, *node, "an array of integers");
    std::vector<std::int64_t> values;
    for (const auto &item : *array) {
        if (!item.is_integer()) type_error(key, item, "an array of integers");
        values.push_back(*item.value<std::int64_t>());
    }
    return values;
}

std::string TableReader::existing_file(const std::string &key, const std::string &base_dir) {
    std::filesystem::path path(string(key));
    if (path.is_relative()) path = std::filesystem::path(base_dir) / path;
    path = path.lexically_normal();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        fail(ExitCode::usage, position(*table_.get(key)) + ": " + where_ + " key '" + key + "' names '" +
                                  path.string() + "', which does not exist or is not a file");
    return path.string();
}

const toml::table *TableReader::optional_table(const std::string &key) {
    known_.insert(key);
    const toml::node *node = table_.get(key);
    if (!node) return nullptr;
    if (!node->is_table()) type_error(key, *node, "a table");
    return node->as_table();
}

const toml::array *TableReader::optional_array_of_tables(const std::string &key) {
    known_.insert(key);
    const toml::node *node = table_.get(key);
    if (!node) return nullptr;
    const toml::array *array = node->as_array();
    if (!array || !array->is_array_of_tables()) type_error(key, *node, "an array of tables");
    return array;
}

void TableReader::unknown_key(const toml::key &key, const toml::node &node) const {
    const std::string name(key.str());
    std::set<std::string> keys = known_;
    keys.insert(expected_.begin(), expected_.end());
    std::string list;
    for (const auto &k : keys) list += (list.empty() ? "" : ", ") + k;
    const std::string suggestion = did_you_mean(name, std::vector<std::string>(keys.begin(), keys.end()));
    const std::string hint = !suggestion.empty() ? suggestion : list.empty() ? std::string() : " (known keys: " + list + ")";
    const auto &at = key.source().begin ? key.source() : node.source();
    fail(ExitCode::usage, file_ + ":" + std::to_string(at.begin.line) + ":" + std::to_string(at.begin.column) +
                              ": unknown key '" + name + "' in " + where_ + hint);
}

void TableReader::finish() const {
    for (const auto &[key, node] : table_)
        if (!known_.count(std::string(key.str()))) unknown_key(key, node);
}

void TableReader::reject_misspelling_of(const std::string &wanted) const {
    for (const auto &[key, node] : table_) {
        const std::string name(key.str());
        if (!known_.count(name) && !expected_.count(name) && one_edit_apart(name, wanted)) unknown_key(key, node);
    }
}

}  // namespace s2tp
