// Test support shared by test_measured_datasets.cpp (committed data under
// benchmarks/data) and test_calibration.cpp (synthetic files in the same format):
// both go through this one code path.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <trainperf/calibrate/calibration.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/json.hpp>

namespace trainperf::testing {

// The stated bounds (docs/calibration.md): on sweep shapes held out of the fit and
// on the transformer layers' GEMMs, mean |relative error| per GEMM ≤ 10 %; summed
// over each layer's GEMMs, mean |relative error| over layers ≤ 5 %.
inline constexpr double per_gemm_bound = 0.10;
inline constexpr double per_layer_bound = 0.05;
inline constexpr int holdout_every = 4;

struct dataset_result {
    std::string gpu;
    holdout_report report;
    bool within_bounds = false;
};

// Loads a measurement file, fits on the sweep's fit split starting from the
// architecture's defaults and evaluates the rest against the stated bounds.
inline dataset_result check_dataset(const std::filesystem::path& path) {
    const auto file = load_measurements(path);
    const gpu_spec& gpu = lookup_gpu(file.provenance.gpu);
    const auto sweep = sweep_measurements(file);
    const auto layers = layer_measurements(file);
    dataset_result r{.gpu = std::string(gpu.name),
                     .report = calibrate_with_holdout(gpu, sweep, layers,
                                                      default_kernel_params(gpu.architecture),
                                                      holdout_every)};
    const auto& rep = r.report;
    r.within_bounds = rep.held_out.points > 0 && rep.held_out.mean_abs_rel_error <= per_gemm_bound &&
                      (layers.empty() || (rep.layer_gemms.mean_abs_rel_error <= per_gemm_bound &&
                                          rep.layer_totals.mean_abs_rel_error <= per_layer_bound));
    return r;
}

// The measurement files (schema trainperf.cublaslt.v1) among <dir>/<gpu>/*.json;
// calibration files living next to them are skipped.
inline std::vector<std::filesystem::path> measurement_files(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    for (const auto& p : dataset_files(dir))
        if (schema_of(p) == measurement_schema) out.push_back(p);
    return out;
}

}  // namespace trainperf::testing
