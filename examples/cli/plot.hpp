// Plots with gnuplot (an optional runtime dependency: Debian's gnuplot-nox). The CLI
// writes a gnuplot script (presentation only: the figures come from the report tables
// of trainperf/io/report_table.hpp), runs gnuplot as a child process without a shell, the
// data inline in the script and the image read from gnuplot's standard output, so no
// file name reaches gnuplot; the CLI writes the image to FILE.svg or FILE.png and the
// data behind it, as CSV, to FILE.csv beside it. Without gnuplot, --plot is a
// usage_error (exit code 2) that says so.
#pragma once

#include <trainperf/io/report_table.hpp>

#include <string>
#include <vector>

namespace trainperf::cli {

// Checks that `path` ends in .svg or .png (the formats written) and is not a directory.
void check_plot_path(const std::string& path);

// FILE.svg -> FILE.csv: where the data behind a plot is written.
std::string plot_data_path(const std::string& plot_path);

// The line a command prints after writing a plot: where the picture and its data are.
std::string plot_written_note(const std::string& plot);

// tokens/s (top) and memory per GPU with the device's capacity (bottom) against the
// column `varied[0]`, one series per value of `varied[1]` when given. Points that do
// not fit have no tokens/s.
void plot_sweep(const std::string& path, const report_table& t, const std::vector<std::string>& varied);

// The engine's data-parallel speedup (points) beside N/(1+(N-1)r) with its derived r
// and perfect scaling (lines), from scaling_table(engine_scaling).
void plot_engine_scaling(const std::string& path, const report_table& t);

// The formula's curve N/(1+(N-1)r) and perfect scaling, from scaling_table(n, r).
void plot_formula_scaling(const std::string& path, const report_table& t);

// Memory per GPU by component at the peak, stacked, against `over` (micro_batch or
// seq), with the device's usable memory as a line; from memory_table().
void plot_memory(const std::string& path, const report_table& t, const std::string& over);

// One step's time by part (forward+backward, communication, optimizer, bubble, data)
// as one stacked bar; from a step table of one row that fits.
void plot_step(const std::string& path, const report_table& t);

}  // namespace trainperf::cli
