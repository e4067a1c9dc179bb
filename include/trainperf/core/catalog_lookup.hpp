// Finding a catalog entry by its CLI name: ASCII case-insensitive, and a miss
// names the field, the value, the names it may have meant and every known name.
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

// Whether `text` holds `part` at `at`, ignoring ASCII case.
constexpr bool holds_at(std::string_view text, std::string_view part, std::size_t at) {
    if (at + part.size() > text.size()) return false;
    for (std::size_t i = 0; i < part.size(); ++i)
        if (ascii_lower(text[at + i]) != ascii_lower(part[i])) return false;
    return true;
}

// The names a miss may have meant: those that begin with it (`h100` for h100-sxm and
// h100-pcie) or, failing that, contain it (`4090` for rtx-4090); none for an empty one.
template <class Entry, std::size_t N>
std::string suggestions(std::string_view name, const std::array<Entry, N>& catalog) {
    std::string found;
    for (const bool anywhere : {false, true}) {
        for (const Entry& e : catalog) {
            const std::string_view known = e.name;
            bool hit = !name.empty() && holds_at(known, name, 0);
            for (std::size_t at = 1; anywhere && !hit && !name.empty() && at < known.size(); ++at)
                hit = holds_at(known, name, at);
            if (hit) found += (found.empty() ? "" : " or ") + std::string(known);
        }
        if (!found.empty()) break;
    }
    return found;
}

template <class Entry, std::size_t N>
[[noreturn]] TRAINPERF_COLD inline void unknown_name(std::string_view field, std::string_view name,
                                                    const std::array<Entry, N>& catalog) {
    const std::string meant = suggestions(name, catalog);
    detail::fail(field, '"' + std::string(name) + '"',
                 "unknown; " + (meant.empty() ? std::string() : "did you mean " + meant + "? ") +
                     "known: " + catalog_names(catalog, ", "));
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
