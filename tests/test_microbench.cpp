// Single GPU, PyTorch eager: the engine against the transformers micro-benchmarks
// (tests/data/transformers_microbench.csv), with the fit the library ships.
#include <trainperf/calibrate/microbench_csv.hpp>
#include <trainperf/calibrate/microbench.hpp>
#include <trainperf/calibrate/microbench_calibration.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

using namespace trainperf;

namespace {

std::vector<microbench_point> dataset() {
    std::ifstream in(std::string(TRAINPERF_TEST_DATA_DIR) + "/transformers_microbench.csv");
    REQUIRE(in);
    std::vector<microbench_point> points;
    for (const auto& row : io::read_microbench(in)) points.push_back(to_point(row));
    return points;
}

nlohmann::json shipped_fit_file() {
    std::ifstream in(std::string(TRAINPERF_TEST_DATA_DIR) + "/kernel_fits/transformers_microbench_fit.json");
    REQUIRE(in);
    return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("the dataset reads as published: 139 rows, provenance kept apart", "[microbench]") {
    const auto points = dataset();
    CHECK(points.size() == 139);
    // A row with a quoted source that holds a comma.
    CHECK(points.front().row.source == "mli/transformers-benchmarks micro_bench.ipynb @3370b2b3a0, cell [4]");
    CHECK(points.front().measured_rate == 0.25);
}

TEST_CASE("the shipped constants are what the fit gives on the dataset, and the data file says so",
          "[microbench]") {
    const auto fit = fit_microbench(dataset());
    const auto file = shipped_fit_file();
    const auto near = [](double a, double b, double tolerance) { return std::abs(a - b) <= tolerance; };
    for (const auto& k : fitted_kernel_defaults) {
        const auto& f = fit.kernels.at(k.compute_capability);
        INFO("sm_" << k.compute_capability);
        CHECK(near(f.peak_fraction, k.peak_fraction, 5e-4));
        CHECK(near(f.cuda_core_fraction, k.cuda_core_fraction, 5e-4));
        CHECK(near(f.memory_efficiency, k.memory_efficiency, 5e-4));
        CHECK(near(f.launch_overhead_us, k.launch_overhead_us, 5e-3));
        bool in_file = false;
        for (const auto& e : file.at("kernel_params"))
            if (e.at("compute_capability") == k.compute_capability) {
                in_file = true;
                CHECK(e.at("peak_fraction").get<double>() == k.peak_fraction);
                CHECK(e.at("memory_efficiency").get<double>() == k.memory_efficiency);
                CHECK(e.at("launch_overhead_us").get<double>() == k.launch_overhead_us);
            }
        CHECK(in_file);
    }
    const auto& host = pytorch_eager_profile.host;
    CHECK(near(fit.host.gemm, host.gemm, 5e-3));
    CHECK(near(fit.host.module, host.module, 5e-3));
    CHECK(near(fit.host.backward_node, host.backward_node, 5e-3));
    CHECK(file.at("pytorch_eager_host_costs").at("module").get<double>() == host.module);
    CHECK(file.at("pytorch_eager_host_costs").at("backward_node").get<double>() == host.backward_node);
    for (const auto& [gpu, t] : fit.eager_op_time)
        CHECK(near(file.at("host_bare_op_us").at(gpu).get<double>(), t * 1e6, 5e-3));
}

TEST_CASE("blind predictions of the held-out rows stay within the reported errors", "[microbench]") {
    const auto points = dataset();
    const auto fit = shipped_fit(fit_microbench(points));
    struct tally {
        double sum = 0, max = 0;
        int n = 0;
    };
    std::map<std::string, tally> held_out;
    int host_bound = 0;
    for (const auto& r : validate_microbench(points, fit)) {
        const auto kind = r.point->cases.front().kind;
        if (r.used_in_fit || kind == bench_kind::elementwise) continue;
        auto& t = held_out[r.point->gpu];
        t.sum += std::abs(r.time_error);
        t.max = std::max(t.max, std::abs(r.time_error));
        ++t.n;
        if (r.host_bound) ++host_bound;
    }
    // docs/validation.md: RTX 3090 Ti 4.2 % mean over 65 held-out rows, V100 9.6 % over
    // 40, RTX 4090 2.6 % over its 6 best-of rows (a fit it was never shown: sm_89 takes
    // sm_86's). Bounds a little above what is reported, so a regression shows.
    CHECK(held_out.at("rtx-3090-ti").sum / held_out.at("rtx-3090-ti").n < 0.045);
    CHECK(held_out.at("v100-sxm2-32gb").sum / held_out.at("v100-sxm2-32gb").n < 0.105);
    CHECK(held_out.at("rtx-4090").sum / held_out.at("rtx-4090").n < 0.045);
    CHECK(held_out.at("rtx-3090-ti").max < 0.40);
    CHECK(host_bound >= 8);  // small batches and small matmuls: the host's issue time sets them
}

TEST_CASE("a host-bound benchmark follows the host, a large one the GPU", "[microbench]") {
    bench_system sys;
    sys.gpu = rtx_3090_ti::spec;
    sys.kernels = default_kernel_params(sys.gpu);
    sys.eager_op_time = microseconds_of(4.34);
    // An elementwise op on 16 Ki fp32 elements: 128 KiB moved in 0.14 µs after the GPU's
    // 4 µs per-kernel prior (sm_86 keeps it); the host's bare op (4.34 µs) is the time.
    const auto small = predict_bench({bench_kind::elementwise, dtype::fp32, 16384, 0, 0, {}}, sys);
    CHECK(small.time.value() == Approx(4.34e-6));
    CHECK(small.gpu < small.host);
    // A bare matmul costs `gemm` bare ops on the host.
    const auto mm = predict_bench({bench_kind::matmul, dtype::fp16, 128, 0, 0, {}}, sys);
    CHECK(mm.host.value() == Approx(pytorch_eager_profile.host.gemm * 4.34e-6));
    // 8192³ in fp16: the GPU's time, ~13 ms, not the host's.
    const auto big = predict_bench({bench_kind::matmul, dtype::fp16, 8192, 0, 0, {}}, sys);
    CHECK(big.time == big.gpu);
    CHECK(big.time.value() > 1e-2);
}

TEST_CASE("bad micro-benchmark input is refused naming the field", "[microbench]") {
    std::istringstream no_header("x,y\n");
    CHECK_THROWS_WITH(io::read_microbench(no_header), Catch::Contains("is not the header"));
    std::istringstream bad_rate(
        "gpu,device_name,source,kind,dtype,m,n,k,batch,seq,model,flops_formula,measured_tflops,measured_gb_per_s\n"
        "rtx-3090-ti,X,\"s, t\",matmul,fp16,128,128,128,,,,f,fast,\n");
    CHECK_THROWS_WITH(io::read_microbench(bad_rate), Catch::Contains("measured_tflops") && Catch::Contains("fast"));
    std::istringstream unterminated(
        "gpu,device_name,source,kind,dtype,m,n,k,batch,seq,model,flops_formula,measured_tflops,measured_gb_per_s\n"
        "rtx-3090-ti,X,\"s, t,matmul,fp16,128,128,128,,,,f,1,\n");
    CHECK_THROWS_WITH(io::read_microbench(unterminated), Catch::Contains("unterminated quote"));
    bench_system sys;
    sys.gpu = rtx_3090_ti::spec;
    CHECK_THROWS_WITH(predict_bench({bench_kind::matmul, dtype::fp16, 0, 0, 0, {}}, sys), Catch::Contains("n = 0"));
    CHECK_THROWS_WITH(predict_bench({bench_kind::layer_forward, dtype::fp16, 0, 0, 128, bert_large::config}, sys),
                      Catch::Contains("batch"));
}

TEST_CASE("a layer benchmark's forward runs no kernel for a backward-only op", "[microbench]") {
    // Llama 3 8B's layer as Megatron-Core runs it on an H100: the split of the QKV output
    // is views in forward, its gradients' concat a backward-only op (workload/layer.hpp).
    bench_system sys;
    sys.gpu = h100_sxm::spec;
    sys.kernels = default_kernel_params(sys.gpu);
    sys.framework = megatron_core_profile;
    const bench_case layer{bench_kind::layer_forward, dtype::bf16, 0, 1, 4096, llama3_8b::config};
    const layer_context ctx{.micro_batch = 1, .seq = 4096, .math = dtype::bf16, .activations = dtype::bf16,
                            .padding_mask = false};
    const auto ops = layer_forward_memory_ops(llama3_8b::config, ctx, megatron_core_profile);
    const kernel_cost_model k(sys.gpu, sys.kernels);
    // The forward's GPU time: its GEMMs, the attention kernel and the memory ops that run
    // in forward; the concat's bytes are not among them.
    double gpu = 0, concat = 0;
    for (const auto& g : layer_forward_gemms(llama3_8b::config, ctx))
        if (runs_as_gemm(g, megatron_core_profile)) gpu += k.gemm_time(g.shape).value();  // not the core's
    gpu += k.attention_time(attention_core_ops(llama3_8b::config, ctx, megatron_core_profile).forward).value();
    for (const auto& op : ops) {
        const double t = k.memory_time(op.moved, op.launches).value();
        (has_forward_kernel(op) ? gpu : concat) += t;
    }
    REQUIRE(concat > 0);
    CHECK(predict_bench(layer, sys).gpu.value() == Approx(gpu).epsilon(1e-9));
}
