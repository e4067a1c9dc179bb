// The trainperf command-line tool's plumbing: the registries the subcommand files add
// themselves to, and run(), which parses, dispatches and reports errors.
#include "cli.hpp"

#include <trainperf/core/error.hpp>
#include <trainperf/cost/training_run.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

namespace trainperf::cli {
namespace {
using command_setup = std::function<void(CLI::App&, std::ostream&)>;
std::multimap<int, command_setup>& command_registry() {
    static std::multimap<int, command_setup> r;
    return r;
}
std::multimap<int, std::function<void(std::ostream&)>>& scenario_registry() {
    static std::multimap<int, std::function<void(std::ostream&)>> r;
    return r;
}
}  // namespace

command_registration::command_registration(int order, command_setup setup) {
    command_registry().emplace(order, std::move(setup));
}
scenario_registration::scenario_registration(int order, std::function<void(std::ostream&)> print) {
    scenario_registry().emplace(order, std::move(print));
}

void print_json(std::ostream& out, const nlohmann::json& j) { out << j.dump(2) << '\n'; }

table::table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
void table::add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
void table::print(std::ostream& out) const {
    std::vector<std::size_t> width;
    for (const auto& row : rows_)
        for (std::size_t c = 0; c < row.size(); ++c) {
            if (width.size() <= c) width.push_back(0);
            width[c] = std::max(width[c], row[c].size());
        }
    for (std::size_t r = 0; r < rows_.size(); ++r) {
        for (std::size_t c = 0; c < rows_[r].size(); ++c) {
            out << (c == 0 ? "" : "  ") << (c == 0 ? std::left : std::right)
                << std::setw(int(width[c])) << rows_[r][c];
        }
        out << '\n';
        if (r == 0) {
            std::size_t total = 0;
            for (auto w : width) total += w + 2;
            out << std::string(total - 2, '-') << '\n';
        }
    }
    out << std::right;
}

void check_every_value(CLI::App& app) {
    const auto check = [](CLI::Option* opt) {
        if (opt->get_expected_max() == 0) {  // a flag takes no value: --sp=2 is refused
            opt->disable_flag_override();
            return;
        }
        // "FLOAT", or "FLOAT:FLOAT in [lo - hi]" once a range check is added.
        const bool number = opt->get_type_name().rfind("FLOAT", 0) == 0;
        opt->check(
            [number](const std::string& value) -> std::string {
                if (value.empty()) return "an empty value is not a value (leave the flag out for its default)";
                if (!number) return {};
                char* end = nullptr;
                const double v = std::strtod(value.c_str(), &end);
                const bool parsed = end != value.c_str() && *end == '\0';
                if (parsed && !std::isfinite(v)) return "must be a finite number, not " + value;
                if (parsed && v != 0 && std::fabs(v) < std::numeric_limits<double>::min())
                    return "must be zero or a normal number, not the denormal " + value;
                return {};
            },
            "");
    };
    for (CLI::Option* opt : app.get_options()) check(opt);
    for (CLI::App* sub : app.get_subcommands({}))
        for (CLI::Option* opt : sub->get_options()) check(opt);
}

namespace {
// The first flag on the command line that its command does not have, named with the
// flag it probably meant (the same words with '-' for '_', in any case, or a flag the
// misspelling is part of). CLI11 checks required flags before it names unexpected
// ones, so a misspelt required flag would otherwise be reported as missing.
std::optional<std::string> unknown_flag(CLI::App& app, int argc, const char* const* argv) {
    CLI::App* command = nullptr;
    for (int i = 1; i < argc && !command; ++i)
        if (argv[i][0] != '-')
            for (CLI::App* sub : app.get_subcommands({}))
                if (sub->check_name(argv[i])) command = sub;
    if (!command) return std::nullopt;
    const auto normal = [](std::string s) {
        for (char& c : s) c = c == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.size() < 3 || arg.rfind("--", 0) != 0) continue;
        const std::string flag = arg.substr(0, arg.find('='));
        if (command->get_option_no_throw(flag) || app.get_option_no_throw(flag)) continue;
        std::string meant;
        const std::string wanted = normal(flag.substr(2));
        for (const CLI::Option* o : command->get_options())
            for (const std::string& name : o->get_lnames())
                if (normal(name) == wanted || (wanted.size() >= 3 && normal(name).find(wanted) != std::string::npos) ||
                    (name.size() >= 3 && wanted.rfind(normal(name), 0) == 0))
                    meant += (meant.empty() ? "" : " or ") + ("--" + name);
        const std::string where = ": not a flag of trainperf " + command->get_name();
        if (meant.empty() && wanted == "global-batch" && command->get_option_no_throw("--batch") &&
            command->get_option_no_throw("--grad-accum"))  // predict, memory, sweep, scale
            return flag + where + "; the global batch is --batch x dp x --grad-accum";
        return flag + where +
               (meant.empty() ? " (trainperf " + command->get_name() + " --help lists them)"
                              : "; did you mean " + meant + "?");
    }
    return std::nullopt;
}
}  // namespace

std::string fixed(double value, int digits) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << value;
    return s.str();
}

std::string gpus_text(long long n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

std::string count_text(double n) {
    if (!(std::fabs(std::round(n)) >= 1e6)) return fixed(n, 0);
    const int exponent = int(std::floor(std::log10(std::fabs(n))));
    double mantissa = n / std::pow(10.0, exponent);
    int e = exponent;
    if (std::fabs(std::round(mantissa * 100) / 100) >= 10) {  // 9.999e12 rounds to 10.00e12
        mantissa /= 10;
        ++e;
    }
    return fixed(mantissa, 2) + "e" + std::to_string(e);
}

// The library's rule (cost/training_run.hpp validate_currency), its message under the flag's name.
void check_currency(const std::string& code) {
    try {
        validate_currency(code);
    } catch (const trainperf::invalid_argument& e) {
        throw usage_error(std::string("--") + e.what());
    }
}

}  // namespace trainperf::cli

namespace trainperf::cli {

namespace {
int& answer_status() {
    static int status = 0;
    return status;
}
std::vector<std::string>& notices() {
    static std::vector<std::string> said;
    return said;
}
}  // namespace

void answer_does_not_fit() { answer_status() = exit_does_not_fit; }

void notice(const std::string& text) {
    if (std::find(notices().begin(), notices().end(), text) == notices().end()) notices().push_back(text);
}

namespace {
// The whole command line in `app`: every subcommand (writing its answer to `out`),
// --version on each, and the checks every value passes.
void set_up_program(CLI::App& app, std::ostream& out) {
    app.require_subcommand(0, 1);
    const std::string version = "trainperf " TRAINPERF_VERSION;
    app.set_version_flag("--version", version);
    for (auto& [order, setup] : command_registry()) setup(app, out);
    for (CLI::App* sub : app.get_subcommands({})) sub->set_version_flag("--version", version);
    check_every_value(app);
}
const char* const program_description =
    "trainperf: predicts what it costs to train a transformer on a GPU system.\n"
    "With no arguments, prints the default scenario.";
}  // namespace

std::map<std::string, option_values> options_of(const std::string& command) {
    CLI::App app{program_description};
    std::ostringstream unused;
    set_up_program(app, unused);
    std::map<std::string, option_values> options;
    for (CLI::App* sub : app.get_subcommands({}))
        if (sub->get_name() == command)
            for (const CLI::Option* o : sub->get_options())
                for (const std::string& name : o->get_lnames())
                    options[name] = o->get_expected_max() == 0   ? option_values::none
                                    : o->get_expected_max() == 1 ? option_values::one
                                                                 : option_values::several;
    return options;
}

int run(int argc, const char* const* argv, std::ostream& out_stream, std::ostream& err_stream) {
    answer_status() = 0;
    notices().clear();
    CLI::App app{program_description};
    // Output is buffered and printed only when the whole command succeeded.
    std::ostringstream out;
    set_up_program(app, out);
    const auto fail = [&err_stream](std::string_view what) {
        err_stream << "trainperf: " << trainperf::detail::one_line(what) << '\n';
        return 2;
    };
    try {
        app.parse(argc, argv);
        if (app.get_subcommands().empty())
            for (auto& [order, print] : scenario_registry()) print(out);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e, out_stream, err_stream);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e, out_stream, err_stream);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e, out_stream, err_stream);
    } catch (const CLI::ParseError& e) {
        if (const auto unknown = unknown_flag(app, argc, argv)) return fail(*unknown);
        return fail(e.what());
    } catch (const std::invalid_argument& e) {  // trainperf::invalid_argument and friends
        return fail(e.what());
    } catch (const usage_error& e) {
        return fail(e.what());
    } catch (const std::exception& e) {
        err_stream << "trainperf: internal error: " << trainperf::detail::one_line(e.what()) << '\n';
        return 1;
    }
    out_stream << out.str() << std::flush;
    if (!out_stream) return fail("cannot write the output");
    for (const std::string& n : notices()) err_stream << "trainperf: notice: " << trainperf::detail::one_line(n) << '\n';
    return answer_status();
}

}  // namespace trainperf::cli
