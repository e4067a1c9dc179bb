// A set of a named enum's values (core/enum_names.hpp), usable at compile time: what a
// framework profile runs (spec/framework.hpp: its optimizers, number recipes and
// fine-tuning modes). One bit per value; the enum's values must lie in [0, 32).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "enum_names.hpp"

namespace trainperf {

template <named_enum E>
class enum_set {
public:
    constexpr enum_set() = default;
    constexpr enum_set(std::initializer_list<E> values) {
        for (E v : values) insert(v);
    }

    // Every value of the enum's table.
    static constexpr enum_set all() {
        enum_set s;
        for (E v : enum_values<E>()) s.insert(v);
        return s;
    }

    constexpr void insert(E v) { bits_ |= bit(v); }
    constexpr bool contains(E v) const { return (bits_ & bit(v)) != 0; }
    constexpr bool empty() const { return bits_ == 0; }
    friend constexpr bool operator==(const enum_set&, const enum_set&) = default;

private:
    static constexpr std::uint32_t bit(E v) {
        const auto i = static_cast<unsigned>(v);
        require(i < 32, "enum_set", i, "holds enum values below 32 only");
        return std::uint32_t{1} << i;
    }
    std::uint32_t bits_ = 0;
};

// The set's names in the enum's table order, joined by `separator` ("" when empty).
template <named_enum E>
std::string names_of(const enum_set<E>& s, std::string_view separator = ", ") {
    std::string text;
    for (E v : enum_values<E>())
        if (s.contains(v)) text += (text.empty() ? "" : std::string(separator)) + std::string(to_string(v));
    return text;
}

}  // namespace trainperf
