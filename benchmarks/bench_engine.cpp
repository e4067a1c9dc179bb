// Engine speed: how many predictions per second a layout search can make.
#include <trainperf/hardware/catalog.hpp>
#include <trainperf/models/catalog.hpp>
#include <trainperf/step.hpp>
#include <trainperf/validation.hpp>

#include <benchmark/benchmark.h>

namespace {

using namespace trainperf;

training_setup gpt3_on_selene() {
    training_setup s;
    s.cluster = selene_dgx_a100();
    s.model = gpt3_175b::config;
    s.precision = recipe(precision_kind::fp16);
    s.layout = {.dp = 1, .tp = 8, .pp = 8, .interleave = 3, .sp = true, .micro_batch = 1,
                .grad_accum = 64, .recompute = recompute_mode::selective};
    s.seq = 2048;
    s.framework = megatron_profile;
    return s;
}

void BM_predict_gpt3_175b(benchmark::State& state) {
    const training_setup s = gpt3_on_selene();
    for (auto _ : state) benchmark::DoNotOptimize(predict(s).step_time);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_predict_gpt3_175b);

void BM_micro_batch_step(benchmark::State& state) {
    const training_setup s = gpt3_on_selene();
    for (auto _ : state) benchmark::DoNotOptimize(micro_batch_step(s).forward);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_micro_batch_step);

void BM_memory_per_gpu(benchmark::State& state) {
    const training_setup s = gpt3_on_selene();
    for (auto _ : state)
        benchmark::DoNotOptimize(memory_per_gpu(s.model, s.precision, s.optimizer, s.layout, 2048).total());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_memory_per_gpu);

// A small layout sweep: every tp x pp x micro-batch x recompute for llama2-7b on 64 H100s.
void BM_layout_sweep_llama2_7b(benchmark::State& state) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = llama2_7b::config;
    s.seq = 4096;
    s.framework = megatron_profile;
    for (auto _ : state) {
        double best = 0;
        int evaluated = 0;
        for (int tp : {1, 2, 4, 8})
            for (int pp : {1, 2, 4, 8})
                for (int b : {1, 2, 4, 8})
                    for (auto r : {recompute_mode::none, recompute_mode::selective, recompute_mode::full}) {
                        s.layout = {.dp = 64 / (tp * pp), .tp = tp, .pp = pp, .sp = tp > 1, .micro_batch = b,
                                    .grad_accum = 8, .recompute = r};
                        const auto rep = predict(s);
                        if (rep.fits) best = std::max(best, rep.tokens_per_second);
                        ++evaluated;
                    }
        benchmark::DoNotOptimize(best);
        state.SetItemsProcessed(state.items_processed() + evaluated);
    }
}
BENCHMARK(BM_layout_sweep_llama2_7b);

}  // namespace
