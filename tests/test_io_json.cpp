#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include <trainperf/spec/gpu_catalog.hpp>
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

// ---------------------------------------------------------------------------------
// Description files: GPU, system, model, framework (io/*_json.hpp).

#include <trainperf/io/framework_json.hpp>
#include <trainperf/io/gpu_json.hpp>
#include <trainperf/io/model_file.hpp>
#include <trainperf/io/system_json.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/workload/flops.hpp>
#include <trainperf/spec/optimizer.hpp>
#include <trainperf/cost/step.hpp>

namespace {

// The step of one fixed layout of `m` on 8 GPUs of `g` (1 for a GPU without a link),
// sharded as far as the framework shards: what "identical predictions" compares.
step_report step_of(const gpu_spec& g, const transformer_config& m, const framework_profile& fw) {
    const int gpus = g.gpu_link.kind == link_kind::none ? 1 : 8;
    training_setup s;
    s.cluster = standard_cluster(g, gpus);
    s.model = m;
    // bf16 where the GPU and the framework have it (megatron-deepspeed's DeepSpeed v0.5 has not).
    const bool bf16 = g.supports(dtype::bf16) && fw.precisions.contains(precision_kind::bf16);
    s.precision = recipe(bf16 ? precision_kind::bf16 : precision_kind::fp16);
    s.framework = fw;
    s.seq = std::min(m.max_seq > 0 ? m.max_seq : 2048, 2048);
    // The highest ZeRO stage the framework offers.
    const int zero = (fw.zero_stages & 8u) ? 3 : (fw.zero_stages & 4u) ? 2 : (fw.zero_stages & 2u) ? 1 : 0;
    s.layout = {.dp = gpus, .zero = zero, .micro_batch = 1, .recompute = recompute_mode::full};
    return predict(s);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// The message of the std::invalid_argument `f` throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("every catalog GPU round-trips through its description file, with identical predictions", "[descriptions]") {
    for (const gpu_spec& g : gpu_catalog) {
        INFO(g.name);
        const auto path = temp_file(std::string(g.name) + ".gpu.json");
        io::save_gpu_file(path, g);
        const gpu_spec back = io::load_gpu_file(path);
        CHECK(back.name == g.name);
        CHECK(back.full_name == g.full_name);
        CHECK(back.architecture == g.architecture);
        CHECK(back.sm_count == g.sm_count);
        CHECK(back.boost_clock == g.boost_clock);
        CHECK(back.l2_cache == g.l2_cache);
        CHECK(back.memory_capacity == g.memory_capacity);
        CHECK(back.memory_reported == g.memory_reported);
        CHECK(back.memory_bandwidth == g.memory_bandwidth);
        for (dtype t : all_dtypes) {
            REQUIRE(back.supports(t) == g.supports(t));
            if (g.supports(t)) CHECK(back.peak_for(t) == g.peak_for(t));
        }
        for (auto [a, b] : {std::pair{back.gpu_link, g.gpu_link}, std::pair{back.host_link, g.host_link}}) {
            CHECK(a.kind == b.kind);
            CHECK(a.per_direction == b.per_direction);
            CHECK(a.latency == b.latency);
            CHECK(a.efficiency == b.efficiency);
        }
        CHECK(back.tdp_watts == g.tdp_watts);
        CHECK(back.memory_shared_with_host == g.memory_shared_with_host);
        CHECK(back.pcie_peer_to_peer == g.pcie_peer_to_peer);
        CHECK(io::gpu_to_json(back) == io::gpu_to_json(g));
        const auto a = step_of(g, gpt2_medium::config, megatron_profile);
        const auto b = step_of(back, gpt2_medium::config, megatron_profile);
        CHECK(a.step_time == b.step_time);
        CHECK(a.memory.total() == b.memory.total());
    }
}

TEST_CASE("every catalog model and framework round-trips through its description file", "[descriptions]") {
    for (const transformer_config& m : model_catalog) {
        INFO(m.name);
        const auto path = temp_file(std::string(m.name) + ".model.json");
        io::save_model_file(path, m);
        const transformer_config back = io::load_model_file(path);
        CHECK(io::model_to_json(back) == io::model_to_json(m));
        CHECK(back.name == m.name);
        CHECK(back.kv_heads == m.kv_heads);
        CHECK(back.qkv_biases == m.qkv_biases);
        CHECK(back.dropout == m.dropout);
        CHECK(parameter_count(back) == parameter_count(m));
    }
    const auto a = step_of(h100_sxm::spec, llama2_7b::config, megatron_profile);
    const auto path = temp_file("llama2-7b.model.json");
    io::save_model_file(path, llama2_7b::config);
    CHECK(step_of(h100_sxm::spec, io::load_model_file(path), megatron_profile).step_time == a.step_time);

    for (const framework_profile& f : framework_profiles) {
        INFO(f.name);
        const auto fpath = temp_file(std::string(f.name) + ".framework.json");
        io::save_framework_file(fpath, f);
        const framework_profile back = io::load_framework_file(fpath);
        CHECK(io::framework_to_json(back) == io::framework_to_json(f));
        CHECK(back.per_step_overhead == f.per_step_overhead);
        CHECK(back.memory.workspace == f.memory.workspace);
        CHECK(back.memory.gradient_buckets == f.memory.gradient_buckets);
        const auto x = step_of(a100_sxm_80gb::spec, gpt2_medium::config, f);
        const auto y = step_of(a100_sxm_80gb::spec, gpt2_medium::config, back);
        CHECK(x.step_time == y.step_time);
        CHECK(x.memory.total() == y.memory.total());
    }
}

TEST_CASE("GPU and model files carry their derived figures, checked when read", "[descriptions]") {
    // gpt2 by hand: PaLM's N is every layer's parameters (12·h² + 13·h = 7,087,872 at
    // h = 768) and the head (the embeddings are lookups): 12·7,087,872 + 50257·768 =
    // 123,651,840; 6·N = 741,911,040 and 12·L·h·T = 12·12·768·1024 = 113,246,208 FLOPs per
    // token at its 1024 positions. Its parameters, embeddings included: 124,439,808.
    const nlohmann::json m = io::model_to_json(gpt2::config);
    CHECK(m["derived"]["parameters"] == 124439808);
    CHECK(m["derived"]["parameters"].is_number_integer());
    CHECK(m["derived"]["training_length"] == 1024);
    CHECK(m["derived"]["model_flops_per_token"] == 741911040.0 + 113246208.0);
    // H100 SXM: 85,520,809,984 B reported (79.647 GiB); BF16 989.4 TFLOP/s over 3.35 TB/s.
    const nlohmann::json g = io::gpu_to_json(h100_sxm::spec);
    CHECK(g["derived"]["device_memory_GB"].get<double>() == Approx(85.520809984));
    CHECK(g["derived"]["device_memory_GiB"].get<double>() == Approx(85.520809984e9 / 1073741824.0));
    CHECK(g["derived"]["ridge_point_ops_per_byte"]["bf16"].get<double>() ==
          Approx(h100_sxm::spec.peak.bf16->value() / h100_sxm::spec.memory_bandwidth.value()));
    // Optional when read; a stale figure is an error naming it.
    nlohmann::json without = m;
    without.erase("derived");
    CHECK(io::model_to_json(io::model_from_json(without)) == m);
    nlohmann::json stale = m;
    stale["layers"] = 24;
    CHECK_THROWS_WITH(io::model_from_json(stale), Catch::StartsWith("derived.") &&
                                                      Catch::Contains("does not match the description"));
    nlohmann::json unknown = g;
    unknown["derived"]["speed"] = 1;
    CHECK_THROWS_WITH(io::gpu_from_json(unknown), Catch::Contains("derived.speed"));
    nlohmann::json edited = g;
    edited["memory_reported_bytes"] = 80e9;
    CHECK_THROWS_WITH(io::gpu_from_json(edited), Catch::Contains("derived.device_memory_GB"));
    // Within the tolerance, nested figures too: a ridge point rounded in its 12th digit reads.
    nlohmann::json rounded = g;
    auto& bf16 = rounded["derived"]["ridge_point_ops_per_byte"]["bf16"];
    bf16 = bf16.get<double>() * (1 + 1e-12);
    CHECK_NOTHROW(io::gpu_from_json(rounded));
    bf16 = bf16.get<double>() * 1.01;
    CHECK_THROWS_WITH(io::gpu_from_json(rounded), Catch::Contains("derived.ridge_point_ops_per_byte"));
}

TEST_CASE("a system file builds the cluster the same flags build", "[descriptions]") {
    // Two nodes of 8 H100 on NVLink, 4 NDR adapters per node, written out.
    const system_description d{.name = "dgx-h100-half-rails",
                               .gpus_per_node = 8,
                               .intra_node_kind = link_kind::nvlink,
                               .inter_node = infiniband_adapter(400),
                               .adapters_per_node = 4,
                               .sockets_per_node = 1};
    const auto path = temp_file("dgx.system.json");
    io::save_system_file(path, d);
    const system_description back = io::load_system_file(path);
    CHECK(io::system_to_json(back) == io::system_to_json(d));
    const cluster_spec from_file = build_cluster(h100_sxm::spec, back, 16);
    const cluster_spec from_flags = build_cluster({.gpu = h100_sxm::spec, .gpus = 16, .gpus_per_node = 8,
                                                   .link = "nvlink", .inter_node_line_rate = gb_per_second(50),
                                                   .adapters_per_node = 4});
    CHECK(intra_node_link(from_file).per_direction == intra_node_link(from_flags).per_direction);
    CHECK(inter_node_link(from_file).per_direction == inter_node_link(from_flags).per_direction);
    CHECK(inter_node_link(from_file).latency == inter_node_link(from_flags).latency);
    CHECK(from_file.adapters_per_node == 4);

    // An explicit link object, and a single node without network.
    const system_description box{.name = "box",
                                 .gpus_per_node = 4,
                                 .intra_node = {link_kind::pcie_no_p2p, gb_per_second(12), microseconds_of(20), 1.0}};
    io::save_system_file(path, box);
    const system_description box_back = io::load_system_file(path);
    CHECK_FALSE(box_back.intra_node_kind.has_value());
    CHECK(box_back.intra_node.per_direction == gb_per_second(12));
    CHECK(box_back.inter_node.kind == link_kind::none);
    CHECK(build_cluster(rtx_3090::spec, box_back, 4).intra_node.kind == link_kind::pcie_no_p2p);
    CHECK_THROWS_WITH(build_cluster(rtx_3090::spec, box_back, 8), Catch::Contains("inter_node_link"));
}

TEST_CASE("bad description files throw std::invalid_argument naming the file and the field", "[descriptions]") {
    const json good = io::gpu_to_json(h100_sxm::spec);
    const auto path = temp_file("bad.gpu.json");
    const auto load_with = [&](const json& j) {
        write_text(path, j.dump());
        return error_of([&] { io::load_gpu_file(path); });
    };
    const auto expect = [&](const json& j, const std::string& field, const std::string& why) {
        const std::string e = load_with(j);
        INFO(e);
        CHECK(e.rfind(path.string() + ": " + field + " = ", 0) == 0);
        CHECK(e.find(why) != std::string::npos);
    };
    json j = good;
    j.erase("memory_bandwidth_bytes_per_second");
    expect(j, "memory_bandwidth_bytes_per_second", "required");
    j = good;
    j["sm_count"] = "132";
    expect(j, "sm_count", "must be an integer in [1, 1024]");
    j = good;
    j["sm_count"] = 132.5;
    expect(j, "sm_count", "must be an integer");
    j = good;
    j["memory_bytes"] = -80e9;
    expect(j, "memory_bytes", "must be in [");
    j = good;
    j["memory_bandwidth_bytes_per_second"] = 3.35e18;  // a unit slip: 1e6 x too fast
    expect(j, "memory_bandwidth_bytes_per_second", "must be in [");
    j = good;
    j["tdp_watt"] = 700;
    expect(j, "tdp_watt", "unknown field");
    j = good;
    j["peak_dense_flops_per_second"]["bf16"]["rate"] = nullptr;
    expect(j, "peak_dense_flops_per_second.bf16.rate", "must be a number");
    j = good;
    j["peak_dense_flops_per_second"]["fp16"]["accumulate"] = "fp16";
    expect(j, "peak_dense_flops_per_second.fp16.accumulate", "must be \"fp32\"");
    j = good;
    j["peak_dense_flops_per_second"]["fp6"] = nullptr;
    expect(j, "peak_dense_flops_per_second.fp6", "unknown dtype");
    j = good;
    j["gpu_link"]["efficiency"] = 0;
    expect(j, "gpu_link.efficiency", "(0, 1]");
    j = good;
    j["gpu_link"]["kind"] = "ethernet";
    expect(j, "gpu_link.kind", "unknown");
    j = good;
    j["schema"] = "trainperf.model.v1";
    expect(j, "schema", "trainperf.gpu.v1");
    j = good;
    j["name"] = "my gpu";
    expect(j, "name", "letters, digits");

    // Not JSON, too deep, too large, a repeated key: one message naming the file.
    write_text(path, "name: h100\n");
    CHECK_THAT(error_of([&] { io::load_gpu_file(path); }),
               Catch::StartsWith("file = " + path.string() + ": is not valid JSON"));
    write_text(path, std::string(100000, '[') + std::string(100000, ']'));
    CHECK_THAT(error_of([&] { io::load_gpu_file(path); }), Catch::Contains("nests deeper than 16"));
    write_text(path, R"({"schema": "trainperf.gpu.v1", "schema": "trainperf.gpu.v1"})");
    CHECK_THAT(error_of([&] { io::load_gpu_file(path); }), Catch::Contains("\"schema\" appears twice"));
    {
        // 50 MB of valid JSON: refused by its size before it is read.
        std::ofstream big(path, std::ios::binary);
        big << "[";
        const std::string chunk = std::string(1 << 20, ' ');
        for (int i = 0; i < 50; ++i) big << chunk;
        big << "]";
    }
    CHECK(std::filesystem::file_size(path) > 50u * 1000 * 1000);
    CHECK_THAT(error_of([&] { io::load_gpu_file(path); }), Catch::Contains("at most 1048576 bytes"));
    std::filesystem::remove(path);
    CHECK_THAT(error_of([&] { io::load_gpu_file(path); }), Catch::Contains("does not exist"));
    CHECK_THAT(error_of([&] { io::load_gpu_file(path.parent_path()); }), Catch::Contains("not a regular file"));
}

TEST_CASE("bad model, framework and system files name the field", "[descriptions]") {
    const auto path = temp_file("bad.json");
    const auto error_with = [&](const json& j, auto load) {
        write_text(path, j.dump());
        return error_of([&] { load(path); });
    };
    const auto model = [](const std::filesystem::path& p) { return io::load_model_file(p); };
    json m = io::model_to_json(llama2_70b::config);
    m["heads"] = 60;  // does not divide hidden 8192: the library's validate() says so
    CHECK_THAT(error_with(m, model), Catch::StartsWith(path.string() + ": heads = 60: must divide hidden"));
    m = io::model_to_json(llama2_70b::config);
    m["layers"] = -80;
    CHECK_THAT(error_with(m, model), Catch::StartsWith(path.string() + ": layers = -80: must be an integer in [1,"));
    m = io::model_to_json(llama2_70b::config);
    m["kv_heads"] = 100;
    CHECK_THAT(error_with(m, model), Catch::Contains("kv_heads = 100: must be an integer in [0, 64]"));
    m = io::model_to_json(llama2_70b::config);
    m.erase("ffn");
    CHECK_THAT(error_with(m, model), Catch::Contains("ffn = (missing): required"));
    m = io::model_to_json(llama2_70b::config);
    m["ffn"] = "geglu";
    CHECK_THAT(error_with(m, model), Catch::Contains("ffn = \"geglu\": unknown; expected one of gelu, swiglu"));
    m = io::model_to_json(llama2_70b::config);
    m["tied_embeddings"] = 1;
    CHECK_THAT(error_with(m, model), Catch::Contains("tied_embeddings = 1: must be true or false"));
    m = json{{"layers", 2}};
    CHECK_THAT(error_with(m, model), Catch::Contains("neither a trainperf.model.v1 description nor a Hugging Face"));

    const auto framework = [](const std::filesystem::path& p) { return io::load_framework_file(p); };
    json f = io::framework_to_json(megatron_profile);
    f["memory"]["fragmentation"] = 1.5;
    CHECK_THAT(error_with(f, framework), Catch::Contains("memory.fragmentation = 1.5: must be in [0, 0.99]"));
    f = io::framework_to_json(megatron_profile);
    f["memory"].erase("cuda_context_bytes");
    CHECK_THAT(error_with(f, framework), Catch::Contains("memory.cuda_context_bytes = (missing): required"));
    f = io::framework_to_json(megatron_profile);
    f["gelu_kernel"] = 8;
    CHECK_THAT(error_with(f, framework), Catch::Contains("gelu_kernel = 8: unknown field"));
    // The layer's host calls, the newer host costs and cuda_graphs are optional: a file
    // written before them loads with the profile defaults; present, they are checked.
    f = io::framework_to_json(megatron_profile);
    f.erase("layer_host_calls");
    f.erase("cuda_graphs");
    f["host_costs_in_bare_ops"].erase("library_module");
    CHECK(error_with(f, framework).empty());
    f = io::framework_to_json(megatron_profile);
    f["layer_host_calls"]["functions"] = -1;
    CHECK_THAT(error_with(f, framework), Catch::Contains("layer_host_calls.functions = -1"));
    f = io::framework_to_json(megatron_profile);
    f["cuda_graphs"] = "yes";
    CHECK_THAT(error_with(f, framework), Catch::Contains("cuda_graphs"));
    f = io::framework_to_json(megatron_profile);
    f["backward_traffic_ratio"] = 0;  // in range for the reader; validate() refuses it
    CHECK_THAT(error_with(f, framework), Catch::Contains("framework.backward_traffic_ratio = 0"));

    const auto system = [](const std::filesystem::path& p) { return io::load_system_file(p); };
    json s{{"schema", "trainperf.system.v1"}, {"name", "x"},           {"gpus_per_node", 4},
           {"intra_node_link", "pcie"},       {"inter_node_link", nullptr}, {"adapters_per_node", 0},
           {"sockets_per_node", 1}};
    CHECK(error_with(s, system).empty());
    s["sockets_per_node"] = 16;
    CHECK_THAT(error_with(s, system), Catch::Contains("sockets_per_node = 16: must be an integer in [1, 8]"));
    s["sockets_per_node"] = 1;
    s["intra_node_link"] = "infiniband";
    CHECK_THAT(error_with(s, system), Catch::Contains("intra_node_link = \"infiniband\""));
    s["intra_node_link"] = json{{"kind", "pcie"}, {"per_direction_bytes_per_second", -1},
                                {"latency_seconds", 1e-5}, {"efficiency", 0.8}};
    CHECK_THAT(error_with(s, system), Catch::Contains("intra_node_link.per_direction_bytes_per_second = -1"));
    s.erase("intra_node_link");
    CHECK_THAT(error_with(s, system), Catch::Contains("intra_node_link = (missing): required"));
}

// ---------------------------------------------------------------------------------
// Hugging Face config.json (io/hf_config.hpp), files and sources in tests/data/hf_configs.

namespace {
std::filesystem::path hf_config(const std::string& file) {
    return std::filesystem::path(TRAINPERF_TEST_DATA_DIR) / "hf_configs" / file;
}
}  // namespace

TEST_CASE("Hugging Face configs give the published parameter counts within 0.1 %", "[descriptions][hf]") {
    struct published {
        const char* file;
        double parameters;  // tests/data/hf_configs/README.md says where each is published
    };
    for (const published& p : {published{"TinyLlama-1.1B.json", 1100048384.0},
                               published{"Mistral-7B-v0.1.json", 7241732096.0},
                               published{"Qwen2-7B.json", 7615616512.0},
                               published{"Llama-2-7b-hf.json", 6738415616.0},
                               published{"Llama-3.1-8B.json", 8030261248.0},
                               published{"gpt2.json", 124439808.0},
                               published{"bert-large-uncased.json", 335141888.0},
                               published{"roberta-base.json", 124645632.0},
                               published{"gpt-neo-1.3B.json", 1315575808.0},
                               published{"gpt-neox-20b.json", 20554567680.0},
                               published{"opt-1.3b.json", 1315758080.0},
                               published{"gemma-2b.json", 2506172416.0},
                               published{"gemma-7b.json", 8537680896.0},
                               published{"gemma-2-2b.json", 2614341888.0},
                               published{"Phi-3-mini-4k-instruct.json", 3821079552.0},
                               published{"Mixtral-8x7B-v0.1.json", 46702792704.0}}) {
        INFO(p.file);
        const transformer_config m = io::load_model_file(hf_config(p.file));
        CHECK(std::abs(parameter_count(m) / p.parameters - 1.0) < 1e-3);
        CHECK(m.name == std::filesystem::path(p.file).stem().string());
    }
}

TEST_CASE("Hugging Face configs map onto the architecture options", "[descriptions][hf]") {
    const auto tiny = io::load_model_file(hf_config("TinyLlama-1.1B.json"));
    CHECK(tiny.kv_heads == 4);
    CHECK(tiny.ffn == ffn_kind::swiglu);
    CHECK(tiny.norm == norm_kind::rmsnorm);
    CHECK_FALSE(tiny.tied_embeddings);
    CHECK_FALSE(tiny.dropout);
    CHECK(tiny.max_seq == 2048);
    CHECK(training_length(tiny) == 2048);
    // The training length: rope_scaling's length before extension (Llama 3.1), else the
    // positions up to 4096 (io/hf_config.hpp default_training_length).
    const auto llama31 = io::load_model_file(hf_config("Llama-3.1-8B.json"));
    CHECK(llama31.max_seq == 131072);
    CHECK(llama31.train_seq == 8192);
    const auto mistral = io::load_model_file(hf_config("Mistral-7B-v0.1.json"));
    CHECK(mistral.max_seq == 32768);
    CHECK(mistral.train_seq == 4096);
    CHECK(io::load_model_file(hf_config("gpt2.json")).train_seq == 0);  // its positions: 1024
    // An original length of 0, or beyond the extended positions, is refused by name.
    for (const int original : {0, 200000}) {
        nlohmann::json j = nlohmann::json::parse(std::ifstream(hf_config("Llama-3.1-8B.json")));
        j["rope_scaling"]["original_max_position_embeddings"] = original;
        CHECK_THROWS_WITH(io::model_from_hf_config(j, "llama"),
                          Catch::Contains("rope_scaling.original_max_position_embeddings = " + std::to_string(original)));
    }
    // ... and a trainperf.model.v1 file keeps it (the key is optional: 0, max_seq).
    CHECK(io::model_from_json(io::model_to_json(mistral)).train_seq == 4096);
    // Every integer's lower bound holds for values read as unsigned (0 layers).
    nlohmann::json none = io::model_to_json(mistral);
    none["layers"] = 0;
    CHECK_THROWS_WITH(io::model_from_json(none), "layers = 0: must be an integer in [1, 1000]");
    nlohmann::json without = io::model_to_json(mistral);
    without.erase("train_seq");
    without.erase("derived");  // computed at the training length the key gave
    CHECK(training_length(io::model_from_json(without)) == 32768);
    const auto qwen = io::load_model_file(hf_config("Qwen2-7B.json"));
    CHECK(qwen.qkv_bias_only);
    CHECK_FALSE(qwen.linear_biases);
    CHECK(io::load_model_file(hf_config("gemma-2b.json")).tied_embeddings);
    CHECK(io::load_model_file(hf_config("gemma-2b.json")).kv_heads == 1);
    const auto bert = io::load_model_file(hf_config("bert-large-uncased.json"));
    CHECK_FALSE(bert.causal);
    const auto roberta = io::load_model_file(hf_config("roberta-base.json"));
    CHECK(roberta.token_types == 1);
    CHECK(roberta.max_seq == 514);
    CHECK(io::load_model_file(hf_config("gpt-neox-20b.json")).positions == position_kind::rotary);
    // Gemma 7B: 16 heads of 256 on a hidden size of 3072; Gemma 2: also 4 norms per layer.
    const auto gemma7 = io::load_model_file(hf_config("gemma-7b.json"));
    CHECK(gemma7.attention_head_dim == 256);
    CHECK(gemma7.q_width() == 4096);
    CHECK(io::load_model_file(hf_config("gemma-2b.json")).attention_head_dim == 0);  // 8 × 256 = 2048
    const auto gemma2 = io::load_model_file(hf_config("gemma-2-2b.json"));
    CHECK(gemma2.norms_per_layer == 4);
    CHECK(gemma2.q_width() == 2048);
    CHECK(gemma2.kv_width() == 1024);
    // The wider attention is in the GEMMs too: Q·Kᵀ of s² × q per sample.
    CHECK(exact_forward_breakdown(gemma7, 1024).scores.value() == 2.0 * 1024 * 1024 * 4096);
    CHECK(exact_forward_breakdown(gemma7, 1024).out_proj.value() == 2.0 * 1024 * 4096 * 3072);
    // The optimizer's tensor list sums to the same parameters.
    CHECK(parameter_tensors(gemma2).parameters() == parameter_count(gemma2));
    CHECK(parameter_tensors(gemma7).parameters() == parameter_count(gemma7));
    // The same models as the catalog's, field by field (apart from the name).
    const auto same = [](transformer_config a, transformer_config b) {
        a.name = b.name = "x";
        a.kv_heads = a.effective_kv_heads();  // 0 and heads mean the same
        b.kv_heads = b.effective_kv_heads();
        return io::model_to_json(a) == io::model_to_json(b);
    };
    CHECK(same(io::load_model_file(hf_config("gpt2.json")), gpt2::config));
    CHECK(same(io::load_model_file(hf_config("Llama-2-7b-hf.json")), llama2_7b::config));
    CHECK(same(bert, bert_large::config));

    // Falcon-7B's architecture keys (tiiuae/falcon-7b config.json): multi-query attention
    // and one norm per layer feeding attention and MLP in parallel.
    const json falcon = json::parse(R"({"model_type": "falcon", "alibi": false, "bias": false,
        "hidden_size": 4544, "multi_query": true, "new_decoder_architecture": false,
        "num_attention_heads": 71, "num_hidden_layers": 32, "parallel_attn": true, "vocab_size": 65024})");
    const auto f = io::model_from_hf_config(falcon, "falcon-7b");
    CHECK(f.kv_heads == 1);
    CHECK(f.norms_per_layer == 1);
    CHECK(f.ffn_hidden == 4 * 4544);
    CHECK_FALSE(f.linear_biases);
    // One norm per layer: 2 × hidden per layer fewer than with two.
    auto two = f;
    two.norms_per_layer = 2;
    CHECK(parameter_count(two) - parameter_count(f) == 32.0 * 2 * 4544);
}

TEST_CASE("Hugging Face configs the library cannot describe are refused naming the key", "[descriptions][hf]") {
    // Experts in a model type that does not define them (Mixtral's keys under "llama").
    json experts = json::parse(std::ifstream(hf_config("Mixtral-8x7B-v0.1.json")));
    experts["model_type"] = "llama";
    const auto mixtral = error_of([&] { io::model_from_hf_config(experts, "m"); });
    CHECK_THAT(mixtral, Catch::StartsWith("num_local_experts = 8: a mixture-of-experts model (model_type \"llama\")"));
    CHECK_THAT(mixtral, Catch::Contains("experts are read for mixtral, qwen2_moe"));
    const json llama = json::parse(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
        "max_position_embeddings": 4096})");
    CHECK_NOTHROW(io::model_from_hf_config(llama, "x"));
    for (const auto& [key, value, why] :
         {std::tuple{"n_routed_experts", json(64), "mixture-of-experts"},
          std::tuple{"num_experts", json(60), "mixture-of-experts"},
          std::tuple{"attention_bias", json(true), "attention projections only"},
          std::tuple{"head_dim", json("256"), "head_dim = \"256\": must be an integer"},
          std::tuple{"hidden_act", json("tanh"), "activation not modelled"},
          std::tuple{"rope_scaling", json("linear"), "must be an object or null"},
          std::tuple{"num_key_value_heads", json(5), "must divide heads"},
          std::tuple{"hidden_size", json("4096"), "must be an integer"},
          std::tuple{"vocab_size", json(-1), "must be an integer in [1,"}}) {
        json j = llama;
        j[key] = value;
        const std::string e = error_of([&] { io::model_from_hf_config(j, "x"); });
        INFO(key << ": " << e);
        CHECK(e.find(why) != std::string::npos);
    }
    json j = llama;
    j.erase("num_hidden_layers");
    CHECK_THAT(error_of([&] { io::model_from_hf_config(j, "x"); }), Catch::Contains("num_hidden_layers = (missing)"));
    j = llama;
    j["model_type"] = "mamba";
    CHECK_THAT(error_of([&] { io::model_from_hf_config(j, "x"); }),
               Catch::Contains("model_type = \"mamba\": not a known"));
}

TEST_CASE("every reader of a document the caller parsed refuses one nested too deep, without recursing",
          "[descriptions]") {
    // 100 000 levels, built without recursion: a recursive reader or error message
    // (printing the value) would overflow the stack.
    json deep = json::array();
    json* inner = &deep;
    for (int level = 1; level < 100000; ++level) {
        inner->push_back(json::array());
        inner = &inner->back();
    }
    CHECK(io::nesting_depth(deep, 16) == 17);
    CHECK(io::nesting_depth(json::array(), 16) == 1);
    CHECK(io::nesting_depth(json(3), 16) == 0);
    CHECK(io::nesting_depth(json::parse(R"({"a": [1, {"b": [[]]}], "c": {}})"), 16) == 5);

    // Moved, not copied: nlohmann's copy recurses as deep as the document.
    json doc = json::object();
    doc["schema"] = "trainperf.gpu.v1";
    doc["name"] = std::move(deep);
    const auto refused = [](auto&& read) {
        const std::string why = error_of(read);
        INFO(why);
        return why.find("nests deeper than") != std::string::npos;
    };
    CHECK(refused([&] { io::gpu_from_json(doc); }));
    CHECK(refused([&] { io::link_from_json(doc, "gpu_link"); }));
    CHECK(refused([&] { io::model_from_json(doc); }));
    CHECK(refused([&] { io::model_from_hf_config(doc, "deep"); }));
    CHECK(refused([&] { io::model_from_file_json(doc, "deep.json"); }));
    CHECK(refused([&] { io::framework_from_json(doc); }));
    CHECK(refused([&] { io::system_from_json(doc); }));
    CHECK(refused([&] { io::host_from_json(doc, "host"); }));
    CHECK(refused([&] { kernel_params_from_json(doc); }));
    CHECK(refused([&] { error_summary_from_json(doc, "errors"); }));
    CHECK(refused([&] { calibration_file_from_json(doc); }));
    CHECK(refused([&] { measurement_file_from_json(doc); }));
    CHECK(refused([&] { dtype_from_json(doc, "", "math"); }));
    // A document within the limit is read as before: the error is about its content.
    CHECK_THAT(error_of([] { io::gpu_from_json(json{{"schema", "trainperf.gpu.v1"}, {"name", json::array()}}); }),
               Catch::Contains("name") && !Catch::Contains("nests deeper"));
}
