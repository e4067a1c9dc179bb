// The default scenario's title: what the sections below are and where to go next.
#include "cli.hpp"

#include <ostream>

namespace trainperf::cli {
namespace {

const scenario_registration intro_registration{0, [](std::ostream& out) {
    out << "trainperf: the 7B-on-H100 training gauntlet\n"
        << "Part A memory budget, B pipeline bottleneck, C mixed-precision trap, D communication tax,\n"
        << "E a predicted step. Parts A-D follow the course exercise cited in docs/cli.md (References).\n"
        << "Every figure names its unit; GB = 1e9 B, GiB = 2^30 B.\n"
        << "`trainperf --help` lists the commands (predict, memory, flops, scale, comm, pipeline, ...).\n\n";
}};

}  // namespace
}  // namespace trainperf::cli
