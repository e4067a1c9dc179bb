// The library's one exception type: invalid specs name the field and the value.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace trainperf {

class invalid_argument : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

namespace detail {
// Not constexpr-evaluable on purpose: reaching it during constant evaluation makes
// the same check a compile error.
template <class Value>
[[noreturn]] inline void fail(std::string_view field, const Value& value, std::string_view why) {
    std::ostringstream out;
    out << field << " = " << value << ": " << why;
    throw trainperf::invalid_argument(out.str());
}
}  // namespace detail

// Throws trainperf::invalid_argument("field = value: why") unless ok. In a constant
// expression a failed check does not compile.
template <class Value>
constexpr void require(bool ok, std::string_view field, const Value& value, std::string_view why) {
    if (!ok) detail::fail(field, value, why);
}

}  // namespace trainperf
