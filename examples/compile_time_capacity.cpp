// Capacity planning at compile time: the model and GPU catalogs are constexpr, so
// whether a training configuration fits is checked by the compiler.
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>

#include <cstdio>
#include <string>

using namespace trainperf;

// One H100 node (8 per node) training `model` in fp32 with AdamW under plain PyTorch,
// the framework whose memory these checks describe; memory_of is the same path the CLI's
// memory, fit, predict and plan take, evaluated by the compiler.
constexpr training_setup fp32_on_h100(const transformer_config& model, int seq,
                                      parallel_layout layout = {.micro_batch = 1}) {
    return {.cluster = standard_cluster(h100_sxm::spec),
            .model = model,
            .precision = recipe(precision_kind::fp32),
            .optimizer = optimizer_kind::adamw,
            .layout = layout,
            .seq = seq,
            .framework = pytorch_eager_profile};
}

// llama2-7b in fp32 with AdamW needs 16 B × 6.74e9 ≈ 108 GB of static state alone.
static_assert(!memory_of(fp32_on_h100(llama2_7b::config, 4096)).fits,
              "llama2-7b + AdamW in fp32 must not fit on an 80 GB H100");
// A 1.3B model (≈ 21 GB static state + activations at its full 2048 context) does.
static_assert(memory_of(fp32_on_h100(gpt_neo_1_3b::config, 2048)).fits,
              "gpt-neo-1.3b + AdamW in fp32 must fit on an 80 GB H100");
// ZeRO-3 over 8 GPUs shards all of llama2-7b's static state, and full recompute
// keeps only each layer's input: then it fits.
static_assert(memory_of(fp32_on_h100(llama2_7b::config, 4096,
                                     {.dp = 8, .zero = 3, .micro_batch = 1, .recompute = recompute_mode::full}))
                  .fits);

constexpr memory_breakdown llama = memory_of(fp32_on_h100(llama2_7b::config, 4096)).breakdown;
constexpr int neo_batch = max_micro_batch(fp32_on_h100(gpt_neo_1_3b::config, 2048));
static_assert(neo_batch >= 1);

int main() {
    std::printf("compile-time checks passed: llama2-7b + AdamW in fp32 needs %.1f GB (%.1f GiB) "
                "on one GPU, more than the %s's 80 GB; gpt-neo-1.3b fits with micro-batches up "
                "to %d at seq 2048.\n",
                to_gb(llama.total()).value(), to_gib(llama.total()).value(),
                std::string(h100_sxm::spec.name).c_str(), neo_batch);
    return 0;
}
