// Planner speed, as docs/engine.md reports it: the exhaustive search (amortised
// predictions per second per core, and the wall time of a whole search on every core
// of the machine).
#include "gpt3_on_selene.hpp"

#include <trainperf/search/layout_search.hpp>

#include <benchmark/benchmark.h>

#include <thread>

namespace {

using namespace trainperf;
using trainperf_benchmarks::gpt3_on_selene;

// The planner's search for GPT-3 175B on 512 A100 80GB (64 DGX A100 nodes), global
// batch 1536, optimizer offload allowed; with the megatron profile (2022: no
// FlashAttention or overlap switches, an even pipeline split, ZeRO 0 and 1) or the
// megatron-core one (every switch and split it offers, bf16).
plan_request gpt3_on_512_a100(const framework_profile& fw = megatron_profile) {
    plan_request r;
    r.base = gpt3_on_selene();
    r.base.framework = fw;
    if (fw.name == megatron_core_profile.name) r.base.precision = recipe(precision_kind::bf16);
    r.gpus = 512;
    r.global_batch = 1536;
    r.allow_offload = true;
    return r;
}

// Every candidate of the request predicted (no pruning) on one thread. Counters: the
// candidates, and the share that fits (each of those gets its step time; the others
// their memory verdict).
void search_every_candidate_on_one_core(benchmark::State& state, const plan_request& r) {
    plan_options o;
    o.threads = 1;
    o.prune = false;
    long long predicted = 0, fitting = 0;
    for (auto _ : state) {
        const plan_result p = plan(r, o);
        predicted += p.evaluated;
        fitting += p.fitting;
    }
    state.SetItemsProcessed(predicted);
    state.counters["candidates"] = double(predicted) / double(state.iterations());
    state.counters["fitting_share"] = double(fitting) / double(predicted);
}

// The megatron space on one thread: candidates decided per second per core, amortised
// over the sweep.
void BM_plan_exhaustive_one_core(benchmark::State& state) {
    const plan_request r = gpt3_on_512_a100();
    search_every_candidate_on_one_core(state, r);
}
BENCHMARK(BM_plan_exhaustive_one_core)->Unit(benchmark::kMillisecond);

// A richer space, exhaustively on one thread: GPT-3 175B on 64 A100 80GB (8 DGX A100
// nodes), global batch 256, micro-batch 1 or 2, optimizer offload allowed, the
// megatron-core profile (bf16, every split, switch, ZeRO stage and shard group it
// offers).
void BM_plan_exhaustive_megatron_core_one_core(benchmark::State& state) {
    plan_request r = gpt3_on_512_a100(megatron_core_profile);
    r.gpus = 64;
    r.global_batch = 256;
    r.max_micro_batch = 2;
    search_every_candidate_on_one_core(state, r);
}
BENCHMARK(BM_plan_exhaustive_megatron_core_one_core)->Unit(benchmark::kMillisecond);

// The same space on every core, still without pruning.
void BM_plan_exhaustive_all_cores(benchmark::State& state) {
    const plan_request r = gpt3_on_512_a100();
    plan_options o;
    o.prune = false;
    long long predicted = 0;
    for (auto _ : state) predicted += plan(r, o).evaluated;
    state.SetItemsProcessed(predicted);
    state.counters["threads"] = double(std::thread::hardware_concurrency());
}
BENCHMARK(BM_plan_exhaustive_all_cores)->Unit(benchmark::kMillisecond)->UseRealTime();

// What `trainperf plan` does: the whole space, with the proven bounds, on every core.
void BM_plan_gpt3_175b_512_a100(benchmark::State& state) {
    const plan_request r = gpt3_on_512_a100(megatron_core_profile);
    long long candidates = 0, evaluated = 0;
    for (auto _ : state) {
        const plan_result p = plan(r);
        candidates += p.candidates;
        evaluated += p.evaluated;
    }
    state.SetItemsProcessed(candidates);
    state.counters["candidates"] = double(candidates) / double(state.iterations());
    state.counters["predicted"] = double(evaluated) / double(state.iterations());
}
BENCHMARK(BM_plan_gpt3_175b_512_a100)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same search keeping one layout per family (plan_options::fold_variants), as
// `trainperf plan` does by default: the bounds prune less (the 10th family's best is
// slower than the 10th layout) and each offer scans the families held.
void BM_plan_gpt3_175b_512_a100_folded(benchmark::State& state) {
    const plan_request r = gpt3_on_512_a100(megatron_core_profile);
    plan_options o;
    o.fold_variants = true;
    long long candidates = 0, evaluated = 0;
    for (auto _ : state) {
        const plan_result p = plan(r, o);
        candidates += p.candidates;
        evaluated += p.evaluated;
    }
    state.SetItemsProcessed(candidates);
    state.counters["candidates"] = double(candidates) / double(state.iterations());
    state.counters["predicted"] = double(evaluated) / double(state.iterations());
}
BENCHMARK(BM_plan_gpt3_175b_512_a100_folded)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
