// Fine-tuning with LoRA and QLoRA (spec/finetune.hpp; cost/memory.hpp, workload/, workload/flops.hpp,
// cost/step.hpp): adapter parameters, the static state of a frozen (or 4-bit) base, the
// adapters' activations, the step's GEMMs without frozen weight gradients, QLoRA's
// dequantization, the optimizer and data-parallel sync of the adapters only. Expected
// values are worked out by hand in the comments.
#include <catch2/catch.hpp>

#include <trainperf/spec/finetune.hpp>
#include <trainperf/workload/flops.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>
#include <trainperf/workload/step_ops.hpp>

#include <string>
#include <string_view>

using namespace trainperf;

namespace {

// A llama-like model small enough to count by hand: 2 layers, h = 64, 4 heads of 16,
// 2 kv heads (kv width 32), SwiGLU f = 128, vocabulary 256, untied head, RMSNorm.
//   per layer: Q 64·64 = 4096, K and V 64·32 = 2048 each, O 64·64 = 4096,
//   gate, up, down 64·128 = 8192 each: projections 4096 + 4096 + 4096 + 24576 = 36864;
//   2 RMSNorms of 64: 128; layer 36992
//   embedding 256·64 = 16384; head: final norm 64 + untied 256·64 = 16448
//   total 2·36992 + 16384 + 16448 = 106816
constexpr transformer_config tiny = model_detail::llama_like("tiny", 2, 64, 4, 2, 128, 256, 128);

constexpr finetune_spec lora(int rank, unsigned targets = lora_default_targets) {
    return {.mode = finetune_mode::lora, .rank = rank, .targets = targets};
}
constexpr finetune_spec qlora(int rank, unsigned targets = lora_default_targets) {
    return {.mode = finetune_mode::qlora, .rank = rank, .targets = targets};
}

training_setup setup(const finetune_spec& f, int dp = 1, precision_kind p = precision_kind::bf16,
                     optimizer_kind k = optimizer_kind::adamw) {
    training_setup s;
    s.cluster = build_cluster({.gpu = a100_sxm_80gb::spec, .gpus = dp, .gpus_per_node = dp});
    s.model = tiny;
    s.precision = recipe(p);
    s.optimizer = k;
    s.finetune = f;
    s.layout = {.dp = dp, .micro_batch = 1, .grad_accum = 1};
    s.seq = 128;
    s.framework = pytorch_eager_profile;
    return s;
}

template <class List>
int count_named(const List& ops, std::string_view prefix, op_phase phase) {
    int n = 0;
    for (const auto& op : ops)
        if (op.op.name.substr(0, prefix.size()) == prefix && op.op.phase == phase) ++n;
    return n;
}

}  // namespace

TEST_CASE("the small model's parameters as counted by hand", "[finetune]") {
    CHECK(parameter_count(tiny) == 106816);
    CHECK(layer_projection_matrix_parameters(tiny) == 36864);
    CHECK(layer_projection_matrices(tiny) == 7);
}

TEST_CASE("adapter parameters: r·(d_in + d_out) per targeted projection per layer", "[finetune]") {
    // r = 8 on Q and V: Q 8·(64 + 64) = 1024, V 8·(64 + 32) = 768: 1792 per layer, 3584 in 2 layers.
    CHECK(adapter_parameters_per_layer(tiny, lora(8)) == 1792);
    CHECK(adapter_parameters(tiny, lora(8)) == 3584);
    CHECK(adapted_matrices_per_layer(tiny, lora(8)) == 2);
    // all-linear, r = 8: Q 1024, K 768, V 768, O 1024, gate, up, down 8·(64 + 128) = 1536 each: 8192.
    CHECK(adapter_parameters_per_layer(tiny, lora(8, lora_all_linear)) == 8192);
    // llama3-8b, r = 16 on q_proj (4096 → 4096) and v_proj (4096 → 1024 with 8 kv heads of 128):
    // 32 · (16·(4096 + 4096) + 16·(4096 + 1024)) = 32 · (131072 + 81920) = 6,815,744.
    CHECK(adapter_parameters(llama3_8b::config, lora(16)) == 6815744);
    // Full training has no adapters.
    CHECK(adapter_parameters(tiny, finetune_spec{}) == 0);
    // A GELU model has no gate: gate adapts nothing there; up and down do (GPT-2 small,
    // h = 768, f = 3072: r = 4: 4·(768 + 3072) · 2 = 30720 per layer).
    const auto up_down = static_cast<unsigned>(lora_target::up) | static_cast<unsigned>(lora_target::down);
    CHECK(adapter_parameters_per_layer(gpt2::config, lora(4, lora_all_linear)) >
          adapter_parameters_per_layer(gpt2::config, lora(4, up_down)));
    CHECK(adapter_parameters_per_layer(gpt2::config, lora(4, up_down)) == 30720);
    CHECK(adapter_parameters_per_layer(gpt2::config, lora(4, static_cast<unsigned>(lora_target::gate))) == 0);
}

TEST_CASE("QLoRA's NF4 bytes per parameter with double quantization", "[finetune]") {
    // 4 bits + 8/64 + 32/(64·256) = 4 + 0.125 + 0.001953125 = 4.126953125 bits = 0.515869140625 B.
    CHECK(qlora_bytes_per_parameter == 0.515869140625);
}

TEST_CASE("targets parse from names, PEFT's module names and all-linear", "[finetune]") {
    CHECK(parse_lora_targets("q,v") == lora_default_targets);
    CHECK(parse_lora_targets("q_proj,v_proj") == lora_default_targets);
    CHECK(parse_lora_targets("all-linear") == lora_all_linear);
    CHECK(parse_lora_targets("O,Down") == (static_cast<unsigned>(lora_target::o) | static_cast<unsigned>(lora_target::down)));
    CHECK(lora_targets_text(lora_default_targets) == "q,v");
    CHECK(lora_targets_text(lora_all_linear) == "all-linear");
    CHECK_THROWS_WITH(parse_lora_targets("q,x"), Catch::Contains("lora_targets"));
    CHECK_THROWS_WITH(parse_lora_targets(""), Catch::Contains("lora_targets"));
    CHECK_THROWS_WITH(parse_lora_targets("q,"), Catch::Contains("lora_targets"));
}

TEST_CASE("validation names the field", "[finetune]") {
    CHECK_THROWS_WITH(validate(lora(0)), Catch::Contains("lora_rank"));
    CHECK_THROWS_WITH(validate(lora(8, 0)), Catch::Contains("lora_targets"));
    CHECK_THROWS_WITH(validate(lora(8, 128)), Catch::Contains("lora_targets"));
    CHECK_NOTHROW(validate(lora(8)));
    training_setup s = setup(lora(8));
    s.layout.offload = offload_mode::optimizer;
    CHECK_THROWS_WITH(validate(s), Catch::Contains("offload"));
    training_setup gelu = setup(lora(8, static_cast<unsigned>(lora_target::gate)));
    gelu.model = gpt2::config;
    gelu.seq = 128;
    CHECK_THROWS_WITH(validate(gelu), Catch::Contains("lora_targets"));
}

TEST_CASE("LoRA memory: a frozen 16-bit base, fp32 adapters with gradients and AdamW state", "[finetune][memory]") {
    const memory_breakdown m = memory_of(setup(lora(8))).breakdown;
    // Base 106816 params · 2 B = 213632; adapters 3584 · 4 B = 14336: weights 227968 B.
    CHECK(m.weights.value() == 227968);
    // Only the adapters have gradients (fp32): 3584 · 4 = 14336; AdamW m and v: 3584 · 8 = 28672.
    CHECK(m.gradients.value() == 14336);
    CHECK(m.optimizer_state.value() == 28672);
    // No master copy: the adapters are fp32 already, the base is not updated.
    CHECK(m.master_weights.value() == 0);
    CHECK(m.weight_copies.value() == 0);  // bf16 mixed: no autocast
}

TEST_CASE("QLoRA memory: 4-bit projections plus constants, the rest in 16 bits", "[finetune][memory]") {
    const memory_breakdown m = memory_of(setup(qlora(8))).breakdown;
    // Projections 2 · 36864 = 73728 in NF4: 73728 · 0.515869140625 = 36864 + 73728·65/4096 = 36864 + 1170 = 38034;
    // the rest, 106816 − 73728 = 33088 (embedding, norms, head), in 16 bits: 66176;
    // adapters 3584 · 4 = 14336: weights 38034 + 66176 + 14336 = 118546 B.
    CHECK(m.weights.value() == 118546);
    CHECK(m.gradients.value() == 14336);
    CHECK(m.optimizer_state.value() == 28672);
    CHECK(m.master_weights.value() == 0);
    // The dequantized largest projection (64·128 = 8192 elements, 2 B) is a temporary: 16384 B.
    const memory_breakdown l = memory_of(setup(lora(8))).breakdown;
    CHECK(m.temporaries.value() - l.temporaries.value() == 16384);
}

TEST_CASE("adapters keep their x·A for B's weight gradient", "[finetune][memory]") {
    // 2 adapted projections · b·s·r = 1 · 128 · 8 elements · 2 B = 4096 B per layer, 2 layers: 8192 B
    // on top of full training's activations (kept as they are: the documented ASSUMPTION).
    training_setup full = setup(finetune_spec{});
    const double kept = memory_of(setup(lora(8))).breakdown.activations.value() -
                        memory_of(full).breakdown.activations.value();
    CHECK(kept == 8192);
}

TEST_CASE("full fine-tuning ignores the LoRA fields: the same memory and step bit for bit", "[finetune]") {
    training_setup plain = setup(finetune_spec{});
    training_setup other = setup({.mode = finetune_mode::full, .rank = 4, .targets = lora_all_linear});
    const step_report a = predict(plain), b = predict(other);
    CHECK(a.step_time.value() == b.step_time.value());
    CHECK(a.memory.total().value() == b.memory.total().value());
    CHECK(a.mfu == b.mfu);
    CHECK_FALSE(a.frozen_base);
    const model_state state = model_state_of(plain);
    CHECK(state.trainable_parameters == state.parameters);
    CHECK(state.trainable_tensors == state.tensors);
}

TEST_CASE("the step has no weight-gradient GEMMs for frozen matrices", "[finetune][workload]") {
    const stage_workload full = micro_batch_workload(setup(finetune_spec{}));
    const stage_workload w = micro_batch_workload(setup(lora(8)));
    int wgrads = 0, adapter_wgrads = 0;
    for (const auto& g : w.gemms) {
        if (g.op.phase != op_phase::backward_weight) continue;
        ++wgrads;
        if (g.op.name.substr(0, 5) == "lora_") ++adapter_wgrads;
    }
    // The only weight gradients are the adapters': A and B of Q and V.
    CHECK(wgrads == 4);
    CHECK(adapter_wgrads == 4);
    // Full training: 7 projection wgrads (q, k, v, o, gate, up, down) + the logits' = 8.
    int full_wgrads = 0;
    for (const auto& g : full.gemms) full_wgrads += g.op.phase == op_phase::backward_weight;
    CHECK(full_wgrads == 8);
    // Adapter GEMMs: forward x·A (128 tokens × 8 over 64) and (xA)·B (128 × 32 over 8) for V.
    CHECK(count_named(w.gemms, "lora_", op_phase::forward) == 4);
    CHECK(count_named(w.gemms, "lora_", op_phase::backward_data) == 4);
    for (const auto& g : w.gemms) {
        if (g.op.phase != op_phase::forward) continue;
        if (g.op.name == "lora_a_v") {
            CHECK(g.op.shape.m == 128);
            CHECK(g.op.shape.n == 8);
            CHECK(g.op.shape.k == 64);
        }
        if (g.op.name == "lora_b_v") {
            CHECK(g.op.shape.n == 32);
            CHECK(g.op.shape.k == 8);
        }
    }
    // The frozen GEMMs still run forward and their dgrad: 9 forward + logits in both.
    CHECK(count_named(w.gemms, "ffn_down", op_phase::forward) == 1);
    CHECK(count_named(w.gemms, "ffn_down", op_phase::backward_data) == 1);
    CHECK(count_named(w.gemms, "ffn_down", op_phase::backward_weight) == 0);
    CHECK(count_named(w.gemms, "logits", op_phase::backward_weight) == 0);
}

TEST_CASE("QLoRA dequantizes every 4-bit projection in forward and again for its dgrad", "[finetune][workload]") {
    const stage_workload w = micro_batch_workload(setup(qlora(8)));
    int found = 0;
    for (const auto& op : w.memory) {
        if (op.op.name != "dequantize_4bit") continue;
        ++found;
        // 36864 projection parameters per layer, read 0.515869140625 B and write 2 B each:
        // 36864 · 2.515869140625 = 73728 + 18432 + 36864·65/4096 (585) = 92745 B, over 7 kernels,
        // once per layer (2 layers).
        CHECK(op.op.moved.value() == 92745);
        CHECK(op.op.launches == 7);
        CHECK(op.count == 2);
    }
    CHECK(found == 2);  // forward and backward
    CHECK(count_named(micro_batch_workload(setup(lora(8))).memory, "dequantize_4bit", op_phase::forward) == 0);
}

TEST_CASE("the optimizer sweeps only the adapters; data-parallel sync only their gradients", "[finetune][workload]") {
    // Fused AdamW over 3584 fp32 adapter parameters: gradient 4 + weights read and written 8 +
    // m and v read and written 16 + the clip's read of the gradient 4 = 32 B each: 114688 B.
    const optimizer_work o = optimizer_workload(setup(lora(8), 1, precision_kind::bf16, optimizer_kind::adamw_fused));
    CHECK(o.update.moved.value() == 114688);
    // dp = 2, ZeRO 0: one all-reduce of the adapters' fp32 gradients, 3584 · 4 = 14336 B.
    const step_ops sync = step_workload(setup(lora(8), 2));
    REQUIRE(sync.sync.size() == 1);
    CHECK(sync.sync[0].op.size.value() == 14336);
}

TEST_CASE("hardware FLOPs of a LoRA step: PaLM less the frozen wgrad plus the adapters", "[finetune][flops]") {
    // matmul parameters 2·36992 + 256·64 = 90368; PaLM per sample of 128 tokens:
    // 128·(6·90368 + 12·2·64·128) = 128·(542208 + 196608) = 94,568,448.
    CHECK(palm_training_flops_per_sample(tiny, 128).value() == 94568448);
    // Less 128·2·90368 = 23,134,208, plus 128·6·3584 = 2,752,512: 74,186,752.
    CHECK(finetune_hardware_flops_per_sample(tiny, 128, lora(8), recompute_mode::none).value() == 74186752);
    // The step report: MFU keeps PaLM's count, so MFU / HFU = 94568448 / 74186752.
    const step_report r = predict(setup(lora(8)));
    CHECK(r.frozen_base);
    CHECK(r.mfu / r.hfu == Approx(94568448.0 / 74186752.0).epsilon(1e-12));
    CHECK_NOTHROW(check_postconditions(r));
}

TEST_CASE("llama3-8b: LoRA fits a 24 GB card with checkpointing where full training does not", "[finetune]") {
    training_setup s;
    s.cluster = build_cluster({.gpu = lookup_gpu("rtx-3090"), .gpus = 1, .gpus_per_node = 1});
    s.model = llama3_8b::config;
    s.seq = 2048;
    s.framework = pytorch_eager_profile;
    s.layout.recompute = recompute_mode::full;
    CHECK(max_micro_batch(s) == 0);  // full training: 8.03e9 · 16 B of static state alone
    s.finetune = lora(16);
    const int b = max_micro_batch(s);
    CHECK(b >= 1);
    // And the LoRA step is faster than the full one at the same layout (no frozen wgrad).
    training_setup full = s;
    full.finetune = {};
    full.cluster = build_cluster({.gpu = lookup_gpu("h100-sxm"), .gpus = 1, .gpus_per_node = 1});
    training_setup adapters = full;
    adapters.finetune = lora(16);
    CHECK(predict(adapters).micro_batch.backward < predict(full).micro_batch.backward);
}
