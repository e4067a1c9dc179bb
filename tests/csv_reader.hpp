// Test support: an RFC 4180 reader written apart from the library's writer
// (io/csv.hpp), so that the tests read the CSV as any other program would. Quoted
// fields may hold commas, doubled quotes and line breaks; records end in CRLF or LF.
#pragma once

#include <charconv>
#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainperf::testing {

using csv_record = std::vector<std::string>;

inline std::vector<csv_record> parse_csv(std::string_view text) {
    std::vector<csv_record> records;
    csv_record record;
    std::string field;
    bool quoted = false, field_started = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c != '"') field += c;
            else if (i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
            else quoted = false;
            continue;
        }
        if (c == '"') {
            if (!field.empty()) throw std::runtime_error("csv: a quote inside an unquoted field");
            quoted = field_started = true;
        } else if (c == ',') {
            record.push_back(field), field.clear(), field_started = false;
        } else if (c == '\r' || c == '\n') {
            if (c == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')) throw std::runtime_error("csv: a lone CR");
            if (c == '\r') ++i;
            record.push_back(field), field.clear(), field_started = false;
            records.push_back(record), record.clear();
        } else {
            field += c;
            field_started = true;
        }
    }
    if (quoted) throw std::runtime_error("csv: an unterminated quoted field");
    if (field_started || !record.empty()) record.push_back(field), records.push_back(record);
    return records;
}

// A plain decimal field as a double (nullopt for an empty one); throws on anything
// else, an exponent included.
inline std::optional<double> decimal(const std::string& s) {
    if (s.empty()) return std::nullopt;
    if (s.find_first_of("eE") != std::string::npos) throw std::runtime_error("csv: exponent in " + s);
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
    if (ec != std::errc{} || end != s.data() + s.size()) throw std::runtime_error("csv: not a decimal: " + s);
    return v;
}

// Records after the header as maps from column name to field; every record has one
// field per column.
inline std::vector<std::map<std::string, std::string>> csv_rows(std::string_view text) {
    const auto records = parse_csv(text);
    if (records.empty()) throw std::runtime_error("csv: no header");
    std::vector<std::map<std::string, std::string>> rows;
    for (std::size_t r = 1; r < records.size(); ++r) {
        if (records[r].size() != records[0].size()) throw std::runtime_error("csv: a record of the wrong width");
        std::map<std::string, std::string> row;
        for (std::size_t c = 0; c < records[0].size(); ++c) row[records[0][c]] = records[r][c];
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace trainperf::testing
