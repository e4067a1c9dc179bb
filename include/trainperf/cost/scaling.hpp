// Multi-GPU scaling with a communication-overhead fraction r:
//   speedup(N, r) = N / (1 + (N−1)·r),  efficiency = speedup / N,
//   wasted GPU-equivalents = N − speedup.
// r = 0 is perfect scaling, r = 1 means N GPUs are no faster than one. The inverse,
// implied_r, reads r off a measured speedup. Derivation: docs/communication.md.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/parallel.hpp"

namespace trainperf {

namespace scaling_detail {
// A curve lists every GPU count up to its end, so it stops at 2^16 points.
inline constexpr int max_curve_points = 1 << 16;

constexpr void validate(int n, double r) {
    require(n >= 1 && n <= max_gpus, "gpus", n, "must be between 1 and 2^22");
    require(r >= 0 && r <= 1, "r", r, "communication fraction must be in [0, 1]");  // rejects NaN
}
}  // namespace scaling_detail

constexpr double speedup(int n, double r) {
    scaling_detail::validate(n, r);
    return n / (1.0 + (n - 1) * r);
}

constexpr double efficiency(int n, double r) { return speedup(n, r) / n; }

constexpr double wasted_gpus(int n, double r) { return n - speedup(n, r); }

// The r that makes speedup(n, r) equal a measured speedup: r = (n/s − 1) / (n − 1).
// Needs n ≥ 2 (one GPU says nothing about r) and 1 ≤ s ≤ n (otherwise r leaves [0, 1]).
constexpr double implied_r(int n, double measured_speedup) {
    require(n >= 2, "gpus", n, "at least 2 GPUs are needed to infer r");
    require(measured_speedup >= 1 && measured_speedup <= n, "speedup", measured_speedup,
            "must be between 1 and the number of GPUs for r to lie in [0, 1]");
    return (n / measured_speedup - 1.0) / (n - 1.0);
}

// Data-parallel speedup when each GPU computes for `compute` and then waits `sync`
// for gradients (no overlap): n·compute / (compute + sync). Feed it to implied_r to
// get the r a comm model predicts.
constexpr double data_parallel_speedup(int n, seconds compute, seconds sync) {
    require(n >= 1, "gpus", n, "must be at least 1");
    require(compute.value() > 0 && compute.value() < std::numeric_limits<double>::infinity(),
            "compute_seconds", compute.value(), "must be positive and finite");
    require(sync.value() >= 0 && sync.value() < std::numeric_limits<double>::infinity(),
            "sync_seconds", sync.value(), "must be finite and not negative");
    return n * compute.value() / (compute.value() + sync.value());
}

struct scaling_point {
    int gpus = 1;
    double speedup = 1;      // × one GPU
    double efficiency = 1;   // speedup / gpus
    double wasted_gpus = 0;  // gpus − speedup, in GPU-equivalents
};

constexpr scaling_point scaling_at(int n, double r) {
    const double s = speedup(n, r);
    return {n, s, s / n, n - s};
}

// The curve 1…n_max.
inline std::vector<scaling_point> scaling_curve(int n_max, double r) {
    scaling_detail::validate(n_max, r);
    require(n_max <= scaling_detail::max_curve_points, "gpus", n_max,
            "a curve lists every GPU count: at most 65536 points");
    std::vector<scaling_point> curve;
    curve.reserve(static_cast<std::size_t>(n_max));
    for (int n = 1; n <= n_max; ++n) curve.push_back(scaling_at(n, r));
    return curve;
}

}  // namespace trainperf
