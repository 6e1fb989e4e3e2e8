// Reading and writing the figures of a checkpoint table, for the typed stage figures. A figure that a
// checkpoint does not record reads back unset, never as zero, so the gate's "NOT CHECKED" rule holds
// for an older or hand-edited checkpoint; an unset figure is not written at all.
//
// Each figures struct defines its figures once, as a field table (`fields()`): the key, the member (or
// an accessor), the kind and a hint (the unit, or what the figure is). The table drives the struct's
// to_toml and from_toml (write_fields, read_fields) and the manual's test (field_keys): a key is spelled
// in the table, in sage2tp-checkpoint(5) and nowhere else. A figure the stage always writes and a later
// stage cannot do without (prepare's tree digests) is `required`: a table that lacks it, or holds it as
// another type, is not one sage2tp wrote, and reading it is an error that names the file and the key.
//
// Usage:
//   const std::vector<Field<ArmTimeFigures>> &ArmTimeFigures::fields() {
//       static const std::vector<Field<ArmTimeFigures>> table{field("p50", &ArmTimeFigures::p50, "ms"), ...};
//       return table;
//   }
//   toml::table ArmTimeFigures::to_toml() const { return write_fields(fields(), *this); }
//   ArmTimeFigures ArmTimeFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }
#pragma once

#include "support/errors.h"

#include <toml++/toml.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
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

// What a field holds, as sage2tp-checkpoint(5) names it.
enum class FieldKind { real, integer, boolean, text, reals, texts, table, tables, table_array };

inline const char *kind_name(FieldKind kind) {
    switch (kind) {
        case FieldKind::real: return "float";
        case FieldKind::integer: return "integer";
        case FieldKind::boolean: return "boolean";
        case FieldKind::text: return "string";
        case FieldKind::reals: return "array of floats";
        case FieldKind::texts: return "array of strings";
        case FieldKind::table: return "table";
        case FieldKind::tables: return "tables";
        case FieldKind::table_array: return "array of tables";
    }
    return "";
}

// One figure of struct S in its checkpoint table. `key` is the figure's key, or "sha256.baseline" for a
// key of a sub-table (made only when a figure in it is set); `order_key` names the array that records
// the order of a table of named tables ("candidate_order"). `nested` lists the keys of a table's own
// fields, for the manual's test.
template <typename S>
struct Field {
    std::string key;
    FieldKind kind;
    std::string hint;
    std::function<void(toml::table &, const S &)> write;  // writes the figure when it is set
    std::function<void(const toml::table &, S &)> read;   // leaves it unset when the table lacks it
    std::function<std::set<std::string>()> nested;
    std::string order_key;
};

// A required figure that a table lacks or holds as another type: its key from the figures' top (the key
// of each table around it is put in front as it passes out of that table) and the kind it must be.
struct MissingFigure {
    std::string key;
    FieldKind kind;
};

// The node at a field's key ("sha256.baseline" walks into [sha256]).
inline toml::node_view<const toml::node> at_key(const toml::table &table, std::string_view key) {
    return key.find('.') == std::string_view::npos ? table[key] : table.at_path(key);
}

// Inserts `value` at a field's key, making the sub-tables of a dotted key as it goes.
template <typename V>
void insert_at(toml::table &table, std::string_view key, V &&value) {
    const std::size_t dot = key.find('.');
    if (dot == std::string_view::npos) {
        table.insert_or_assign(key, std::forward<V>(value));
        return;
    }
    const std::string_view head = key.substr(0, dot);
    if (!table[head].is_table()) table.insert_or_assign(head, toml::table{});
    insert_at(*table[head].as_table(), key.substr(dot + 1), std::forward<V>(value));
}

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// A struct's field table: its static fields(), or for a struct of a lower layer that cannot name Field
// (GateThresholds, GateCondition), a `figure_fields_of(const T *)` found by argument-dependent lookup.
template <typename T, typename = void>
struct has_member_fields : std::false_type {};
template <typename T>
struct has_member_fields<T, std::void_t<decltype(T::fields())>> : std::true_type {};

template <typename T, typename = void>
struct has_fields : has_member_fields<T> {};
template <typename T>
struct has_fields<T, std::void_t<decltype(figure_fields_of(static_cast<const T *>(nullptr)))>> : std::true_type {};

template <typename T>
const auto &fields_of() {
    if constexpr (has_member_fields<T>::value) return T::fields();
    else return figure_fields_of(static_cast<const T *>(nullptr));
}

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};

template <typename T, typename = void>
struct has_name : std::false_type {};
template <typename T>
struct has_name<T, std::void_t<decltype(std::declval<T &>().name = std::string())>> : std::true_type {};

template <typename S>
toml::table write_fields(const std::vector<Field<S>> &fields, const S &value) {
    toml::table table;
    for (const Field<S> &field : fields) field.write(table, value);
    return table;
}

template <typename S>
void read_fields_into(const std::vector<Field<S>> &fields, const toml::table &table, S &value) {
    for (const Field<S> &field : fields) field.read(table, value);
}

template <typename S>
S read_fields(const std::vector<Field<S>> &fields, const toml::table &table) {
    S value{};
    read_fields_into(fields, table, value);
    return value;
}

// read_fields of figures with required fields, read from the checkpoint `file`: a required figure
// missing or of the wrong type is Error(usage) naming the file and the figure's key.
template <typename S>
S read_fields(const std::vector<Field<S>> &fields, const toml::table &table, const std::string &file) {
    try {
        return read_fields(fields, table);
    } catch (const MissingFigure &missing) {
        fail(ExitCode::usage, file + ": figure '" + missing.key + "' is " +
                                  (missing.kind == FieldKind::tables ? "missing, empty or not a table of tables"
                                                                     : "missing or not of type " + std::string(kind_name(missing.kind))));
    }
}

// A nested struct's table: through its field table where it has one, else its own to_toml/from_toml.
template <typename T>
toml::table table_of(const T &value) {
    if constexpr (std::is_same_v<T, toml::table>) return value;  // a table another module defines (build's sass)
    else if constexpr (has_fields<T>::value) return write_fields(fields_of<T>(), value);
    else return value.to_toml();
}

template <typename T>
T value_of(const toml::table &table) {
    T value{};
    if constexpr (std::is_same_v<T, toml::table>) value = table;
    else if constexpr (has_fields<T>::value) read_fields_into(fields_of<T>(), table, value);
    else value = T::from_toml(table);
    return value;
}

// An element of a table of named tables: its name is its key (the table itself does not hold it).
template <typename T>
T named_value_of(const toml::table &table, const std::string &name) {
    T value = value_of<T>(table);
    if constexpr (has_name<T>::value) value.name = name;
    return value;
}

// Every key of a field table, its sub-tables' and its nested structs' (each part of a dotted key).
template <typename S>
std::set<std::string> field_keys(const std::vector<Field<S>> &fields) {
    std::set<std::string> keys;
    for (const Field<S> &field : fields) {
        std::string_view key = field.key;
        for (std::size_t dot; (dot = key.find('.')) != std::string_view::npos; key = key.substr(dot + 1))
            keys.emplace(key.substr(0, dot));
        keys.emplace(key);
        if (!field.order_key.empty()) keys.insert(field.order_key);
        if (field.nested) keys.merge(field.nested());
    }
    return keys;
}

template <typename T>
std::function<std::set<std::string>()> nested_keys_of() {
    if constexpr (has_fields<T>::value) return [] { return field_keys(fields_of<T>()); };
    else return {};
}

// Whether a figure that holds its empty value (an empty string or array) is written all the same.
enum class Presence { when_set, always };

// A field read and written through `access`, a member pointer or a function from S& to the member:
// optional scalars; plain scalars (always written; absent, they keep the struct's default); strings,
// arrays and plain nested structs (left out when empty, unless Presence::always); optional nested
// structs (written when set) and arrays of structs.
template <typename S, typename Access>
Field<S> field_at(std::string key, Access access, std::string hint, Presence presence = Presence::when_set) {
    using M = std::remove_cv_t<std::remove_reference_t<std::invoke_result_t<Access, S &>>>;
    const bool always = presence == Presence::always;
    Field<S> f{key, FieldKind::table, std::move(hint), {}, {}, {}, {}};
    const auto member = [access](auto &s) -> auto & { return std::invoke(access, s); };
    if constexpr (std::is_same_v<M, std::optional<double>> || std::is_same_v<M, std::optional<std::int64_t>> ||
                  std::is_same_v<M, std::optional<bool>>) {
        using V = typename M::value_type;
        f.kind = std::is_same_v<V, bool> ? FieldKind::boolean : std::is_same_v<V, double> ? FieldKind::real
                                                                                         : FieldKind::integer;
        f.write = [key, member](toml::table &t, const S &s) { if (member(s)) insert_at(t, key, *member(s)); };
        f.read = [key, member](const toml::table &t, S &s) {
            if constexpr (std::is_same_v<V, double>) {
                const std::optional<double> value = at_key(t, key).value<double>();
                if (value && std::isfinite(*value) && std::fabs(*value) <= largest_plausible_figure) member(s) = value;
            } else {
                member(s) = at_key(t, key).value<V>();
            }
        };
    } else if constexpr (std::is_same_v<M, std::optional<std::string>>) {
        f.kind = FieldKind::text;
        f.write = [key, member](toml::table &t, const S &s) { if (member(s)) insert_at(t, key, *member(s)); };
        f.read = [key, member](const toml::table &t, S &s) { member(s) = at_key(t, key).value<std::string>(); };
    } else if constexpr (std::is_same_v<M, double> || std::is_same_v<M, std::int64_t> || std::is_same_v<M, bool>) {
        f.kind = std::is_same_v<M, bool> ? FieldKind::boolean : std::is_same_v<M, double> ? FieldKind::real
                                                                                         : FieldKind::integer;
        f.write = [key, member](toml::table &t, const S &s) { insert_at(t, key, member(s)); };
        f.read = [key, member](const toml::table &t, S &s) {
            if (const std::optional<M> value = at_key(t, key).value<M>()) member(s) = *value;
        };
    } else if constexpr (std::is_same_v<M, std::string>) {
        f.kind = FieldKind::text;
        f.write = [key, member, always](toml::table &t, const S &s) {
            if (always || !member(s).empty()) insert_at(t, key, member(s));
        };
        f.read = [key, member](const toml::table &t, S &s) { member(s) = at_key(t, key).value_or(std::string()); };
    } else if constexpr (is_vector<M>::value) {
        using V = typename M::value_type;
        constexpr bool scalar = std::is_same_v<V, double> || std::is_same_v<V, std::string>;
        f.kind = std::is_same_v<V, double> ? FieldKind::reals : scalar ? FieldKind::texts : FieldKind::table_array;
        if constexpr (!scalar) f.nested = nested_keys_of<V>();
        f.write = [key, member, always](toml::table &t, const S &s) {
            if (!always && member(s).empty()) return;
            toml::array array;
            for (const V &value : member(s)) {
                if constexpr (scalar) array.push_back(value);
                else array.push_back(table_of(value));
            }
            insert_at(t, key, std::move(array));
        };
        f.read = [key, member](const toml::table &t, S &s) {
            if (const toml::array *array = at_key(t, key).as_array())
                for (const toml::node &node : *array) {
                    if constexpr (scalar) {
                        if (auto value = node.value<V>()) member(s).push_back(*value);
                    } else if (const toml::table *element = node.as_table()) {
                        member(s).push_back(value_of<V>(*element));
                    }
                }
        };
    } else if constexpr (is_optional<M>::value) {
        using T = typename M::value_type;
        f.nested = nested_keys_of<T>();
        f.write = [key, member](toml::table &t, const S &s) { if (member(s)) insert_at(t, key, table_of(*member(s))); };
        f.read = [key, member](const toml::table &t, S &s) {
            if (const toml::table *table = at_key(t, key).as_table()) member(s) = value_of<T>(*table);
        };
    } else {
        f.nested = nested_keys_of<M>();
        f.write = [key, member, always](toml::table &t, const S &s) {
            toml::table table = table_of(member(s));
            if (always || !table.empty()) insert_at(t, key, std::move(table));
        };
        f.read = [key, member](const toml::table &t, S &s) {
            if (const toml::table *table = at_key(t, key).as_table()) member(s) = value_of<M>(*table);
        };
    }
    return f;
}

template <typename S, typename M>
Field<S> field(std::string key, M S::*member, std::string hint, Presence presence = Presence::when_set) {
    return field_at<S>(std::move(key), member, std::move(hint), presence);
}

// Whether `node` holds a value of `kind`; a table of named tables needs one at least.
inline bool holds_kind(toml::node_view<const toml::node> node, FieldKind kind) {
    switch (kind) {
        case FieldKind::real: return node.is_floating_point() || node.is_integer();
        case FieldKind::integer: return node.is_integer();
        case FieldKind::boolean: return node.is_boolean();
        case FieldKind::text: return node.is_string();
        case FieldKind::reals:
        case FieldKind::texts:
        case FieldKind::table_array: return node.is_array();
        case FieldKind::table: return node.is_table();
        case FieldKind::tables: {
            const toml::table *named = node.as_table();
            if (!named || named->empty()) return false;
            for (const auto &[name, element] : *named)
                if (!element.is_table()) return false;
            return true;
        }
    }
    return false;
}

// `field`, required: reading a table that lacks it or holds another type throws MissingFigure.
template <typename S>
Field<S> required(Field<S> field) {
    field.read = [read = field.read, key = field.key, kind = field.kind](const toml::table &t, S &s) {
        if (!holds_kind(at_key(t, key), kind)) throw MissingFigure{key, kind};
        read(t, s);
    };
    return field;
}

// An element of the table of named tables `key`, read with the element's place put in front of the key
// of any required figure it lacks.
template <typename T>
T named_element(const std::string &key, const toml::table &element, const std::string &name) {
    try {
        return named_value_of<T>(element, name);
    } catch (MissingFigure &missing) {
        missing.key = key + "." + name + "." + missing.key;
        throw;
    }
}

// `field`, written only when `when` holds for the struct (a sub-table that exists only with some of
// its figures: parity's [baseline] with its outputs or accuracy).
template <typename S>
Field<S> only_when(Field<S> field, std::function<bool(const S &)> when) {
    field.write = [write = field.write, when](toml::table &t, const S &s) { if (when(s)) write(t, s); };
    return field;
}

// A figure kept in another form than its TOML value (a verdict kept as a bool, a status as an enum, a
// bound kept as the one chosen or the default):
// `get` gives the value to write, `set` takes the value read, or nullopt when the table lacks it.
template <typename S, typename V>
Field<S> converted(std::string key, std::string hint, std::function<V(const S &)> get,
                   std::function<void(S &, const std::optional<V> &)> set) {
    constexpr FieldKind kind = std::is_same_v<V, std::string> ? FieldKind::text
                               : std::is_same_v<V, bool>      ? FieldKind::boolean
                               : std::is_same_v<V, double>    ? FieldKind::real
                                                              : FieldKind::integer;
    Field<S> f{key, kind, std::move(hint), {}, {}, {}, {}};
    f.write = [key, get](toml::table &t, const S &s) { insert_at(t, key, get(s)); };
    f.read = [key, set](const toml::table &t, S &s) { set(s, at_key(t, key).value<V>()); };
    return f;
}

// A table of named tables, one per element of a vector of structs with a `name`, and the array
// `order_key` of their names in the vector's order (TOML tables are unordered). Read back in the
// recorded order, then any table the order does not name, in key order. Without an `order_key` ("")
// the order is the names' (prepare's candidates).
template <typename S, typename T>
Field<S> named_tables(std::string key, std::string order_key, std::vector<T> S::*member, std::string hint) {
    Field<S> f{key, FieldKind::tables, std::move(hint), {}, {}, nested_keys_of<T>(), order_key};
    f.write = [key, order_key, member](toml::table &t, const S &s) {
        if ((s.*member).empty()) return;
        toml::table by_name;
        toml::array order;
        for (const T &item : s.*member) {
            by_name.insert(item.name, table_of(item));
            order.push_back(item.name);
        }
        t.insert_or_assign(key, std::move(by_name));
        if (!order_key.empty()) t.insert_or_assign(order_key, std::move(order));
    };
    f.read = [key, order_key, member](const toml::table &t, S &s) {
        const toml::table *by_name = t[key].as_table();
        if (!by_name) return;
        std::set<std::string> read;
        for (const std::string &name : strings(t, order_key))
            if (const toml::table *item = (*by_name)[name].as_table(); item && read.insert(name).second)
                (s.*member).push_back(named_element<T>(key, *item, name));
        for (const auto &[name, node] : *by_name)
            if (const toml::table *item = node.as_table(); item && read.insert(std::string(name.str())).second)
                (s.*member).push_back(named_element<T>(key, *item, std::string(name.str())));
    };
    return f;
}

// A table of named tables from a map keyed by name (no order to keep: the map's is the key order); its
// key may be dotted ("baseline.kernels").
template <typename S, typename T>
Field<S> named_map(std::string key, std::map<std::string, T> S::*member, std::string hint,
                   Presence presence = Presence::when_set) {
    Field<S> f{key, FieldKind::tables, std::move(hint), {}, {}, nested_keys_of<T>(), {}};
    f.write = [key, member, presence](toml::table &t, const S &s) {
        if (presence == Presence::when_set && (s.*member).empty()) return;
        toml::table by_name;
        for (const auto &[name, item] : s.*member) by_name.insert(name, table_of(item));
        insert_at(t, key, std::move(by_name));
    };
    f.read = [key, member](const toml::table &t, S &s) {
        if (const toml::table *by_name = at_key(t, key).as_table())
            for (const auto &[name, node] : *by_name)
                if (const toml::table *item = node.as_table())
                    (s.*member).emplace(std::string(name.str()), named_element<T>(key, *item, std::string(name.str())));
    };
    return f;
}

}  // namespace s2tp::figure_fields
