// Context parallelism (Megatron-Core + Transformer Engine, p2p KV ring): per-rank
// token counts, the attention core's share, the ring's sends, memory, the dp x cp
// gradient group, the overlap rule, the layout's text form and the planner.
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/workload/placement.hpp>
#include <trainperf/search/layout_search.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/workload/step_ops.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

using namespace trainperf;

namespace {
// llama3-8b (h 4096, 32 heads of d 128, 8 kv heads: kv width 1024, 32 layers) on H100
// under Megatron's profile with FlashAttention and context parallelism, as Megatron-Core
// and Transformer Engine run it.
training_setup llama3_8b_on_h100(int seq, parallel_layout layout) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = llama3_8b::config;
    s.precision = recipe(precision_kind::bf16);
    s.framework = megatron_profile;
    s.framework.flash_attention = true;
    s.framework.context_parallel = true;  // as Megatron-Core runs it
    s.seq = seq;
    s.layout = layout;
    return s;
}

template <class List>
const gemm_op& gemm_named(const List& ops, std::string_view name) {
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const gemm_op& g) { return g.name == name; });
    REQUIRE(it != ops.end());
    return *it;
}

const stage_op<collective_op>* collective_named(const stage_workload& w, std::string_view name) {
    for (const auto& c : w.collectives)
        if (c.op.name == name) return &c;
    return nullptr;
}
}  // namespace

TEST_CASE("context parallelism: GEMMs run on s/cp tokens, the core on s/cp queries against s keys", "[cp]") {
    // llama2-7b, b = 1, s = 4096, t = 1, cp = 2: 2048 tokens per rank.
    const auto& m = llama2_7b::config;
    const layer_context c{.micro_batch = 1, .seq = 4096, .tp = 1, .cp = 2, .code = model_code::llama};
    const auto gemms = layer_forward_gemms(m, c);
    CHECK(gemm_named(gemms, "q").shape.m == 2048);
    CHECK(gemm_named(gemms, "attention_out").shape.m == 2048);
    CHECK(gemm_named(gemms, "ffn_up").shape.m == 2048);
    CHECK(gemm_named(gemms, "ffn_down").shape.m == 2048);
    const gemm_shape scores = gemm_named(gemms, "attention_scores").shape;
    CHECK((scores.m == 2048 && scores.n == 4096 && scores.k == 128 && scores.batch == 32));
    const gemm_shape context = gemm_named(gemms, "attention_context").shape;
    CHECK((context.m == 2048 && context.n == 128 && context.k == 4096 && context.batch == 32));

    const attention_core_extent e = attention_core_shape(m, {.micro_batch = 1, .seq = 8192, .cp = 4});
    CHECK((e.queries == 2048 && e.keys == 8192 && e.share == 0.25));
}

TEST_CASE("context parallelism: attention FLOPs per rank are 1/cp of the layer's", "[cp]") {
    const auto& m = llama2_7b::config;
    const auto core_flops = [&](int cp) {
        double f = 0;
        for (const auto& g : layer_forward_gemms(m, {.micro_batch = 1, .seq = 4096, .tp = 1, .cp = cp}))
            if (g.region == op_region::attention_core) f += gemm_flops(g.shape).value();
        return f;
    };
    // cp = 1: 2 GEMMs x 2·4096·4096·128·32 = 2 x 137 438 953 472 = 274 877 906 944.
    CHECK(core_flops(1) == 274877906944.0);
    // cp = 2: 2 x 2·2048·4096·128·32 = 137 438 953 472 (half); cp = 4: a quarter.
    CHECK(core_flops(2) == 137438953472.0);
    CHECK(core_flops(4) == 68719476736.0);
}

TEST_CASE("context parallelism: memory-bound ops and the head run on s/cp tokens", "[cp]") {
    training_setup s = llama3_8b_on_h100(8192, {.tp = 1});
    const auto one = micro_batch_workload(s);
    s.layout.cp = 2;
    const auto two = micro_batch_workload(s);
    const auto logits = [](const stage_workload& w) {
        for (const auto& g : w.gemms)
            if (g.op.name == "logits" && g.op.phase == op_phase::forward) return g.op.shape;
        FAIL("no logits GEMM");
        return gemm_shape{};
    };
    CHECK(logits(one).m == 8192);
    CHECK(logits(two).m == 4096);
    double bytes_one = 0, bytes_two = 0, merges = 0;
    for (const auto& op : one.memory) bytes_one += op.count * op.op.moved.value();
    for (const auto& op : two.memory)
        (op.op.name.starts_with("context_parallel_") ? merges : bytes_two) += op.count * op.op.moved.value();
    // Every memory-bound op is per token (FlashAttention keeps no s x s tensor): half; the
    // ring adds the merges of its steps' partial outputs (tests/test_recompute_and_compile.cpp).
    CHECK(bytes_two == Approx(bytes_one / 2).epsilon(1e-12));
    CHECK(merges > 0);
}

TEST_CASE("context parallelism: the KV ring sends cp - 1 KV chunks per layer forward, twice that backward",
          "[cp]") {
    // llama3-8b, b = 1, s = 8192, bf16 (2 B): a KV chunk is 2 (K and V) x 8192/cp tokens
    // x kv width 1024 / t x 2 B.
    training_setup s = llama3_8b_on_h100(8192, {.tp = 1, .cp = 2});
    auto w = micro_batch_workload(s);
    const auto* forward = collective_named(w, "context_parallel_kv_send");
    const auto* backward = collective_named(w, "context_parallel_kv_dkv_send");
    REQUIRE(forward != nullptr);
    REQUIRE(backward != nullptr);
    // cp 2: 2 x 4096 x 1024 x 2 B = 16 777 216 B; 1 send x 32 layers forward, 2 x 32 backward.
    CHECK(forward->op.size.value() == 16777216.0);
    CHECK(forward->op.kind == collective::p2p);
    CHECK(forward->part == step_part::context_parallel);
    CHECK(forward->count == 32);
    CHECK(forward->recomputed == 0);
    CHECK(backward->op.size.value() == 16777216.0);
    CHECK(backward->op.phase == op_phase::backward);
    CHECK(backward->count == 64);
    // The cp group of 2 ranks after tp = 1 sits in one node.
    CHECK((forward->op.group.size == 2 && forward->op.group.inside_one_node()));

    // cp 4, tp 8 (8 kv heads: one per rank): 2 x 2048 x 1024/8 x 2 B = 1 048 576 B,
    // 3 sends x 32 layers; selective recompute runs the forward ring again.
    s.layout = {.tp = 8, .cp = 4, .recompute = recompute_mode::selective};
    w = micro_batch_workload(s);
    forward = collective_named(w, "context_parallel_kv_send");
    REQUIRE(forward != nullptr);
    CHECK(forward->op.size.value() == 1048576.0);
    CHECK(forward->count == 96);
    CHECK(forward->recomputed == 96);
    // tp 8 fills a node of 8: the 4 cp ranks are 8 apart, one per node.
    CHECK((forward->op.group.size == 4 && forward->op.group.per_node == 1));

    // No ring without cp.
    s.layout = {.tp = 1};
    CHECK(collective_named(micro_batch_workload(s), "context_parallel_kv_send") == nullptr);
}

TEST_CASE("context parallelism: the ring is exposed only beyond the attention core it overlaps", "[cp]") {
    const cluster_spec c = standard_cluster(h100_sxm::spec);
    const kernel_params k = default_kernel_params(c.gpu);
    const gemm_op core{"attention_scores", {4096, 4096, 128, 32, dtype::bf16}, op_phase::forward,
                       op_region::attention_core};
    const rank_group ring{2, 2};
    const auto exposed = [&](double chunk_bytes) {
        stage_pricer p(c.gpu, k, &c);
        p(stage_op<gemm_op>{core, 1, 0, step_part::forward});
        p(stage_op<collective_op>{{"kv", collective::p2p, bytes_of(chunk_bytes), ring, op_phase::forward}, 1, 0,
                                  step_part::context_parallel});
        return p.result();
    };
    const seconds core_time = kernel_cost_model(c.gpu, k).gemm_time(core.shape);
    // A small chunk hides entirely behind the core.
    const micro_batch_times small = exposed(1e3);
    CHECK(small.context_parallel_ring.value() > 0);
    CHECK(small.context_parallel_comm.value() == 0);
    // A chunk far larger than the core can hide: exposed = ring − core.
    const micro_batch_times large = exposed(1e10);
    const seconds ring_time = collective_time(collective_op{"kv", collective::p2p, bytes_of(1e10), ring}, c);
    CHECK(large.context_parallel_ring.value() == Approx(ring_time.value()));
    CHECK(large.context_parallel_comm.value() == Approx((ring_time - core_time).value()));
    CHECK(large.total().value() == Approx((large.compute() + large.context_parallel_comm).value()));
}

TEST_CASE("context parallelism: activations and logits per rank halve with cp 2, model state does not", "[cp]") {
    training_setup s = llama3_8b_on_h100(16384, {.tp = 1, .recompute = recompute_mode::selective});
    const memory_breakdown one = memory_of(s).breakdown;
    s.layout.cp = 2;
    const memory_breakdown two = memory_of(s).breakdown;
    CHECK(two.activations.value() == Approx(one.activations.value() / 2).epsilon(1e-12));
    CHECK(two.logits.value() == Approx(one.logits.value() / 2).epsilon(1e-12));
    CHECK(two.weights.value() == one.weights.value());
    CHECK(two.optimizer_state.value() == one.optimizer_state.value());

    // ZeRO-1 shards the optimizer state over dp x cp: dp 1 x cp 2 halves it against
    // dp 1 x cp 1, where there is nothing to shard over.
    s.layout.zero = 1;
    const memory_breakdown sharded = memory_of(s).breakdown;
    CHECK(sharded.optimizer_state.value() == Approx(one.optimizer_state.value() / 2).epsilon(1e-12));
}

TEST_CASE("context parallelism: gradients reduce over dp x cp", "[cp]") {
    training_setup s = llama3_8b_on_h100(8192, {.dp = 2, .tp = 2, .cp = 2});
    const step_ops w = step_workload(s);
    REQUIRE(w.sync.size() == 1);
    CHECK(w.sync[0].op.name == "gradient_all_reduce");
    // dp 2 x cp 2 = 4 ranks, 2 apart (after tp 2): all 4 in one node of 8.
    CHECK((w.sync[0].op.group.size == 4 && w.sync[0].op.group.per_node == 4));
    // dp 1, cp 2: still a group of 2 to reduce over.
    s.layout = {.tp = 2, .cp = 2};
    CHECK(step_workload(s).sync.size() == 1);
}

TEST_CASE("context parallelism: placement after tp, before dp", "[cp]") {
    // tp 2, cp 2, dp 4 on nodes of 8: cp ranks 2 apart (one node), dp replicas 4 apart
    // (2 per node), dp x cp ranks 2 apart (4 per node, 2 nodes).
    layout_groups g = place({.dp = 4, .tp = 2, .cp = 2}, 8);
    CHECK((g.context.size == 2 && g.context.per_node == 2));
    CHECK((g.data.size == 4 && g.data.per_node == 2));
    CHECK((g.data_context.size == 8 && g.data_context.per_node == 4));
    // tp 8 fills the node: one cp rank per node.
    g = place({.dp = 2, .tp = 8, .cp = 2}, 8);
    CHECK((g.context.size == 2 && g.context.per_node == 1));
    CHECK((g.data_context.size == 4 && g.data_context.per_node == 1));
    // tp-pp-dp order: cp still right after tp; pp 2 next (stride 4), dp 2 after it
    // (stride 8): the dp x cp group has its 2 cp ranks in each node.
    g = place({.dp = 2, .tp = 2, .cp = 2, .pp = 2}, 8, rank_order::tp_pp_dp);
    CHECK((g.context.size == 2 && g.context.per_node == 2));
    CHECK((g.pipeline.size == 2 && g.pipeline.per_node == 2));
    CHECK((g.data_context.size == 4 && g.data_context.per_node == 2));
}

TEST_CASE("context parallelism: GPUs, text form and a sequence it cannot split", "[cp]") {
    const parallel_layout l{.dp = 8, .tp = 8, .cp = 2, .pp = 4};
    CHECK(l.gpus() == 512);  // 8 x 8 x 2 x 4
    CHECK(l.dp_cp() == 16);
    CHECK(describe(l).rfind("dp 8 x tp 8 x cp 2 x pp 4,", 0) == 0);
    const std::string text = to_string(l);
    CHECK(text.find("--gpus 512 --tp 8 --cp 2 --pp 4") != std::string::npos);
    CHECK(parse_layout(text) == l);
    CHECK(parse_layout("--gpus 32 --tp 2 --cp 4").dp == 4);  // 32 / (2 x 4)
    CHECK_THROWS_WITH(parse_layout("--gpus 12 --tp 2 --cp 4"), Catch::Contains("tp x cp x pp = 8"));
    // Without cp the text forms are as they were.
    const parallel_layout plain{.dp = 4, .tp = 8, .pp = 2};
    CHECK(to_string(plain).find("--cp") == std::string::npos);
    CHECK(describe(plain).rfind("dp 4 x tp 8 x pp 2,", 0) == 0);

    // 8200 tokens do not split into 2 x cp = 8 chunks (8200 / 8 = 1025 is whole, / 16 is
    // not: cp 4 passes, cp 8 fails).
    training_setup s = llama3_8b_on_h100(8200, {.cp = 4});
    CHECK_NOTHROW(predict(s));
    s.layout.cp = 8;
    CHECK_THROWS_AS(predict(s), std::invalid_argument);
    CHECK_THROWS_WITH(predict(s), Catch::Contains("cp = 8"));
    CHECK_THROWS_AS(memory_of(s), std::invalid_argument);
}

TEST_CASE("context parallelism: predict stays consistent with the step's parts", "[cp]") {
    training_setup s = llama3_8b_on_h100(32768, {.tp = 8, .cp = 2, .sp = true, .grad_accum = 4});
    const step_report r = predict(s);
    check_postconditions(r);
    CHECK(r.gpus == 16);
    CHECK(r.micro_batch.context_parallel_ring.value() > 0);
    CHECK(r.micro_batch.context_parallel_comm <= r.micro_batch.context_parallel_ring);
    // The same ops collected in lists and priced give the same times.
    const micro_batch_times listed = price_micro_batch(micro_batch_workload(s), s);
    CHECK(listed.context_parallel_comm.value() == Approx(r.micro_batch.context_parallel_comm.value()));
}

TEST_CASE("the planner finds cp for long sequences, and not for short ones", "[cp][planner]") {
    // llama3-8b on 16 H100 (2 nodes of 8), Megatron with FlashAttention, 8 sequences a step.
    plan_request r;
    r.base = llama3_8b_on_h100(131072, {});
    r.gpus = 16;
    r.global_batch = 8;
    plan_options every;
    every.top = std::size_t{1} << 20;  // keep every fitting layout

    // At 131072 tokens layouts without cp fit too (e.g. tp 8 with full recompute), but
    // the search finds a cp layout faster: cp splits the sequence without tp's
    // all-reduces or pp's bubble, and its ring hides behind the attention core.
    const plan_result long_seq = plan(r, every);
    REQUIRE(!long_seq.best.empty());
    CHECK(long_seq.best.front().layout.cp > 1);
    CHECK(std::any_of(long_seq.best.begin(), long_seq.best.end(),
                      [](const plan_candidate& c) { return c.layout.cp == 1; }));

    // At 589824 tokens (9 x 65536) no cp = 1 layout fits: with tp 8 the last stage's
    // fp32 logits alone are 589824 x 128256 / 8 x (2 + 4) B = 56.7 GB, on top of the
    // stage's activations and state; with cp they shrink by cp as well.
    r.base.seq = 589824;
    const plan_result longer = plan(r, every);
    REQUIRE(!longer.best.empty());
    for (const auto& c : longer.best) CHECK(c.layout.cp > 1);

    // At 2048 tokens cp is not searched (below min_context_parallel_sequence), nor chosen.
    r.base.seq = 2048;
    r.global_batch = 64;
    const plan_result short_seq = plan(r, 5);
    REQUIRE(!short_seq.best.empty());
    for (const auto& c : short_seq.best) CHECK(c.layout.cp == 1);
    CHECK(!context_parallel_candidate(2048, 2));
    CHECK(context_parallel_candidate(8192, 8));    // 1024 tokens per rank
    CHECK(!context_parallel_candidate(8192, 16));  // 512 per rank
    CHECK(!context_parallel_candidate(8200, 8));   // 8200 is not divisible by 2 x 8
}
