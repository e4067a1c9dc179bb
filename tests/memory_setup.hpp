// The memory of a model under a recipe and layout, asked the one way the library answers
// it (memory_of a checked setup), for tests that compute the answer by hand: one node of
// `gpu` (8 per node), and the framework given every capability, so that what is tested is
// its memory accounting, not which layouts its software runs (tests/test_planner.cpp and
// tests/test_step.cpp test that).
#pragma once

#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/gpu_catalog.hpp>

namespace trainperf_tests {

inline trainperf::framework_profile running_everything(trainperf::framework_profile fw) {
    fw.tensor_parallel = fw.sequence_parallel = fw.context_parallel = true;
    fw.pipeline_parallel = fw.interleaved_pipeline = fw.uneven_pipeline_split = true;
    fw.optimizer_offload = fw.hybrid_sharding = true;
    fw.zero_stages = 0b1111;
    fw.optimizers = fw.host_optimizers = trainperf::enum_set<trainperf::optimizer_kind>::all();
    fw.precisions = trainperf::enum_set<trainperf::precision_kind>::all();
    fw.finetune_modes = trainperf::enum_set<trainperf::finetune_mode>::all();
    return fw;
}

inline trainperf::training_setup memory_setup(const trainperf::transformer_config& m,
                                              const trainperf::precision_recipe& r, trainperf::optimizer_kind k,
                                              const trainperf::parallel_layout& p, int seq,
                                              const trainperf::framework_profile& fw,
                                              const trainperf::gpu_spec& gpu = trainperf::h100_sxm::spec) {
    return {.cluster = trainperf::standard_cluster(gpu),
            .model = m,
            .precision = r,
            .optimizer = k,
            .layout = p,
            .seq = seq,
            .framework = running_everything(fw)};
}

// The busiest stage's memory per GPU.
inline trainperf::memory_breakdown memory_at(const trainperf::transformer_config& m,
                                             const trainperf::precision_recipe& r, trainperf::optimizer_kind k,
                                             const trainperf::parallel_layout& p, int seq,
                                             const trainperf::framework_profile& fw = trainperf::pytorch_eager_profile,
                                             const trainperf::gpu_spec& gpu = trainperf::h100_sxm::spec) {
    return trainperf::memory_of(memory_setup(m, r, k, p, seq, fw, gpu)).breakdown;
}

}  // namespace trainperf_tests
