// Parsing quantities given on the command line: "1.4GB", "512MiB", "52.8GB/s".
// Decimal (kB MB GB TB = 1e3…1e12 B) and binary (KiB MiB GiB TiB = 2^10…2^40 B)
// prefixes are distinct; the unit letter must be an upper-case B (bytes), since
// "Gb" means gigabits. Anything else is a usage_error naming the flag.
#pragma once

#include <trainperf/units.hpp>

#include <string_view>

namespace trainperf::cli {

// An amount of data with a unit: "1.4GB", "1.4 GiB", "512MB", "1000B".
bytes parse_bytes(std::string_view flag, std::string_view text);

// A data rate: an amount of data per second, "52.8GB/s", "25 GB/s", "900MiB/s".
byte_rate parse_byte_rate(std::string_view flag, std::string_view text);

// A count (parameters, tokens): a number, or one with a K, M, B (= G) or T suffix
// (1e3 … 1e12, either case): "7e9", "7B", "1.5T", "350M".
double parse_count(std::string_view flag, std::string_view text);

}  // namespace trainperf::cli
