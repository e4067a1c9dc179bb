// Name tables for enums: one constexpr table of {value, name} per enum gives its
// to_string, a case-insensitive parse that names the field and lists the accepted
// names, and that list for help texts. An enum takes part by specialising
// enum_names<E> with a `table` (canonical names, one per value, in display order)
// and, optionally, `aliases` (other spellings the parser accepts):
//
//   template <> struct enum_names<recompute_mode> {
//       static constexpr std::array<enum_name<recompute_mode>, 3> table{{
//           {recompute_mode::none, "none"}, {recompute_mode::selective, "selective"},
//           {recompute_mode::full, "full"}}};
//   };
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "attributes.hpp"
#include "catalog_lookup.hpp"
#include "error.hpp"

namespace trainperf {

template <class E>
struct enum_name {
    E value;
    std::string_view name;
};

// Specialised next to each enum; the primary template has no table.
template <class E>
struct enum_names {};

template <class E>
concept named_enum = std::is_enum_v<E> && requires {
    { enum_names<E>::table.size() } -> std::convertible_to<std::size_t>;
};

namespace enum_detail {
template <class E>
concept has_aliases = requires { enum_names<E>::aliases.size(); };

template <class Table>
constexpr auto find(const Table& table, std::string_view text) -> std::optional<decltype(table[0].value)> {
    for (const auto& e : table)
        if (iequals(e.name, text)) return e.value;
    return std::nullopt;
}

// Not constexpr-evaluable: a misspelt name in a constant expression does not compile.
template <class Table>
[[noreturn]] TRAINPERF_COLD void unknown(std::string_view field, std::string_view text, const Table& table) {
    detail::fail(field, '"' + std::string(text) + '"', "unknown; expected one of " + catalog_names(table, ", "));
}
}  // namespace enum_detail

// The canonical name of a value ("?" for a value outside the table).
template <named_enum E>
constexpr std::string_view to_string(E value) {
    for (const auto& e : enum_names<E>::table)
        if (e.value == value) return e.name;
    return "?";
}

// Every value of E in table order.
template <named_enum E>
constexpr auto enum_values() {
    constexpr auto& table = enum_names<E>::table;
    std::array<E, table.size()> values{};
    for (std::size_t i = 0; i < table.size(); ++i) values[i] = table[i].value;
    return values;
}

// The value named `text` (ASCII case-insensitive; aliases too), or nothing.
template <named_enum E>
constexpr std::optional<E> find_enum(std::string_view text) {
    if (auto v = enum_detail::find(enum_names<E>::table, text)) return v;
    if constexpr (enum_detail::has_aliases<E>) return enum_detail::find(enum_names<E>::aliases, text);
    return std::nullopt;
}

// The value named `text`, or trainperf::invalid_argument:
//   recompute = "most": unknown; expected one of none, selective, full
template <named_enum E>
constexpr E parse_enum(std::string_view field, std::string_view text) {
    if (auto v = find_enum<E>(text)) return *v;
    enum_detail::unknown(field, text, enum_names<E>::table);
}

// The canonical names, e.g. "none|selective|full" for a help text.
template <named_enum E>
std::string enum_name_list(std::string_view separator = "|") {
    return catalog_names(enum_names<E>::table, separator);
}

}  // namespace trainperf
