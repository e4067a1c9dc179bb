// Predicts every row of the transformers micro-benchmarks (single GPU, PyTorch eager,
// tests/data/transformers_microbench.csv) and prints the Markdown tables of
// docs/validation.md: the fitted constants, then each row with its error and whether a
// fit used it, then the mean and max error per GPU over the held-out rows.
//
//   validate_microbench tests/data/transformers_microbench.csv [--fit-json PATH]
//
// --fit-json writes the fitted constants (the numbers spec/kernel_params.hpp and
// spec/framework.hpp ship) with their provenance.
#include <trainperf/calibrate/microbench_csv.hpp>
#include <trainperf/calibrate/microbench_calibration.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace {

nlohmann::json fit_json(const trainperf::microbench_fit& f) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& [cc, k] : f.kernels)
        kernels.push_back({{"compute_capability", cc},
                           {"board", std::string(k.board)},
                           {"peak_fraction", std::round(k.peak_fraction * 1000) / 1000},
                           {"cuda_core_fraction", std::round(k.cuda_core_fraction * 1000) / 1000},
                           {"memory_efficiency", std::round(k.memory_efficiency * 1000) / 1000},
                           {"launch_overhead_us", std::round(k.launch_overhead_us * 100) / 100}});
    nlohmann::json hosts = nlohmann::json::object();
    for (const auto& [gpu, t] : f.eager_op_time) hosts[gpu] = std::round(t * 1e8) / 100;  // µs, 2 decimals
    return {{"schema", "trainperf.microbench_fit.v1"},
            {"provenance",
             {{"data", "tests/data/transformers_microbench.csv (mli/transformers-benchmarks micro_bench.ipynb, "
                       "RTX 3090 Ti @3370b2b3a0, V100-SXM2 @53a232bbeb; PyTorch 1.13.0a0, CUDA 11.7, NGC container)"},
              {"command", "validate_microbench tests/data/transformers_microbench.csv --fit-json PATH"},
              {"method", "include/trainperf/calibrate/microbench_calibration.hpp (fit_microbench)"}}},
            {"kernel_params", kernels},
            {"host_bare_op_us", hosts},
            {"pytorch_eager_host_costs",
             {{"gemm", std::round(f.host.gemm * 100) / 100},
              {"module", std::round(f.host.module * 100) / 100},
              {"backward_node", std::round(f.host.backward_node * 100) / 100}}},
            {"fit_rows", f.fit_lines}};
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && !(argc == 4 && std::string(argv[2]) == "--fit-json")) {
        std::cerr << "usage: validate_microbench tests/data/transformers_microbench.csv [--fit-json PATH]\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::cerr << "validate_microbench: cannot read " << argv[1] << '\n';
        return 2;
    }
    try {
        std::vector<trainperf::microbench_point> points;
        for (const auto& row : trainperf::io::read_microbench(in)) points.push_back(trainperf::to_point(row));
        const auto fitted = trainperf::fit_microbench(points);
        if (argc == 4) {
            std::ofstream out(argv[3]);
            out << fit_json(fitted).dump(2) << '\n';
            if (!out) {
                std::cerr << "validate_microbench: cannot write " << argv[3] << '\n';
                return 2;
            }
        }
        const auto shipped = trainperf::shipped_fit(fitted);
        std::printf("| fitted | value |\n|---|---|\n");
        for (const auto& [cc, k] : fitted.kernels) {
            char cuda_core[32] = "not fitted (TF32 ran)";
            if (k.cuda_core_fraction > 0) std::snprintf(cuda_core, sizeof cuda_core, "%.3f", k.cuda_core_fraction);
            std::printf("| sm_%d (%s) | GEMM %.3f of peak at the clock under load, fp32 CUDA-core %s, memory %.3f, "
                        "per-kernel overhead %.2f µs |\n",
                        cc, std::string(k.board).c_str(), k.peak_fraction, cuda_core, k.memory_efficiency,
                        k.launch_overhead_us);
        }
        for (const auto& [gpu, t] : fitted.eager_op_time)
            std::printf("| host bare op, %s system | %.2f µs |\n", gpu.c_str(), t * 1e6);
        std::printf("| pytorch-eager host costs (bare ops) | GEMM %.2f, module %.2f, autograd node %.2f |\n\n",
                    fitted.host.gemm, fitted.host.module, fitted.host.backward_node);

        const auto results = trainperf::validate_microbench(points, shipped);
        std::printf("| GPU | benchmark | dtype | size | measured | predicted | time error | bound | fit |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|\n");
        struct tally { double sum = 0, max = 0; int n = 0; };
        std::map<std::string, tally> held_out;
        for (const auto& r : results) {
            const auto& p = *r.point;
            const auto& c = p.cases.front();
            std::string size;
            if (p.best) size = "best";
            else if (c.kind == trainperf::bench_kind::matmul || c.kind == trainperf::bench_kind::elementwise)
                size = "n=" + std::to_string(static_cast<long long>(c.n));
            else size = p.row.model + " b=" + std::to_string(c.batch) + " s=" + std::to_string(c.seq);
            const char* unit = c.kind == trainperf::bench_kind::elementwise ? "GB/s" : "TFLOP/s";
            std::printf("| %s | %s | %s | %s | %.3g %s | %.3g %s | %+.1f %% | %s | %s |\n", p.gpu.c_str(),
                        p.row.kind.c_str(), p.row.dtype.c_str(), size.c_str(), p.measured_rate, unit,
                        r.predicted_rate, unit, 100 * r.time_error, p.best ? "-" : (r.host_bound ? "host" : "GPU"),
                        r.used_in_fit ? "yes" : "");
            if (!r.used_in_fit && c.kind != trainperf::bench_kind::elementwise) {
                auto& t = held_out[p.gpu];
                t.sum += std::abs(r.time_error);
                t.max = std::max(t.max, std::abs(r.time_error));
                ++t.n;
            }
        }
        std::printf("\n| GPU | held-out matmul and layer rows | mean abs time error | max abs time error |\n");
        std::printf("|---|---|---|---|\n");
        for (const auto& [gpu, t] : held_out)
            std::printf("| %s | %d | %.1f %% | %.1f %% |\n", gpu.c_str(), t.n, 100 * t.sum / t.n, 100 * t.max);
    } catch (const std::exception& e) {
        std::cerr << "validate_microbench: " << e.what() << '\n';
        return 2;
    }
    return 0;
}
