// How the CLI says that a setup does not fit in GPU memory: by how much, and each
// single change that makes it fit (search/fit_advice.hpp), with the predict command that
// shows it. No step time, throughput or MFU is printed for the setup itself.
#pragma once

#include <trainperf/search/fit_advice.hpp>
#include <trainperf/cost/fit_margin.hpp>

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>

namespace trainperf::cli {

// `run_flags(setup)` gives the flags that rebuild a setup apart from its layout
// (training_flags::run_text or setup_flags).
void print_does_not_fit(std::ostream& out, const fit_advice& advice,
                        const std::function<std::string(const training_setup&)>& run_flags);

// What decides a borderline verdict, one line (empty for a firm one); and the margin
// of a verdict followed by that line.
std::string borderline_text(const fit_margin& m, const memory_overheads& o);
std::string fit_margin_text(const fit_margin& m, const memory_overheads& o);

// For a setup that fits: its largest cost other than compute and, when that cost
// dominates the step or a change gains enough (speed_advice::worth_saying), the faster
// layouts (at most `shown`) with their gain and predict command.
void print_speed_advice(std::ostream& out, const speed_advice& advice,
                        const std::function<std::string(const training_setup&)>& run_flags, std::size_t shown = 5);

}  // namespace trainperf::cli
