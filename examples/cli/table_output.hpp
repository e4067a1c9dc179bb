// How the CLI prints a report table (trainperf/io/report_table.hpp): as text (a chosen
// set of its columns), as CSV (io/csv.hpp: every column) or as JSON (io/table_json.hpp),
// and how it writes one to a file; and text that fits a terminal: lines wrapped at
// words, a command wrapped with shell line continuations, a layout in narrow columns.
#pragma once

#include <trainperf/io/report_table.hpp>
#include <trainperf/spec/parallel.hpp>

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

// The width the narrow text fits: a terminal of 120 columns.
inline constexpr std::size_t terminal_columns = 120;

// `text` broken at spaces into lines of at most `width` columns (a word longer than
// that on a line of its own), the lines after the first indented by `indent` spaces;
// no newline at the end.
std::string wrap_words(const std::string& text, std::size_t indent = 0, std::size_t width = terminal_columns);

// A shell command broken before its flags (a word starting with "--", with the values
// that follow it; quoted words stay whole) into lines of at most `width` columns, each
// but the last ending in " \" and each after the first indented by four spaces: it
// runs as printed. A flag with its values wider than that has a line of its own.
std::string wrap_command(const std::string& command, std::size_t width = terminal_columns);

// The width of the widest line table::print prints for `rows` (the header first).
std::size_t table_width(const std::vector<std::vector<std::string>>& rows);

// A layout in narrow columns, one per field (cp only `with_cp`, ep and etp only
// `with_experts`): dp, tp, cp, pp, v (interleave), ep, etp, sp (on/off), ZeRO, recompute,
// mb (micro-batch), ga (grad-accum).
std::vector<std::string> layout_headers(bool with_cp, bool with_experts = false);
std::vector<std::string> layout_cells(const parallel_layout& l, bool with_cp, bool with_experts = false);

// The line that says what the narrow columns' short headers mean (ep and etp's `with_experts`).
std::string layout_legend(bool with_experts = false);

// What the columns leave out, comma-separated (empty when nothing is): optimizer
// offload, the schedule, the first and last stage's layers, the shard group,
// dp-overlap where it departs from the framework's habit (`framework_overlaps`), and
// `changes` (the switches turned off, search/layout_search.hpp
// describe_changes, with its leading ", ").
std::string layout_rest(const parallel_layout& l, const std::string& changes, bool framework_overlaps);

// Prints `rows` (the header first) as a table with a last column `rest_header` that
// holds each data row's `rest` (empty: "-") where the table stays within `width`
// columns with it; a longer rest is a numbered note below the table ("[1] ...",
// wrapped), its number in the column. A table too wide for the column (its header or a
// note's number) has none: each rest is a note after the row's first cell ("3: ...").
void print_with_rest(std::ostream& out, std::vector<std::vector<std::string>> rows,
                     const std::vector<std::string>& rest, const std::string& rest_header,
                     std::size_t width = terminal_columns);

}  // namespace trainperf::cli
