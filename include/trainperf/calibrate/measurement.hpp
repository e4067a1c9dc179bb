// Measured GEMM times and how far a kernel model's predictions are from them.
// Shared by the calibration (calibrate/calibration.hpp, Eigen) and the JSON reader of the
// cuBLASLt harness's files (io/json.hpp): both need the records, neither should
// drag the other's dependency into core code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../cost/kernel_model.hpp"
#include "../spec/hardware.hpp"

namespace trainperf {

// One GEMM and the time it took on a real GPU (median of many repetitions).
struct gemm_measurement {
    gemm_shape shape{};
    seconds measured = seconds::from_value(0.0);
};

// The GEMMs of one transformer layer's training step, measured one by one.
struct layer_measurement {
    std::string name;
    std::vector<gemm_measurement> gemms;
};

// Throws trainperf::invalid_argument on a shape or time that cannot be fitted.
inline void validate(const gemm_measurement& g) {
    validate(g.shape);
    require_in(g.measured.value(), limits::kernel_time, "measured_s");
}

// Relative errors of predictions, (predicted − measured) / measured.
struct error_summary {
    int points = 0;
    double mean_abs_rel_error = 0;  // the headline figure
    double max_abs_rel_error = 0;
    double rms_rel_error = 0;
    double mean_rel_error = 0;      // signed: > 0 means the model is pessimistic
};

inline error_summary summarize_rel_errors(std::span<const double> rel) {
    error_summary s;
    s.points = static_cast<int>(rel.size());
    if (rel.empty()) return s;
    double abs_sum = 0, sq_sum = 0, sum = 0;
    for (double e : rel) {
        abs_sum += std::abs(e);
        sq_sum += e * e;
        sum += e;
        s.max_abs_rel_error = std::max(s.max_abs_rel_error, std::abs(e));
    }
    const double n = static_cast<double>(rel.size());
    s.mean_abs_rel_error = abs_sum / n;
    s.rms_rel_error = std::sqrt(sq_sum / n);
    s.mean_rel_error = sum / n;
    return s;
}

// Per-GEMM errors of gemm_time(gpu, shape, params) against the measurements.
inline error_summary evaluate(const gpu_spec& gpu, const kernel_params& params,
                              std::span<const gemm_measurement> data) {
    validate(params);
    std::vector<double> rel;
    rel.reserve(data.size());
    for (const auto& d : data) {
        validate(d);
        rel.push_back(gemm_time(gpu, d.shape, params) / d.measured - 1.0);
    }
    return summarize_rel_errors(rel);
}

// A whole layer: the sum of its GEMMs' predicted times against the measured sum.
struct layer_error {
    std::string name;
    seconds measured = seconds::from_value(0.0);
    seconds predicted = seconds::from_value(0.0);
    double rel_error = 0;
};

inline layer_error evaluate_layer(const gpu_spec& gpu, const kernel_params& params,
                                  const layer_measurement& layer) {
    require(!layer.gemms.empty(), "layer", layer.name, "has no GEMMs");
    layer_error e{.name = layer.name};
    for (const auto& g : layer.gemms) {
        validate(g);
        e.measured += g.measured;
        e.predicted += gemm_time(gpu, g.shape, params);
    }
    e.rel_error = e.predicted / e.measured - 1.0;
    return e;
}

// A stable hash of a shape (FNV-1a over its integer sizes and dtype): the same
// shape lands on the same side of the split whatever the order of the file. The shape
// must pass validate (its sizes are converted to integers).
inline std::uint64_t shape_hash(const gemm_shape& g) {
    validate(g);
    std::uint64_t h = 14695981039346656037ull;
    auto mix = [&h](std::uint64_t v) {
        for (int byte = 0; byte < 8; ++byte) {
            h ^= (v >> (8 * byte)) & 0xffu;
            h *= 1099511628211ull;
        }
    };
    mix(static_cast<std::uint64_t>(g.m));
    mix(static_cast<std::uint64_t>(g.n));
    mix(static_cast<std::uint64_t>(g.k));
    mix(static_cast<std::uint64_t>(g.batch));
    mix(static_cast<std::uint64_t>(g.math));
    return h;
}

struct holdout_split {
    std::vector<gemm_measurement> fit;
    std::vector<gemm_measurement> held_out;
};

// Deterministic split: a point is held out when shape_hash % every == 0, i.e.
// about one in `every`. With two or more points both sides are kept non-empty.
inline holdout_split split_for_holdout(std::span<const gemm_measurement> data, int every = 4) {
    require(every >= 2, "every", every, "must be at least 2 (one in `every` is held out)");
    holdout_split s;
    for (const auto& d : data) validate(d);
    for (const auto& d : data)
        (shape_hash(d.shape) % static_cast<std::uint64_t>(every) == 0 ? s.held_out : s.fit)
            .push_back(d);
    if (data.size() >= 2 && s.held_out.empty()) {
        s.held_out.push_back(s.fit.back());
        s.fit.pop_back();
    } else if (data.size() >= 2 && s.fit.empty()) {
        s.fit.push_back(s.held_out.back());
        s.held_out.pop_back();
    }
    return s;
}

}  // namespace trainperf
