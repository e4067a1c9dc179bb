// Shared plumbing of the trainperf CLI: subcommand and default-scenario registries,
// and the one way errors leave the program (one line on stderr, exit code 2).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace trainperf::cli {

// A subcommand file registers itself with a static `command_registration`. `order`
// fixes where it appears in --help; `setup` adds the subcommand's options to `app`
// and its callback, which writes to `out` (only after all work succeeded).
struct command_registration {
    command_registration(int order, std::function<void(CLI::App& app, std::ostream& out)> setup);
};

// A section of the default scenario (`trainperf` with no arguments), printed in
// `order`.
struct scenario_registration {
    scenario_registration(int order, std::function<void(std::ostream& out)> print);
};

// Bad input found after parsing (inconsistent flags, unknown names): exit code 2.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The whole program: parses `argv`, runs the subcommand, writes its output to `out`
// only when it succeeded, errors as one line to `err`. Returns the exit code: 0, 2 for
// bad input, 1 for a defect.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// Prints a JSON object the same way in every subcommand.
void print_json(std::ostream& out, const nlohmann::json& j);

// A plain-text table with a header row; columns are right-aligned except the first.
class table {
public:
    explicit table(std::vector<std::string> header);
    void add_row(std::vector<std::string> row);
    void print(std::ostream& out) const;
private:
    std::vector<std::vector<std::string>> rows_;
};

// Adds to every option of `app` and its subcommands the checks every value passes
// before it is converted: not empty (an empty value never stands for the default),
// and for numbers finite and not denormal. A flag takes no value (--json=1 is refused).
void check_every_value(CLI::App& app);

// Fixed-point formatting with `digits` after the point.
std::string fixed(double value, int digits);

}  // namespace trainperf::cli
