#include "parse_units.hpp"

#include "cli.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

namespace trainperf::cli {
namespace {

[[noreturn]] void fail(std::string_view flag, std::string_view text, std::string_view why) {
    throw usage_error(std::string(flag) + " = \"" + std::string(text) + "\": " + std::string(why));
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Bytes per unit. The prefix letter's case is forgiven (kB = KB); the byte letter's
// is not.
constexpr std::array<std::pair<std::string_view, double>, 9> byte_units{{
    {"B", 1.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
}};

double unit_factor(std::string_view flag, std::string_view text, std::string_view unit) {
    if (unit.empty())
        fail(flag, text, "needs a unit, e.g. 1.4GB, 512MiB or 1000B");
    if (unit.back() == 'b')
        fail(flag, text, "lower-case b means bits; give bytes, e.g. 25GB (= 200Gb)");
    std::string u(unit);
    if (u.size() >= 2) u[0] = char(std::toupper(static_cast<unsigned char>(u[0])));
    for (const auto& [name, factor] : byte_units)
        if (name == u) return factor;
    std::string known;
    for (const auto& [name, factor] : byte_units) known += (known.empty() ? "" : ", ") + std::string(name);
    fail(flag, text, "unknown unit \"" + std::string(unit) + "\"; expected one of " + known);
}

// The leading number of `text` and what follows it.
std::pair<double, std::string_view> split_number(std::string_view flag, std::string_view text) {
    const std::string_view s = trim(text);
    if (!s.empty() && s.front() == '-') fail(flag, text, "must not be negative");
    double value = 0;
    const char* first = s.data();
    const char* last = s.data() + s.size();
    if (!s.empty() && s.front() == '+') ++first;
    const auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc{} || end == first) fail(flag, text, "expected a number with a unit");
    if (!std::isfinite(value)) fail(flag, text, "must be a finite number");
    if (value < 0) fail(flag, text, "must not be negative");
    return {value, trim(std::string_view(end, std::size_t(last - end)))};
}

// A number times its unit stays finite: 1e308 MB/s is refused, not infinity.
double in_range(std::string_view flag, std::string_view text, double scaled) {
    if (!(scaled <= 1e18)) fail(flag, text, "must be at most 1e18 bytes (per second)");
    return scaled;
}

}  // namespace

bytes parse_bytes(std::string_view flag, std::string_view text) {
    const auto [value, unit] = split_number(flag, text);
    if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "/s")
        fail(flag, text, "expected an amount of data, not a rate");
    return bytes_of(in_range(flag, text, value * unit_factor(flag, text, unit)));
}

byte_rate parse_byte_rate(std::string_view flag, std::string_view text) {
    const auto [value, unit] = split_number(flag, text);
    constexpr std::string_view per_second = "/s";
    if (unit.size() < per_second.size() ||
        unit.substr(unit.size() - per_second.size()) != per_second)
        fail(flag, text, "expected a rate per second, e.g. 52.8GB/s or 25GiB/s");
    const std::string_view amount = trim(unit.substr(0, unit.size() - per_second.size()));
    return byte_rate::from_value(in_range(flag, text, value * unit_factor(flag, text, amount)));
}

double parse_count(std::string_view flag, std::string_view text) {
    const auto [value, suffix] = split_number(flag, text);
    // Counts of parameters or tokens: 7e9, 7B, 70e9, 1.5T, 350M, 8k.
    constexpr std::array<std::pair<char, double>, 5> suffixes{
        {{'K', 1e3}, {'M', 1e6}, {'B', 1e9}, {'G', 1e9}, {'T', 1e12}}};
    double factor = 1;
    if (!suffix.empty()) {
        const char c = char(std::toupper(static_cast<unsigned char>(suffix.front())));
        bool known = suffix.size() == 1;
        for (const auto& [letter, f] : suffixes)
            if (known && letter == c) factor = f;
        if (!known || factor == 1) fail(flag, text, "expected a count, e.g. 7e9, 7B, 1.5T or 350M");
    }
    const double count = value * factor;
    if (!(count < 1e18)) fail(flag, text, "must be below 1e18");
    return count;
}

int parse_whole_number(std::string_view flag, std::string_view text) {
    int v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
        throw usage_error(std::string(flag) + ": '" + std::string(text) + "' is not a whole number");
    return v;
}

std::vector<std::string> parse_value_list(std::string_view flag, std::string_view text, bool whole_numbers,
                                          std::size_t max_values) {
    const std::string where = std::string(flag) + (flag.ends_with('=') ? "" : " ") + std::string(text);
    std::vector<std::string> values;
    const auto add = [&](std::string v) {
        if (values.size() == max_values)
            throw usage_error(where + ": more than " + std::to_string(max_values) + " values");
        values.push_back(std::move(v));
    };
    const auto dots = text.find("..");
    if (dots != std::string_view::npos) {
        if (!whole_numbers) throw usage_error(where + ": a range needs whole numbers; list the values");
        const int first = parse_whole_number(flag, text.substr(0, dots));
        std::string_view rest = text.substr(dots + 2);
        char op = '+';
        int by = 1;
        if (const auto at = rest.find_first_of("+*"); at != std::string_view::npos) {
            op = rest[at];
            by = parse_whole_number(flag, rest.substr(at + 1));
            rest = rest.substr(0, at);
        }
        const int last = parse_whole_number(flag, rest);
        if (first > last) throw usage_error(where + ": the range's first value exceeds its last");
        if (op == '+' && by < 1) throw usage_error(where + ": the step must be at least 1");
        if (op == '*' && (by < 2 || first < 1))
            throw usage_error(where + ": a factor must be at least 2 and the first value at least 1");
        for (long long v = first; v <= last; v = op == '+' ? v + by : v * by) add(std::to_string(v));
        return values;
    }
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto comma = std::min(text.find(',', start), text.size());
        const std::string_view value = text.substr(start, comma - start);
        if (value.empty()) throw usage_error(where + ": an empty value");
        if (whole_numbers) parse_whole_number(flag, value);
        add(std::string(value));
        start = comma + 1;
    }
    return values;
}

}  // namespace trainperf::cli
