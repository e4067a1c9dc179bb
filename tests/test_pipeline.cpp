// Pipeline schedules and stage splits (spec/parallel.hpp, cost/step.hpp, cost/memory.hpp, search/layout_search.hpp):
// layers on the first and last stage set apart from an even split, every stage priced
// from one layer's, the head's and the embedding's parts, the fill and drain of
// heterogeneous stages (Alpa's T = Σ tᵢ + (m − 1)·max tⱼ), the zero-bubble schedule
// zb-h1, and the planner's search over them. Expected values are derived in the
// comments from the engine's priced parts.
#include <catch2/catch.hpp>

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/search/layout_search.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>
#include <trainperf/workload/step_ops.hpp>

#include <string>

using namespace trainperf;

namespace {

// llama3-70b (80 layers, vocabulary 128 256) on 64 H100, tp 8 x pp 8, megatron-core.
training_setup llama3_70b_pp8(const parallel_layout& changes = {}) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec, 64);
    s.model = lookup_model("llama3-70b");
    s.precision = recipe(precision_kind::bf16);
    s.seq = 4096;
    s.framework = megatron_core_profile;
    s.layout = changes;
    s.layout.tp = 8;
    s.layout.pp = 8;
    s.layout.sp = true;
    s.layout.dp = 1;
    if (s.layout.grad_accum == 1) s.layout.grad_accum = 16;
    return s;
}

// A stage priced from scratch: its ops emitted with their counts (layers × per layer).
micro_batch_times priced_from_scratch(const training_setup& s, const stage_shape& shape) {
    stage_pricer pricer(s.cluster.gpu, kernel_params_of(s), &s.cluster, s.framework.host,
                        s.cluster.host.eager_op_time);
    if (overlaps_tensor_parallel(s)) pricer.overlap_tensor_parallel(s.layout.tp);
    for_each_stage_op(s, shape, pricer);
    return pricer.result();
}

}  // namespace

TEST_CASE("a pipeline split: an even one, or first and last stages set apart", "[pipeline]") {
    const auto& m = lookup_model("llama3-70b");  // 80 layers
    const auto split = [&](int pp, int first, int last) {
        return pipeline_split_of(m, {.pp = pp, .first_stage_layers = first, .last_stage_layers = last});
    };
    CHECK(split(8, 0, 0).first == 10);
    CHECK(split(8, 0, 0).middle == 10);
    CHECK(split(8, 0, 0).last == 10);
    // 7 on the first and the last stage: (80 − 14)/6 = 11 on each middle one; 9 and 9
    // would leave 62, which 6 stages do not share evenly.
    const pipeline_split llama{split(8, 7, 7)};
    CHECK(llama.first == 7);
    CHECK(llama.middle == 11);
    CHECK(llama.last == 7);
    CHECK(llama.valid());
    CHECK_FALSE(split(8, 9, 9).valid());
    // Only the last set: the other 7 share 80 − 3 = 77, 11 each.
    CHECK(split(8, 0, 3).first == 11);
    CHECK(split(8, 0, 3).last == 3);
    // pp 2: the two add up to the layers.
    CHECK(split(2, 30, 50).valid());
    CHECK_FALSE(split(2, 30, 40).valid());
    CHECK(split(1, 0, 0).first == 80);
}

TEST_CASE("Megatron-Core's split counts the embedding and the loss where pp x interleave does not divide",
          "[pipeline]") {
    const auto& m = lookup_model("llama3.1-405b");  // 126 layers
    const auto split = [&](int pp, int v) { return pipeline_split_of(m, {.pp = pp, .interleave = v}); };
    // 126 + 2 = 128 layer-equivalents: 8 per stage of 16, the first and the last one layer
    // short (the embedding, the loss), with 1, 4 or 8 virtual stages alike.
    for (int v : {1, 4, 8}) {
        INFO("interleave " << v);
        CHECK(split_layer_equivalents(126, 16, v).total() == 2);
        CHECK(split(16, v).first == 7);
        CHECK(split(16, v).middle == 8);
        CHECK(split(16, v).last == 7);
        CHECK(interleave_splits_layers(m, 16, v));
        CHECK_NOTHROW(validate(parallel_layout{.pp = 16, .interleave = v, .grad_accum = 16}, m));
    }
    // The loss alone where only L + 1 splits: 31 layers on 4 stages × 2 → 32, 8, 8, 8, 7.
    transformer_config odd = m;
    odd.layers = 31;
    CHECK(split_layer_equivalents(31, 4, 2).embedding == 0);
    CHECK(split_layer_equivalents(31, 4, 2).loss == 1);
    CHECK(pipeline_split_of(odd, {.pp = 4, .interleave = 2}).first == 8);
    CHECK(pipeline_split_of(odd, {.pp = 4, .interleave = 2}).last == 7);
    // An even split needs none; where neither L + 1 nor L + 2 splits, interleaving is refused.
    CHECK(split_layer_equivalents(80, 8, 2).total() == 0);
    odd.layers = 32;
    CHECK_FALSE(interleave_splits_layers(odd, 4, 3));
    CHECK_THROWS_WITH(validate(parallel_layout{.pp = 4, .interleave = 3, .grad_accum = 4}, odd),
                      Catch::Contains("interleave = 3: pp x interleave must divide the number of layers"));
    // A stage left with only the embedding is refused: 14 layers + 2 on 16 stages.
    odd.layers = 14;
    CHECK_THROWS_WITH(validate(parallel_layout{.pp = 16}, odd), Catch::Contains("pp = 16"));
}

TEST_CASE("Llama 3.1 405B on 16 stages x 8 virtual stages runs on Megatron-Core, not on Megatron-LM",
          "[pipeline]") {
    training_setup s;
    s.model = lookup_model("llama3.1-405b");
    s.framework = megatron_core_profile;
    s.cluster = standard_cluster(h100_sxm::spec, 8);
    s.seq = 8192;
    s.layout = {.dp = 2, .tp = 8, .pp = 16, .interleave = 8, .sp = true, .zero = 1, .grad_accum = 32};
    const step_report r = predict(s);
    CHECK(r.step_time.value() > 0);
    // Against 128 layers split evenly (8 on every stage, the head's on the last): the
    // 126-layer split's busiest stage is a middle one of 8 layers, lighter than 8 layers and
    // the head, and its first stage, whose micro-batches in flight set the peak, holds 7.
    training_setup even = s;
    even.model.layers = 128;
    const step_report e = predict(even);
    CHECK(r.step_time < e.step_time);
    CHECK(r.step_time.value() > 0.85 * e.step_time.value());
    CHECK(r.memory.activations < e.memory.activations);
    s.framework = megatron_profile;
    CHECK_THROWS_WITH(validate(s), Catch::Contains("interleave = 8") && Catch::Contains("megatron-core"));
}

TEST_CASE("a stage split or schedule that cannot run is an error naming its field", "[pipeline]") {
    const auto& m = lookup_model("llama3-70b");
    const auto bad = [&](const parallel_layout& l) { validate(l, m); };
    CHECK_THROWS_WITH(bad({.pp = 8, .first_stage_layers = 9, .last_stage_layers = 9}),
                      Catch::Contains("last_stage_layers") && Catch::Contains("evenly"));
    CHECK_THROWS_WITH(bad({.pp = 2, .first_stage_layers = 30, .last_stage_layers = 40}),
                      Catch::Contains("last_stage_layers") && Catch::Contains("add up"));
    CHECK_THROWS_WITH(bad({.pp = 1, .last_stage_layers = 4}), Catch::Contains("last_stage_layers"));
    // With virtual stages each stage's count divides by them (Megatron-Core): 7 does not by 2.
    CHECK_THROWS_WITH(bad({.pp = 8, .interleave = 2, .grad_accum = 8, .first_stage_layers = 7}),
                      Catch::Contains("first_stage_layers = 7: must be a multiple of interleave (2)"));
    // 8, 8 and (80 − 16)/6 ≈ 10.7: not even; 6, 6 leave 68 / 6 neither; 4, 4 leave 72 / 6 = 12,
    // and 12 divides by 2.
    CHECK_NOTHROW(bad({.pp = 8, .interleave = 2, .grad_accum = 8, .first_stage_layers = 4, .last_stage_layers = 4}));
    // 12, 8 and (80 − 20)/6 = 10 on each middle stage, which 4 virtual stages do not divide.
    CHECK_THROWS_WITH(bad({.pp = 8, .interleave = 4, .grad_accum = 8, .first_stage_layers = 12, .last_stage_layers = 8}),
                      Catch::Contains("interleave = 4: must divide the 10 layers of each middle stage"));
    CHECK_THROWS_WITH(bad({.pp = 8, .first_stage_layers = -1}), Catch::Contains("first_stage_layers"));
    CHECK_THROWS_WITH(bad({.schedule = pipeline_schedule::zero_bubble_h1}),
                      Catch::Contains("schedule") && Catch::Contains("zb-h1"));
    CHECK_THROWS_WITH(bad({.pp = 8, .interleave = 2, .grad_accum = 8, .schedule = pipeline_schedule::zero_bubble_h1}),
                      Catch::Contains("schedule") && Catch::Contains("interleave"));
    CHECK_NOTHROW(bad({.pp = 8, .schedule = pipeline_schedule::zero_bubble_h1, .first_stage_layers = 7,
                       .last_stage_layers = 7}));
}

TEST_CASE("every stage is priced from one layer's, the head's and the embedding's parts", "[pipeline][step]") {
    for (auto rc : {recompute_mode::none, recompute_mode::selective, recompute_mode::full}) {
        training_setup s = llama3_70b_pp8({.recompute = rc});
        const stage_pricer parts = price_stage_parts(s);
        for (const stage_shape shape : {stage_shape{10, false, true}, stage_shape{7, true, false},
                                        stage_shape{13, false, false}, stage_shape{80, true, true}}) {
            const micro_batch_times built = parts.stage(shape.layers, shape.embedding, shape.head, parts.pipeline_comm());
            const micro_batch_times scratch = priced_from_scratch(s, shape);
            INFO(to_string(rc) << ", " << shape.layers << " layers");
            CHECK(built.forward.value() == Approx(scratch.forward.value()).epsilon(1e-12));
            CHECK(built.backward.value() == Approx(scratch.backward.value()).epsilon(1e-12));
            CHECK(built.recompute.value() == Approx(scratch.recompute.value()).epsilon(1e-12));
            CHECK(built.tensor_parallel_comm.value() == Approx(scratch.tensor_parallel_comm.value()).epsilon(1e-12));
            CHECK(built.tensor_parallel_hidden.value() ==
                  Approx(scratch.tensor_parallel_hidden.value()).epsilon(1e-12));
            CHECK(built.gpu_weight_gradient.value() == Approx(scratch.gpu_weight_gradient.value()).epsilon(1e-12));
            CHECK(built.total().value() == Approx(scratch.total().value()).epsilon(1e-12));
        }
    }
}

TEST_CASE("the weight-gradient time is the stage's wgrad GEMMs", "[pipeline][step]") {
    const training_setup s = llama3_70b_pp8();
    const kernel_cost_model kernels(s.cluster.gpu, kernel_params_of(s));
    // Without tp overlap every GEMM runs whole: W is the sum of the wgrad GEMMs' times.
    training_setup plain = s;
    plain.framework.tensor_parallel_overlap = false;
    double wgrad = 0;
    for (const auto& g : micro_batch_workload(plain).gemms)
        if (g.op.phase == op_phase::backward_weight) wgrad += g.count * kernels.gemm_time(g.op.shape).value();
    REQUIRE(wgrad > 0);
    CHECK(price_micro_batch(plain).gpu_weight_gradient.value() == Approx(wgrad).epsilon(1e-12));
    CHECK(price_micro_batch(plain).gpu_weight_gradient < price_micro_batch(plain).gpu_backward);
}

TEST_CASE("heterogeneous stages: the slowest paces, the others fill and drain once", "[pipeline][step]") {
    // Even split, pp 8: the last stage (10 layers, head and loss) is the slowest; the
    // fill and drain are the first stage's (10 layers, embedding) and 6 middle ones.
    training_setup s = llama3_70b_pp8();
    const stage_pricer parts = price_stage_parts(s);
    const seconds sends = parts.pipeline_comm();
    const micro_batch_times first = parts.stage(10, true, false, sends);
    const micro_batch_times middle = parts.stage(10, false, false, sends);
    const micro_batch_times last = parts.stage(10, false, true, sends);
    REQUIRE(last.total() > first.total());
    REQUIRE(first.total() > middle.total());
    const pipeline_times even = price_pipeline(s);
    CHECK(even.bottleneck.total().value() == Approx(last.total().value()).epsilon(1e-12));
    CHECK(even.others.value() == Approx((first.total() + 6.0 * middle.total()).value()).epsilon(1e-12));
    const step_report r = predict(s);
    CHECK(r.time.bubble.value() == Approx(even.others.value()).epsilon(1e-12));
    CHECK(r.time.forward_backward.value() == Approx(16 * last.compute().value()).epsilon(1e-12));
    // Less than Narayanan et al.'s (p − 1) slowest-stage micro-batches, by the head's part.
    CHECK(r.time.bubble < 7.0 * last.total());

    // Interleaved over v = 2: the fill and drain halve.
    training_setup v2 = llama3_70b_pp8({.interleave = 2});
    const pipeline_times interleaved = price_pipeline(v2);
    CHECK(predict(v2).time.bubble.value() == Approx(interleaved.others.value() / 2).epsilon(1e-12));

    // 7 layers on the first and the last stage, 11 on each middle one: a middle stage
    // is now the slowest; the others are the first, the last and 5 middle ones.
    training_setup uneven = llama3_70b_pp8({.first_stage_layers = 7, .last_stage_layers = 7});
    const micro_batch_times edge_first = parts.stage(7, true, false, sends);
    const micro_batch_times edge_last = parts.stage(7, false, true, sends);
    const micro_batch_times wide = parts.stage(11, false, false, sends);
    REQUIRE(wide.total() > edge_last.total());
    const pipeline_times p = price_pipeline(uneven);
    CHECK(p.bottleneck.total().value() == Approx(wide.total().value()).epsilon(1e-12));
    CHECK(p.others.value() ==
          Approx((edge_first.total() + edge_last.total() + 5.0 * wide.total()).value()).epsilon(1e-12));
    CHECK(p.others_weight_gradient.value() ==
          Approx((edge_first.gpu_weight_gradient + edge_last.gpu_weight_gradient + 5.0 * wide.gpu_weight_gradient)
                     .value())
              .epsilon(1e-12));
}

TEST_CASE("zb-h1 fills the bubble with the deferred weight gradients", "[pipeline][step]") {
    // Qi et al. 2024: (p − 1)(F + B + W) becomes (p − 1)(F + B − W): 2·W less per other stage.
    training_setup s = llama3_70b_pp8();
    s.framework.zero_bubble_schedule = true;  // a framework that offers zb-h1
    const step_report one_f_one_b = predict(s);
    s.layout.schedule = pipeline_schedule::zero_bubble_h1;
    const step_report zb = predict(s);
    const pipeline_times p = price_pipeline(s);
    CHECK(zb.time.bubble.value() == Approx((p.others - 2.0 * p.others_weight_gradient).value()).epsilon(1e-12));
    CHECK(zb.time.bubble < one_f_one_b.time.bubble);
    CHECK(zb.time.forward_backward == one_f_one_b.time.forward_backward);
    // The same peak activation memory as 1F1B (Qi et al. 2024, ZB-H1).
    CHECK(zb.memory.total() == one_f_one_b.memory.total());
    // Never below zero: a step with no weight gradients to defer keeps its bubble.
    CHECK(pipeline_bubble({.pp = 2, .schedule = pipeline_schedule::zero_bubble_h1},
                          {.others = seconds_of(1.0), .others_weight_gradient = seconds_of(0.8)})
              .value() == 0.0);
}

TEST_CASE("a lighter first stage holds fewer layers' activations; the busiest stage may then be the second",
          "[pipeline][memory]") {
    training_setup s = llama3_70b_pp8({.recompute = recompute_mode::selective});
    const model_state state = model_state_of(s);
    const auto stage = [&](const parallel_layout& l, int index) {
        const precision_recipe r = stored_precision(s);
        const auto layer =
            memory_detail::layer_activations_of(s.model, r, l, sequence_length(s), s.framework, s.finetune);
        return memory_detail::stage_memory(s.model, r, state, l, sequence_length(s), s.framework, layer, index,
                                           s.finetune);
    };
    parallel_layout even = s.layout;
    parallel_layout light = s.layout;
    light.first_stage_layers = 7;
    light.last_stage_layers = 7;
    // The first stage holds pp = 8 micro-batches of its layers in flight: 7/10 of the even one's.
    const double per_layer = (stage(even, 0).activations.value() - stage(light, 0).activations.value()) / 3.0;
    CHECK(per_layer > 0);
    CHECK(stage(light, 0).activations.value() ==
          Approx(stage(even, 0).activations.value() - 3 * per_layer).epsilon(1e-12));
    // The second stage: 11 layers, 7 micro-batches in flight, no embedding.
    CHECK(stage(light, 1).activations.value() == Approx(per_layer * 11.0 * 7.0 / 8.0).epsilon(1e-9));
    s.layout = light;
    const memory_breakdown busiest = memory_of(s, state).breakdown;
    CHECK(busiest.total() >= stage(light, 0).total());
    CHECK(busiest.total() >= stage(light, 1).total());
    CHECK(busiest.total() >= stage(light, 7).total());
    CHECK(busiest.stage == 1);
}

TEST_CASE("the layout's text form carries the schedule and the stage split", "[pipeline][layout]") {
    const parallel_layout l{.dp = 2, .tp = 8, .pp = 8, .sp = true, .zero = 1, .grad_accum = 16,
                            .schedule = pipeline_schedule::zero_bubble_h1, .first_stage_layers = 7,
                            .last_stage_layers = 7};
    const std::string text = to_string(l);
    CHECK(text.find("--schedule zb-h1") != std::string::npos);
    CHECK(text.find("--first-stage-layers 7 --last-stage-layers 7") != std::string::npos);
    CHECK(parse_layout(text) == l);
    CHECK(describe(l).find("(layers: first stage 7, last stage 7), zb-h1") != std::string::npos);
    // Left out when they are the default.
    CHECK(to_string(parallel_layout{}).find("schedule") == std::string::npos);
    CHECK(to_string(parallel_layout{}).find("stage-layers") == std::string::npos);
    CHECK_THROWS_WITH(parse_layout("--pp 2 --schedule zb-h2"), Catch::Contains("zb-h2"));
}

namespace {
// llama2-7b (32 layers) on 8 H100, global batch 8, the megatron-core profile: every
// dimension it offers.
plan_request small_megatron_core() {
    plan_request r;
    r.base.cluster = standard_cluster(h100_sxm::spec);
    r.base.model = lookup_model("llama2-7b");
    r.base.precision = recipe(precision_kind::bf16);
    r.base.seq = 4096;
    r.base.framework = megatron_core_profile;
    r.gpus = 8;
    r.global_batch = 8;
    r.allow_offload = true;
    return r;
}
}  // namespace

TEST_CASE("the planner searches stage splits and the profile's switches: the space counted by hand",
          "[pipeline][planner]") {
    const plan_request request = small_megatron_core();
    // Per (tp, pp): dp = 8/(tp·pp), micro-batches b dividing 8/dp, grad-accum 8/dp/b.
    // Pipelines: the even split, each interleave v ≥ 2 with pp·v | 32 (pp | grad-accum),
    // and every (first, last) ≥ 1 leaving the pp − 2 others an even share of at least 1
    // (pp 2: first + last = 32), the even split (32/pp each) not twice.
    // Per pipeline with dp > 1: ZeRO 0, 1 and 2 (parameter-gather overlap on and off with
    // the dp-overlap on; off only with it off, when the gather cannot overlap) and 3, ZeRO
    // 1, 2 and 3 each over all dp ranks or, hybrid, over each shard group S | dp with
    // 2 ≤ S < dp; x 2 offloads; dp = 1: ZeRO 0 x 2 offloads.
    // Per (tp, pp): sp off/on (tp > 1) x 3 recomputes x FlashAttention on/off x tp-comm-
    // overlap on/off (with sp).
    const auto uneven = [](int pp) {
        int n = 0;
        if (pp == 1) return 0;
        for (int f = 1; f < 32; ++f)
            for (int l = 1; f + l <= 32; ++l) {
                const int rest = 32 - f - l, others = pp - 2;
                const bool ok = others == 0 ? rest == 0 : rest >= others && rest % others == 0;
                if (ok && !(f == 32 / pp && l == 32 / pp)) ++n;
            }
        return n;
    };
    long long expected = 0;
    for (int tp : {1, 2, 4, 8})
        for (int pp : {1, 2, 4, 8}) {
            if (tp * pp > 8) continue;
            const int dp = 8 / (tp * pp);
            int shardings = 1;
            for (int shard = 2; shard < dp; ++shard) shardings += dp % shard == 0;
            const int overlap_on = 1 + 2 * shardings + 2 * shardings + shardings;
            const int overlap_off = 1 + shardings + shardings + shardings;
            const int inner = dp > 1 ? (overlap_on + overlap_off) * 2 : 2;
            const int units = tp > 1 ? 3 * 2 * (1 + 2) : 3 * 2;  // sp off: 1 tp-overlap value, sp on: 2
            for (int b = 1; b <= 8 / dp; ++b) {
                if ((8 / dp) % b != 0) continue;
                const int accum = 8 / dp / b;
                int pipelines = 1 + uneven(pp);
                for (int v = 2; pp > 1 && accum % pp == 0 && pp * v <= 32; ++v) pipelines += 32 % (pp * v) == 0;
                expected += 1LL * pipelines * inner * units;
            }
        }
    plan_options exhaustive;
    exhaustive.prune = false;
    exhaustive.top = 1u << 20;
    const plan_result all = plan(request, exhaustive);
    CHECK(all.candidates == expected);
    CHECK(all.evaluated == expected);
    bool split = false, flash_off = false, tp_overlap_off = false, gather_off = false, hybrid = false, zero2 = false;
    for (const auto& c : all.best) {
        split |= c.layout.first_stage_layers > 0;
        flash_off |= !c.switches.flash_attention;
        tp_overlap_off |= c.layout.sp && !c.switches.tensor_parallel_overlap;
        gather_off |= c.layout.zero == 1 && !c.switches.overlap_parameter_gather;
        hybrid |= c.layout.shard_group > 0;
        zero2 |= c.layout.zero == 2;
        CHECK(c.layout.schedule == pipeline_schedule::one_f_one_b);  // megatron-core has no zero-bubble schedule
    }
    CHECK(split);
    CHECK(flash_off);
    CHECK(tp_overlap_off);
    CHECK(gather_off);
    CHECK(hybrid);
    CHECK(zero2);
}

TEST_CASE("with stage splits and switches, pruned and exhaustive searches agree, each step as predict gives it",
          "[pipeline][planner]") {
    plan_request request = small_megatron_core();
    request.base.framework.zero_bubble_schedule = true;  // a framework that offers zb-h1 too
    plan_options exhaustive;
    exhaustive.prune = false;
    exhaustive.top = 12;
    plan_options pruned = exhaustive;
    pruned.prune = true;
    const plan_result a = plan(request, exhaustive);
    const plan_result b = plan(request, pruned);
    REQUIRE(a.best.size() == 12);
    REQUIRE(b.best.size() == 12);
    CHECK(b.pruned > 0);
    for (std::size_t i = 0; i < a.best.size(); ++i) {
        INFO(describe(a.best[i].layout));
        CHECK(a.best[i].layout == b.best[i].layout);
        CHECK(a.best[i].switches == b.best[i].switches);
        CHECK(a.best[i].report.step_time == b.best[i].report.step_time);
        const step_report again = predict(setup_of(request.base, a.best[i]));
        CHECK(again.step_time.value() == Approx(a.best[i].report.step_time.value()).epsilon(1e-12));
        CHECK(again.memory.total().value() == Approx(a.best[i].report.memory.total().value()).epsilon(1e-12));
    }
}
