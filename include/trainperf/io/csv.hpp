// A report table (io/report_table.hpp) as CSV, RFC 4180: a header line of the column
// names, one record per row, CRLF line ends, a field quoted (its quotes doubled) when
// it holds a comma, a quote or a line break. Numbers are plain decimals, never in
// exponent form (1.0876e+11 is written 108760000000), with the fewest digits that read
// back as the same double; yes/no as true/false; an empty cell as an empty field.
#pragma once

#include <charconv>
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <variant>

#include "../core/error.hpp"
#include "report_table.hpp"

namespace trainperf {

// The shortest plain decimal (no exponent) that reads back as `v`; throws for NaN or
// infinity, which no report holds.
inline std::string plain_decimal(double v) {
    require(std::isfinite(v), "value", v, "must be finite to be written as a decimal");
    if (v == 0) return "0";  // also -0
    char buf[400];  // the longest fixed form of a double is 309 digits and a sign
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    require(ec == std::errc{}, "value", v, "cannot be written as a decimal");
    return std::string(buf, end);
}

// One field, quoted when RFC 4180 needs it.
inline std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

inline std::string csv_text(const table_cell& cell) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) return "";
            else if constexpr (std::is_same_v<T, std::string>) return csv_field(v);
            else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
            else if constexpr (std::is_same_v<T, long long>) return std::to_string(v);
            else return plain_decimal(v);
        },
        cell);
}

inline void write_csv(std::ostream& out, const report_table& t) {
    const auto line = [&out](const auto& cells, auto text) {
        for (std::size_t i = 0; i < cells.size(); ++i) out << (i == 0 ? "" : ",") << text(cells[i]);
        out << "\r\n";
    };
    line(t.columns(), [](const std::string& name) { return csv_field(name); });
    for (const auto& row : t.rows()) line(row, [](const table_cell& c) { return csv_text(c); });
}

inline std::string to_csv(const report_table& t) {
    std::ostringstream out;
    write_csv(out, t);
    return out.str();
}

}  // namespace trainperf
