// Parsing quantities given on the command line: "1.4GB", "512MiB", "52.8GB/s".
// Decimal (kB MB GB TB = 1e3…1e12 B) and binary (KiB MiB GiB TiB = 2^10…2^40 B)
// prefixes are distinct; the unit letter must be an upper-case B (bytes), since
// "Gb" means gigabits. Anything else is a usage_error naming the flag.
#pragma once

#include <trainperf/core/units.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trainperf::cli {

// An amount of data with a unit: "1.4GB", "1.4 GiB", "512MB", "1000B".
bytes parse_bytes(std::string_view flag, std::string_view text);

// A data rate: an amount of data per second, "52.8GB/s", "25 GB/s", "900MiB/s".
byte_rate parse_byte_rate(std::string_view flag, std::string_view text);

// A count (parameters, tokens): a number, or one with a K, M, B (= G) or T suffix
// (1e3 … 1e12, either case): "7e9", "7B", "1.5T", "350M".
double parse_count(std::string_view flag, std::string_view text);

// A list of values: "1,2,4" or "nvlink,pcie"; with `whole_numbers`, each must be a
// whole number, and a range is accepted too: FIRST..LAST (step 1), FIRST..LAST+STEP,
// FIRST..LAST*FACTOR (FIRST, then each value STEP more or FACTOR times more, up to
// LAST). More than `max_values` values is an error (a usage_error naming `flag`).
std::vector<std::string> parse_value_list(std::string_view flag, std::string_view text, bool whole_numbers,
                                          std::size_t max_values);

// A whole number, all of `text`; a usage_error naming `flag` otherwise.
int parse_whole_number(std::string_view flag, std::string_view text);

}  // namespace trainperf::cli
