// Runs the built trainperf CLI as a user would and captures what it prints. Shared by
// the CLI tests; safe to call from several threads at once.
#pragma once

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace trainperf_test {

struct run_result {
    int exit_code = -1;  // -1: did not exit normally (a signal: crash, abort, sanitizer)
    std::string out, err;
};

// Runs the CLI with `args` (a shell-quoted string), capturing stdout and stderr;
// `prefix` goes before the program (e.g. "env PATH=/x").
inline run_result run_cli(const std::string& args, const std::string& prefix = "") {
    // One file per call (ctest runs test programs in parallel, and a test may run calls
    // from several threads), in the temporary directory so that a crashed run leaves
    // nothing in the working directory.
    static std::atomic<int> calls{0};
    const std::string err_path = (std::filesystem::temp_directory_path() /
                                  ("trainperf_test_cli_stderr_" + std::to_string(getpid()) + "_" +
                                   std::to_string(calls++) + ".txt"))
                                     .string();
    const std::string command = prefix + " '" + TRAINPERF_CLI + "' " + args + " 2>" + err_path;
    run_result r;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return r;
    std::array<char, 4096> buffer{};
    std::size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.out.append(buffer.data(), n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    std::stringstream text;
    text << err.rdbuf();
    r.err = text.str();
    std::remove(err_path.c_str());
    return r;
}

// A value as one shell word.
inline std::string quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

}  // namespace trainperf_test
