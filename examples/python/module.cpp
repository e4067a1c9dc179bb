// trainperf._trainperf: the trainperf CLI in process, for the Python package around it
// (trainperf/__init__.py, docs/python.md). The package builds the command line from
// keyword arguments and parses the --json answer; this module only runs it, so a
// Python answer is the CLI's output, from the same objects, byte for byte.
#include "cli.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

// run() keeps its exit status and notices in process-wide state (cli.cpp): one command
// at a time, whichever Python thread asks.
std::mutex& cli_mutex() {
    static std::mutex mutex;
    return mutex;
}

// `trainperf ARGS...`: (exit status, stdout, stderr), the output as bytes (the package
// decodes it). The GIL is released while the command runs.
py::tuple run(const std::vector<std::string>& args) {
    std::vector<const char*> argv{"trainperf"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int status = 0;
    {
        const py::gil_scoped_release release;
        const std::lock_guard lock(cli_mutex());
        status = trainperf::cli::run(int(argv.size()), argv.data(), out, err);
    }
    return py::make_tuple(status, py::bytes(out.str()), py::bytes(err.str()));
}

// The options of a subcommand: long name -> 0 (a flag), 1 (one value) or 2 (several,
// the option given once per value).
std::map<std::string, int> options(const std::string& command) {
    std::map<std::string, int> result;
    for (const auto& [name, values] : trainperf::cli::options_of(command)) result[name] = int(values);
    return result;
}

}  // namespace

PYBIND11_MODULE(_trainperf, m) {
    m.doc() = "The trainperf CLI in process; use the trainperf package (docs/python.md).";
    m.attr("version") = TRAINPERF_VERSION;
    m.attr("exit_does_not_fit") = trainperf::cli::exit_does_not_fit;
    m.def("run", &run, py::arg("args"),
          "Runs `trainperf ARGS...`; returns (exit status, stdout bytes, stderr bytes). "
          "The GIL is released meanwhile; commands run one at a time.");
    m.def("options", &options, py::arg("command"),
          "The long option names of a subcommand: 0 for a flag, 1 for one value, 2 for several "
          "(given once per value); empty for no such subcommand.");
}
