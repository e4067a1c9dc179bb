// Engine speed, as docs/engine.md reports it: a cold prediction and its parts. Their
// own program, as a program that predicts is: a translation unit that also holds the
// planner (bench_planner.cpp) inlines less of a prediction (docs/engine.md, Speed).
#include "gpt3_on_selene.hpp"

#include <trainperf/cost/step.hpp>

#include <benchmark/benchmark.h>

namespace {

using namespace trainperf;
using trainperf_benchmarks::gpt3_on_selene;

// Predictions of `s` from scratch, its micro-batch alternating so that no two calls
// are alike.
void predict_each_time(benchmark::State& state, training_setup s) {
    int b = 0;
    for (auto _ : state) {
        s.layout.micro_batch = 1 + (b++ & 1);
        benchmark::DoNotOptimize(predict(s).step_time);
    }
    state.SetItemsProcessed(state.iterations());
}

// A single prediction from scratch: workload, pricing, schedule, memory.
void BM_predict_cold(benchmark::State& state) { predict_each_time(state, gpt3_on_selene()); }
BENCHMARK(BM_predict_cold);

void BM_price_micro_batch(benchmark::State& state) {
    const training_setup s = gpt3_on_selene();
    for (auto _ : state) benchmark::DoNotOptimize(price_micro_batch(s).forward);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_price_micro_batch);

void BM_micro_batch_workload(benchmark::State& state) {
    const training_setup s = gpt3_on_selene();
    for (auto _ : state) benchmark::DoNotOptimize(micro_batch_workload(s).gemms.size());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_micro_batch_workload);

void BM_memory_of(benchmark::State& state) {
    const training_setup s = gpt3_on_selene();
    const model_state model = model_state_of(s);
    for (auto _ : state) benchmark::DoNotOptimize(memory_of(s, model).breakdown.total());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_memory_of);

// An MoE step: Mixtral 8x7B on 64 H100 with its experts over ep 8 (Megatron-Core): the
// dense part's ops and the routed experts' (router, dispatch, grouped GEMMs) priced.
void BM_predict_moe(benchmark::State& state) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = mixtral_8x7b::config;
    s.framework = megatron_core_profile;
    s.seq = 4096;
    s.layout = {.dp = 64, .zero = 1, .grad_accum = 16, .recompute = recompute_mode::full, .ep = 8};
    predict_each_time(state, s);
}
BENCHMARK(BM_predict_moe);

}  // namespace
