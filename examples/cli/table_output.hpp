// How the CLI prints a report table (trainperf/io/report_table.hpp): as text (a chosen
// set of its columns), as CSV (io/csv.hpp: every column) or as JSON (io/table_json.hpp),
// and how it writes one to a file.
#pragma once

#include <trainperf/io/report_table.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace trainperf::cli {

enum class table_format { text, csv, json };

// The columns named (each must be one of the table's), as a text table: empty cells
// as "-", numbers with 0–3 decimals by size.
void print_columns(std::ostream& out, const report_table& t, const std::vector<std::string>& columns);

// Every column, as CSV (RFC 4180).
void print_csv(std::ostream& out, const report_table& t);

// Writes the table as CSV to `path`; throws usage_error naming `flag` when the file
// cannot be written.
void write_csv_file(const std::string& flag, const std::string& path, const report_table& t);

}  // namespace trainperf::cli
