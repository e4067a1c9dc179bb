// Memory per GPU: static state, Korthikanti activations, ZeRO, fits and max batch.
#include "memory_setup.hpp"

#include <catch2/catch.hpp>

#include <trainperf/cost/fit_margin.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/setup.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/search/fit_across.hpp>
#include <trainperf/search/fit_table.hpp>

#include <algorithm>
#include <cmath>
#include <vector>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>

using namespace trainperf;
using trainperf_tests::memory_at;
using trainperf_tests::memory_setup;

namespace {
// GPT layer: h 1024, 16 heads, f 4h, s 1024.
constexpr transformer_config gpt{.name = "gpt-test", .layers = 24, .hidden = 1024, .heads = 16,
                                 .ffn_hidden = 4096, .vocab = 50257, .max_seq = 1024,
                                 .activation = activation_kind::gelu_new};  // GPT-2's activation
constexpr double sbh = 1024.0 * 2 * 1024;  // s·b·h with b = 2
// A profile holding only what is given, so that totals can be computed by hand.
constexpr framework_profile holding(memory_overheads o) {
    framework_profile f = pytorch_eager_profile;
    f.memory = o;
    return f;
}
// Overheads off.
constexpr framework_profile bare = holding({.fp32_logits = false, .loss_buffers = 0, .workspace = bytes_of(0)});
const precision_recipe fp32 = recipe(precision_kind::fp32);
const precision_recipe bf16 = recipe(precision_kind::bf16);
}  // namespace

TEST_CASE("static state of 7e9 parameters", "[memory]") {
    constexpr bytes b = static_state_bytes(7e9, recipe(precision_kind::fp32), optimizer_kind::adamw);
    static_assert(b.value() == 1.12e11);
    CHECK(to_gb(b).value() == 112.0);
    CHECK(std::round(to_gib(b).value() * 10) / 10 == 104.3);
    CHECK(to_gib(b).value() == Approx(104.3081283569336).epsilon(1e-12));
    // Mixed bf16 + Adam: 2 + 4 master + 2 grads + 8 = 16; with fp32 grads 18.
    CHECK(static_state_bytes(7e9, bf16, optimizer_kind::adamw).value() == 16 * 7e9);
    CHECK(static_state_bytes(7e9, with_fp32_gradients(bf16), optimizer_kind::adamw).value() ==
          18 * 7e9);
    CHECK(static_state_bytes(7e9, recipe(precision_kind::bf16_pure), optimizer_kind::adamw).value() ==
          8 * 7e9);
    CHECK(static_state_bytes(7e9, fp32, optimizer_kind::sgd).value() == 8 * 7e9);
    CHECK(static_state_bytes(7e9, fp32, optimizer_kind::sgd_momentum).value() == 12 * 7e9);
    CHECK(static_state_bytes(7e9, fp32, optimizer_kind::lion).value() == 12 * 7e9);
    CHECK_THROWS_WITH(static_state_bytes(std::nan(""), fp32, optimizer_kind::adamw),
                      "params = nan: must be a positive parameter count");
}

TEST_CASE("Korthikanti et al. 2022 activations per layer, by hand", "[memory]") {
    // s = 1024, b = 2, h = 1024, a = 16: 5·a·s/h = 80.
    using r = recompute_mode;
    CHECK(korthikanti_activation_bytes_per_layer(1024, 2, 1024, 16, 1, false, r::none).value() ==
          114 * sbh);  // 34 + 80
    CHECK(korthikanti_activation_bytes_per_layer(1024, 2, 1024, 16, 2, false, r::none).value() ==
          62 * sbh);   // 10 + 24/2 + 80/2
    CHECK(korthikanti_activation_bytes_per_layer(1024, 2, 1024, 16, 2, true, r::none).value() ==
          57 * sbh);   // 114 / 2
    CHECK(korthikanti_activation_bytes_per_layer(1024, 2, 1024, 16, 2, true, r::selective).value() ==
          17 * sbh);   // 34 / 2
    CHECK(korthikanti_activation_bytes_per_layer(1024, 2, 1024, 16, 2, false, r::selective).value() ==
          22 * sbh);   // 10 + 24/2
    CHECK(korthikanti_activation_bytes_per_layer(1024, 2, 1024, 16, 1, false, r::full).value() ==
          2 * sbh);

    // The term-by-term derivation reduces to the closed forms for a GPT layer.
    for (int t : {1, 2, 4, 8})
        for (bool sp : {false, true})
            for (r mode : {r::none, r::selective, r::full}) {
                INFO("t = " << t << ", sp = " << sp << ", recompute = " << to_string(mode));
                CHECK(activation_bytes_per_layer(gpt, dtype::bf16, 2, 1024, t, sp, mode).value() ==
                      Approx(korthikanti_activation_bytes_per_layer(1024, 2, 1024, 16, t, sp, mode)
                                 .value())
                          .epsilon(1e-14));
            }
    // fp32 doubles the 16-bit terms; the 1-byte dropout masks stay: 66·sbh + 9·a·s²·b.
    CHECK(activation_bytes_per_layer(gpt, dtype::fp32, 2, 1024, 1, false, r::none).value() ==
          66 * sbh + 9 * 16 * 1024.0 * 1024 * 2);
    // No dropout: no masks, one s² copy: 32·sbh + 2·a·s²·b.
    CHECK(activation_bytes_per_layer(gpt, dtype::bf16, 2, 1024, 1, false, r::none,
                                     holding({.dropout = false}))
              .value() == 32 * sbh + 2 * 16 * 1024.0 * 1024 * 2);
    // FlashAttention: no s² terms, an fp32 log-sum-exp per row and head.
    framework_profile flash = pytorch_eager_profile;
    flash.flash_attention = true;
    CHECK(activation_bytes_per_layer(gpt, dtype::bf16, 2, 1024, 1, false, r::none, flash)
              .value() == 34 * sbh + 4 * 16 * 1024.0 * 2);
}

TEST_CASE("memory_per_gpu adds up by hand for one GPU", "[memory]") {
    const parallel_layout p{.micro_batch = 2};
    const memory_breakdown m = memory_at(gpt, bf16, optimizer_kind::adamw, p, 1024, bare);
    const double params = parameter_count(gpt);
    CHECK(m.weights.value() == 2 * params);
    CHECK(m.gradients.value() == 2 * params);
    CHECK(m.master_weights.value() == 4 * params);
    CHECK(m.optimizer_state.value() == 8 * params);
    CHECK(m.static_state().value() == 16 * params);
    // 24 layers × 114·sbh + embedding dropout mask sbh + final norm and head inputs 4·sbh.
    CHECK(m.activations.value() == 24 * 114 * sbh + sbh + 4 * sbh);
    CHECK(m.logits.value() == 2.0 * 1024 * 50257 * 2);  // the bf16 logits only
    CHECK(m.peak_phase() == memory_phase::forward_backward);
    CHECK(m.total().value() == m.static_state().value() + m.activations.value() + m.logits.value());

    // The default profile (pytorch-eager): fp32 logits with two loss buffers and a
    // 32 MiB workspace.
    const memory_breakdown d = memory_at(gpt, bf16, optimizer_kind::adamw, p, 1024);
    CHECK(d.logits.value() == 2.0 * 1024 * 50257 * (2 + 2 * 4));
    CHECK(d.workspace.value() == 32.0 * 1048576);

    // Full recompute keeps each layer's input plus one layer rebuilt in backward.
    const parallel_layout full{.micro_batch = 2, .recompute = recompute_mode::full};
    CHECK(memory_at(gpt, bf16, optimizer_kind::adamw, full, 1024, bare).activations.value() ==
          24 * 2 * sbh + 114 * sbh + sbh + 4 * sbh);
}

TEST_CASE("tensor and pipeline parallelism split, ZeRO shards the right parts", "[memory]") {
    const double params = parameter_count(gpt);
    const auto at = [&](parallel_layout p) {
        return memory_at(gpt, bf16, optimizer_kind::adamw, p, 1024, bare);
    };
    const memory_breakdown z0 = at({.dp = 4});
    const memory_breakdown z1 = at({.dp = 4, .zero = 1});
    const memory_breakdown z2 = at({.dp = 4, .zero = 2});
    const memory_breakdown z3 = at({.dp = 4, .zero = 3});
    CHECK(z0.static_state().value() == 16 * params);
    CHECK(z1.weights.value() == 2 * params);
    CHECK(z1.gradients.value() == 2 * params);
    CHECK(z1.master_weights.value() == 4 * params / 4);
    CHECK(z1.optimizer_state.value() == 8 * params / 4);
    CHECK(z2.weights.value() == 2 * params);
    CHECK(z2.gradients.value() == 2 * params / 4);
    CHECK(z2.optimizer_state.value() == 8 * params / 4);
    // FSDP (the profile is pytorch-eager's): the fp32 shard is the master, no 16-bit
    // shard beside it (spec/framework_profile.hpp fp32_sharded_parameters).
    CHECK(z3.weights.value() == 0);
    CHECK(z3.gradients.value() == 2 * params / 4);
    CHECK(z3.static_state().value() == Approx(14 * params / 4).epsilon(1e-14));
    // ZeRO-3 gathers a layer at a time (and prefetches the next).
    CHECK(z3.buffers.value() == 2 * 2 * layer_parameters(gpt));
    CHECK(z3.activations == z0.activations);
    // Kept gathered from forward to backward (SHARD_GRAD_OP): all 24 layers, 16-bit.
    framework_profile kept = bare;
    kept.reshard_after_forward = false;
    const memory_breakdown z3_kept = memory_at(gpt, bf16, optimizer_kind::adamw, {.dp = 4, .zero = 3}, 1024, kept);
    CHECK(z3_kept.buffers.value() == 24 * 2 * layer_parameters(gpt));
    CHECK(z3_kept.static_state() == z3.static_state());
    CHECK(z3_kept.activations == z3.activations);

    // Offload: master and optimizer state move to the host, with the fp32 gradients the
    // CPU's step reads (ZeRO-Offload): 4 + 8 + 4 = 16 B per parameter of the partition.
    const memory_breakdown off = at({.dp = 4, .zero = 1, .offload = offload_mode::optimizer});
    CHECK(off.master_weights.value() == 0);
    CHECK(off.optimizer_state.value() == 0);
    CHECK(off.offloaded_to_host.value() == 16 * params / 4);

    // TP splits all static state by t.
    const memory_breakdown tp2 = at({.tp = 2});
    CHECK(tp2.static_state().value() == Approx(16 * params / 2).epsilon(1e-14));

    // PP: the first stage holds p micro-batches in flight for its layers.
    const memory_breakdown pp4 = at({.pp = 4, .micro_batch = 2, .grad_accum = 8});
    CHECK(pp4.stage == 0);
    CHECK(pp4.activations.value() == 6 * 4 * 114 * sbh + 4 * sbh);
    // Interleaving multiplies by 1 + (p−1)/(p·v).
    const memory_breakdown il = at({.pp = 4, .interleave = 2, .micro_batch = 2, .grad_accum = 8});
    CHECK(il.activations.value() == Approx(6 * 4 * 114 * sbh * (1 + 3.0 / 8) + 4 * sbh));
    // Fewer micro-batches than stages: only those are in flight.
    const memory_breakdown few = at({.pp = 4, .micro_batch = 2, .grad_accum = 2});
    CHECK(few.activations.value() == 6 * 2 * 114 * sbh + 2 * sbh);
}

namespace {
// One H100 under plain PyTorch, as a compile-time setup.
constexpr training_setup on_h100(const transformer_config& m, precision_kind k, int seq, int batch = 1) {
    return {.cluster = standard_cluster(h100_sxm::spec, 1),
            .model = m,
            .precision = recipe(k),
            .layout = {.micro_batch = batch},
            .seq = seq,
            .framework = pytorch_eager_profile};
}
}  // namespace

TEST_CASE("whether a setup fits, and its largest micro-batch", "[memory]") {
    static_assert(!memory_of(on_h100(llama2_7b::config, precision_kind::fp32, 4096)).fits);
    static_assert(memory_of(on_h100(gpt_neo_1_3b::config, precision_kind::fp32, 2048)).fits);
    const gpu_spec& g = h100_sxm::spec;
    const transformer_config& m = gpt2_xl::config;
    for (precision_kind k : {precision_kind::fp32, precision_kind::bf16, precision_kind::bf16_pure}) {
        const int b = max_micro_batch(on_h100(m, k, 1024));
        INFO(to_string(k) << ": " << b);
        REQUIRE(b >= 1);
        CHECK(memory_of(on_h100(m, k, 1024, b)).fits);
        CHECK_FALSE(memory_of(on_h100(m, k, 1024, b + 1)).fits);
        // Whatever micro-batch the setup had.
        CHECK(max_micro_batch(on_h100(m, k, 1024, b + 7)) == b);
    }
    CHECK(max_micro_batch(on_h100(llama2_7b::config, precision_kind::fp32, 4096)) == 0);
    CHECK(max_micro_batch(on_h100(gpt2_medium::config, precision_kind::bf16, 1024)) > 8);
    // bf16 on V100 is an error, not a "does not fit".
    training_setup v100 = on_h100(gpt2_medium::config, precision_kind::bf16, 1024);
    v100.cluster = standard_cluster(v100_sxm2_32gb::spec, 1);
    CHECK_THROWS_WITH(memory_of(v100), "precision = bf16: not supported by v100-sxm2-32gb (no bf16 tensor cores)");
    // Usable: the device's memory as its driver reports it, less the CUDA context
    // (500 MiB); shared memory (Jetson) also less the OS reserve (2 GB).
    const gpu_spec& jetson = jetson_orin_nx_16gb::spec;
    const framework_profile& eager = pytorch_eager_profile;
    CHECK(usable_memory(jetson, eager).value() == 16 * 1073741824.0 - 500 * 1048576.0 - 2e9);
    CHECK(usable_memory(g, eager).value() == (81559 - 500) * 1048576.0);  // H100 SXM: 81,559 MiB reported
    // More than the datasheet's decimal "80 GB": 85.0 GB can be allocated.
    CHECK(usable_memory(g, eager) > g.memory_capacity);
    // A GPU described without a reported figure falls back to the datasheet's.
    gpu_spec custom = g;
    custom.memory_reported = bytes_of(0);
    CHECK(usable_memory(custom, eager).value() == 80e9 - 500 * 1048576.0);
}

TEST_CASE("memory inputs are validated naming the field", "[memory]") {
    CHECK_THROWS_WITH(memory_at(gpt, bf16, optimizer_kind::adamw, {.micro_batch = 0}, 1024),
                      "batch = 0: must be at least 1");
    CHECK_THROWS_WITH(memory_at(gpt, bf16, optimizer_kind::adamw, {}, -1),
                      "seq = -1: must not be negative (0: the model's training length)");
    CHECK_THROWS_WITH(memory_at(gpt, bf16, optimizer_kind::adamw, {}, 2048),
                      "seq = 2048: exceeds the model's learned position table (max_seq)");
    CHECK_THROWS_WITH(memory_at(gpt, bf16, optimizer_kind::adamw, {.tp = 3}, 1024),
                      "tp = 3: must divide the number of attention heads");
    CHECK_THROWS_WITH(memory_at(gpt, bf16, optimizer_kind::adamw, {.zero = 5}, 1024),
                      "zero = 5: must be 0, 1, 2 or 3");
    CHECK_THROWS_WITH(memory_at(gpt, bf16, optimizer_kind::adamw, {}, 1024,
                                     holding({.fragmentation = 1.5})),
                      "fragmentation = 1.5: must be in [0, 1)");
}

TEST_CASE("fragmentation and optimizer temporaries", "[memory]") {
    framework_profile o = bare;
    o.memory.fragmentation = 0.1;
    const memory_breakdown m = memory_at(gpt, bf16, optimizer_kind::adamw, {}, 1024, o);
    CHECK(m.fragmentation.value() == Approx(0.1 * m.peak_allocated().value()).epsilon(1e-14));
    CHECK(m.total().value() == Approx(1.1 * m.peak_allocated().value()).epsilon(1e-14));
    // Large step temporaries with tiny activations move the peak to the optimizer step.
    framework_profile step = bare;
    step.memory.optimizer_temporaries = 2.0;
    const memory_breakdown s = memory_at(gpt, bf16, optimizer_kind::adamw,
                                              {.recompute = recompute_mode::full}, 128, step);
    CHECK(s.optimizer_temporaries.value() == 2 * 4 * parameter_count(gpt));
    CHECK(s.peak_phase() == memory_phase::optimizer_step);
    CHECK(s.peak_allocated() == s.optimizer_step_peak());
}

TEST_CASE("the tensor-parallel overlap's userbuffers sit beside the allocator's peak", "[memory]") {
    // Llama 2 7B (h 4096) at seq 4096, micro-batch 1, tp 2 with sp under Megatron-Core:
    // Transformer Engine's 12 userbuffers of 4096 x 4096 elements each, in bf16 24 B per
    // element in all, 384 MiB; under fp8 the 8 all-gathers' buffers hold one byte, 16 B,
    // 256 MiB; cp 2 halves the shape; none without the overlap or sequence parallelism.
    const auto buffers = [](precision_kind k, parallel_layout l, bool overlap) {
        framework_profile fw = megatron_core_profile;
        fw.tensor_parallel_overlap = overlap;
        return memory_at(llama2_7b::config, recipe(k), optimizer_kind::adamw, l, 4096, fw);
    };
    const double mib = 1048576;
    const parallel_layout tp2{.tp = 2, .sp = true}, cp2{.tp = 2, .cp = 2, .sp = true}, no_sp{.tp = 2};
    for (const auto& [kind, l, expected] : {std::tuple{precision_kind::bf16, tp2, 384 * mib},
                                           std::tuple{precision_kind::fp8, tp2, 256 * mib},
                                           std::tuple{precision_kind::bf16, cp2, 192 * mib},
                                           std::tuple{precision_kind::bf16, no_sp, 0.0}}) {
        INFO(to_string(kind) << ", " << to_string(l));
        const memory_breakdown with = buffers(kind, l, true), without = buffers(kind, l, false);
        CHECK(with.buffers.value() - without.buffers.value() == Approx(expected).margin(1e-3));
        // Outside the caching allocator: no slack on them.
        CHECK(with.fragmentation.value() == Approx(without.fragmentation.value()).epsilon(1e-12));
    }
}

TEST_CASE("with expandable segments the allocator's slack is its pools' partly used pages", "[memory]") {
    // PyTorch's expandable segments grow in 2 MiB (small pool) and 20 MiB (large pool)
    // pages and hand back every page a free block covers whole: the last page of each
    // pool stays, 22 MiB whatever the peak, instead of the profile's share of it.
    framework_profile o = bare;
    o.memory.fragmentation = 0.1;
    o.memory.expandable_segments = true;
    for (int seq : {128, 1024}) {
        const memory_breakdown m = memory_at(gpt, bf16, optimizer_kind::adamw, {}, seq, o);
        CHECK(m.fragmentation.value() == 22.0 * 1048576);
        CHECK(m.total().value() == m.peak_allocated().value() + 22.0 * 1048576);
    }
    CHECK(allocator_slack(o.memory, bytes_of(0), 1).value() == 0);
    // ZeRO-3 allocates on its communication streams too (FSDP2's all-gather copy-in,
    // all-gather and reduce-scatter streams; hybrid sharding's all-reduce stream): a page
    // of each pool on each.
    const parallel_layout sharded{.dp = 8, .zero = 3}, hybrid{.dp = 8, .zero = 3, .shard_group = 4};
    CHECK(memory_at(gpt, bf16, optimizer_kind::adamw, sharded, 1024, o).fragmentation.value() == 4 * 22.0 * 1048576);
    CHECK(memory_at(gpt, bf16, optimizer_kind::adamw, hybrid, 1024, o).fragmentation.value() == 5 * 22.0 * 1048576);
    // torchtitan's launcher sets it (run_train.sh); the other profiles leave PyTorch's default.
    CHECK(torchtitan_profile.memory.expandable_segments);
    for (const framework_profile& p : {pytorch_eager_profile, megatron_profile, deepspeed_profile,
                                       megatron_core_profile, megatron_deepspeed_profile})
        CHECK_FALSE(p.memory.expandable_segments);
}

TEST_CASE("DDP's bucket copy of the gradients exists only while gradients are whole", "[memory]") {
    const framework_profile& eager = pytorch_eager_profile;  // 25 MB buckets, copy 1.0
    for (int zero = 0; zero <= 3; ++zero) {
        const parallel_layout p{.dp = 8, .zero = zero, .micro_batch = 1};
        const memory_breakdown m = memory_at(gpt, bf16, optimizer_kind::adamw, p, 1024, eager);
        INFO("ZeRO " << zero);
        const double gathered = zero == 3 ? 2 * layer_parameters(gpt) * 2 : 0.0;  // two bf16 layers
        const double copy = zero <= 1 ? m.gradients.value() : 0.0;
        CHECK(m.buffers.value() == Approx(25e6 + copy + gathered));
    }
}

namespace {
const precision_recipe fp16_amp = recipe(precision_kind::fp16_amp);
const precision_recipe fp16_mixed = recipe(precision_kind::fp16);  // Megatron-style: 16-bit weights + fp32 master
const precision_recipe fp16_pure = recipe(precision_kind::fp16_pure);
// A small GPT-2-like layer: h = 64, 4 heads, f = 4h = 256; s = 128, b = 2.
constexpr transformer_config tiny{.name = "tiny-gpt2", .layers = 2, .hidden = 64, .heads = 4,
                                  .ffn_hidden = 256, .vocab = 1000, .max_seq = 128,
                                  .activation = activation_kind::gelu_new};
constexpr double tiny_sbh = 128.0 * 2 * 64;       // 16384
constexpr double tiny_as2b = 4.0 * 128 * 128 * 2;  // 131072: one attention-probability tensor
}  // namespace

TEST_CASE("static state under autocast and pure fp16", "[memory][amp]") {
    // Autocast + AdamW: fp32 parameters 4 + fp32 gradients 4 + fp32 moments 8 = 16 B.
    CHECK(static_state_bytes(7e9, fp16_amp, optimizer_kind::adamw).value() == 16 * 7e9);
    // .half() + AdamW: 2 + 2 + fp16 moments 4 = 8 B.
    CHECK(static_state_bytes(7e9, fp16_pure, optimizer_kind::adamw).value() == 8 * 7e9);
    // A bare parameter count under autocast adds the 2 B 16-bit copies: 18 B/param,
    // 1.26e11 B for 7e9 parameters.
    const memory_breakdown m = static_state_memory(7e9, fp16_amp, optimizer_kind::adamw, {});
    CHECK(m.weights.value() == 4 * 7e9);
    CHECK(m.gradients.value() == 4 * 7e9);
    CHECK(m.master_weights.value() == 0);
    CHECK(m.optimizer_state.value() == 8 * 7e9);
    CHECK(m.weight_copies.value() == 2 * 7e9);
    CHECK(m.total().value() == 1.26e11);
    CHECK(static_state_memory(7e9, fp16_mixed, optimizer_kind::adamw, {}).weight_copies.value() == 0);
}

TEST_CASE("activations of a small GPT-2-like layer: autocast vs Megatron fp16 vs .half()", "[memory][amp]") {
    using r = recompute_mode;
    // sbh = 128·2·64 = 16384, a·s²·b = 4·128²·2 = 131072, s·b·f = 4·sbh.
    // fp16-amp, eager profile (gelu_new as 8 ops), with dropout, tensor by tensor:
    //   two norm inputs, fp32 residual stream     2 · 4 · 16384  = 131072
    //   QKV and FFN inputs, 16-bit casts          2 · 2 · 16384  =  65536
    //   two dropout masks, 1 B                    2 · 1 · 16384  =  32768
    //   Q, K, V, 16-bit                           3 · 2 · 16384  =  98304
    //   out-projection input, 16-bit              2 · 16384      =  32768
    //   GELU chain, fp32, s·b·f                   4 · 65536      = 262144
    //   FFN-down input, 16-bit cast, s·b·f        2 · 65536      = 131072
    //   softmax output, fp32                      4 · 131072     = 524288
    //   attention dropout mask, 1 B               1 · 131072     = 131072
    //   attention dropout output, 16-bit          2 · 131072     = 262144
    //   sum = 46·sbh + 7·as²b = 753664 + 917504 = 1671168
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_amp), 2, 128, 1, false, r::none).value() ==
          1671168.0);
    // Megatron's fp16 and .half(): all 16-bit, Korthikanti's 34·sbh + 5·as²b
    // = 557056 + 655360 = 1212416.
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_mixed), 2, 128, 1, false, r::none).value() ==
          1212416.0);
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_pure), 2, 128, 1, false, r::none).value() ==
          1212416.0);
    // One GELU kernel (Megatron's fused bias-GELU) keeps its 16-bit input: 2·65536 less,
    // 38·sbh + 7·as²b = 622592 + 917504 = 1540096.
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_amp), 2, 128, 1, false, r::none,
                                     megatron_profile)
              .value() == 1540096.0);
    // Without dropout: no masks, the fp32 softmax output and its 16-bit copy for PV:
    // (46 − 2)·sbh + (4 + 2)·as²b = 720896 + 786432 = 1507328; 16-bit: 32·sbh + 2·as²b
    // = 524288 + 262144 = 786432.
    framework_profile no_dropout = pytorch_eager_profile;
    no_dropout.memory.dropout = false;
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_amp), 2, 128, 1, false, r::none, no_dropout)
              .value() == 1507328.0);
    CHECK(activation_bytes_per_layer(tiny, dtype::fp16, 2, 128, 1, false, r::none, no_dropout).value() == 786432.0);
    // Full recompute keeps the layer input: the fp32 residual stream, 4·sbh = 65536
    // (2·sbh = 32768 in 16 bits).
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_amp), 2, 128, 1, false, r::full).value() ==
          65536.0);
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_pure), 2, 128, 1, false, r::full).value() ==
          32768.0);
    // Selective recompute drops the 7·as²b attention core: 46·sbh = 753664.
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_amp), 2, 128, 1, false, r::selective)
              .value() == 753664.0);
    // tp = 2: norm inputs, QKV/FFN inputs and masks stay whole (14·sbh = 229376), the
    // rest halves: (32·sbh + 7·as²b)/2 = (524288 + 917504)/2 = 720896; sum 950272.
    CHECK(activation_bytes_per_layer(tiny, activation_formats_of(fp16_amp), 2, 128, 2, false, r::none).value() ==
          950272.0);
}

TEST_CASE("memory_per_gpu under autocast adds up by hand", "[memory][amp]") {
    const parallel_layout p{.micro_batch = 2};
    const memory_breakdown m = memory_at(gpt, fp16_amp, optimizer_kind::adamw, p, 1024, bare);
    const double params = parameter_count(gpt);
    CHECK(m.weights.value() == 4 * params);
    CHECK(m.gradients.value() == 4 * params);
    CHECK(m.master_weights.value() == 0);
    CHECK(m.optimizer_state.value() == 8 * params);
    CHECK(m.static_state().value() == 16 * params);
    // Cast to 16 bits: each layer's linear weights and biases, h = 1024, f = 4096:
    // QKV 1024·3072 + 3072 = 3148800, out 1024² + 1024 = 1049600, FFN 1024·4096 + 4096 +
    // 4096·1024 + 1024 = 8393728: 12592128 per layer (the norms are not cast); and the
    // tied head 50257·1024 = 51463168. 24·12592128 + 51463168 = 353674240 parameters,
    // 2 B each.
    CHECK(m.weight_copies.value() == 2.0 * 353674240);
    // Per layer 46·sbh + 7·a·s²·b = (46 + 7·16·1024/1024)·sbh = 158·sbh; embedding
    // dropout mask sbh; final norm input (fp32) and head input (16-bit cast) 6·sbh.
    CHECK(m.activations.value() == 24 * 158 * sbh + sbh + 6 * sbh);
    CHECK(m.logits.value() == 2.0 * 1024 * 50257 * 2);  // the lm_head GEMM's 16-bit output
    CHECK(m.peak_phase() == memory_phase::forward_backward);
    CHECK(m.total().value() ==
          m.static_state().value() + m.weight_copies.value() + m.activations.value() + m.logits.value());
    // The copies are gone by the optimizer step (freed by backward; the cache was
    // cleared when the autocast region exited).
    CHECK(m.optimizer_step_peak().value() == m.static_state().value());

    // TP splits the copies; ZeRO-3 does not shard them (they are cast from gathered weights).
    CHECK(memory_at(gpt, fp16_amp, optimizer_kind::adamw, {.tp = 2, .micro_batch = 2}, 1024, bare)
              .weight_copies.value() == 353674240.0);
    CHECK(memory_at(gpt, fp16_amp, optimizer_kind::adamw, {.dp = 4, .zero = 3, .micro_batch = 2}, 1024, bare)
              .weight_copies.value() == 2.0 * 353674240);
    // Megatron's fp16 and .half() hold no copies.
    CHECK(memory_at(gpt, fp16_mixed, optimizer_kind::adamw, p, 1024, bare).weight_copies.value() == 0);
    const memory_breakdown pure = memory_at(gpt, fp16_pure, optimizer_kind::adamw, p, 1024, bare);
    CHECK(pure.weight_copies.value() == 0);
    CHECK(pure.static_state().value() == 8 * params);  // 2 + 2 + fp16 moments 4
    CHECK(pure.activations.value() == 24 * 114 * sbh + sbh + 4 * sbh);  // as bf16 above

    // When the optimizer step peaks, the copies are not part of the peak.
    framework_profile step = bare;
    step.memory.optimizer_temporaries = 2.0;
    const memory_breakdown s = memory_at(gpt, fp16_amp, optimizer_kind::adamw,
                                              {.recompute = recompute_mode::full}, 128, step);
    REQUIRE(s.peak_phase() == memory_phase::optimizer_step);
    double sum = 0;
    for (const auto& [name, value] : components_at_peak(s)) {
        if (name == "weight_copies") CHECK(value.value() == 0);
        sum += value.value();
    }
    CHECK(sum == Approx(s.total().value()).epsilon(1e-14));
}

TEST_CASE("a stage's total from its two parts equals its breakdown's, and the verdict without it agrees", "[memory]") {
    // Layouts with uneven splits (three candidate stages), every ZeRO stage, offload and
    // overlap, under profiles with fragmentation and optimizer temporaries.
    training_setup s;
    s.cluster = standard_cluster(a100_sxm_80gb::spec);
    s.model = gpt;
    s.seq = 1024;
    int checked = 0;
    for (const framework_profile& fw : {megatron_core_profile, deepspeed_profile, pytorch_eager_profile})
        for (precision_kind pk : {precision_kind::bf16, precision_kind::fp32})
            for (const parallel_layout& base :
                 {parallel_layout{.dp = 4, .micro_batch = 2, .grad_accum = 3},
                  parallel_layout{.dp = 2, .tp = 2, .pp = 4, .sp = true, .micro_batch = 1, .grad_accum = 8,
                                  .recompute = recompute_mode::selective},
                  parallel_layout{.dp = 2, .pp = 4, .micro_batch = 4, .grad_accum = 2,
                                  .recompute = recompute_mode::full, .first_stage_layers = 3,
                                  .last_stage_layers = 5}})
                for (int zero = 0; zero <= 3; ++zero)
                    for (offload_mode offload : {offload_mode::none, offload_mode::optimizer})
                        for (dp_overlap_mode overlap : {dp_overlap_mode::off, dp_overlap_mode::on}) {
                            s.framework = fw;
                            s.precision = recipe(pk);
                            s.layout = base;
                            s.layout.zero = zero;
                            s.layout.offload = offload;
                            s.layout.dp_overlap = overlap;
                            INFO(fw.name << " " << to_string(pk) << " " << to_string(s.layout));
                            try {
                                validate(s);  // a combination the profile does not offer is skipped
                            } catch (const std::invalid_argument&) {
                                continue;
                            }
                            ++checked;
                            const model_state state = model_state_of(s);
                            const precision_recipe stored = stored_precision(s);
                            const auto layer = memory_detail::layer_activations_of(s.model, stored, s.layout, s.seq,
                                                                                   s.framework, s.finetune);
                            const auto held = memory_detail::candidate_stages_of(state, s.model, stored, s.layout,
                                                                                 s.seq, s.framework, layer, s.finetune);
                            const auto state_part = [&](const memory_detail::stage_micro_batch_memory& h) {
                                return memory_detail::stage_state_memory(h, s.model, stored, state, s.layout,
                                                                         s.framework, s.finetune);
                            };
                            for (int i = 0; i < held.count; ++i) {
                                const auto& h = held.stages[std::size_t(i)];
                                const memory_breakdown whole = memory_detail::stage_memory(state_part(h), h, fw.memory);
                                CHECK(memory_detail::stage_total(state_part(h), h, fw.memory).value() ==
                                      whole.total().value());  // the same bits
                            }
                            const memory_breakdown busiest = memory_detail::busiest_stage(held, state_part, fw.memory);
                            CHECK(busiest.total() == memory_of(s).breakdown.total());
                            // Capacities around the busiest stage's total: the verdict says
                            // "exceeds" only where the breakdown does not fit, and always where
                            // it is clearly over.
                            const double total = busiest.total().value();
                            for (double capacity : {total, std::nextafter(total, 0.0), total * (1 - 1e-10),
                                                    total * (1 - 1e-6), total * 0.5, total * (1 + 1e-6)}) {
                                const bool exceeds =
                                    memory_detail::certainly_exceeds(held, state_part, fw.memory, bytes_of(capacity));
                                const bool fits = memory_report_of(busiest, bytes_of(capacity)).fits;
                                CHECK(!(exceeds && fits));
                                if (capacity < total * (1 - 1e-8)) CHECK(exceeds);
                            }
                        }
    CHECK(checked > 100);
}

TEST_CASE("the gradient format: fp32 main gradients or the recipe's own", "[memory]") {
    training_setup s{.cluster = {.gpu = h100_sxm::spec}, .model = gpt, .layout = {.dp = 4, .zero = 1}, .seq = 1024};
    s.framework = megatron_profile;  // fp32 main gradients
    const double params = parameter_count(gpt);
    CHECK(memory_of(s).breakdown.gradients.value() == 4 * params);
    set_gradient_format(s, dtype::bf16);
    CHECK(memory_of(s).breakdown.gradients.value() == 2 * params);
    CHECK(stored_precision(s).gradients == dtype::bf16);
    set_gradient_format(s, dtype::fp32);
    CHECK(memory_of(s).breakdown.gradients.value() == 4 * params);
    CHECK_THROWS_WITH(set_gradient_format(s, dtype::fp16),
                      Catch::StartsWith("grad_reduce_dtype = fp16: must be fp32 or the recipe's own"));
    s.precision = fp32;  // fp32 weights keep fp32 gradients
    CHECK_THROWS_WITH(set_gradient_format(s, dtype::bf16), Catch::StartsWith("grad_reduce_dtype = bf16"));
}

TEST_CASE("a fit verdict's margin, and the assumption that decides a borderline one", "[memory]") {
    // 100 GB allocated at the peak, 5 GB fragmentation, a 0.5 GB context.
    const memory_overheads o{.fragmentation = 0.05, .cuda_context = gigabytes_of(0.5)};
    memory_breakdown mb;
    mb.weights = gigabytes_of(100);
    mb.fragmentation = gigabytes_of(5);
    const auto at = [&](double usable_gb) {
        return margin_of(memory_report{mb, gigabytes_of(usable_gb), mb.total() <= gigabytes_of(usable_gb)}, o);
    };
    // Firm: more than either term away.
    CHECK(at(120).margin.value() == Approx(15e9));
    CHECK(!at(120).borderline());
    CHECK(!at(90).borderline());
    CHECK(at(90).margin.value() == Approx(-15e9));
    // Fits by 3 GB, less than the 5 GB of slack: twice the slack would not fit.
    CHECK(at(108).decided_by == deciding_assumption::allocator_slack);
    CHECK(at(108).assumed.value() == Approx(5e9));
    // Over by 4 GB: without the slack it would fit.
    CHECK(at(101).decided_by == deciding_assumption::allocator_slack);
    // Without slack, the context decides within its 0.5 GB.
    mb.fragmentation = bytes_of(0);
    CHECK(at(100.3).decided_by == deciding_assumption::cuda_context);
    CHECK(at(99.6).decided_by == deciding_assumption::cuda_context);
    CHECK(at(99.4).decided_by == deciding_assumption::none);
    CHECK(to_string(deciding_assumption::allocator_slack) == "allocator-slack");
}

TEST_CASE("the fit table: the largest micro-batch per recipe the GPU runs and per optimizer", "[memory][fit]") {
    training_setup base{.cluster = {.gpu = v100_sxm2_32gb::spec}, .model = gpt, .seq = 1024};
    base.precision = recipe(precision_kind::fp16);  // one the V100 runs
    base.framework = trainperf_tests::running_everything(megatron_profile);  // every recipe and optimizer
    const fit_table all = fit_table_of({.base = base});
    // V100 has no bf16 or tf32 tensor cores and no fp8: those recipes are not columns.
    for (precision_kind p : all.precisions) CHECK(v100_sxm2_32gb::spec.supports(recipe(p).math));
    CHECK(std::find(all.precisions.begin(), all.precisions.end(), precision_kind::bf16) == all.precisions.end());
    CHECK(std::find(all.precisions.begin(), all.precisions.end(), precision_kind::fp16) != all.precisions.end());
    CHECK(all.optimizers.size() == all_optimizers.size());
    REQUIRE(all.largest.size() == all.optimizers.size());
    for (std::size_t i = 0; i < all.optimizers.size(); ++i) {
        REQUIRE(all.largest[i].size() == all.precisions.size());
        for (std::size_t j = 0; j < all.precisions.size(); ++j) {
            training_setup s = base;
            s.precision = recipe(all.precisions[j]);
            s.optimizer = all.optimizers[i];
            CHECK(all.largest[i][j] == max_micro_batch(s));
        }
    }
    CHECK(!all.with_full_recompute);  // full fine-tuning: no adapter recipe to add

    training_setup lora = base;
    lora.precision = recipe(precision_kind::fp16);
    lora.optimizer = optimizer_kind::adamw;
    lora.finetune = {.mode = finetune_mode::lora};
    const fit_table one = fit_table_of({.base = lora, .only_base_precision = true, .only_base_optimizer = true});
    REQUIRE(one.precisions == std::vector{precision_kind::fp16});
    REQUIRE(one.optimizers == std::vector{optimizer_kind::adamw});
    REQUIRE(one.with_full_recompute);
    training_setup checkpointed = lora;
    checkpointed.layout.recompute = recompute_mode::full;
    CHECK(*one.with_full_recompute == max_micro_batch(checkpointed));
    CHECK(*one.with_full_recompute >= one.largest[0][0]);

    // A framework's own software: only what it runs (megatron: no autocast, pure 16-bit or
    // fp8; Adam and SGD).
    training_setup megatron = base;
    megatron.framework = megatron_profile;
    const fit_table own = fit_table_of({.base = megatron});
    CHECK(own.precisions == std::vector{precision_kind::fp32, precision_kind::fp16});  // no bf16 on the V100
    CHECK(own.optimizers == std::vector{optimizer_kind::sgd, optimizer_kind::sgd_momentum, optimizer_kind::adamw,
                                        optimizer_kind::adamw_fused});

    training_setup bad = base;
    bad.layout.tp = 3;  // 16 heads do not split over 3 ranks
    CHECK_THROWS_AS(fit_table_of({.base = bad}), trainperf::invalid_argument);
    // A recipe the GPU cannot run, restricted to: refused, not an empty table.
    training_setup bf16_on_v100 = base;
    bf16_on_v100.precision = recipe(precision_kind::bf16);
    CHECK_THROWS_WITH(fit_table_of({.base = bf16_on_v100, .only_base_precision = true}), Catch::Contains("bf16"));
}

namespace {
// llama2-7b at seq 4096 on a node of 8 H100s, data-parallel, as `layout` changes it.
training_setup llama_on_a_node(parallel_layout layout) {
    return {.cluster = standard_cluster(h100_sxm::spec, 8), .model = llama2_7b::config, .layout = layout, .seq = 4096};
}

// The names of the frameworks left out.
std::vector<std::string> skipped_names(const fit_across_result& r) {
    std::vector<std::string> names;
    for (const skipped_framework& s : r.skipped) names.push_back(s.framework);
    return names;
}
}  // namespace

TEST_CASE("the fit table across frameworks: each framework's own table, the others left out with why",
          "[memory][fit][framework]") {
    const fit_table_request zero1{.base = llama_on_a_node({.dp = 8, .zero = 1})};
    const fit_across_result all = fit_tables_across(zero1, framework_profiles);
    CHECK(all.tables.size() + all.skipped.size() == framework_profiles.size());
    for (const fit_table& t : all.tables) {
        INFO(t.base.framework.name);
        fit_table_request own = zero1;
        own.base.framework = lookup_framework(t.base.framework.name);
        const fit_table expected = fit_table_of(own);
        CHECK(t.precisions == expected.precisions);
        CHECK(t.optimizers == expected.optimizers);
        CHECK(t.largest == expected.largest);
        CHECK(t.with_full_recompute == expected.with_full_recompute);
    }
    // Tensor parallelism: not under the Hugging Face Trainer, with or without DeepSpeed;
    // Megatron-DeepSpeed of 2021 has it, but no bf16.
    const fit_across_result tp2 = fit_tables_across({.base = llama_on_a_node({.dp = 4, .tp = 2})}, framework_profiles);
    CHECK(skipped_names(tp2) == std::vector<std::string>{"pytorch-eager", "deepspeed", "megatron-deepspeed"});
    for (const skipped_framework& s : tp2.skipped) {
        const std::string field = s.framework == "megatron-deepspeed" ? "precision = bf16" : "tp = 2";
        CHECK_THAT(s.reason, Catch::StartsWith(field + ": framework " + s.framework));
    }
    // fp8 with ZeRO-1, asked for: Megatron-Core only (torchtitan has no ZeRO-1). Not asked
    // for, bf16 is the base: every framework.
    fit_table_request fp8{.base = llama_on_a_node({.dp = 8, .zero = 1}), .only_base_precision = true};
    fp8.base.precision = recipe(precision_kind::fp8);
    const fit_across_result only_fp8 = fit_tables_across(fp8, framework_profiles);
    REQUIRE(only_fp8.tables.size() == 1);
    CHECK(only_fp8.tables[0].base.framework.name == "megatron-core");
    CHECK(only_fp8.tables[0].precisions == std::vector{precision_kind::fp8});
    CHECK(only_fp8.skipped.size() == 5);
    // Adapters: not in Megatron-LM, Megatron-Core, torchtitan or Megatron-DeepSpeed.
    training_setup lora = llama_on_a_node({.dp = 8});
    lora.finetune = {.mode = finetune_mode::lora};
    const fit_across_result adapters = fit_tables_across({.base = lora}, framework_profiles);
    CHECK(skipped_names(adapters) ==
          std::vector<std::string>{"megatron", "megatron-core", "torchtitan", "megatron-deepspeed"});
    for (const fit_table& t : adapters.tables) CHECK(t.with_full_recompute);
}

TEST_CASE("the fit table across frameworks: none runs the setup", "[memory][fit][framework]") {
    // fp8 with 8-bit Adam: no framework trains both; each named with its reason.
    fit_table_request none{.base = llama_on_a_node({.dp = 8}), .only_base_precision = true,
                           .only_base_optimizer = true};
    none.base.precision = recipe(precision_kind::fp8);
    none.base.optimizer = optimizer_kind::adam8bit;
    CHECK_THROWS_WITH(fit_tables_across(none, framework_profiles),
                      Catch::StartsWith("frameworks = pytorch-eager,megatron,deepspeed,megatron-core,torchtitan,"
                                        "megatron-deepspeed: none of them runs this setup as a whole") &&
                          Catch::Contains("framework megatron-core"));
    // What no framework runs is the error as it is: 32 heads do not split over 3 ranks (in
    // fp32, which every framework runs).
    fit_table_request tp3{.base = llama_on_a_node({.dp = 2, .tp = 3})};
    tp3.base.precision = recipe(precision_kind::fp32);
    fit_table_request tp3_megatron = tp3;
    tp3_megatron.base.framework = megatron_profile;
    CHECK_THROWS_WITH(fit_table_of(tp3_megatron), Catch::StartsWith("tp = 3"));
    CHECK_THROWS_WITH(fit_tables_across(tp3, framework_profiles), Catch::StartsWith("tp = 3") &&
                                                                     !Catch::Contains("frameworks ="));
    CHECK_THROWS_AS(fit_tables_across(tp3, std::span<const framework_profile>{}), trainperf::invalid_argument);
}
