// The README's include-and-use example, built with the project so it stays true.
#include <trainperf/trainperf.hpp>

#include <iostream>

using namespace trainperf;

// Compile time: a 7B model with Adam in fp32 does not fit on one 80 GB H100.
constexpr training_setup fp32_llama{.cluster = standard_cluster(h100_sxm::spec),
                                    .model = llama2_7b::config,
                                    .precision = recipe(precision_kind::fp32),
                                    .seq = 2048,
                                    .framework = pytorch_eager_profile};
static_assert(!memory_of(fp32_llama).fits);

int main() {
    training_setup s;
    s.cluster = standard_cluster(lookup_gpu("h100-sxm"));
    s.model = lookup_model("llama2-7b");
    s.precision = recipe(precision_kind::bf16);
    s.layout = {.dp = 8, .zero = 1, .micro_batch = 1, .grad_accum = 8,
                .recompute = recompute_mode::selective};
    s.seq = 4096;
    s.framework = megatron_profile;
    const step_report r = predict(s);
    std::cout << r.step_time.value() << " s/step, " << r.tokens_per_second << " tokens/s, MFU "
              << r.mfu << ", " << to_gib(r.memory.total()).value() << " GiB per GPU\n";
}
