// The trainperf command-line tool. Subcommands live in their own files and register
// themselves; with no arguments it prints the default scenario.
#include "cli.hpp"

#include <trainperf/error.hpp>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
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

std::string fixed(double value, int digits) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << value;
    return s.str();
}

}  // namespace trainperf::cli

int main(int argc, char** argv) {
    using namespace trainperf::cli;
    CLI::App app{"trainperf: predicts what it costs to train a transformer on a GPU system.\n"
                 "With no arguments, prints the default scenario."};
    app.require_subcommand(0, 1);
    const std::string version = "trainperf " TRAINPERF_VERSION;
    app.set_version_flag("--version", version);
    // Output is buffered and printed only when the whole command succeeded.
    std::ostringstream out;
    for (auto& [order, setup] : command_registry()) setup(app, out);
    for (CLI::App* sub : app.get_subcommands({})) sub->set_version_flag("--version", version);
    try {
        app.parse(argc, argv);
        if (app.get_subcommands().empty())
            for (auto& [order, print] : scenario_registry()) print(out);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "trainperf: " << e.what() << '\n';
        return 2;
    } catch (const std::invalid_argument& e) {  // trainperf::invalid_argument and friends
        std::cerr << "trainperf: " << e.what() << '\n';
        return 2;
    } catch (const usage_error& e) {
        std::cerr << "trainperf: " << e.what() << '\n';
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "trainperf: internal error: " << e.what() << '\n';
        return 1;
    }
    std::cout << out.str();
    return 0;
}
