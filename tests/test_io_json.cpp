#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <trainperf/hardware/catalog.hpp>
#include <trainperf/io/json.hpp>

using namespace trainperf;
using nlohmann::json;

namespace {

const kernel_params sample{.peak_fraction = 0.74,
                           .tile_m = 128,
                           .tile_n = 256,
                           .k_half = 110,
                           .memory_efficiency = 0.86,
                           .launch_overhead = microseconds_of(4.5)};

std::filesystem::path temp_file(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / "trainperf-test-io-json";
    std::filesystem::create_directories(dir);
    return dir / name;
}

// What build/bin/trainperf-cublaslt writes (benchmarks/data/README.md), including
// fields trainperf does not read back.
const char* const harness_output = R"({
  "schema": "trainperf.cublaslt.v1",
  "provenance": {
    "gpu_name": "NVIDIA H200", "gpu": "h200-sxm", "sm_count": 132, "compute_capability": "9.0",
    "sm_clock_max_mhz": 1980, "sm_clock_min_seen_mhz": 1755, "sm_clock_max_seen_mhz": 1980,
    "driver": "13.0", "cuda_runtime": "13.0", "cublaslt": "130000",
    "date": "2026-11-02T10:00:00Z", "command": "trainperf-cublaslt --sweep --out x.json",
    "l2_cache_bytes": 62914560
  },
  "kernel_params": {"peak_fraction": 0.8, "tile_m": 128, "tile_n": 256, "k_half": 128,
                    "memory_efficiency": 0.88, "launch_overhead_us": 4},
  "settings": {"warmup": 10, "repetitions": 50},
  "gemms": [
    {"group": "sweep", "name": "sweep", "phase": "", "m": 4096, "n": 4096, "k": 4096, "batch": 1,
     "dtype": "bf16", "epilogue": "none", "layout": "TN", "measured_s": 0.000196, "p10_s": 0.000195,
     "p90_s": 0.000198, "repetitions": 50, "predicted_s": 0.000180, "rel_error": -0.0816,
     "tflops": 701.2, "peak_fraction": 0.709, "algo_id": 66, "waves_count": 0.97,
     "check": {"samples": 64, "max_rel_error": 0.003, "tolerance": 0.02, "passed": true}},
    {"group": "gpt2-medium b8 s1024 tp1", "name": "qkv", "phase": "forward", "m": 8192, "n": 3072,
     "k": 1024, "batch": 1, "dtype": "bf16", "epilogue": "none", "measured_s": 0.00011},
    {"group": "gpt2-medium b8 s1024 tp1", "name": "ffn_up", "phase": "forward", "m": 8192,
     "n": 4096, "k": 1024, "batch": 1, "dtype": "bf16", "epilogue": "gelu", "measured_s": 0.00015}
  ],
  "layers": [
    {"name": "gpt2-medium b8 s1024 tp1", "model": "gpt2-medium", "micro_batch": 8, "seq": 1024,
     "tp": 1, "dtype": "bf16", "measured_s": 0.00026, "predicted_s": 0.00025, "rel_error": -0.04}
  ]
})";

}  // namespace

TEST_CASE("kernel_params round-trip through JSON with units in the keys") {
    const json j = to_json(sample);
    CHECK(j.at("launch_overhead_us").get<double>() == Approx(4.5));
    CHECK(j.at("tile_n").get<double>() == 256);
    const auto back = kernel_params_from_json(j);
    CHECK(back.peak_fraction == 0.74);
    CHECK(back.tile_m == 128);
    CHECK(back.tile_n == 256);
    CHECK(back.k_half == 110);
    CHECK(back.memory_efficiency == 0.86);
    CHECK(back.launch_overhead.value() == Approx(4.5e-6));
}

TEST_CASE("kernel_params_from_json names the bad field") {
    json j = to_json(sample);
    j.erase("k_half");
    CHECK_THROWS_WITH(kernel_params_from_json(j), "kernel_params.k_half = (missing): required");
    j = to_json(sample);
    j["peak_fraction"] = "high";
    CHECK_THROWS_WITH(kernel_params_from_json(j), Catch::Contains("kernel_params.peak_fraction = \"high\""));
    j = to_json(sample);
    j["peak_fraction"] = 1.3;
    CHECK_THROWS_WITH(kernel_params_from_json(j), Catch::StartsWith("peak_fraction = 1.3"));
    j = to_json(sample);
    j["launch_overhead_s"] = 4e-6;  // wrong unit: rejected rather than ignored
    CHECK_THROWS_WITH(kernel_params_from_json(j), Catch::Contains("kernel_params.launch_overhead_s"));
    CHECK_THROWS_AS(kernel_params_from_json(json::array()), trainperf::invalid_argument);
}

TEST_CASE("calibration files save and load next to the GPU's name") {
    const auto path = temp_file("h100-sxm.calibration.json");
    calibration_file c{.gpu = "h100-sxm", .params = sample, .dataset = "benchmarks/data/h100-sxm/a.json",
                       .created = "2026-11-02"};
    c.held_out = {.points = 40, .mean_abs_rel_error = 0.04, .max_abs_rel_error = 0.12,
                  .rms_rel_error = 0.05, .mean_rel_error = -0.01};
    save_calibration(path, c);
    const auto back = load_calibration(path);
    CHECK(back.gpu == "h100-sxm");
    CHECK(back.params.k_half == 110);
    CHECK(back.params.launch_overhead.value() == Approx(4.5e-6));
    CHECK(back.dataset == c.dataset);
    CHECK(back.held_out.points == 40);
    CHECK(back.held_out.max_abs_rel_error == 0.12);
    // The GPU name resolves in the catalog, as `predict --calibration` needs.
    CHECK(lookup_gpu(back.gpu).sm_count == 132);

    json j = to_json(c);
    j["schema"] = "something.else";
    CHECK_THROWS_WITH(calibration_file_from_json(j), Catch::StartsWith("schema = something.else"));
    CHECK_THROWS_WITH(load_calibration(temp_file("does-not-exist.json")), Catch::Contains("does not exist"));
    {
        std::ofstream(temp_file("broken.json")) << "{ not json";
    }
    CHECK_THROWS_WITH(load_calibration(temp_file("broken.json")), Catch::Contains("is not valid JSON"));
}

TEST_CASE("the harness's measurement file is read: provenance, sweep and layers") {
    const auto f = measurement_file_from_json(json::parse(harness_output));
    CHECK(f.provenance.gpu_name == "NVIDIA H200");
    CHECK(f.provenance.gpu == "h200-sxm");
    CHECK(f.provenance.sm_count == 132);
    CHECK(f.provenance.sm_clock_min_seen_mhz == 1755);
    CHECK(f.provenance.cublaslt == "130000");
    REQUIRE(f.prediction_params.has_value());
    CHECK(f.prediction_params->k_half == 128);
    REQUIRE(f.gemms.size() == 3);
    CHECK(f.gemms[0].p90.value().value() == 0.000198);
    CHECK(f.gemms[0].repetitions == 50);
    CHECK(f.gemms[2].epilogue == "gelu");
    CHECK(f.gemms[1].repetitions == 0);

    const auto sweep = sweep_measurements(f);
    REQUIRE(sweep.size() == 1);
    CHECK(sweep[0].shape.m == 4096);
    CHECK(sweep[0].shape.math == dtype::bf16);
    CHECK(sweep[0].measured.value() == 0.000196);
    const auto layers = layer_measurements(f);
    REQUIRE(layers.size() == 1);
    CHECK(layers[0].name == "gpt2-medium b8 s1024 tp1");
    REQUIRE(layers[0].gemms.size() == 2);
    CHECK(layers[0].gemms[1].shape.n == 4096);
    CHECK(f.layers[0].micro_batch == 8);
    CHECK(f.layers[0].model == "gpt2-medium");
}

TEST_CASE("measurement files round-trip through save and load") {
    auto f = measurement_file_from_json(json::parse(harness_output));
    f.gemms[1].predicted = seconds_of(1e-4);
    const auto path = temp_file("roundtrip.json");
    save_measurements(path, f);
    CHECK(schema_of(path) == measurement_schema);
    const auto back = load_measurements(path);
    REQUIRE(back.gemms.size() == f.gemms.size());
    for (std::size_t i = 0; i < f.gemms.size(); ++i) {
        CHECK(back.gemms[i].group == f.gemms[i].group);
        CHECK(back.gemms[i].shape.k == f.gemms[i].shape.k);
        CHECK(back.gemms[i].measured.value() == f.gemms[i].measured.value());
    }
    CHECK(back.gemms[1].predicted.value().value() == 1e-4);
    const auto j = to_json(f);
    CHECK(j.at("gemms")[1].at("rel_error").get<double>() == Approx(1e-4 / 0.00011 - 1));
    CHECK(back.layers.size() == 1);
    CHECK(back.provenance.command == f.provenance.command);
}

TEST_CASE("measurement files with bad entries are rejected naming the entry") {
    auto j = json::parse(harness_output);
    j["gemms"][1]["measured_s"] = -1;
    CHECK_THROWS_WITH(measurement_file_from_json(j), Catch::StartsWith("gemms[1].measured_s = -1"));
    j = json::parse(harness_output);
    j["gemms"][0]["dtype"] = "bf17";
    CHECK_THROWS_WITH(measurement_file_from_json(j), Catch::StartsWith("gemms[0].dtype = bf17"));
    j = json::parse(harness_output);
    j["gemms"][2]["group"] = "no such layer";
    CHECK_THROWS_WITH(measurement_file_from_json(j), Catch::Contains("gemms[2].group = no such layer"));
    j = json::parse(harness_output);
    j["gemms"][0]["k"] = 0;
    CHECK_THROWS_WITH(measurement_file_from_json(j), Catch::StartsWith("gemm.k = 0"));
    j = json::parse(harness_output);
    j["provenance"].erase("driver");
    CHECK_THROWS_WITH(measurement_file_from_json(j), "provenance.driver = (missing): required");
    j = json::parse(harness_output);
    j["schema"] = "trainperf.calibration.v1";
    CHECK_THROWS_WITH(measurement_file_from_json(j), Catch::StartsWith("schema = trainperf.calibration.v1"));
    j = json::parse(harness_output);
    j["layers"].push_back(j["layers"][0]);
    CHECK_THROWS_WITH(measurement_file_from_json(j), Catch::Contains("appears twice"));
}

TEST_CASE("dataset_files lists <dir>/<gpu>/*.json sorted, and nothing for a missing dir") {
    const auto dir = std::filesystem::temp_directory_path() / "trainperf-test-io-json-datasets";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "h100-sxm");
    std::filesystem::create_directories(dir / "a100-sxm-80gb");
    std::ofstream(dir / "h100-sxm" / "b.json") << "{}";
    std::ofstream(dir / "h100-sxm" / "a.json") << "{}";
    std::ofstream(dir / "h100-sxm" / "notes.txt") << "x";
    std::ofstream(dir / "a100-sxm-80gb" / "z.json") << "{}";
    std::ofstream(dir / "README.json") << "{}";  // not inside a GPU directory
    const auto files = dataset_files(dir);
    REQUIRE(files.size() == 3);
    CHECK(files[0].filename() == "z.json");
    CHECK(files[1].filename() == "a.json");
    CHECK(files[2].filename() == "b.json");
    CHECK(schema_of(files[0]).empty());
    CHECK(dataset_files(dir / "missing").empty());
    std::filesystem::remove_all(dir);
}
