// Shared plumbing of the trainperf CLI: subcommand and default-scenario registries,
// and the one way errors leave the program (one line on stderr, exit code 2).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <iosfwd>
#include <map>
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

// The exit status of a command whose answer is "does not fit": predict and memory for a
// setup that does not fit, plan when no layout (or no GPU count) fits, fit when not even
// a micro-batch of 1 fits anywhere in its table. The answer is printed in full, as for
// one that fits; scripts tell the two apart by the status (docs/cli.md).
inline constexpr int exit_does_not_fit = 3;

// Called by a command whose answer is "does not fit": run() then returns
// exit_does_not_fit.
void answer_does_not_fit();

// A default the user may not expect, said once per run as `trainperf: notice: TEXT` on
// stderr, after the answer (never beside an error).
void notice(const std::string& text);

// The whole program: parses `argv`, runs the subcommand, writes its output to `out`
// only when it succeeded, errors as one line to `err`. Returns the exit code: 0, 3 when
// the answer is "does not fit" (exit_does_not_fit), 2 for bad input, 1 for a defect.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// How many values an option takes each time it is given: none (a flag), one, or several
// (a list option such as sweep's --vary, given once per value).
enum class option_values { none, one, several };

// The long names (without "--") of subcommand `command`'s options, with the values each
// takes; empty when there is no such subcommand. For a caller that builds command lines
// for run() (the Python module, examples/python).
std::map<std::string, option_values> options_of(const std::string& command);

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

// "1 GPU", "8 GPUs".
std::string gpus_text(long long n);

// A count as people write large ones: whole below a million, else three significant
// digits and a power of ten ("2.00e12", not "2e+12" or 2000000000000).
std::string count_text(double n);

// --currency: an ISO 4217 code (three upper-case letters, e.g. USD, EUR), printed beside
// every cost; throws usage_error otherwise.
void check_currency(const std::string& code);

}  // namespace trainperf::cli
