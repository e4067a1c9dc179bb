// What runs once per optimizer step, as ops: the data-parallel synchronisation per
// ZeRO stage (with its sync points), tied embeddings, and the optimizer's sweep on the
// GPU or its offload to the host (copies and CPU work). step_workload() lists them.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/finetune.hpp"
#include "../spec/framework.hpp"
#include "../spec/model.hpp"
#include "../spec/optimizer.hpp"
#include "../spec/parallel.hpp"
#include "../spec/precision.hpp"
#include "../spec/checked_setup.hpp"
#include "../spec/setup.hpp"
#include "fp8.hpp"
#include "layer.hpp"
#include "moe_layer.hpp"
#include "ops.hpp"
#include "placement.hpp"
#include "stage.hpp"

namespace trainperf {

// Parameters updated by one GPU, after tp·pp model splitting (before ZeRO): all it
// holds, or only its adapters when the base is frozen. An MoE model's routed experts
// split over ep·etp instead of tp (expert_parameters_per_gpu); the rest over tp.
// ASSUMPTION: every stage holds 1/pp of each.
constexpr double expert_parameters_per_gpu(const training_setup& s, const model_state& model) {
    const auto& l = s.layout;
    return model.expert_parameters / (double(l.expert_tp()) * l.ep * l.pp);
}
constexpr double parameters_per_gpu(const training_setup& s, const model_state& model) {
    return (model.trainable_parameters - model.expert_parameters) / (double(s.layout.tp) * s.layout.pp) +
           expert_parameters_per_gpu(s, model);
}

// When a per-step collective runs relative to the micro-batches and the optimizer.
enum class sync_point {
    every_forward,       // during every micro-batch's forward (ZeRO-3's prefetched gathers)
    every_micro_batch,   // during every micro-batch's backward
    end_of_backward,     // once, may overlap the last micro-batch's backward
    after_optimizer,     // once, after the update: exposed
    end_of_step,         // once, outside any overlap: exposed
};

template <>
struct enum_names<sync_point> {
    static constexpr std::array<enum_name<sync_point>, 5> table{
        {{sync_point::every_forward, "every-forward"},
         {sync_point::every_micro_batch, "every-micro-batch"},
         {sync_point::end_of_backward, "end-of-backward"},
         {sync_point::after_optimizer, "after-optimizer"}, {sync_point::end_of_step, "end-of-step"}}};
};

struct sync_op {
    collective_op op{};
    sync_point when = sync_point::end_of_step;
    double count = 1;
    // One of the per-unit collectives of ZeRO-3 (FSDP): the first of a pass cannot be
    // prefetched behind compute.
    bool per_unit = false;
};

// When an offloaded gradient copy runs in a step of m micro-batches (the micro-batch
// whose backward issues it).
enum class offload_point {
    all_but_last_micro_batch,   // m − 1 times: before the accumulation boundary
    all_but_first_micro_batch,  // m − 1 times: after the first micro-batch
    last_micro_batch,           // once: the accumulation boundary
};

template <>
struct enum_names<offload_point> {
    static constexpr std::array<enum_name<offload_point>, 3> table{
        {{offload_point::all_but_last_micro_batch, "all-but-last-micro-batch"},
         {offload_point::all_but_first_micro_batch, "all-but-first-micro-batch"},
         {offload_point::last_micro_batch, "last-micro-batch"}}};
};

struct offload_transfer {
    host_transfer_op op{};
    offload_point when = offload_point::last_micro_batch;
};

// The optimizer step of one GPU: a memory-bound sweep over its shard of parameters,
// gradients and state on the GPU (fused into a few multi-tensor kernels, or a loop
// of elementwise kernels per tensor). Offloaded (ZeRO-Offload): gradient copies to the
// host during backward, the step on the host's CPU, the updated weights copied back.
struct optimizer_work {
    bool offloaded = false;
    memory_op update{};                            // on the GPU (not offloaded)
    op_list<offload_transfer, 3> gradient_copies;  // during backward, by micro-batch
    // The share of a micro-batch's gradient traffic (its reductions and copies) in the
    // bucket that fills last: it is sent after that micro-batch's backward has ended.
    double last_bucket_share = 0;
    op_list<host_compute_op, 3> host_step;         // on the CPU, one after the other
    host_transfer_op weights_up{};                 // then, the updated weights to the GPU
};

struct step_ops {
    op_list<sync_op, 8> sync;
    optimizer_work optimizer{};
    // fp8: the quantized weights made once a step (workload/fp8.hpp
    // make_fp8_weights_op); no bytes, no launches otherwise. FP8 primary weights under
    // ZeRO-3 build their copies after its gathers instead: once in every micro-batch.
    memory_op make_fp8_weights{"fp8_make_weights", bytes_of(0.0), op_phase::forward, op_region::other, 0};
    bool fp8_weights_every_micro_batch = false;
};

// Bytes the update touches per parameter: it reads the gradient, reads and writes the
// fp32 master (or the weights themselves) and every state tensor; around it the
// gradient-norm clip reads every gradient, mixed precision copies the master back into
// the 16-bit weights, and a persistent fp32 gradient buffer (Megatron main_grad) is
// zeroed for the next step. Under autocast the optimizer updates the fp32 parameters
// themselves (no master, no copy back: the next forward casts them again), and with
// fp16 the GradScaler's unscale_ reads and writes every gradient once, checking for
// infs as it goes (torch._amp_foreach_non_finite_check_and_unscale_, PyTorch
// torch/cuda/amp/grad_scaler.py@02f1c1a5).
// Fine-tuning with adapters: the update sweeps only them, fp32 weights and gradients
// with no master and no copy back: 4 (gradient) + 2·4 (weights) + 2·state, the clip's
// read of the gradient 4, and fp16-amp's unscale 2·4. A framework that scales every
// gradient every step (framework_profile::scales_gradients_every_step) reads and writes
// each once more.
constexpr double optimizer_bytes_per_parameter(const training_setup& s, const model_state& model) {
    const double state = model.optimizer_state.value() / model.trainable_parameters;
    const double scale_passes = s.framework.scales_gradients_every_step ? 2.0 : 0.0;
    if (s.finetune.freezes_base()) {
        const double fp32 = size_of(adapter_dtype);
        const double unscale = s.precision.autocast && s.precision.loss_scaling ? 2 * fp32 : 0.0;
        return fp32 + 2 * fp32 + 2 * state + fp32 + unscale + scale_passes * fp32;
    }
    const precision_recipe stored = stored_precision(s);
    const double grad = size_of(stored.gradients);
    const double weights = size_of(s.precision.weights);
    const double master = size_of(dtype::fp32);
    const double update = grad + 2 * (s.precision.fp32_master ? master : weights) + 2 * state;
    const double around = grad + (s.precision.fp32_master ? master + weights : 0.0) +
                          (s.framework.fp32_gradient_accumulation ? grad : 0.0);
    const double unscale = s.precision.autocast && s.precision.loss_scaling ? 2 * grad : 0.0;
    return update + around + unscale + scale_passes * grad;
}

// SIMD instructions per register of values in DeepSpeed's CPU-Adam loop, counted from
// Step_AVX (DeepSpeed csrc/includes/cpu_adam.h@v0.9.5): m·β1 (multiply) + g·(1−β1)
// (FMA); v·β2 (multiply), g·g (multiply) + ·(1−β2) (FMA); √v (square root), ·c2 + ε
// (FMA); m / denominator (divide); AdamW's decay p + p·(−lr·wd) (FMA); p + step·update
// (FMA): 10. ASSUMPTION: other optimizers, offloaded, cost the same (DeepSpeed has CPU
// kernels for Adam, Adagrad and Lion; SGD and Lion do less per value).
inline constexpr double cpu_adam_simd_instructions = 10;

// Where ZeRO-Offload's last gradient bucket ends: `local` gradient elements fill
// buckets of deepspeed_reduce_bucket_elements in the order backward produces them; the
// last, partly filled, is reduced and copied after backward (DeepSpeed's
// overlapping_partition_gradients_reduce_epilogue). Its share of the gradients.
constexpr double last_bucket_share(double local) {
    constexpr double bucket = deepspeed_reduce_bucket_elements;
    if (!(local > bucket)) return 1.0;
    const double whole = static_cast<double>(static_cast<long long>(local / bucket));
    const double last = local - whole * bucket;
    return (last > 0 ? last : bucket) / local;
}

// DeepSpeed ZeRO-Offload: ZeRO stage 1/2 with offload_optimizer device cpu (Ren et al.
// 2021, "ZeRO-Offload: Democratizing Billion-Scale Model Training", USENIX ATC '21;
// DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py@v0.12.6), per GPU, for the
// `partition` of its parameters it updates (÷dp with ZeRO ≥ 1).
//
// Backward (copy_grads_in_partition; offload forces contiguous gradients): each bucket
// of gradients is reduced, then this GPU's part of it is copied to the host.
//   ZeRO ≥ 2, every micro-batch: before the accumulation boundary the 16-bit partition
//   goes to a host buffer (D2H, 2 B/param); from the second micro-batch on, the
//   accumulated partition comes back (H2D, 2 B/param) and the new gradients are added to
//   it on the GPU (async_accumulate_grad_in_cpu_via_gpu); at the boundary the partition
//   is cast to fp32 on the GPU and copied into the host's fp32 gradient buffer (4 B/param).
//   ZeRO 0/1: gradients accumulate on the GPU (param.grad) and are reduced at the
//   boundary only, then copied once in fp32.
//   ASSUMPTION: the host buffers are pinned (offload_optimizer.pin_memory true;
//   DeepSpeed's default is false, deepspeed/runtime/zero/offload_config.py@v0.12.6).
//   ZeRO-3 with offload (ZeRO-Infinity's stage3.py) is given the same copies.
// Step, on the CPU, one pass after the other (step()): the fp32 gradients unscaled and
// clipped in place (the global norm was summed from per-tensor norms computed on the
// GPU at the boundary); CPU-Adam over the fp32 master weights, m and v (reads g, m, v, p,
// writes p, m, v: 28 B/param for AdamW); the fp32 partition cast to the 16-bit weights'
// dtype, bit16_partition.copy_(fp32_partition), which PyTorch does on the CPU into a
// pageable temporary (read 4, write 2 B/param) before copying it to the GPU (since the
// fused CPU-Adam-and-copy path was disabled in v0.9.0, commit 4b6d7c159, #3097).
// Then the 16-bit partition goes up (H2D) from that pageable memory: not overlapped.
constexpr optimizer_work offloaded_optimizer_workload(const training_setup& s, const model_state& model) {
    const auto& l = s.layout;
    const double local = parameters_per_gpu(s, model);
    const double partition = local / (l.zero >= 1 ? l.shard_size() : 1.0);
    const double weights = size_of(s.precision.weights);  // the GPU's parameters and buckets
    const double fp32 = size_of(dtype::fp32);
    const double state = model.optimizer_state.value() / model.parameters;  // bytes per parameter
    const auto copy = [](std::string_view name, double size, transfer_direction d, bool pageable) {
        return host_transfer_op{name, bytes_of(size), d, pageable};
    };
    optimizer_work w;
    w.offloaded = true;
    if (l.zero >= 2) {
        w.gradient_copies.push_back({copy("gradient_to_host", partition * weights, transfer_direction::to_host, false),
                                     offload_point::all_but_last_micro_batch});
        w.gradient_copies.push_back({copy("accumulated_gradient_to_device", partition * weights,
                                          transfer_direction::to_device, false),
                                     offload_point::all_but_first_micro_batch});
    }
    w.gradient_copies.push_back({copy("fp32_gradient_to_host", partition * fp32, transfer_direction::to_host, false),
                                 offload_point::last_micro_batch});
    w.last_bucket_share = last_bucket_share(local);
    w.host_step.push_back({"unscale_and_clip_gradients", partition, 1, bytes_of(partition * 2 * fp32)});
    w.host_step.push_back({"cpu_adam", partition, cpu_adam_simd_instructions,
                           bytes_of(partition * (fp32 + 2 * fp32 + 2 * state))});
    const bool cast = s.precision.weights != dtype::fp32;
    // ASSUMPTION: one conversion instruction per register (vcvtps2ph; bf16 likewise).
    if (cast) w.host_step.push_back({"fp32_to_16bit_weights", partition, 1, bytes_of(partition * (fp32 + weights))});
    // fp32 weights are copied straight from the (pinned) fp32 partition.
    w.weights_up = copy("weights_to_device", partition * weights, transfer_direction::to_device, cast);
    return w;
}

constexpr optimizer_work optimizer_workload(const training_setup& s, const model_state& model) {
    const auto& l = s.layout;
    const auto& fw = s.framework;
    if (l.offload == offload_mode::optimizer) return offloaded_optimizer_workload(s, model);
    const double shard = l.zero >= 1 ? l.shard_size() : 1.0;  // ZeRO shards over dp × cp (or its shard group)
    // An MoE model's expert shards: the distributed optimizer shards them over their
    // expert-data-parallel replicas.
    const double experts = expert_parameters_per_gpu(s, model);
    const double params = (parameters_per_gpu(s, model) - experts) / shard +
                          (experts > 0 ? experts / (l.zero >= 1 ? l.expert_dp() : 1.0) : 0.0);
    const double moved = params * optimizer_bytes_per_parameter(s, model);
    if (fw.fused_optimizer || is_fused(s.optimizer)) {
        // Multi-tensor apply: a handful of launches, one pass over everything.
        return {.update = {"optimizer_update", bytes_of(moved), op_phase::backward, op_region::other, 1}};
    }
    const double tensors = model.trainable_tensors / (double(l.tp) * l.pp);
    return {.update = {"optimizer_update", bytes_of(moved * fw.unfused_optimizer_passes), op_phase::backward,
                       op_region::other, tensors * fw.unfused_kernels_per_tensor}};
}

// Data-parallel synchronisation of one GPU's shard. ZeRO 0 keeps whole gradients and
// all-reduces them once per step; ZeRO-1 reduce-scatters them instead and all-gathers
// the updated weights after its shard's update. ZeRO-2 keeps only its gradient shard,
// so it reduce-scatters after every micro-batch; ZeRO-3 also gathers the weights for
// every micro-batch's forward and backward (Rajbhandari et al. 2020, §5 and §7: 1.5×
// the all-reduce volume per pass). Tied embeddings split over the first and the last
// pipeline stage have their gradients all-reduced between those two stages (Megatron).
// `model` must be model_state_of(s) and `groups` groups_of(s): a prediction computes
// each once.
constexpr step_ops step_workload(const training_setup& s, const model_state& model, const layout_groups& groups) {
    const auto& l = s.layout;
    step_ops w{.optimizer = optimizer_workload(s, model)};
    // An MoE model's routed experts synchronise over their own group (below).
    const double experts = expert_parameters_per_gpu(s, model);
    const double params = parameters_per_gpu(s, model) - experts;
    // Fine-tuning with adapters synchronises only their fp32 gradients (and gathers
    // their fp32 weights with ZeRO ≥ 1): params is theirs.
    const bool frozen = s.finetune.freezes_base();
    const bytes gradients =
        bytes_of(params * (frozen ? size_of(adapter_dtype) : size_of(stored_precision(s).gradients)));
    // FP8 primary weights (spec/setup.hpp fp8_primary_weights): the Linear weights'
    // quantized data is what the distributed optimizer gathers (spec/precision.hpp
    // fp8_primary_weight_gathered_bytes; MXFP8's in bf16), the rest in the recipe's format.
    // ASSUMPTION: every stage holds 1/pp of the projections, as of the parameters.
    const precision_recipe recipe = stored_precision(s);
    const bool primary = fp8_primary_weights(s);
    const double gathered_linear =
        primary ? fp8_primary_weight_gathered_bytes(recipe.scaling, recipe.fp8_transposes) : 0.0;
    const double quantized = primary ? model_projection_matrix_parameters(s.model) / (double(l.tp) * l.pp) : 0.0;
    const bytes weights = frozen ? bytes_of(params * size_of(adapter_dtype))
                                 : bytes_of((params - quantized) * size_of(s.precision.weights) +
                                            quantized * gathered_linear);
    // The cp ranks of a replica hold the same weights: gradients reduce, and ZeRO
    // shards, over the data-parallel group with cp (Megatron-Core reduces over
    // get_data_parallel_group(with_context_parallel=True)).
    // Hybrid sharding (layout.shard_group): ZeRO's collectives run over the shard group,
    // and each reduced gradient shard is all-reduced over its replicas, in the same pass
    // (PyTorch FSDP HYBRID_SHARD: reduce-scatter inside the shard group, then
    // all-reduce across, torch/distributed/fsdp/_runtime_utils.py _reduce_grad).
    if (l.dp_cp() > 1) {
        const auto op = [&](std::string_view name, collective kind, bytes size) {
            return collective_op{name, kind, size, groups.shard};
        };
        const int replicas = l.zero >= 1 ? l.shard_replicas() : 1;
        const auto across_replicas = [&](bytes shard_gradients, sync_point when, double count = 1,
                                         bool per_unit = false) {
            if (replicas > 1)
                w.sync.push_back({{"gradient_all_reduce_across_shards", collective::all_reduce, shard_gradients,
                                   groups.replica},
                                  when, count, per_unit});
        };
        const double shards = l.shard_size();
        const collective_op reduce = op("gradient_reduce_scatter", collective::reduce_scatter, gradients);
        const collective_op gather = op("weight_all_gather", collective::all_gather, weights);
        switch (l.zero) {
            case 0:
                w.sync.push_back({{"gradient_all_reduce", collective::all_reduce, gradients, groups.data_context},
                                  sync_point::end_of_backward});
                break;
            case 1:
                w.sync.push_back({reduce, sync_point::end_of_backward});
                across_replicas(gradients / shards, sync_point::end_of_backward);
                w.sync.push_back({gather, sync_point::after_optimizer});
                break;
            case 2:
                w.sync.push_back({reduce, sync_point::every_micro_batch});
                across_replicas(gradients / shards, sync_point::every_micro_batch);
                w.sync.push_back({gather, sync_point::after_optimizer});
                break;
            default: {
                // ZeRO-3 (FSDP, DeepSpeed stage 3) works unit by unit: FSDP wraps each
                // transformer block ("a good heuristic for LLMs", PyTorch
                // docs/source/notes/fsdp.rst@16d83c2f) and the root holds the embedding
                // and the head; DeepSpeed fetches each submodule's parameters ahead of
                // its use. Per unit: an all-gather before its forward, again before its
                // backward unless the framework keeps the unit gathered from its forward
                // to its backward (reshard_after_forward off), and a reduce-scatter of its
                // gradients after it. Each is a collective of its own over the whole
                // data-parallel group (or the shard group), so the latency of the ring
                // is paid per unit.
                // A framework that moves each tensor on its own
                // (zero3_per_tensor_collectives: DeepSpeed before v0.6) gathers each
                // projection weight of a layer (its norms and biases stay whole on every
                // rank) and reduce-scatters every parameter's gradient, biases and norms
                // included. ASSUMPTION: the stage's parameters split evenly over its units
                // (its layers', and one for the embedding and the head). A frozen base
                // sharded by ZeRO-3 is gathered all the same, in its 16 bits.
                const bool per_tensor = s.framework.zero3_per_tensor_collectives;
                const model_code code = code_run(s.model, s.framework);
                const double layers = stage_layers(s);
                const double units = layers * (per_tensor ? layer_linear_matrices(s.model, code) : 1.0) + 1.0;
                const double reduced = layers * (per_tensor ? layer_parameter_tensors(s.model, code) : 1.0) + 1.0;
                const bytes gathered =
                    frozen ? bytes_of(model.parameters / (double(l.tp) * l.pp) * frozen_weight_bytes(s.precision))
                           : weights;
                const collective_op unit_gather = op("weight_all_gather", collective::all_gather, gathered / units);
                const collective_op unit_reduce =
                    op("gradient_reduce_scatter", collective::reduce_scatter, gradients / reduced);
                w.sync.push_back({unit_gather, sync_point::every_forward, units, true});
                if (reshards_after_forward(s.framework, l))
                    w.sync.push_back({unit_gather, sync_point::every_micro_batch, units, true});
                w.sync.push_back({unit_reduce, sync_point::every_micro_batch, reduced, true});
                across_replicas(gradients / (shards * reduced), sync_point::every_micro_batch, reduced, true);
                break;
            }
        }
    }
    // The routed experts' gradients reduce over the expert-data-parallel replicas of each
    // expert shard (Megatron-Core's expert data-parallel group), all-reduced, or
    // reduce-scattered and the updated shard gathered with the distributed optimizer.
    if (experts > 0 && l.expert_dp() > 1) {
        const double stored = size_of(stored_precision(s).gradients);
        const collective_op reduce{"expert_gradient_reduce_scatter", collective::reduce_scatter,
                                   bytes_of(experts * stored), groups.expert_data};
        if (l.zero == 0) {
            w.sync.push_back({{"expert_gradient_all_reduce", collective::all_reduce, bytes_of(experts * stored),
                               groups.expert_data},
                              sync_point::end_of_backward});
        } else {
            w.sync.push_back({reduce, sync_point::end_of_backward});
            const double expert_weight = primary ? gathered_linear : size_of(s.precision.weights);
            w.sync.push_back({{"expert_weight_all_gather", collective::all_gather, bytes_of(experts * expert_weight),
                               groups.expert_data},
                              sync_point::after_optimizer});
        }
    }
    // The quantized weights made once a step (workload/fp8.hpp), of the first stage's
    // layers (an MoE model's dense layers first; of an MoE layer its dense part's and its
    // local experts', workload/moe_layer.hpp expert_fp8_weights_op). FP8 primary weights under ZeRO-3
    // (Megatron-FSDP) are gathered for every micro-batch, and the transpose is built
    // after the backward's gather (fp8_create_transpose_cache on bwd, megatron/core/
    // distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py@d98e8a64): once per
    // micro-batch. ASSUMPTION: the other recipes' copies likewise.
    if (s.framework.fp8_weight_cache && quantized_linears(s.precision)) {
        const layer_context ctx = layer_context_of(s);
        const int layers = stage_layers(s);
        const int dense = std::min(layers, s.model.layers - moe_layers(s.model));
        memory_op& made = w.make_fp8_weights;
        made = make_fp8_weights_op(s.model, ctx, dense, primary);
        if (layers > dense) {
            const memory_op moe = make_fp8_weights_op(moe_dense_part(s.model), ctx, layers - dense, primary);
            const moe_layer_extent extent = moe_layer_extent_of(s.model, l, s.moe, ctx);
            const memory_op experts = expert_fp8_weights_op(s.model, extent, ctx, layers - dense, primary);
            made.moved += moe.moved + experts.moved;
            made.launches += moe.launches + experts.launches;
        }
        w.fp8_weights_every_micro_batch = primary && l.zero >= 3;
    }
    if (l.pp > 1 && s.model.tied_embeddings && !frozen) {
        const bytes embedding = bytes_of(double(s.model.vocab) * s.model.hidden / l.tp *
                                         size_of(stored_precision(s).gradients));
        w.sync.push_back({{"tied_embedding_all_reduce", collective::all_reduce, embedding, stage_pair(groups)},
                          sync_point::end_of_step});
    }
    return w;
}

inline optimizer_work optimizer_workload(checked_view s) { return optimizer_workload(s, model_state_of(s)); }

inline step_ops step_workload(checked_view s, const model_state& model) { return step_workload(s, model, groups_of(s)); }
inline step_ops step_workload(checked_view s) { return step_workload(s, model_state_of(s)); }

}  // namespace trainperf
