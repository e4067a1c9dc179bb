// The README's include-and-use example, built with the project so it stays true.
#include <trainperf/trainperf.hpp>

#include <iostream>

using namespace trainperf;

// Compile time: a 7B model with Adam in fp32 does not fit on one 80 GB H100.
static_assert(!fits(h100_sxm{}, llama2_7b{}, recipe(precision_kind::fp32), optimizer_kind::adamw,
                    parallel_layout{}, 2048));

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
