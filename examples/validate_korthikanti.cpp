// Prints trainperf's blind predictions for Korthikanti et al. 2022, Table 5 as a
// Markdown table (the one in docs/validation.md). Usage: validate_korthikanti CSV
#include <trainperf/calibrate/published_runs.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: validate_korthikanti tests/data/korthikanti2022_table5.csv\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::cerr << "validate_korthikanti: cannot read " << argv[1] << '\n';
        return 2;
    }
    try {
        const auto rows = trainperf::read_published_iterations(in);
        const auto system = trainperf::selene_dgx_a100();
        const auto summary = trainperf::validate_against(rows, system, trainperf::megatron_profile);
        std::printf("| model | recompute | GPUs | published (s) | predicted (s) | error | compute | comm | bubble | optimizer | MFU |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (const auto& r : summary.rows) {
            const auto& p = r.predicted;
            std::printf("| %s | %s | %d | %.2f | %.2f | %+.1f %% | %.0f %% | %.0f %% | %.0f %% | %.1f %% | %.1f %% |\n",
                        r.published.model.c_str(), std::string(to_string(r.published.recompute)).c_str(),
                        r.published.gpus, r.published.seconds_per_iteration, p.step_time.value(),
                        100 * r.relative_error, 100 * p.fraction(p.time.forward_backward),
                        100 * p.fraction(p.time.communication), 100 * p.fraction(p.time.bubble),
                        100 * p.fraction(p.time.optimizer), 100 * p.mfu);
        }
        std::printf("\nmean |error| %.2f %%, max |error| %.2f %%\n", 100 * summary.mean_abs_error,
                    100 * summary.max_abs_error);
        // Sensitivity to the one assumed number that matters most: the fraction of
        // peak that large GEMMs reach (the same value for every row).
        std::printf("\n| A100 GEMM peak_fraction | mean abs error | max abs error |\n|---|---|---|\n");
        for (double fraction : {0.75, 0.80, 0.85, 0.90}) {
            auto k = trainperf::default_kernel_params(system.gpu);
            k.peak_fraction = fraction;
            const auto s = trainperf::validate_against(rows, system, trainperf::megatron_profile, k);
            std::printf("| %.2f | %.2f %% | %.2f %% |\n", fraction, 100 * s.mean_abs_error, 100 * s.max_abs_error);
        }
    } catch (const std::exception& e) {
        std::cerr << "validate_korthikanti: " << e.what() << '\n';
        return 2;
    }
}
