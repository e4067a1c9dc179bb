#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <trainperf/calibrate/calibration.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/json.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/workload/step_ops.hpp>

#include "measured_datasets.hpp"

using namespace trainperf;

namespace {

// The parameters the synthetic "GPU" really has; different from every default.
const kernel_params truth{.peak_fraction = 0.72,
                          .tile_m = 128,
                          .tile_n = 256,
                          .k_half = 96,
                          .memory_efficiency = 0.83,
                          .launch_overhead = microseconds_of(6.0)};

// A calibration grid like the harness's --sweep: small to large, transformer-like
// aspect ratios, a few strided-batched attention shapes.
std::vector<gemm_shape> sweep_shapes() {
    std::vector<gemm_shape> out;
    for (double m : {128.0, 512.0, 1000.0, 2048.0, 4096.0, 8192.0, 16384.0})
        for (double n : {256.0, 768.0, 1024.0, 3072.0, 4096.0, 12288.0})
            for (double k : {64.0, 128.0, 512.0, 1024.0, 4096.0, 8192.0}) out.push_back({m, n, k, 1});
    for (double s : {512.0, 1024.0, 2048.0, 4096.0})
        for (double d : {64.0, 128.0}) {
            out.push_back({s, s, d, 32});
            out.push_back({s, d, s, 32});
        }
    return out;
}

// Uniform multiplicative noise in ±noise from mt19937_64's raw output (whose
// sequence the standard fixes, unlike the distributions').
std::vector<gemm_measurement> synthesize(const gpu_spec& gpu, const std::vector<gemm_shape>& shapes,
                                         const kernel_params& p, double noise, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<gemm_measurement> out;
    for (const auto& s : shapes) {
        const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
        out.push_back({s, gemm_time(gpu, s, p) * (1.0 + noise * (2 * u - 1))});
    }
    return out;
}

measurement_file synthetic_file(const gpu_spec& gpu, const kernel_params& p, double noise,
                                double layer_scale) {
    measurement_file f;
    f.provenance = {.gpu_name = "synthetic " + std::string(gpu.full_name),
                    .gpu = std::string(gpu.name),
                    .sm_count = gpu.sm_count,
                    .driver = "synthetic",
                    .cuda_runtime = "synthetic",
                    .cublaslt = "synthetic",
                    .date = "2026-01-01T00:00:00Z",
                    .command = "test_calibration"};
    for (const auto& m : synthesize(gpu, sweep_shapes(), p, noise, 7))
        f.gemms.push_back({.group = "sweep", .name = "sweep", .shape = m.shape, .measured = m.measured});
    struct layer_case {
        const char* model;
        int b, s, tp;
    };
    for (const auto& lc : {layer_case{"gpt2-medium", 8, 1024, 1}, layer_case{"llama2-7b", 1, 4096, 1},
                           layer_case{"gpt3-175b", 1, 2048, 8}}) {
        const auto& model = lookup_model(lc.model);
        const std::string name = std::string(lc.model) + " b" + std::to_string(lc.b) + " s" +
                                 std::to_string(lc.s) + " tp" + std::to_string(lc.tp);
        f.layers.push_back({.name = name, .model = lc.model, .micro_batch = lc.b, .seq = lc.s, .tp = lc.tp});
        std::uint64_t seed = 11;
        for (const auto& op : layer_gemms(model, lc.b, lc.s, lc.tp, dtype::bf16)) {
            const auto t = synthesize(gpu, {op.shape}, p, noise, seed++).front().measured;
            f.gemms.push_back({.group = name,
                               .name = std::string(op.name),
                               .phase = std::string(to_string(op.phase)),
                               .shape = op.shape,
                               .measured = t * layer_scale});
        }
    }
    return f;
}

std::filesystem::path temp_dir(const std::string& tag) {
    auto dir = std::filesystem::temp_directory_path() / ("trainperf-test-calibration-" + tag);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("evaluate: relative errors of predictions against measurements") {
    const auto& gpu = lookup_gpu("h100-sxm");
    const gemm_shape g{4096, 4096, 4096, 1};
    const auto t = gemm_time(gpu, g, truth);
    const std::vector<gemm_measurement> exact{{g, t}}, slow{{g, 1.25 * t}}, fast{{g, 0.8 * t}};
    CHECK(evaluate(gpu, truth, exact).mean_abs_rel_error == Approx(0.0).margin(1e-15));
    const auto s = evaluate(gpu, truth, slow);  // predicted/measured = 0.8
    CHECK(s.points == 1);
    CHECK(s.mean_rel_error == Approx(-0.2));
    CHECK(s.mean_abs_rel_error == Approx(0.2));
    CHECK(evaluate(gpu, truth, fast).mean_rel_error == Approx(0.25));

    const std::vector<gemm_measurement> both{{g, 1.25 * t}, {g, 0.8 * t}};
    const auto e = evaluate(gpu, truth, both);
    CHECK(e.mean_abs_rel_error == Approx(0.225));
    CHECK(e.max_abs_rel_error == Approx(0.25));
    CHECK(e.rms_rel_error == Approx(std::sqrt((0.04 + 0.0625) / 2)));
}

TEST_CASE("split_for_holdout is deterministic, a partition, and order independent") {
    const auto& gpu = lookup_gpu("h100-sxm");
    const auto data = synthesize(gpu, sweep_shapes(), truth, 0.0, 1);
    const auto s = split_for_holdout(data, 4);
    CHECK(s.fit.size() + s.held_out.size() == data.size());
    // About one in four held out (hash-based, so not exactly).
    CHECK(s.held_out.size() > data.size() / 8);
    CHECK(s.held_out.size() < data.size() / 2);

    auto reversed = data;
    std::reverse(reversed.begin(), reversed.end());
    const auto r = split_for_holdout(reversed, 4);
    REQUIRE(r.held_out.size() == s.held_out.size());
    for (const auto& h : s.held_out) {
        const bool found = std::any_of(r.held_out.begin(), r.held_out.end(), [&](const auto& x) {
            return shape_hash(x.shape) == shape_hash(h.shape);
        });
        CHECK(found);
    }
    // Two points always give one on each side.
    const std::vector<gemm_measurement> two{data[0], data[1]};
    const auto t = split_for_holdout(two, 4);
    CHECK(t.fit.size() == 1);
    CHECK(t.held_out.size() == 1);
    CHECK_THROWS_AS(split_for_holdout(data, 1), trainperf::invalid_argument);
    // A shape it cannot hash is refused, naming the size (its sizes become integers).
    auto bad = data;
    bad[1].shape.m = 1e30;
    CHECK_THROWS_WITH(split_for_holdout(bad, 4), Catch::Contains("gemm.m"));
    bad[1].shape.m = std::nan("");
    CHECK_THROWS_WITH(split_for_holdout(bad, 4), Catch::Contains("gemm.m"));
    CHECK_THROWS_WITH(shape_hash(bad[1].shape), Catch::Contains("gemm.m"));
}

TEST_CASE("calibrate recovers known parameters from a noiseless synthetic sweep") {
    const auto& gpu = lookup_gpu("h100-sxm");
    const auto data = synthesize(gpu, sweep_shapes(), truth, 0.0, 1);
    const auto r = calibrate(gpu, data, default_kernel_params(gpu.architecture));
    CHECK(r.points == static_cast<int>(data.size()));
    CHECK(r.params.tile_m == 128);
    CHECK(r.params.tile_n == 256);
    CHECK(r.params.peak_fraction == Approx(0.72).epsilon(1e-4));
    CHECK(r.params.k_half == Approx(96).epsilon(1e-3));
    CHECK(r.params.memory_efficiency == Approx(0.83).epsilon(1e-3));
    CHECK(r.params.launch_overhead.value() == Approx(6e-6).epsilon(1e-3));
    CHECK(r.fit_max_abs_rel_error < 1e-5);
    CHECK(r.tiles.size() == calibration_tiles.size());
    CHECK(r.compute_bound_points > 0);
    CHECK(r.compute_bound_points < r.points);  // the grid reaches the memory-bound regime
    CHECK(r.memory_efficiency_fitted);
}

TEST_CASE("calibrate keeps the starting memory efficiency when no point is memory-bound") {
    // Only the compute-bound shapes of the grid: the data then say nothing about
    // memory_efficiency beyond a lower bound.
    const auto& gpu = lookup_gpu("a100-sxm-80gb");
    std::vector<gemm_shape> shapes;
    for (const auto& s : sweep_shapes())
        if (gemm_compute_time(gpu, s, truth) > gemm_memory_time(gpu, s, truth)) shapes.push_back(s);
    REQUIRE(shapes.size() > 200);
    const auto data = synthesize(gpu, shapes, truth, 0.0, 1);
    const auto start = default_kernel_params(gpu.architecture);
    const auto r = calibrate(gpu, data, start);
    CHECK_FALSE(r.memory_efficiency_fitted);
    CHECK(r.compute_bound_points == r.points);
    CHECK(r.params.memory_efficiency == start.memory_efficiency);
    CHECK(r.params.peak_fraction == Approx(0.72).epsilon(1e-4));
    CHECK(r.params.k_half == Approx(96).epsilon(1e-3));
    CHECK(r.fit_max_abs_rel_error < 1e-5);
}

TEST_CASE("calibrate recovers known parameters from a noisy sweep and predicts held-out shapes") {
    const auto& gpu = lookup_gpu("h100-sxm");
    const double noise = 0.03;  // ±3 % uniform, like run-to-run spread of short kernels
    const auto data = synthesize(gpu, sweep_shapes(), truth, noise, 42);
    const auto split = split_for_holdout(data, 4);
    const auto r = calibrate(gpu, split.fit, default_kernel_params(gpu.architecture));
    CHECK(r.params.tile_m == 128);
    CHECK(r.params.tile_n == 256);
    CHECK(r.params.peak_fraction == Approx(0.72).epsilon(0.02));
    CHECK(r.params.k_half == Approx(96).epsilon(0.15));
    CHECK(r.params.memory_efficiency == Approx(0.83).epsilon(0.03));
    CHECK(r.params.launch_overhead.value() == Approx(6e-6).epsilon(0.15));
    // Noise of ±3 % uniform has mean |e| = 1.5 %: the fit cannot do better, nor much worse.
    CHECK(r.fit_mean_abs_rel_error < 0.02);
    CHECK(r.fit_max_abs_rel_error < 0.04);
    const auto held = evaluate(gpu, r.params, split.held_out);
    CHECK(held.points == static_cast<int>(split.held_out.size()));
    CHECK(held.mean_abs_rel_error < 0.02);
    // The defaults are far off on this synthetic GPU: calibration is what fixes it.
    CHECK(evaluate(gpu, default_kernel_params(gpu.architecture), split.held_out).mean_abs_rel_error > 0.08);
}

TEST_CASE("calibrate rejects input it cannot fit, naming the field") {
    const auto& gpu = lookup_gpu("h100-sxm");
    const auto start = default_kernel_params(gpu.architecture);
    auto data = synthesize(gpu, sweep_shapes(), truth, 0.0, 1);
    CHECK_THROWS_AS(calibrate(gpu, std::vector<gemm_measurement>{}, start), trainperf::invalid_argument);
    CHECK_THROWS_WITH(calibrate(gpu, std::span(data).first(3), start),
                      Catch::Contains("measurements = 3"));
    auto bad = data;
    bad[5].measured = seconds_of(-1e-3);
    CHECK_THROWS_WITH(calibrate(gpu, bad, start), Catch::Contains("measured_s = -0.001"));
    bad[5].measured = seconds_of(std::numeric_limits<double>::quiet_NaN());
    CHECK_THROWS_WITH(calibrate(gpu, bad, start), Catch::Contains("measured_s"));
    bad = data;
    bad[2].shape.k = 0;
    CHECK_THROWS_WITH(calibrate(gpu, bad, start), Catch::Contains("gemm.k"));
    auto bad_start = start;
    bad_start.peak_fraction = 1.5;
    CHECK_THROWS_WITH(calibrate(gpu, data, bad_start), Catch::Contains("peak_fraction"));
    // V100 has no bf16 tensor cores.
    CHECK_THROWS_WITH(calibrate(lookup_gpu("v100-sxm2-32gb"), data, start), Catch::Contains("bf16"));
    CHECK_THROWS_AS(evaluate(gpu, start, bad), trainperf::invalid_argument);
}

TEST_CASE("synthetic datasets in the harness's JSON format pass the measured-dataset check") {
    const auto dir = temp_dir("good");
    const auto& gpu = lookup_gpu("h200-sxm");
    save_measurements(dir / "h200-sxm" / "synthetic.json", synthetic_file(gpu, truth, 0.03, 1.0));
    // A calibration file next to the data is not mistaken for measurements.
    save_calibration(dir / "h200-sxm" / "calibration.json",
                     {.gpu = "h200-sxm", .params = truth, .dataset = "synthetic.json"});

    const auto files = testing::measurement_files(dir);
    REQUIRE(files.size() == 1);
    const auto r = testing::check_dataset(files.front());
    CHECK(r.gpu == "h200-sxm");
    CHECK(r.within_bounds);
    CHECK(r.report.layers.size() == 3);
    CHECK(r.report.held_out.mean_abs_rel_error < 0.02);
    CHECK(r.report.layer_totals.mean_abs_rel_error < 0.02);
    CHECK(r.report.calibration.params.peak_fraction == Approx(0.72).epsilon(0.02));
    std::filesystem::remove_all(dir);
}

TEST_CASE("the measured-dataset check fails when layers disagree with the sweep") {
    // Layers 15 % slower than the sweep predicts (e.g. clocks throttled during them):
    // the honest check must flag it rather than pass.
    const auto dir = temp_dir("bad");
    const auto& gpu = lookup_gpu("h200-sxm");
    save_measurements(dir / "h200-sxm" / "throttled.json", synthetic_file(gpu, truth, 0.0, 1.15));
    const auto files = testing::measurement_files(dir);
    REQUIRE(files.size() == 1);
    const auto r = testing::check_dataset(files.front());
    CHECK(r.report.held_out.mean_abs_rel_error < 1e-4);
    CHECK(r.report.layer_totals.mean_abs_rel_error == Approx(1 - 1 / 1.15).epsilon(1e-3));
    CHECK_FALSE(r.within_bounds);
    std::filesystem::remove_all(dir);
}
