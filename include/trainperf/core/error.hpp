// The library's one exception type: invalid specs name the field and the value.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attributes.hpp"

namespace trainperf {

class invalid_argument : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

namespace detail {
// A message stays one line whatever a user typed: control characters (a newline in a
// name) are written as \n, \t or \xNN.
inline std::string one_line(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string s;
    s.reserve(text.size());
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n') {
            s += "\\n";
        } else if (c == '\t') {
            s += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            s += "\\x";
            s.push_back(hex[u >> 4]);
            s.push_back(hex[u & 15]);
        } else {
            s.push_back(c);
        }
    }
    return s;
}

// Not constexpr-evaluable on purpose: reaching it during constant evaluation makes
// the same check a compile error.
template <class Value>
[[noreturn]] TRAINPERF_COLD inline void fail(std::string_view field, const Value& value, std::string_view why) {
    std::ostringstream out;
    out << field << " = " << value << ": " << why;
    throw trainperf::invalid_argument(one_line(out.str()));
}
}  // namespace detail

// Throws trainperf::invalid_argument("field = value: why") unless ok. In a constant
// expression a failed check does not compile.
template <class Value>
constexpr void require(bool ok, std::string_view field, const Value& value, std::string_view why) {
    if (!ok) detail::fail(field, value, why);
}

}  // namespace trainperf
