// Capacity planning at compile time: the model and GPU catalogs are constexpr, so
// whether a training configuration fits is checked by the compiler.
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>

#include <cstdio>
#include <string>

using namespace trainperf;

constexpr precision_recipe fp32 = recipe(precision_kind::fp32);
constexpr parallel_layout one_gpu{.micro_batch = 1};

// llama2-7b in fp32 with AdamW needs 16 B × 6.74e9 ≈ 108 GB of static state alone.
static_assert(!fits(h100_sxm{}, llama2_7b{}, fp32, optimizer_kind::adamw, one_gpu, 4096),
              "llama2-7b + AdamW in fp32 must not fit on an 80 GB H100");
// A 1.3B model (≈ 21 GB static state + activations at its full 2048 context) does.
static_assert(fits(h100_sxm{}, gpt_neo_1_3b{}, fp32, optimizer_kind::adamw, one_gpu, 2048),
              "gpt-neo-1.3b + AdamW in fp32 must fit on an 80 GB H100");
// ZeRO-3 over 8 GPUs shards all of llama2-7b's static state, and full recompute
// keeps only each layer's input: then it fits.
static_assert(fits(h100_sxm{}, llama2_7b{}, fp32, optimizer_kind::adamw,
                   parallel_layout{.dp = 8, .zero = 3, .micro_batch = 1,
                                   .recompute = recompute_mode::full},
                   4096));

constexpr memory_breakdown llama = memory_per_gpu(llama2_7b::config, fp32, optimizer_kind::adamw,
                                                  one_gpu, 4096);
constexpr int neo_batch = max_micro_batch(h100_sxm{}, gpt_neo_1_3b{}, fp32, optimizer_kind::adamw,
                                          one_gpu, 2048);
static_assert(neo_batch >= 1);

int main() {
    std::printf("compile-time checks passed: llama2-7b + AdamW in fp32 needs %.1f GB (%.1f GiB) "
                "on one GPU, more than the %s's 80 GB; gpt-neo-1.3b fits with micro-batches up "
                "to %d at seq 2048.\n",
                to_gb(llama.total()).value(), to_gib(llama.total()).value(),
                std::string(h100_sxm::spec.name).c_str(), neo_batch);
    return 0;
}
