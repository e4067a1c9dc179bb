// Engine speed, as docs/engine.md reports it: a cold prediction and its parts. Their
// own program, as a program that predicts is: a translation unit that also holds the
// planner (bench_planner.cpp) inlines less of a prediction (docs/engine.md, Speed).
#include "gpt3_on_selene.hpp"

#include <trainperf/cost/step.hpp>

#include <benchmark/benchmark.h>

namespace {

using namespace trainperf;
using trainperf_benchmarks::gpt3_on_selene;

// A single prediction from scratch: workload, pricing, schedule, memory.
void BM_predict_cold(benchmark::State& state) {
    training_setup s = gpt3_on_selene();
    int b = 0;
    for (auto _ : state) {
        s.layout.micro_batch = 1 + (b++ & 1);  // no two calls alike
        benchmark::DoNotOptimize(predict(s).step_time);
    }
    state.SetItemsProcessed(state.iterations());
}
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

}  // namespace
