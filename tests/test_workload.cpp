#include <trainperf/flops.hpp>
#include <trainperf/framework.hpp>
#include <trainperf/hardware/catalog.hpp>
#include <trainperf/models/catalog.hpp>
#include <trainperf/setup.hpp>
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

namespace {
template <class Ops>
const memory_op* find_op(const Ops& ops, std::string_view name) {
    for (const auto& op : ops)
        if (op.name == name) return &op;
    return nullptr;
}
}  // namespace

TEST_CASE("eager frameworks run the model's own code: activation and attention ops", "[workload]") {
    // gpt2-medium, b = 2, s = 512, fp16: ffn = 2 · 512 · 4096 elements, scores = 2 · 16 · 512².
    const auto& m = gpt2_medium::config;
    const layer_context c{.micro_batch = 2, .seq = 512, .tp = 1, .math = dtype::fp16, .activations = dtype::fp16,
                          .code = code_run(m, pytorch_eager_profile)};
    CHECK(c.code == model_code::gpt2);
    const auto ops = layer_forward_memory_ops(m, c, pytorch_eager_profile);
    const double ffn = 2.0 * 512 * 4096, scores = 2.0 * 16 * 512 * 512;
    // gelu_new: 8 kernels moving 18 bytes per fp16 element (2 per unary op, 3 per binary).
    const auto* gelu = find_op(ops, "gelu_new");
    REQUIRE(gelu != nullptr);
    CHECK(gelu->launches == 8);
    CHECK(gelu->moved.value() == 18 * ffn * 2);
    // GPT-2's _attn: the scale built by torch.full, the mask value copied from the CPU,
    // torch.where with the causal mask: each a launch; where passes over the scores twice.
    CHECK(find_op(ops, "scale_fill") != nullptr);
    CHECK(find_op(ops, "mask_value_copy") != nullptr);
    CHECK(find_op(ops, "causal_mask_where")->moved.value() == 2 * scores * 2);
    // Megatron's own layer: one fused bias-GELU kernel whatever the model's code says.
    const auto fused = layer_forward_memory_ops(m, {.micro_batch = 2, .seq = 512, .tp = 1}, megatron_profile);
    CHECK(find_op(fused, "gelu_new") == nullptr);
    CHECK(find_op(fused, "bias_gelu") != nullptr);
}

TEST_CASE("BERT projects Q, K and V with three GEMMs, adds the padding mask when there is one", "[workload]") {
    const auto& m = bert_large::config;
    layer_context c{.micro_batch = 4, .seq = 128, .tp = 1, .math = dtype::fp16, .activations = dtype::fp16,
                    .code = model_code::bert};
    const auto gemms = layer_forward_gemms(m, c);
    REQUIRE(gemms.size() == 8);  // q, k, v, scores, context, out, ffn up, ffn down
    CHECK(gemms[0].name == "q");
    CHECK(gemms[0].shape.n == 1024);
    CHECK(gemms[0].block == layer_block::attention);
    CHECK(gemms[7].block == layer_block::mlp);
    CHECK(find_op(layer_forward_memory_ops(m, c, pytorch_eager_profile), "attention_mask") != nullptr);
    c.padding_mask = false;
    CHECK(find_op(layer_forward_memory_ops(m, c, pytorch_eager_profile), "attention_mask") == nullptr);
    // Parameter tensors (AccumulateGrad nodes): 6 weights (q, k, v, out, 2 FFN), their 6
    // biases, 2 LayerNorms of 2 tensors: 16. GPT-2's fused c_attn: 4 + 4 + 4 = 12.
    CHECK(layer_parameter_tensors(m, model_code::bert) == 16);
    CHECK(layer_parameter_tensors(gpt2_medium::config, model_code::gpt2) == 12);
}

TEST_CASE("LLaMA's RMSNorm and rotary embedding run as PyTorch ops in eager mode", "[workload]") {
    const auto& m = llama2_7b::config;  // h = 4096, 32 heads
    const layer_context c{.micro_batch = 1, .seq = 256, .tp = 1, .math = dtype::bf16, .activations = dtype::bf16,
                          .code = model_code::llama};
    const auto ops = layer_forward_memory_ops(m, c, pytorch_eager_profile);
    const double hidden = 256.0 * 4096;
    // to(fp32) 2+4, pow 8, mean 4, × rsqrt 8, to(bf16) 4+2, × weight 4: 36 bytes per element.
    const auto* norm = find_op(ops, "rmsnorm");
    REQUIRE(norm != nullptr);
    CHECK(norm->launches == 8);
    CHECK(norm->moved.value() == hidden * 36);
    // Rotary on q and k (no GQA in LLaMA 2 7B): 10 kernels, 10 bytes per element of each.
    CHECK(find_op(ops, "rotary")->moved.value() == 10 * (hidden + hidden) * 2);
    CHECK(find_op(ops, "repeat_kv") == nullptr);
}

TEST_CASE("the workload lists the host's calls per layer", "[workload]") {
    training_setup s;
    s.model = bert_large::config;
    s.framework = pytorch_eager_profile;
    s.precision = recipe(precision_kind::fp16);
    s.cluster.gpu = rtx_3090_ti::spec;
    s.layout.micro_batch = 2;
    s.seq = 128;
    const stage_workload w = micro_batch_workload(s);
    REQUIRE(w.host.size() == 3);
    // BERT: 9 views and 18 module calls per layer forward, 24 layers.
    CHECK(w.host[0].op.call == host_call::view);
    CHECK(w.host[0].op.count == 9);
    CHECK(w.host[0].count == 24);
    CHECK(w.host[1].op.count == 18);
    // Backward nodes: the layer's forward launches (8 GEMMs + the memory ops' kernels),
    // its views and its 16 parameter tensors.
    double launches = 8;
    for (const auto& op : layer_forward_memory_ops(s.model, {.micro_batch = 2, .seq = 128, .tp = 1,
                                                             .math = dtype::fp16, .activations = dtype::fp16,
                                                             .code = model_code::bert},
                                                   pytorch_eager_profile))
        launches += op.launches;
    CHECK(w.host[2].op.count == launches + 9 + 16);
}
