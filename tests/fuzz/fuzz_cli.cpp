// Fuzz target: the whole CLI in process, argument parsing included. The input is split
// at newlines into the arguments of one `trainperf` run. Contract: exit code 0 with
// output (3 where the answer is "does not fit"), or 2 with exactly one line on stderr and
// no output; never 1 (a defect), a crash, a hang or undefined behaviour.
#include "fuzz_target.hpp"

#include "cli.hpp"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return 0;  // a command line, not a file
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> args{"trainperf"};
    std::istringstream lines(input);
    for (std::string arg; std::getline(lines, arg);) args.push_back(arg);
    if (args.size() > 64) return 0;
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int code = trainperf::cli::run(int(argv.size()), argv.data(), out, err);
    const std::string e = err.str();
    fuzz_require(code == 0 || code == 2 || code == trainperf::cli::exit_does_not_fit,
                 "exit code other than 0, 2 or 3 (an internal error)");
    if (code == 2) {
        fuzz_require(std::count(e.begin(), e.end(), '\n') == 1, "an error that is not exactly one line");
        fuzz_require(out.str().empty(), "output printed although the command failed");
    }
    return 0;
}
