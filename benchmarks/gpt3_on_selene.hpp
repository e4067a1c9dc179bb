// The setup the engine benchmarks price (bench_engine.cpp, bench_planner.cpp): GPT-3
// 175B in fp16 on the Selene catalog cluster (DGX A100 nodes), tp 8, pp 8 with 3
// virtual stages, sequence parallelism, ZeRO-1 over dp 8, micro-batch 1, 64
// micro-batches, selective recompute, sequence 2048, the megatron profile.
#pragma once

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/setup.hpp>
#include <trainperf/calibrate/published_runs.hpp>

namespace trainperf_benchmarks {

inline trainperf::training_setup gpt3_on_selene() {
    using namespace trainperf;
    training_setup s;
    s.cluster = selene_dgx_a100();
    s.model = gpt3_175b::config;
    s.precision = recipe(precision_kind::fp16);
    s.layout = {.dp = 8, .tp = 8, .pp = 8, .interleave = 3, .sp = true, .zero = 1, .micro_batch = 1,
                .grad_accum = 64, .recompute = recompute_mode::selective};
    s.seq = 2048;
    s.framework = megatron_profile;
    return s;
}

}  // namespace trainperf_benchmarks
