#include <trainperf/flops.hpp>
#include <trainperf/framework.hpp>
#include <trainperf/models/catalog.hpp>
#include <trainperf/workload.hpp>

#include <catch2/catch.hpp>

using namespace trainperf;

namespace {
template <class Ops>
double total_flops(const Ops& ops) {
    double f = 0;
    for (const auto& op : ops) f += gemm_flops(op.shape).value();
    return f;
}
}  // namespace

TEST_CASE("a layer's GEMM shapes follow Megatron's tensor-parallel split", "[workload]") {
    // gpt2-medium: h = 1024, a = 16, d = 64, f = 4096; b = 8, s = 1024, t = 2.
    const auto ops = layer_forward_gemms(gpt2_medium::config, {.micro_batch = 8, .seq = 1024, .tp = 2});
    REQUIRE(ops.size() == 6);  // qkv, scores, context, out, ffn_up, ffn_down
    const auto shape_of = [&](std::string_view name) {
        for (const auto& op : ops)
            if (op.name == name) return op.shape;
        FAIL("no GEMM named " << name);
        return gemm_shape{};
    };
    const auto qkv = shape_of("qkv");
    CHECK((qkv.m == 8192 && qkv.n == 1536 && qkv.k == 1024 && qkv.batch == 1));
    const auto scores = shape_of("attention_scores");
    CHECK((scores.m == 1024 && scores.n == 1024 && scores.k == 64 && scores.batch == 64));
    const auto context = shape_of("attention_context");
    CHECK((context.m == 1024 && context.n == 64 && context.k == 1024 && context.batch == 64));
    const auto out = shape_of("attention_out");
    CHECK((out.m == 8192 && out.n == 1024 && out.k == 512));
    const auto down = shape_of("ffn_down");
    CHECK((down.m == 8192 && down.n == 1024 && down.k == 2048));
}

TEST_CASE("GEMM FLOPs of a layer equal the exact per-op count", "[workload]") {
    for (const auto& m : {gpt2_medium::config, llama2_70b::config, bert_large::config}) {
        const int seq = 2048, b = 2;
        for (int tp : {1, 8}) {
            const auto ops = layer_forward_gemms(m, {.micro_batch = b, .seq = seq, .tp = tp});
            const double per_rank = total_flops(ops);
            const double exact = exact_forward_breakdown(m, seq).layer().value() * b;
            INFO(m.name << " tp " << tp);
            // GQA with fewer kv heads than tp replicates a kv head per rank.
            if (m.effective_kv_heads() >= tp) CHECK(per_rank * tp == Approx(exact));
            else CHECK(per_rank * tp > exact);
        }
    }
}

TEST_CASE("backward GEMMs are dgrad and wgrad with twice the forward FLOPs", "[workload]") {
    const auto all = layer_gemms(llama2_7b::config, 1, 4096, 1, dtype::bf16);
    const auto forward = layer_forward_gemms(llama2_7b::config, {.micro_batch = 1, .seq = 4096});
    REQUIRE(all.size() == 3 * forward.size());
    double fwd = 0, bwd = 0;
    for (const auto& op : all) (op.phase == op_phase::forward ? fwd : bwd) += gemm_flops(op.shape).value();
    CHECK(bwd == Approx(2 * fwd));
    const gemm_shape g{100, 200, 300};
    CHECK(dgrad_of(g).m == 100);
    CHECK(dgrad_of(g).n == 300);
    CHECK(dgrad_of(g).k == 200);
    CHECK(wgrad_of(g).m == 300);
    CHECK(wgrad_of(g).n == 200);
    CHECK(wgrad_of(g).k == 100);
}

TEST_CASE("fused profiles move fewer bytes than eager ones", "[workload]") {
    const layer_context c{.micro_batch = 4, .seq = 1024};
    const auto traffic = [&](const framework_profile& fw) {
        double b = 0;
        for (const auto& op : layer_forward_memory_ops(gpt2_medium::config, c, fw)) b += op.moved.value();
        return b;
    };
    CHECK(traffic(megatron_profile) < traffic(pytorch_eager_profile));
    framework_profile flash = megatron_profile;
    flash.flash_attention = true;
    CHECK(traffic(flash) < traffic(megatron_profile));
    // Megatron's fused softmax: one read and one write of b·(a/t)·s² 16-bit scores.
    for (const auto& op : layer_forward_memory_ops(gpt2_medium::config, c, megatron_profile))
        if (op.name == "scale_mask_softmax") CHECK(op.moved.value() == 2.0 * 4 * 16 * 1024.0 * 1024 * 2);
}

TEST_CASE("sequence parallelism splits the norms and dropouts over tp", "[workload]") {
    const auto norm_bytes = [](bool sp) {
        for (const auto& op : layer_forward_memory_ops(gpt3_175b::config,
                                                       {.micro_batch = 1, .seq = 2048, .tp = 8, .sp = sp},
                                                       megatron_profile))
            if (op.name == "layernorm") return op.moved.value();
        return 0.0;
    };
    CHECK(norm_bytes(false) == Approx(8 * norm_bytes(true)));
}

TEST_CASE("models without dropout keep no dropout ops", "[workload]") {
    for (const auto& op : layer_forward_memory_ops(llama2_7b::config, {.micro_batch = 1, .seq = 4096},
                                                   pytorch_eager_profile))
        CHECK(op.name.find("dropout") == std::string_view::npos);
}

TEST_CASE("a layer context that does not fit the model is rejected", "[workload]") {
    CHECK_THROWS_WITH(layer_forward_gemms(gpt2_medium::config, {.micro_batch = 1, .seq = 1024, .tp = 3}),
                      Catch::Contains("tp"));
    CHECK_THROWS_WITH(layer_forward_gemms(gpt2_medium::config, {.micro_batch = 0, .seq = 1024}),
                      Catch::Contains("batch"));
}
