// Fits the kernel model's efficiency parameters (cost/kernel_model.hpp) to measured GEMM
// times: a linear least-squares start on the compute-bound points, then
// Levenberg–Marquardt on all parameters minimising relative error, for each of a
// few candidate output tiles (discrete, so chosen by fitted error). Uses Eigen;
// core headers never include this one. docs/calibration.md explains the method.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../cost/kernel_model.hpp"
#include "../spec/hardware.hpp"
#include "measurement.hpp"

namespace trainperf {

struct tile_size {
    double m = 128, n = 128;
};

// cuBLASLt's common CTA tiles on sm_80/sm_90 (a kernel name like
// sm90_xmma_gemm_..._128x256x64 states its tile); the fit picks one of them.
inline constexpr std::array<tile_size, 5> calibration_tiles{
    {{64, 64}, {128, 64}, {128, 128}, {128, 256}, {256, 128}}};

struct tile_trial {
    tile_size tile;
    double fit_rms_rel_error = 0;
};

struct calibration_result {
    kernel_params params{};
    double fit_mean_abs_rel_error = 0;
    double fit_max_abs_rel_error = 0;
    double fit_rms_rel_error = 0;
    double fit_mean_rel_error = 0;    // signed bias
    int points = 0;                   // measurements in the fit
    int compute_bound_points = 0;     // of them, compute-bound under the fitted params
    // False when no point is memory-bound: the data then only bound memory_efficiency
    // from below, and the starting value is kept (if consistent with the data).
    bool memory_efficiency_fitted = false;
    std::vector<tile_trial> tiles;    // every candidate tried, in order
};

namespace calibration_detail {

// What the model needs of one point for a fixed tile, precomputed:
// t = L + max((x1 + k_half·x2)/peak_fraction, mem/memory_efficiency).
struct features {
    double x1 = 0;    // F / (P·u): compute time at 100 % of peak, quantization included
    double x2 = 0;    // x1 / k
    double mem = 0;   // B / BW
    double t = 0;     // measured
};

inline std::vector<features> make_features(const gpu_spec& gpu, std::span<const gemm_measurement> data,
                                           tile_size tile) {
    kernel_params p{};
    p.tile_m = tile.m;
    p.tile_n = tile.n;
    std::vector<features> out;
    out.reserve(data.size());
    for (const auto& d : data) {
        const double u = quantize(d.shape, gpu.sm_count, p).utilization;
        // The peak at the clock the board holds (gpu_spec::sustained_clock), as the model prices it.
        const double x1 = (gemm_flops(d.shape) / gpu.peak_for(d.shape.math)).value() / gpu.clock_ratio() / u;
        out.push_back({x1, x1 / d.shape.k, (gemm_bytes(d.shape) / gpu.memory_bandwidth).value(),
                       d.measured.value()});
    }
    return out;
}

struct values {
    double peak_fraction, k_half, memory_efficiency, launch_us;
};

inline double predict(const features& f, const values& v) {
    return v.launch_us * 1e-6 + std::max((f.x1 + v.k_half * f.x2) / v.peak_fraction,
                                         f.mem / v.memory_efficiency);
}

inline bool compute_bound(const features& f, const values& v) {
    return (f.x1 + v.k_half * f.x2) / v.peak_fraction >= f.mem / v.memory_efficiency;
}

inline double rms_rel_error(const std::vector<features>& fs, const values& v) {
    double sq = 0;
    for (const auto& f : fs) {
        const double e = predict(f, v) / f.t - 1.0;
        sq += e * e;
    }
    return std::sqrt(sq / static_cast<double>(fs.size()));
}

// Compute-bound: t = L + (1/η)·x1 + (k_half/η)·x2 is linear in (L, 1/η, k_half/η).
// Rows are divided by t so that the least squares minimises relative error.
// Classification depends on the parameters, so it is redone with each estimate.
inline values linear_start(const std::vector<features>& fs, values v) {
    for (int round = 0; round < 3; ++round) {
        std::vector<const features*> rows;
        for (const auto& f : fs)
            if (compute_bound(f, v)) rows.push_back(&f);
        if (rows.size() < 3) break;
        Eigen::MatrixXd a(static_cast<Eigen::Index>(rows.size()), 3);
        Eigen::VectorXd b = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(rows.size()));
        for (Eigen::Index i = 0; i < a.rows(); ++i) {
            const auto& f = *rows[static_cast<std::size_t>(i)];
            a(i, 0) = 1e-6 / f.t;  // launch overhead in µs keeps the columns comparable
            a(i, 1) = f.x1 / f.t;
            a(i, 2) = f.x2 / f.t;
        }
        const Eigen::Vector3d theta = a.colPivHouseholderQr().solve(b);
        if (!theta.allFinite() || theta(1) <= 0) break;
        v.peak_fraction = std::min(1.0, 1.0 / theta(1));
        v.k_half = std::max(0.0, theta(2) / theta(1));
        v.launch_us = std::max(0.0, theta(0));
    }
    return v;
}

// Unconstrained coordinates for Levenberg–Marquardt: fractions through a logistic,
// non-negative terms as squares.
inline double logistic(double z) { return 1.0 / (1.0 + std::exp(-z)); }
inline double logit(double p) {
    p = std::clamp(p, 1e-4, 1.0 - 1e-7);
    return std::log(p / (1.0 - p));
}

inline values from_z(const Eigen::VectorXd& z) {
    return {logistic(z(0)), z(1) * z(1), logistic(z(2)), z(3) * z(3)};
}

inline Eigen::VectorXd to_z(const values& v) {
    Eigen::VectorXd z(4);
    // Away from 0 so that the square's derivative does not vanish at the start.
    z << logit(v.peak_fraction), std::sqrt(std::max(v.k_half, 1.0)), logit(v.memory_efficiency),
        std::sqrt(std::max(v.launch_us, 0.1));
    return z;
}

struct relative_residuals {
    using Scalar = double;
    enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
    using InputType = Eigen::VectorXd;
    using ValueType = Eigen::VectorXd;
    using JacobianType = Eigen::MatrixXd;

    const std::vector<features>* points = nullptr;

    int inputs() const { return 4; }
    int values() const { return static_cast<int>(points->size()); }

    int operator()(const Eigen::VectorXd& z, Eigen::VectorXd& r) const {
        const auto v = from_z(z);
        for (Eigen::Index i = 0; i < r.size(); ++i) {
            const auto& f = (*points)[static_cast<std::size_t>(i)];
            r(i) = predict(f, v) / f.t - 1.0;
        }
        return 0;
    }
};

inline values refine(const std::vector<features>& fs, const values& start) {
    relative_residuals functor{.points = &fs};
    Eigen::NumericalDiff<relative_residuals> numeric(functor);
    Eigen::LevenbergMarquardt<Eigen::NumericalDiff<relative_residuals>> lm(numeric);
    lm.parameters.maxfev = 4000;
    lm.parameters.ftol = 1e-12;
    lm.parameters.xtol = 1e-12;
    Eigen::VectorXd z = to_z(start);
    lm.minimize(z);
    return z.allFinite() ? from_z(z) : start;
}

}  // namespace calibration_detail

// Fits peak_fraction, k_half, memory_efficiency, launch_overhead and the tile to
// the measurements (time of each = its median), minimising Σ (predicted/measured − 1)².
// `start` gives the initial values and breaks ties between tiles. Needs at least
// four measurements (four continuous parameters).
inline calibration_result calibrate(const gpu_spec& gpu, std::span<const gemm_measurement> data,
                                    const kernel_params& start) {
    namespace cd = calibration_detail;
    validate(start);
    require(data.size() >= 4, "measurements", data.size(),
            "calibration needs at least 4 (one per fitted parameter)");
    require(gpu.sm_count >= 1, "gpu.sm_count", gpu.sm_count, "must be at least 1");
    require(gpu.memory_bandwidth.value() > 0, "gpu.memory_bandwidth", gpu.memory_bandwidth.value(),
            "must be positive");
    for (const auto& d : data) {
        validate(d);
        (void)gpu.peak_for(d.shape.math);  // names the dtype the GPU lacks
    }

    std::vector<tile_size> candidates{{start.tile_m, start.tile_n}};
    for (auto t : calibration_tiles)
        if (t.m != start.tile_m || t.n != start.tile_n) candidates.push_back(t);

    const cd::values initial{start.peak_fraction, start.k_half, start.memory_efficiency,
                             start.launch_overhead.value() * 1e6};
    calibration_result best;
    double best_rms = INFINITY;
    std::vector<tile_trial> trials;
    for (auto tile : candidates) {
        const auto fs = cd::make_features(gpu, data, tile);
        // Two starts (the linear estimate and the caller's values); keep the better.
        cd::values chosen = initial;
        double chosen_rms = cd::rms_rel_error(fs, initial);
        for (const auto& from : {cd::linear_start(fs, initial), initial}) {
            const auto v = cd::refine(fs, from);
            const double rms = cd::rms_rel_error(fs, v);
            if (rms < chosen_rms) {
                chosen = v;
                chosen_rms = rms;
            }
        }
        trials.push_back({tile, chosen_rms});
        auto memory_bound = [&](const cd::values& v) {
            return std::count_if(fs.begin(), fs.end(),
                                 [&](const cd::features& f) { return !cd::compute_bound(f, v); });
        };
        bool memory_fitted = memory_bound(chosen) > 0;
        if (!memory_fitted) {
            cd::values kept = chosen;
            kept.memory_efficiency = start.memory_efficiency;
            if (memory_bound(kept) == 0) chosen = kept;
        }
        if (chosen_rms < best_rms) {
            best_rms = chosen_rms;
            best.params = {.peak_fraction = std::clamp(chosen.peak_fraction, 1e-6, 1.0),
                           .tile_m = tile.m,
                           .tile_n = tile.n,
                           .k_half = std::max(0.0, chosen.k_half),
                           .memory_efficiency = std::clamp(chosen.memory_efficiency, 1e-6, 1.0),
                           .launch_overhead = microseconds_of(std::max(0.0, chosen.launch_us))};
            best.compute_bound_points = static_cast<int>(fs.size() - memory_bound(chosen));
            best.memory_efficiency_fitted = memory_fitted;
        }
    }
    best.tiles = std::move(trials);
    const auto fit = evaluate(gpu, best.params, data);
    best.fit_mean_abs_rel_error = fit.mean_abs_rel_error;
    best.fit_max_abs_rel_error = fit.max_abs_rel_error;
    best.fit_rms_rel_error = fit.rms_rel_error;
    best.fit_mean_rel_error = fit.mean_rel_error;
    best.points = fit.points;
    return best;
}

// The honest evaluation of a measured dataset: fit on part of the sweep, report
// the error on the sweep shapes left out and on the transformer layers' GEMMs
// (never part of the fit), per GEMM and per whole layer.
struct holdout_report {
    calibration_result calibration;
    error_summary fit;
    error_summary held_out;       // sweep shapes not in the fit
    error_summary layer_gemms;    // every GEMM of every layer
    error_summary layer_totals;   // one point per layer: Σ predicted vs Σ measured
    std::vector<layer_error> layers;
};

inline holdout_report calibrate_with_holdout(const gpu_spec& gpu, std::span<const gemm_measurement> sweep,
                                             std::span<const layer_measurement> layers,
                                             const kernel_params& start, int every = 4) {
    const auto split = split_for_holdout(sweep, every);
    holdout_report r;
    r.calibration = calibrate(gpu, split.fit, start);
    const auto& p = r.calibration.params;
    r.fit = evaluate(gpu, p, split.fit);
    r.held_out = evaluate(gpu, p, split.held_out);
    std::vector<gemm_measurement> all_layer_gemms;
    std::vector<double> totals;
    for (const auto& layer : layers) {
        r.layers.push_back(evaluate_layer(gpu, p, layer));
        totals.push_back(r.layers.back().rel_error);
        all_layer_gemms.insert(all_layer_gemms.end(), layer.gemms.begin(), layer.gemms.end());
    }
    r.layer_gemms = evaluate(gpu, p, all_layer_gemms);
    r.layer_totals = summarize_rel_errors(totals);
    return r;
}

}  // namespace trainperf
