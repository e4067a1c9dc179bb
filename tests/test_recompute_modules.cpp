// Megatron-Core's fine-grained selective recomputation (spec/recompute_modules.hpp,
// --recompute-modules): what each submodule drops from a layer's activations, what it
// reruns, its FLOPs, and Megatron-Core's conditions, by hand.
#include <trainperf/cost/memory.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/recompute_modules.hpp>
#include <trainperf/spec/setup.hpp>
#include <trainperf/workload/stage.hpp>

#include <catch2/catch.hpp>

#include <string>

using namespace trainperf;

namespace {
using rm = recompute_module;

training_setup llama_setup(recompute_module_set modules) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = llama3_8b::config;  // h 4096, f 14336, SwiGLU
    s.framework = megatron_core_profile;
    s.seq = 4096;
    s.layout = {.dp = 4, .tp = 2, .sp = true, .recompute = recompute_mode::selective, .recompute_modules = modules};
    return s;
}

training_setup deepseek_setup(recompute_module_set modules) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = deepseek_v3::config;
    s.framework = megatron_core_profile;
    s.seq = 4096;
    s.layout = {.dp = 64, .tp = 4, .sp = true, .zero = 1, .recompute = recompute_mode::selective, .ep = 64, .etp = 1,
                .recompute_modules = modules};
    s.moe.imbalance = 1.0;
    return s;
}

double stage_gemm_recomputed(const stage_workload& w, std::string_view name) {
    for (const auto& g : w.gemms)
        if (g.op.name == name && g.op.phase == op_phase::forward) return g.recomputed;
    FAIL("no GEMM " << name);
    return 0;
}
}  // namespace

TEST_CASE("A submodule list reads as Megatron-Core writes it", "[recompute_modules]") {
    const recompute_module_set a = parse_recompute_modules("mla_up_proj,mlp");
    CHECK(a == recompute_module_set{rm::mla_up_proj, rm::mlp});
    CHECK(parse_recompute_modules("core-attn+moe-act") == recompute_module_set{rm::core_attn, rm::moe_act});
    CHECK_THROWS_WITH(parse_recompute_modules("mlp,attn"), Catch::StartsWith("recompute_modules = \"attn\""));
    CHECK_THROWS_WITH(parse_recompute_modules(""), Catch::StartsWith("recompute_modules"));
    // The text form reads back.
    const parallel_layout l{.recompute = recompute_mode::selective, .recompute_modules = a};
    CHECK(parse_layout(to_string(l)) == l);
    CHECK(describe(l).find("recompute selective (mlp, mla-up-proj)") != std::string::npos);
}

TEST_CASE("Megatron-Core's conditions for each submodule, by name", "[recompute_modules]") {
    training_setup s = llama_setup({rm::mlp});
    CHECK_NOTHROW(validate(s));
    s.layout.recompute = recompute_mode::full;
    CHECK_THROWS_WITH(validate(s), Catch::StartsWith("recompute_modules = mlp") && Catch::Contains("selective"));
    s = llama_setup({rm::moe});
    CHECK_THROWS_WITH(validate(s), Catch::StartsWith("recompute_modules = moe") && Catch::Contains("mixture"));
    s = llama_setup({rm::mla_up_proj});
    CHECK_THROWS_WITH(validate(s), Catch::StartsWith("recompute_modules = mla-up-proj") && Catch::Contains("latent"));
    s = llama_setup({rm::mlp});
    s.framework.fine_grained_recompute = false;  // a framework with Megatron's selective recompute only
    CHECK_THROWS_WITH(validate(s), Catch::StartsWith("recompute_modules = mlp") &&
                                       Catch::Contains("recomputes no submodules"));
    training_setup d = deepseek_setup({rm::moe_act});
    CHECK_NOTHROW(validate(d));
    d.precision = recipe(precision_kind::fp8);  // delayed scaling
    CHECK_THROWS_WITH(validate(d), Catch::StartsWith("recompute_modules = moe-act") && Catch::Contains("delayed"));
    d = deepseek_setup({rm::moe});
    d.moe.a2a_overlap = true;
    CHECK_THROWS_WITH(validate(d), Catch::StartsWith("recompute_modules = moe") && Catch::Contains("overlap"));
}

TEST_CASE("mlp drops a dense layer's FFN input and FFN activations, and reruns the MLP", "[recompute_modules]") {
    // Llama-3-8B, bf16, tp 2 with SP, 4096 tokens: per layer the FFN input (the fused norm's
    // output, 2·s·h/t bytes) and gate, up and their product (3 · 2·s·f/t bytes) go.
    const training_setup core = llama_setup({}), mlp = llama_setup({rm::core_attn, rm::mlp});
    const precision_recipe r = stored_precision(core);
    const auto kept = [&](const training_setup& s) {
        return memory_detail::layer_activations_of(s.model, r, s.layout, 4096, s.framework).kept.value();
    };
    const double s = 4096, h = 4096, f = 14336, t = 2;
    CHECK(kept(core) - kept(mlp) == Approx(2 * s * h / t + 3 * 2 * s * f / t));
    // Default list equals core_attn given by name.
    CHECK(kept(core) == kept(llama_setup({rm::core_attn})));
    // Only mlp: the attention core's log-sum-exp is kept again (fp32 per head and token).
    CHECK(kept(llama_setup({rm::mlp})) - kept(mlp) == Approx(4.0 * 32 / t * s));

    // The workload reruns the FFN's GEMMs, and with SP FC1's all-gather and FC2's
    // reduce-scatter, once more per layer.
    const stage_workload plain = micro_batch_workload(checked_setup(core));
    const stage_workload again = micro_batch_workload(checked_setup(mlp));
    CHECK(stage_gemm_recomputed(plain, "ffn_up") == 0);
    CHECK(stage_gemm_recomputed(again, "ffn_up") == 32);
    CHECK(stage_gemm_recomputed(again, "ffn_down") == 32);
    CHECK(stage_gemm_recomputed(again, "qkv") == 0);
    for (const auto& c : again.collectives) {
        const auto* before = &c;
        for (const auto& p : plain.collectives)
            if (p.op.name == c.op.name && p.op.phase == c.op.phase) before = &p;
        if (c.op.name == "sequence_parallel_all_gather" || c.op.name == "sequence_parallel_reduce_scatter")
            CHECK(c.recomputed == before->recomputed + 32);
    }
    // Hardware FLOPs: the FFN forward again, 3 matrices · 2·s·h·f per layer and sample.
    const flop_counts fc = flop_counts_of(checked_setup(core)), fm = flop_counts_of(checked_setup(mlp));
    CHECK(fm.hardware.value() - fc.hardware.value() == Approx(32 * 3 * 2 * s * h * f));
    CHECK(fm.model.value() == fc.model.value());
    // It costs time and saves memory.
    CHECK(predict(checked_setup(mlp)).step_time > predict(checked_setup(core)).step_time);
    CHECK(memory_of(checked_setup(mlp)).breakdown.activations < memory_of(checked_setup(core)).breakdown.activations);
}

TEST_CASE("DeepSeek-V3: mla-up-proj drops Q, K and V; moe-act the experts' FC2 input; moe the routed part",
          "[recompute_modules][moe]") {
    const training_setup core = deepseek_setup({});
    const precision_recipe r = stored_precision(core);
    const auto layer = [&](const training_setup& s) {
        return memory_detail::layer_activations_of(s.model, r, s.layout, 4096, s.framework, {}, s.moe);
    };
    const double s = 4096, t = 4, heads = 128, qk = 192, v = 128, g = 2;
    // Q and K of 128 heads × 192 and V of 128 × 128, bf16, split by tp; and the latents'
    // norm outputs (q_lora 1536 + kv_lora 512), whole on every rank.
    const double qkv = g * s * heads * (2 * qk + v) / t + g * s * (1536 + 512);
    CHECK(layer(core).kept.value() - layer(deepseek_setup({rm::core_attn, rm::mla_up_proj})).kept.value() ==
          Approx(qkv));
    CHECK(layer(core).moe_kept.value() - layer(deepseek_setup({rm::core_attn, rm::mla_up_proj})).moe_kept.value() ==
          Approx(qkv));
    // The experts' FC2 input: C = 1024 routed tokens × 8 copies of 2048 wide, bf16.
    const double copies = 4096.0 / t * 8;
    CHECK(layer(core).moe_kept.value() - layer(deepseek_setup({rm::core_attn, rm::moe_act})).moe_kept.value() ==
          Approx(copies * 2048 * g));
    // moe: the routed part whole and the shared expert's FFN (gate, up, product: 3 · 2048/t);
    // the pre-MLP norm's output stays (the MoE layer's input).
    const auto moe = layer(deepseek_setup({rm::core_attn, rm::moe}));
    const double routed = 2 * 4 * (4096.0 / t) * 256 + copies * (g * 7168 + 2 * g * 2048 + g * 2048 + g);
    CHECK(layer(core).moe_kept.value() - moe.moe_kept.value() == Approx(routed + 3 * g * s * 2048 / t));
    CHECK(moe.kept.value() == layer(core).kept.value());  // the dense layers are untouched
    // Rebuilt during backward: one MoE layer's difference.
    CHECK(moe.moe_rebuilt.value() > 0);
    // The workload reruns the routed part, its dispatch and combine included; moe-act only
    // the activation.
    const stage_workload w = micro_batch_workload(checked_setup(deepseek_setup({rm::core_attn, rm::moe})));
    for (const auto& c : w.collectives)
        if (c.part == step_part::expert_parallel && c.op.phase == op_phase::forward) CHECK(c.recomputed == c.count);
    CHECK(stage_gemm_recomputed(w, "expert_fc1") == 58);  // every MoE layer's (the MTP module's listed apart)
    const stage_workload a = micro_batch_workload(checked_setup(deepseek_setup({rm::core_attn, rm::moe_act})));
    CHECK(stage_gemm_recomputed(a, "expert_fc1") == 0);
    double activation_again = 0;  // the MoE layers' (the MTP module's listed after them)
    for (const auto& op : a.memory)
        if (op.op.name == "expert_activation" && op.op.phase == op_phase::forward) {
            activation_again = op.recomputed;
            break;
        }
    CHECK(activation_again == 58);
    // layernorm: the norms that are modules of their own: latent attention's input norm
    // (every DeepSeek-V3 layer) and an MoE layer's pre-MLP norm, each output l·s·h/t with SP.
    const auto norms = layer(deepseek_setup({rm::core_attn, rm::layernorm}));
    CHECK(layer(core).kept.value() - norms.kept.value() == Approx(g * s * 7168 / t));
    CHECK(layer(core).moe_kept.value() - norms.moe_kept.value() == Approx(2 * g * s * 7168 / t));
    // shared-experts: the shared expert's gate, up and product (3 · 2048/t wide), nothing routed.
    CHECK(layer(core).moe_kept.value() - layer(deepseek_setup({rm::core_attn, rm::shared_experts})).moe_kept.value() ==
          Approx(3 * g * s * 2048 / t));
    // A Llama layer's norms are fused into its Linears: layernorm drops nothing there.
    const auto llama_layer = [&](recompute_module_set set) {
        const training_setup l = llama_setup(set);
        return memory_detail::layer_activations_of(l.model, stored_precision(l), l.layout, 4096, l.framework).kept;
    };
    CHECK(llama_layer({rm::core_attn, rm::layernorm}) == llama_layer({rm::core_attn}));
    // Hardware FLOPs of moe: the MoE layers' router, 8 routed and 1 shared SwiGLU expert
    // per token again (58 layers); of mla-up-proj the up projections of all 61.
    const flop_counts base = flop_counts_of(checked_setup(core));
    const double routed_flops = 2 * 7168.0 * 256 + 8 * 3 * 2 * 7168.0 * 2048 + 3 * 2 * 7168.0 * 2048;
    CHECK(flop_counts_of(checked_setup(deepseek_setup({rm::core_attn, rm::moe}))).hardware.value() -
              base.hardware.value() ==
          Approx(58 * s * routed_flops));
    const double up_weights = 1536.0 * heads * qk + 512.0 * heads * (128 + v);
    CHECK(flop_counts_of(checked_setup(deepseek_setup({rm::core_attn, rm::mla_up_proj}))).hardware.value() -
              base.hardware.value() ==
          Approx(61 * 2 * s * up_weights));
    // Latent attention's up projections run again; the down projections do not.
    const stage_workload up = micro_batch_workload(checked_setup(deepseek_setup({rm::core_attn, rm::mla_up_proj})));
    CHECK(stage_gemm_recomputed(up, "q_up") == 3);  // the 3 dense layers' (listed first), once each
    CHECK(stage_gemm_recomputed(up, "kv_up") == 3);
    CHECK(stage_gemm_recomputed(up, "q_down") == 0);
}
