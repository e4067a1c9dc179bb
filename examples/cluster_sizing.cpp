// Capacity planning with the library: how many H100s does it take to train
// llama2-70b on 2T tokens within 60 days, and with which layout? plan_training
// (trainperf/search/training_plan.hpp) searches every layout of each GPU count of a bounded
// set and keeps the cheapest and the fastest that meet the deadline. The CLI does the
// same: trainperf plan --gpu h100-sxm --model llama2-70b --seq 4096 --framework
// megatron --global-batch 1024 --max-micro-batch 4 --train-tokens 2T --deadline-days 60
// --max-gpus 2048.
#include <trainperf/trainperf.hpp>

#include <cstdio>
#include <optional>

int main() {
    using namespace trainperf;
    training_plan_request request;
    request.layouts.base.cluster = standard_cluster(h100_sxm::spec);
    request.layouts.base.model = llama2_70b::config;
    request.layouts.base.precision = recipe(precision_kind::bf16);
    request.layouts.base.seq = 4096;
    request.layouts.base.framework = megatron_profile;
    request.layouts.global_batch = 1024;  // 4M tokens per step at seq 4096
    request.layouts.max_micro_batch = 4;
    request.train_tokens = 2e12;
    request.deadline_days = 60;
    request.max_gpus = 2048;

    const training_plan plan = plan_training(request);
    std::printf("llama2-70b, %.0e tokens, global batch %lld x 4096, deadline %.0f days, h100-sxm\n\n",
                request.train_tokens, request.layouts.global_batch, request.deadline_days);
    std::printf("%6s  %10s  %8s  %6s  %10s  %s\n", "GPUs", "tokens/s", "days", "MFU", "GPU-hours", "fastest layout");
    for (std::size_t i = 0; i < plan.counts.size(); ++i) {
        const gpu_count_plan& c = plan.counts[i];
        if (!c.best) {
            std::printf("%6d  no layout fits\n", c.gpus);
            continue;
        }
        std::printf("%6d  %10.0f  %8.1f  %5.1f%%  %10.0f  %s%s\n", c.gpus, c.best->report.tokens_per_second,
                    plan.days(i), 100 * c.best->report.mfu, c.run->gpu_hours, describe(c.best->layout).c_str(),
                    c.meets_deadline ? "  (meets the deadline)" : "");
    }
    const auto show = [&](const char* what, const std::optional<std::size_t>& at) {
        if (!at) return;
        const gpu_count_plan& c = plan.counts[*at];
        std::printf("%s: %d GPUs, %.1f days, %.0f GPU-hours, %.0f MWh at board power\n", what, c.gpus, plan.days(*at),
                    c.run->gpu_hours, c.run->energy.value() / joules_per_kwh / 1e3);
    };
    std::printf("\n");
    if (!plan.cheapest) std::printf("No GPU count up to %d meets the deadline.\n", request.max_gpus);
    show("Cheapest that meets the deadline", plan.cheapest);
    show("Fastest that meets the deadline", plan.fastest);
    return plan.cheapest ? 0 : 1;
}
