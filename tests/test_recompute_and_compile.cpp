// torchtitan's mechanisms: op-level selective checkpointing (what it keeps, what it
// recomputes, what its policy costs the host), torch.compile of the layers (fused
// chains, one compiled call per pass), FSDP's fp32 shard as the master, and the
// profile's own rules (its recompute modes, reshard-after-forward with pipeline stages).
#include "memory_setup.hpp"

#include <catch2/catch.hpp>

#include <trainperf/cost/memory.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/framework.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/setup.hpp>
#include <trainperf/workload/flops.hpp>
#include <trainperf/workload/stage.hpp>

#include <string>
#include <string_view>

using namespace trainperf;

namespace {
constexpr transformer_config llama8b = llama3_8b::config;  // h 4096, 32 heads, kv 1024, f 14336

training_setup torchtitan_setup(recompute_mode r, bool compiled = false) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec, 8);
    s.model = llama8b;
    s.framework = torchtitan_profile;
    s.framework.compiled = compiled;
    s.precision = recipe(precision_kind::bf16);
    s.layout = {.dp = 8, .zero = 3, .micro_batch = 1, .grad_accum = 1, .recompute = r};
    s.seq = 8192;
    return s;
}

template <class List>
double recomputed_count(const List& ops, std::string_view name) {
    for (const auto& op : ops)
        if (op.op.name == name && op.part == step_part::forward) return op.recomputed;
    FAIL("no forward op " << name);
    return -1;
}

template <class List>
bool has(const List& ops, std::string_view name) {
    for (const auto& op : ops)
        if (op.op.name == name) return true;
    return false;
}
}  // namespace

TEST_CASE("op-level checkpointing keeps every other matmul's output, counting from the first",
          "[recompute][op-selective]") {
    using r = recompute_mode;
    // LLaMA's code: q k v o gate up down -> 1, 3, 5, 7 kept.
    for (auto [name, kept] : {std::pair{"q", true}, {"k", false}, {"v", true}, {"attention_out", false},
                              {"ffn_gate", true}, {"ffn_up", false}, {"ffn_down", true}})
        CHECK(op_selective_keeps_output(llama8b, name, model_code::llama) == kept);
    // A fused QKV and a GELU FFN: qkv o up down -> qkv and up kept.
    transformer_config gelu = llama8b;
    gelu.ffn = ffn_kind::gelu;
    for (auto [name, kept] : {std::pair{"qkv", true}, {"attention_out", false}, {"ffn_up", true}, {"ffn_down", false}})
        CHECK(op_selective_keeps_output(gelu, name, model_code::generic) == kept);
    // FP8 Linears run _scaled_mm, which the policy does not save.
    CHECK_FALSE(op_selective_keeps_output(llama8b, "q", model_code::llama, true));
    CHECK(to_string(r::op_selective) == "op-selective");
    CHECK(parse_recompute("op-selective") == r::op_selective);
}

TEST_CASE("op-level checkpointing's activations per layer, by hand", "[recompute][op-selective][memory]") {
    const activation_formats bf16 = uniform_activation_formats(dtype::bf16);
    const double sb = 8192;  // s = 8192, b = 1
    // t = 1: input 2·4096, Q 2·4096, V 2·1024, gate 2·14336, down 2·4096, SDPA output
    // 2·4096, log-sum-exp 4·32 bytes per token.
    CHECK(activation_bytes_per_layer(llama8b, bf16, 1, 8192, 1, false, recompute_mode::op_selective,
                                     torchtitan_profile)
              .value() == sb * (2.0 * (4096 + 4096 + 1024 + 14336 + 4096 + 4096) + 4 * 32));
    // t = 2 with SP: input 2·4096/2, Q 2·2048, V 2·512, gate 2·7168, down's whole partial
    // sum 2·4096, SDPA 2·2048, log-sum-exp 4·16, the two reduce-scatters 2·2·4096/2.
    CHECK(activation_bytes_per_layer(llama8b, bf16, 1, 8192, 2, true, recompute_mode::op_selective,
                                     torchtitan_profile)
              .value() == sb * (2.0 * (2048 + 2048 + 512 + 7168 + 4096 + 2048) + 4 * 16 + 2 * 2 * 2048));
    // Under fp8 no Linear output is saved: input, SDPA and its log-sum-exp.
    activation_formats fp8 = bf16;
    fp8.fp8_linear_inputs = 2;
    CHECK(activation_bytes_per_layer(llama8b, fp8, 1, 8192, 1, false, recompute_mode::op_selective,
                                     torchtitan_profile)
              .value() == sb * (2.0 * (4096 + 4096) + 4 * 32));
    // Between full recompute's input and the whole layer.
    const auto at = [&](recompute_mode r) {
        return activation_bytes_per_layer(llama8b, bf16, 1, 8192, 1, false, r, torchtitan_profile).value();
    };
    CHECK(at(recompute_mode::full) < at(recompute_mode::op_selective));
    CHECK(at(recompute_mode::op_selective) < at(recompute_mode::none));
}

TEST_CASE("op-level checkpointing recomputes the matmuls it does not keep, and every elementwise op",
          "[recompute][op-selective][workload]") {
    const training_setup s = torchtitan_setup(recompute_mode::op_selective);
    const stage_workload w = micro_batch_workload(checked_setup(s));
    const double layers = llama8b.layers;
    for (auto [name, again] : {std::pair{"q", 0.0}, {"k", layers}, {"v", 0.0}, {"attention_out", layers},
                               {"ffn_gate", 0.0}, {"ffn_up", layers}, {"ffn_down", 0.0}})
        CHECK(recomputed_count(w.gemms, name) == again);
    CHECK(recomputed_count(w.memory, "rmsnorm") == layers);
    CHECK(w.attention[0].recomputed == 0);  // the SDPA output is saved
    // Hardware FLOPs add the recomputed matmuls' forward: K 2·s·h·kv, O 2·s·h·h, up 2·s·h·f.
    const double seq = 8192, h = 4096;
    CHECK(recompute_flops_per_sample(llama8b, 8192, recompute_mode::op_selective).value() ==
          Approx(layers * 2 * seq * h * (1024 + 4096 + 14336)));
    // The policy sees every op of the forward and of the recompute; no generator states
    // are kept (preserve_rng_state=False).
    CHECK(has(w.host, "checkpoint_policy"));
    CHECK_FALSE(has(w.host, "checkpoint_rng_states"));
}

TEST_CASE("op-level checkpointing repeats the all-gathers, not the reduce-scatters", "[recompute][op-selective]") {
    training_setup s = torchtitan_setup(recompute_mode::op_selective);
    s.layout.dp = 4;
    s.layout.tp = 2;
    s.layout.sp = true;
    const stage_workload w = micro_batch_workload(checked_setup(s));
    const double layers = llama8b.layers;
    for (const auto& c : w.collectives) {
        if (c.op.name == "sequence_parallel_all_gather") CHECK(c.recomputed == 2 * layers);
        if (c.op.name == "sequence_parallel_reduce_scatter") CHECK(c.recomputed == 0);
    }
}

TEST_CASE("a compiled layer runs one kernel per elementwise chain", "[compile][workload]") {
    const layer_context c{.micro_batch = 1, .seq = 8192, .math = dtype::bf16, .activations = dtype::bf16,
                          .code = model_code::llama};
    framework_profile fw = torchtitan_profile;
    fw.compiled = true;
    const layer_memory_list ops = layer_forward_memory_ops(llama8b, c, fw);
    const double tokens = 8192, h = 4096, kv = 1024, f = 14336;
    // norm 2+2, RoPE 2·(h + kv)·2, repeat_kv (2·kv + 2·h)·2, add+norm 2·2 + 2·2, SwiGLU
    // 3·2·f, add 2 + 2·2; bytes per token.
    const double expected[] = {4 * h, 4 * (h + kv), 4 * (kv + h), 8 * h, 6 * f, 6 * h};
    const std::string_view names[] = {"compiled_norm",     "compiled_rotary", "compiled_repeat_kv",
                                      "compiled_add_norm", "compiled_swiglu", "compiled_add_ffn"};
    REQUIRE(ops.size() == 6);
    for (std::size_t i = 0; i < 6; ++i) {
        CHECK(ops[i].name == names[i]);
        CHECK(ops[i].moved.value() == tokens * expected[i]);
        CHECK(ops[i].launches == 1);
    }
    // Eager, the same layer launches 8 kernels for each RMSNorm and 10 for RoPE.
    double eager_launches = 0;
    for (const memory_op& op : layer_forward_memory_ops(llama8b, c, torchtitan_profile)) eager_launches += op.launches;
    CHECK(eager_launches > 20);
}

TEST_CASE("a compiled layer is one call per pass on the host, and costs less of it", "[compile][step]") {
    const training_setup eager = torchtitan_setup(recompute_mode::none);
    const training_setup compiled = torchtitan_setup(recompute_mode::none, true);
    const stage_workload w = micro_batch_workload(checked_setup(compiled));
    CHECK(has(w.host, "layer_compiled_region"));
    CHECK_FALSE(has(w.host, "layer_views"));
    const step_report e = predict(eager), c = predict(compiled);
    CHECK(c.micro_batch.host_compute() < e.micro_batch.host_compute());
    CHECK(c.micro_batch.gpu_compute() < e.micro_batch.gpu_compute());  // fewer bytes moved
    // The stage pricer charges a compiled layer's launches at compiled_launch, both passes.
    const auto& gpu = h100_sxm::spec;
    const gemm_op tiny{"tiny", {64, 64, 64, 1, dtype::bf16}};
    const eager_host_costs costs{};
    stage_pricer pricer(gpu, default_kernel_params(gpu), nullptr, costs, microseconds_of(5.0));
    pricer.compile_layers();
    pricer.section(stage_section::layer);
    pricer(stage_op<gemm_op>{tiny, 1, 0, step_part::forward});
    pricer(stage_op<host_op>{{"region", host_call::compiled_graph, 1}, 1, 0, step_part::forward});
    CHECK(pricer.result().host_forward.value() == Approx((1.3 + 6.25) * 5e-6));
}

TEST_CASE("FSDP's fp32 shard is the master: no 16-bit shard beside it", "[memory][fsdp]") {
    using trainperf_tests::memory_at;
    const parallel_layout p{.dp = 8, .zero = 3, .micro_batch = 1, .grad_accum = 1};
    const precision_recipe bf16 = recipe(precision_kind::bf16);
    const memory_breakdown fsdp = memory_at(llama8b, bf16, optimizer_kind::adamw, p, 1024, torchtitan_profile);
    CHECK(fsdp.weights.value() == 0);
    // The fp32 master, 4 B per parameter over 8 ranks; DeepSpeed keeps its 16-bit shard.
    const double params = parameter_count(llama8b);
    CHECK(fsdp.master_weights.value() == Approx(4.0 * params / 8));
    const memory_breakdown deepspeed = memory_at(llama8b, bf16, optimizer_kind::adamw, p, 1024, deepspeed_profile);
    CHECK(deepspeed.weights.value() == Approx(2.0 * params / 8));
}

TEST_CASE("torchtitan's rules: its recompute modes, compile, and no resharding with pipeline stages",
          "[framework][torchtitan]") {
    training_setup s = torchtitan_setup(recompute_mode::selective);
    CHECK_THROWS_WITH(validate(s), Catch::Contains("recompute = selective: framework torchtitan") &&
                                       Catch::Contains("it offers none, full, op-selective"));
    s.layout.recompute = recompute_mode::op_selective;
    CHECK_NOTHROW(validate(s));
    // Compiling needs a framework that compiles its layers.
    training_setup m = s;
    m.framework = megatron_core_profile;
    m.framework.compiled = true;
    m.layout.recompute = recompute_mode::full;
    CHECK_THROWS_WITH(validate(m), Catch::Contains("framework.compiled = true: needs a framework"));
    s.framework.compiled = true;
    s.framework.cuda_graphs = true;
    CHECK_THROWS_WITH(validate(s), Catch::Contains("cuda_graphs cannot both be on"));
    // FSDP2 keeps each block gathered from forward to backward with pipeline stages.
    parallel_layout l = s.layout;
    CHECK(reshards_after_forward(torchtitan_profile, l));
    l.pp = 2;
    CHECK_FALSE(reshards_after_forward(torchtitan_profile, l));
    CHECK(reshards_after_forward(pytorch_eager_profile, l));
}

TEST_CASE("a context-parallel ring merges its steps' partial outputs, fused or op by op", "[context][workload]") {
    // Llama-3-8B, s 8192, cp 2, bf16: 4096 tokens and 4096·4096 output elements per rank,
    // K and V 2·4096·1024 elements.
    training_setup s = torchtitan_setup(recompute_mode::none);
    s.layout.dp = 4;
    s.layout.cp = 2;
    const double out = 4096.0 * 4096, kv = 2 * 4096.0 * 1024;
    const auto merges = [&](const training_setup& t) {
        std::pair<memory_op, memory_op> found;
        for (const auto& op : micro_batch_workload(checked_setup(t)).memory) {
            if (op.op.name == "context_parallel_merge") found.first = op.op;
            if (op.op.name == "context_parallel_gradient_accumulation") found.second = op.op;
        }
        return found;
    };
    // Eager (PyTorch's _SDPAMerger): (2 − 1)·(36 + 2) + (4 + 2) B per element over 9 kernels;
    // backward (2 + 16) B per element of Q, K and V per step, 4 kernels per step.
    const auto [eager_merge, eager_accumulate] = merges(s);
    CHECK(eager_merge.moved.value() == out * (38 + 6));
    CHECK(eager_merge.launches == 9);
    CHECK(eager_accumulate.moved.value() == (out + kv) * 2 * 18);
    CHECK(eager_accumulate.launches == 8);
    // Fused (Transformer Engine): 2·(8 + 2) + (4 + 2) B over 5 kernels; backward 10 B per
    // element per step.
    s.framework.ring_merge = kv_ring_merge::fused;
    const auto [fused_merge, fused_accumulate] = merges(s);
    CHECK(fused_merge.moved.value() == out * (20 + 6));
    CHECK(fused_merge.launches == 5);
    CHECK(fused_accumulate.moved.value() == (out + kv) * 2 * 10);
}
