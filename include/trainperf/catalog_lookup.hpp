// Finding a catalog entry by its CLI name: ASCII case-insensitive, and a miss
// names the field, the value and every known name.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "attributes.hpp"
#include "error.hpp"

namespace trainperf {

// The names of a catalog's entries, e.g. "pytorch-eager|megatron|deepspeed".
template <class Entry, std::size_t N>
std::string catalog_names(const std::array<Entry, N>& catalog, std::string_view separator = "|") {
    std::string names;
    for (std::size_t i = 0; i < N; ++i) {
        if (i > 0) names += separator;
        names += catalog[i].name;
    }
    return names;
}

namespace lookup_detail {
constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

template <class Entry, std::size_t N>
[[noreturn]] TRAINPERF_COLD inline void unknown_name(std::string_view field, std::string_view name,
                                                    const std::array<Entry, N>& catalog) {
    detail::fail(field, '"' + std::string(name) + '"', "unknown; known: " + catalog_names(catalog, ", "));
}
}  // namespace lookup_detail

constexpr bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lookup_detail::ascii_lower(a[i]) != lookup_detail::ascii_lower(b[i])) return false;
    return true;
}

// The entry whose `.name` equals `name` ignoring case. In a constant expression a
// misspelt name does not compile; at run time it throws trainperf::invalid_argument
// ("gpu = "foo": unknown; known: ...").
template <class Entry, std::size_t N>
constexpr const Entry& find_by_name(const std::array<Entry, N>& catalog, std::string_view field,
                                    std::string_view name) {
    for (const Entry& e : catalog)
        if (iequals(e.name, name)) return e;
    lookup_detail::unknown_name(field, name, catalog);
}

}  // namespace trainperf
