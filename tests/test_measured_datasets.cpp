// Every cuBLASLt measurement committed under benchmarks/data/<gpu>/ must be
// reproduced by the calibrated kernel model on shapes left out of the fit
// (bounds in measured_datasets.hpp, method in docs/calibration.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include <trainperf/io/json.hpp>

#include "measured_datasets.hpp"

using namespace trainperf;

TEST_CASE("committed cuBLASLt datasets are reproduced by the calibrated model on held-out shapes") {
    const std::filesystem::path dir = TRAINPERF_BENCHMARK_DATA_DIR;
    const auto files = testing::measurement_files(dir);
    if (files.empty()) {
        WARN("no measurement files under " << dir.string()
             << " yet: nothing to check (run benchmarks/cublaslt/device-measure on a GPU and commit its JSON)");
        SUCCEED();
        return;
    }
    for (const auto& path : files) {
        INFO("dataset " << path.string());
        // The directory names the GPU the file says it was measured on.
        const auto file = load_measurements(path);
        CHECK(path.parent_path().filename().string() == file.provenance.gpu);
        CHECK_FALSE(file.provenance.date.empty());
        CHECK_FALSE(file.provenance.command.empty());
        const auto r = testing::check_dataset(path);
        const auto& rep = r.report;
        INFO("fitted on " << rep.fit.points << " sweep points: peak_fraction "
             << rep.calibration.params.peak_fraction << ", tile " << rep.calibration.params.tile_m << "x"
             << rep.calibration.params.tile_n << ", k_half " << rep.calibration.params.k_half
             << ", memory_efficiency " << rep.calibration.params.memory_efficiency << ", launch "
             << rep.calibration.params.launch_overhead.value() * 1e6 << " us; fit mean |error| "
             << rep.fit.mean_abs_rel_error);
        CHECK(rep.held_out.points > 0);
        CHECK(rep.held_out.mean_abs_rel_error <= testing::per_gemm_bound);
        if (!rep.layers.empty()) {
            CHECK(rep.layer_gemms.mean_abs_rel_error <= testing::per_gemm_bound);
            CHECK(rep.layer_totals.mean_abs_rel_error <= testing::per_layer_bound);
            for (const auto& l : rep.layers) {
                INFO("layer " << l.name << ": measured " << l.measured.value() * 1e6 << " us, predicted "
                              << l.predicted.value() * 1e6 << " us");
                CHECK(std::abs(l.rel_error) <= 2 * testing::per_layer_bound);  // no single layer far off
            }
        }
        CHECK(r.within_bounds);
    }
}

TEST_CASE("calibration files committed next to the datasets load and name their GPU") {
    const std::filesystem::path dir = TRAINPERF_BENCHMARK_DATA_DIR;
    int seen = 0;
    for (const auto& path : dataset_files(dir)) {
        if (schema_of(path) != calibration_schema) continue;
        INFO("calibration file " << path.string());
        const auto c = load_calibration(path);
        CHECK(path.parent_path().filename().string() == c.gpu);
        ++seen;
    }
    if (seen == 0) WARN("no calibration files under " << dir.string() << " yet");
    SUCCEED();
}
