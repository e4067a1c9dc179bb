// Communication overlapped with compute in the modern stacks (cost/step.hpp, workload/):
// ZeRO-3 unit by unit with its first unit exposed, Megatron-Core's parameter gather
// behind the next forward, and tensor-parallel communication behind chunked GEMMs.
// Expected values are derived in the comments from the engine's priced parts.
#include <catch2/catch.hpp>

#include <trainperf/cost/comm.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>
#include <trainperf/workload/step_ops.hpp>

#include <algorithm>
#include <string>

using namespace trainperf;

namespace {

// llama3-8b on H100 nodes of 8 GPUs (the layout says how many nodes).
training_setup on_h100(const parallel_layout& layout, const framework_profile& fw) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = lookup_model("llama3-8b");
    s.precision = recipe(precision_kind::bf16);
    s.layout = layout;
    s.seq = 4096;
    s.framework = fw;
    return s;
}

}  // namespace

TEST_CASE("ZeRO-3 gathers and reduces per unit: each layer and the root") {
    // llama3-8b: 32 layers on one stage, so 33 units; dp 16 over 2 nodes.
    const training_setup s = on_h100({.dp = 16, .zero = 3, .micro_batch = 1}, deepspeed_profile);
    const model_state state = model_state_of(s);
    const step_ops w = step_workload(s, state);
    // Per GPU the 16-bit weights of all its parameters (tp = pp = 1), split over 33 units.
    const double weights = parameters_per_gpu(s, state) * 2.0;
    int gathers = 0, reductions = 0;
    for (const auto& op : w.sync) {
        CHECK(op.per_unit);
        CHECK(op.count == 33);
        if (op.op.kind == collective::all_gather) {
            ++gathers;
            CHECK(op.op.size.value() == Approx(weights / 33));
        } else {
            ++reductions;
            CHECK(op.op.kind == collective::reduce_scatter);
            CHECK(op.when == sync_point::every_micro_batch);
        }
    }
    REQUIRE(gathers == 2);  // before forward (every_forward) and before backward
    CHECK(reductions == 1);

    // The first unit of each pass has nothing to prefetch behind: at least one unit's
    // gather per pass is exposed, whatever the compute.
    const step_prices prices = price_step(w, s);
    const seconds unit = collective_time(w.sync[0].op, s.cluster);
    CHECK(prices.sync.forward_unit.value() == Approx(unit.value()));
    CHECK(prices.sync.backward_unit.value() == Approx(unit.value()));
    CHECK(prices.sync.per_forward.value() == Approx(33 * unit.value()));
    const step_report r = predict(s);
    CHECK(r.time.communication.value() >= 2 * unit.value() * (1 - 1e-9));
}

TEST_CASE("DeepSpeed of 2021 moves each tensor on its own, and overlaps nothing") {
    // llama3-8b in the generic layer under megatron-deepspeed: each layer's 5 weight
    // matrices (QKV, the output projection, gate, up, down) gathered one by one,
    // 32 · 5 + 1 = 161 gathers; every parameter's gradient reduce-scattered, the 5
    // matrices and the two RMSNorms' weights (no biases), 32 · 7 + 1 = 225; dp 16 over 2
    // nodes, fp16.
    training_setup s = on_h100({.dp = 16, .zero = 3, .micro_batch = 1}, megatron_deepspeed_profile);
    s.precision = recipe(precision_kind::fp16);
    CHECK(layer_linear_matrices(s.model, model_code::generic) == 5);
    CHECK(layer_linear_matrices(s.model, model_code::llama) == 7);  // q, k, v, o, gate, up, down
    CHECK(layer_parameter_tensors(s.model, model_code::generic) == 7);
    // A GPT layer (biases, LayerNorms): 4 matrices, 4 biases, 2 norms' weights and biases.
    CHECK(layer_parameter_tensors(lookup_model("gpt2"), model_code::generic) == 12);
    const model_state state = model_state_of(s);
    const step_ops w = step_workload(s, state);
    const double weights = parameters_per_gpu(s, state) * 2.0;
    for (const auto& op : w.sync) {
        if (op.op.kind == collective::all_gather) {
            CHECK(op.count == 161);
            CHECK(op.op.size.value() == Approx(weights / 161));
        } else {
            CHECK(op.count == 225);
        }
    }
    // Nothing hides: each micro-batch pays its forward's and its backward's gathers and
    // its reduce-scatters whole.
    const step_prices prices = price_step(w, s);
    const seconds gather = collective_time(w.sync[0].op, s.cluster);
    CHECK(prices.sync.per_forward.value() == Approx(161 * gather.value()));
    const step_time_breakdown t = step_times(s, price_pipeline(s), prices);
    CHECK(t.communication.value() == Approx(prices.sync.per_step_total(1.0).value()).epsilon(1e-9));
    // Asked for, the overlap changes nothing: that ZeRO-3 cannot overlap.
    training_setup asked = s;
    asked.layout.dp_overlap = dp_overlap_mode::on;
    CHECK_FALSE(overlaps_data_parallel_sync(asked));
    CHECK(predict(asked).step_time == predict(s).step_time);
}

TEST_CASE("ZeRO-3 kept gathered from forward to backward: no second all-gather") {
    framework_profile kept = deepspeed_profile;
    kept.reshard_after_forward = false;
    const training_setup s = on_h100({.dp = 16, .zero = 3, .micro_batch = 1}, kept);
    const training_setup resharding = on_h100({.dp = 16, .zero = 3, .micro_batch = 1}, deepspeed_profile);
    const step_ops w = step_workload(s);
    REQUIRE(w.sync.size() == 2);
    CHECK(w.sync[0].op.kind == collective::all_gather);
    CHECK(w.sync[0].when == sync_point::every_forward);
    CHECK(w.sync[1].op.kind == collective::reduce_scatter);
    const step_prices prices = price_step(w, s);
    const seconds unit = collective_time(w.sync[0].op, s.cluster);
    CHECK(prices.sync.forward_unit.value() == Approx(unit.value()));
    CHECK(prices.sync.backward_unit.value() == 0);
    // One gather per unit fewer, and the whole stage's 16-bit weights held instead of two
    // layers': less communication, more memory.
    const step_report a = predict(s), b = predict(resharding);
    CHECK(a.time.communication <= b.time.communication);
    CHECK(a.memory.buffers.value() - b.memory.buffers.value() ==
          Approx((32 - 2) * layer_parameters(s.model) * 2.0));
}

TEST_CASE("Megatron-Core gathers the sharded optimizer's parameters behind the next forward") {
    parallel_layout l{.dp = 8, .zero = 1, .micro_batch = 1, .grad_accum = 4};
    training_setup with = on_h100(l, megatron_core_profile);
    training_setup without = with;
    without.framework.overlap_parameter_gather = false;
    const step_prices prices = price_step(step_workload(with), with);
    const micro_batch_times mb = price_micro_batch(with);
    const seconds gather = prices.sync.after_optimizer;
    REQUIRE(gather.value() > 0);
    // NCCL's ring on 8 H100 of one node runs 12 channels, one CTA (SM) each, of the 132
    // SMs: hidden behind the forward, the gather still takes 12/132 of its time from it.
    const seconds held = prices.sync_sm_time.after_optimizer;
    CHECK(held.value() == Approx(gather.value() * 12 / 132).epsilon(1e-12));
    // Exposed: max(gather − 0.8 · forward, its SMs' share); the rest of the step is the same.
    const double exposed = std::max(gather.value() - 0.8 * mb.forward.value(), held.value());
    CHECK(predict(without).time.communication.value() - predict(with).time.communication.value() ==
          Approx(gather.value() - exposed).epsilon(1e-9));
    // Megatron-LM asserts --overlap-grad-reduce with --overlap-param-gather: without the
    // gradient sync's overlap the gather follows the update, switch or not.
    with.layout.dp_overlap = without.layout.dp_overlap = dp_overlap_mode::off;
    CHECK_FALSE(overlaps_parameter_gather(with));
    CHECK(predict(with).step_time == predict(without).step_time);
}

TEST_CASE("compute beside a hidden data-parallel collective runs on the SMs it leaves", "[overlap]") {
    // Llama 3 8B, ZeRO 2 on 8 H100: every micro-batch's gradients reduce-scattered during
    // its backward, on NCCL's 12 ring channels of 132 SMs (cost/comm_sms.hpp).
    parallel_layout l{.dp = 8, .zero = 2, .micro_batch = 1, .grad_accum = 4};
    training_setup s = on_h100(l, megatron_core_profile);
    s.framework.overlap_parameter_gather = false;  // the parameters' gather alone, after the update
    const step_prices prices = price_step(step_workload(s), s);
    const micro_batch_times mb = price_micro_batch(s);
    const double t = prices.sync.per_micro_batch.value();
    REQUIRE(t > 0);
    CHECK(prices.sync_sm_time.per_micro_batch.value() == Approx(t * 12 / 132).epsilon(1e-12));
    // Hidden behind 0.8 of the backward, each micro-batch still pays 12/132 of it: the
    // pass runs on the other SMs while the collective runs (max(T − C, f·T), f·T here).
    REQUIRE(t < 0.8 * mb.backward.value());
    const step_time_breakdown with = step_times(s, price_pipeline(s), prices);
    step_prices free = prices;
    free.sync_sm_time = {};
    const step_time_breakdown without = step_times(s, price_pipeline(s), free);
    CHECK(with.communication.value() - without.communication.value() == Approx(4 * t * 12 / 132).epsilon(1e-9));
    // Not overlapped, the collective runs alone: its SMs take nothing from compute.
    s.layout.dp_overlap = dp_overlap_mode::off;
    const step_prices alone = price_step(step_workload(s), s);
    free = alone;
    free.sync_sm_time = {};
    CHECK(step_times(s, price_pipeline(s), alone).communication ==
          step_times(s, price_pipeline(s), free).communication);
}

TEST_CASE("a ZeRO-3 pass's first unit runs alone, the hidden rest takes its SMs' share", "[overlap]") {
    // llama3-8b, DeepSpeed ZeRO-3 on 16 H100 (2 nodes): 33 units gathered before forward,
    // again before backward, and reduce-scattered; across nodes NCCL's ring runs 8
    // channels, 8 of the 132 SMs.
    const training_setup s = on_h100({.dp = 16, .zero = 3, .micro_batch = 1}, deepspeed_profile);
    const step_prices prices = price_step(step_workload(s), s);
    const micro_batch_times mb = price_micro_batch(s);
    const data_parallel_sync& t = prices.sync;
    const data_parallel_sync& held = prices.sync_sm_time;
    CHECK(held.per_forward.value() == Approx(t.per_forward.value() * 8 / 132).epsilon(1e-12));
    // Each pass: the first unit alone, then max(what outlasts 0.8 of the pass, the rest's
    // share of its SMs), never less than the unit.
    const auto pass = [](double comm, double unit, double sm_time, double window) {
        return std::max({unit, comm - window, unit + sm_time * (comm - unit) / comm});
    };
    const double forward = pass(t.per_forward.value(), t.forward_unit.value(), held.per_forward.value(),
                                0.8 * mb.forward.value());
    const double backward = pass(t.per_micro_batch.value(), t.backward_unit.value(), held.per_micro_batch.value(),
                                 0.8 * (mb.backward + mb.recompute).value());
    step_prices free = prices;
    free.sync_sm_time = {};
    const double before = std::max(t.forward_unit.value(), t.per_forward.value() - 0.8 * mb.forward.value()) +
                          std::max(t.backward_unit.value(),
                                   t.per_micro_batch.value() - 0.8 * (mb.backward + mb.recompute).value());
    // Hidden behind their passes here: each pass pays its first unit and the SMs' share.
    REQUIRE(forward > std::max(t.forward_unit.value(), t.per_forward.value() - 0.8 * mb.forward.value()));
    const pipeline_times stages = price_pipeline(s);
    CHECK(step_times(s, stages, prices).communication.value() - step_times(s, stages, free).communication.value() ==
          Approx(forward + backward - before).epsilon(1e-9));
}

TEST_CASE("tensor-parallel communication hides behind the chunked GEMMs it feeds") {
    parallel_layout l{.tp = 8, .sp = true, .micro_batch = 2};
    training_setup with = on_h100(l, megatron_core_profile);
    training_setup without = with;
    without.framework.tensor_parallel_overlap = false;
    const micro_batch_times on = price_micro_batch(with);
    const micro_batch_times off = price_micro_batch(without);
    // The same collectives either way: what is hidden (behind the GEMMs, or in the GPU's
    // wait for the host) plus what stays exposed.
    REQUIRE(off.tensor_parallel_comm.value() > 0);
    CHECK((on.tensor_parallel_comm + on.tensor_parallel_hidden).value() ==
          Approx((off.tensor_parallel_comm + off.tensor_parallel_hidden).value()));
    CHECK(on.tensor_parallel_comm < off.tensor_parallel_comm);
    // Chunked GEMMs on fewer SMs cost compute: the overlap is not free.
    CHECK(on.gpu_compute() > off.gpu_compute());
    // Without sequence parallelism Megatron-Core cannot overlap: nothing changes.
    with.layout.sp = false;
    without.layout.sp = false;
    CHECK(price_micro_batch(with).tensor_parallel_comm == price_micro_batch(without).tensor_parallel_comm);
}

TEST_CASE("hybrid sharding: ZeRO shards inside a group and all-reduces across its replicas", "[hsdp]") {
    // llama3-8b, 64 H100 on 8 nodes, dp 64, ZeRO-3 (FSDP), shards of 8: one node each.
    const training_setup s = on_h100({.dp = 64, .zero = 3, .micro_batch = 1, .shard_group = 8}, pytorch_eager_profile);
    const model_state state = model_state_of(s);
    const step_ops w = step_workload(s, state);
    const double units = 33;  // 32 layers and the root
    const double gradients = parameters_per_gpu(s, state) * 2.0;  // bf16 gradients
    int across = 0;
    for (const auto& op : w.sync) {
        if (op.op.name == "gradient_all_reduce_across_shards") {
            ++across;
            // Each unit's reduced shard, all-reduced over the 8 replicas, one per node.
            CHECK(op.op.kind == collective::all_reduce);
            CHECK(op.op.group.size == 8);
            CHECK(op.op.group.per_node == 1);
            CHECK(op.count == units);
            CHECK(op.when == sync_point::every_micro_batch);
            CHECK(op.op.size.value() == Approx(gradients / (8 * units)));
        } else {
            // The unit's gathers and reduce-scatter stay inside the node.
            CHECK(op.op.group.size == 8);
            CHECK(op.op.group.inside_one_node());
        }
    }
    CHECK(across == 1);

    // Memory: the state is split 8 ways, not 64.
    training_setup flat = s;
    flat.layout.shard_group = 0;
    const memory_breakdown hybrid = memory_of(s, state).breakdown;
    const memory_breakdown full = memory_of(flat, state).breakdown;
    CHECK(hybrid.weights.value() == Approx(full.weights.value() * 64 / 8));
    CHECK(hybrid.optimizer_state.value() == Approx(full.optimizer_state.value() * 64 / 8));
    CHECK(hybrid.master_weights.value() == Approx(full.master_weights.value() * 64 / 8));

    // Time: each unit's gather over NVLink instead of a ring over 8 nodes.
    const step_prices near = price_step(w, s);
    const step_prices far = price_step(step_workload(flat, state), flat);
    CHECK(near.sync.per_forward < far.sync.per_forward);
    CHECK(near.sync.forward_unit < far.sync.forward_unit);
}

TEST_CASE("a shard group that cannot shard is an error naming it", "[hsdp]") {
    const auto bad = [](const parallel_layout& l) { validate(l); };
    CHECK_THROWS_WITH(bad({.dp = 8, .shard_group = 4}), Catch::Contains("shard_group") && Catch::Contains("zero"));
    CHECK_THROWS_WITH(bad({.dp = 8, .zero = 3, .shard_group = 3}),
                      Catch::Contains("shard_group") && Catch::Contains("divide"));
    CHECK_THROWS_WITH(bad({.dp = 4, .cp = 2, .zero = 1, .shard_group = 1}),
                      Catch::Contains("shard_group") && Catch::Contains("multiple of cp"));
    CHECK_NOTHROW(bad({.dp = 4, .cp = 2, .zero = 1, .shard_group = 4}));
    const parallel_layout l{.dp = 16, .zero = 3, .shard_group = 8};
    CHECK(parse_layout(to_string(l)) == l);
    CHECK(to_string(l).find("--shard-group 8") != std::string::npos);
    CHECK(describe(l).find("ZeRO 3 (shards of 8, 2 replicas)") != std::string::npos);
}
