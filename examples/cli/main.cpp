// The trainperf command-line tool. Subcommands live in their own files and register
// themselves; with no arguments it prints the default scenario.
#include "cli.hpp"

#include <iostream>

int main(int argc, char** argv) { return trainperf::cli::run(argc, argv, std::cout, std::cerr); }
