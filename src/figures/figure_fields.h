// Reading and writing one optional figure of a checkpoint table, for the typed stage figures. A figure
// that a checkpoint does not record reads back unset, never as zero, so the gate's "NOT CHECKED" rule
// holds for an older or hand-edited checkpoint; an unset figure is not written at all.
#pragma once

#include <toml++/toml.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp::figure_fields {

template <typename T>
void put(toml::table &table, std::string_view key, const std::optional<T> &value) {
    if (value) table.insert_or_assign(key, *value);
}

inline void put(toml::table &table, std::string_view key, const std::string &value) {
    if (!value.empty()) table.insert_or_assign(key, value);
}

inline std::optional<std::int64_t> integer(const toml::table &table, std::string_view key) {
    return table[key].value<std::int64_t>();
}

// Beyond any real figure (a ratio, milliseconds, MHz): a checkpoint holding one was edited by hand or
// corrupted, and such a figure reads back unset, as do inf and nan.
constexpr double largest_plausible_figure = 1e12;

inline std::optional<double> real(const toml::table &table, std::string_view key) {
    const std::optional<double> value = table[key].value<double>();
    if (!value || !std::isfinite(*value) || std::fabs(*value) > largest_plausible_figure) return std::nullopt;
    return value;
}

inline std::optional<bool> boolean(const toml::table &table, std::string_view key) {
    return table[key].value<bool>();
}

inline std::optional<std::string> text(const toml::table &table, std::string_view key) {
    return table[key].value<std::string>();
}

inline std::string string_of(const toml::table &table, std::string_view key) {
    return table[key].value_or(std::string());
}

inline toml::array string_array(const std::vector<std::string> &values) {
    toml::array array;
    for (const auto &value : values) array.push_back(value);
    return array;
}

inline std::vector<std::string> strings(const toml::table &table, std::string_view key) {
    std::vector<std::string> values;
    if (const toml::array *array = table[key].as_array())
        for (const auto &node : *array)
            if (auto value = node.value<std::string>()) values.push_back(*value);
    return values;
}

// Each table of an array of tables; other elements are ignored.
template <typename Read>
void each_table(const toml::table &table, std::string_view key, Read read) {
    if (const toml::array *array = table[key].as_array())
        for (const auto &node : *array)
            if (const toml::table *element = node.as_table()) read(*element);
}

// Each sub-table of a table keyed by name (entries, candidates).
template <typename Read>
void each_named(const toml::table &table, std::string_view key, Read read) {
    if (const toml::table *named = table[key].as_table())
        for (const auto &[name, node] : *named)
            if (const toml::table *element = node.as_table()) read(std::string(name.str()), *element);
}

}  // namespace s2tp::figure_fields
