// Capacity planning with the library: how many H100s does it take to train
// llama2-70b on 2T tokens within 60 days, and with which layout? For each cluster
// size the planner searches every layout; the first size that meets the deadline wins.
#include <trainperf/trainperf.hpp>

#include <cstdio>

int main() {
    using namespace trainperf;
    constexpr double tokens = 2e12;
    constexpr double deadline_days = 60;
    constexpr long long global_batch = 1024;  // 4M tokens per step at seq 4096

    plan_request request;
    request.base.cluster = standard_cluster(h100_sxm::spec);
    request.base.model = llama2_70b::config;
    request.base.precision = recipe(precision_kind::bf16);
    request.base.seq = 4096;
    request.base.framework = megatron_profile;
    request.global_batch = global_batch;
    request.max_micro_batch = 4;

    std::printf("llama2-70b, %.0e tokens, global batch %lld x 4096, deadline %.0f days, h100-sxm\n\n", tokens,
                global_batch, deadline_days);
    std::printf("%6s  %10s  %8s  %6s  %10s  %s\n", "GPUs", "tokens/s", "days", "MFU", "GPU-hours", "best layout");
    for (int gpus = 64; gpus <= 2048; gpus *= 2) {
        request.gpus = gpus;
        const plan_result result = plan(request, 1);
        if (result.best.empty()) {
            std::printf("%6d  no layout fits\n", gpus);
            continue;
        }
        const auto& best = result.best.front();
        const training_run run = estimate_training_run(best.report, h100_sxm::spec, tokens);
        const double days = run.time.value() / 86400.0;
        std::printf("%6d  %10.0f  %8.1f  %5.1f%%  %10.0f  %s%s\n", gpus, best.report.tokens_per_second, days,
                    100 * best.report.mfu, run.gpu_hours, describe(best.layout).c_str(),
                    days <= deadline_days ? "  <- meets the deadline" : "");
        if (days <= deadline_days) break;
    }
}
