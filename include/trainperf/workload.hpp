// The workload: a training step as a list of operations. One layer's forward is GEMMs
// (m, n, k, batch, dtype) and memory-bound ops (bytes moved, FLOPs); backward adds a
// dgrad and a wgrad GEMM per GEMM and an elementwise backward per memory-bound op;
// recompute repeats forward ops. micro_batch_workload() gives the complete op list of
// the busiest pipeline stage for one micro-batch (layers, embedding, head and loss,
// tensor-parallel collectives, pipeline sends, recompute); step_workload() the ops
// that run once per step (data-parallel synchronisation per ZeRO stage, tied
// embeddings, the optimizer sweep or its offload). Shapes are per rank. Nothing here
// prices an op: kernel_model.hpp and comm.hpp do, step.hpp schedules them.
#pragma once

#include <string_view>
#include <vector>

#include "dtype.hpp"
#include "enum_names.hpp"
#include "error.hpp"
#include "framework.hpp"
#include "model.hpp"
#include "ops.hpp"
#include "optimizer.hpp"
#include "parallel.hpp"
#include "placement.hpp"
#include "precision.hpp"
#include "setup.hpp"
#include "units.hpp"

namespace trainperf {

// What one layer's workload depends on besides the model.
struct layer_context {
    int micro_batch = 1;
    int seq = 1;
    int tp = 1;
    bool sp = false;               // sequence parallel: norms and dropouts on s/t tokens
    dtype math = dtype::bf16;      // GEMM math
    dtype activations = dtype::bf16;
};

constexpr void validate(const layer_context& c, const transformer_config& m) {
    require(c.micro_batch >= 1, "batch", c.micro_batch, "must be at least 1");
    require(c.seq >= 1, "seq", c.seq, "must be at least 1");
    require(c.tp >= 1, "tp", c.tp, "must be at least 1");
    require(m.heads % c.tp == 0, "tp", c.tp, "must divide the number of attention heads");
}

// The forward GEMMs of one layer on one tensor-parallel rank.
using layer_gemm_list = op_list<gemm_op, 8>;
using layer_backward_gemm_list = op_list<gemm_op, 16>;
using layer_memory_list = op_list<memory_op, 32>;

inline layer_gemm_list layer_forward_gemms(const transformer_config& m, const layer_context& c) {
    validate(c, m);
    const double tokens = double(c.micro_batch) * c.seq;
    const double h = m.hidden, t = c.tp, d = m.head_dim(), s = c.seq, q = m.q_width();
    // Grouped-query attention: kv heads shard over tp, or are replicated when fewer.
    const double kv = m.kv_width();
    const double kv_per_rank = m.effective_kv_heads() >= c.tp ? kv / t : d;
    const double attention_batch = double(c.micro_batch) * m.heads / t;
    const double f = m.ffn_hidden / t;
    const dtype x = c.math;
    layer_gemm_list ops;
    ops.push_back({"qkv", {tokens, q / t + 2 * kv_per_rank, h, 1, x}});
    ops.push_back({"attention_scores", {s, s, d, attention_batch, x}, op_phase::forward, op_region::attention_core});
    ops.push_back({"attention_context", {s, d, s, attention_batch, x}, op_phase::forward, op_region::attention_core});
    ops.push_back({"attention_out", {tokens, h, q / t, 1, x}});
    if (m.ffn == ffn_kind::swiglu) {
        ops.push_back({"ffn_gate", {tokens, f, h, 1, x}});
        ops.push_back({"ffn_up", {tokens, f, h, 1, x}});
    } else {
        ops.push_back({"ffn_up", {tokens, f, h, 1, x}});
    }
    ops.push_back({"ffn_down", {tokens, h, f, 1, x}});
    return ops;
}

// The dgrad and wgrad GEMM of every forward GEMM. The attention core has no
// weights: both of its backward GEMMs are input gradients.
inline layer_backward_gemm_list backward_gemms_of(const layer_gemm_list& forward) {
    layer_backward_gemm_list ops;
    for (const auto& g : forward) {
        ops.push_back({g.name, dgrad_of(g.shape), op_phase::backward_data, g.region});
        ops.push_back({g.name, wgrad_of(g.shape),
                       g.region == op_region::attention_core ? op_phase::backward_data
                                                             : op_phase::backward_weight,
                       g.region});
    }
    return ops;
}

// Forward, dgrad and wgrad GEMMs of one layer (the list the cuBLASLt harness runs).
inline std::vector<gemm_op> layer_gemms(const transformer_config& m, int micro_batch, int seq,
                                        int tp, dtype math) {
    const auto forward = layer_forward_gemms(
        m, {.micro_batch = micro_batch, .seq = seq, .tp = tp, .math = math, .activations = math});
    const auto backward = backward_gemms_of(forward);
    std::vector<gemm_op> ops(forward.begin(), forward.end());
    ops.insert(ops.end(), backward.begin(), backward.end());
    return ops;
}

// The memory-bound forward ops of one layer under a framework profile. Sizes are
// per rank: hidden-sized tensors shrink by tp only with sequence parallelism.
// Emits them one by one to sink(const memory_op&); layer_forward_memory_ops collects.
template <class Sink>
constexpr void for_each_layer_forward_memory_op(const transformer_config& m, const layer_context& c,
                                                const framework_profile& fw, Sink&& sink) {
    const double a = size_of(c.activations);
    const double mask = 1.0;  // dropout masks are one byte per element
    const double tokens = double(c.micro_batch) * c.seq;
    const double hidden = tokens * m.hidden / (c.sp ? c.tp : 1);     // norms, dropout, residual
    const double hidden_tp = tokens * m.q_width() / c.tp;            // attention, inside the TP region
    const double ffn = tokens * m.ffn_hidden / c.tp;
    const double scores = double(c.micro_batch) * (m.heads / c.tp) * double(c.seq) * c.seq;
    const auto op = [](std::string_view name, double moved, op_region region = op_region::other) {
        return memory_op{name, bytes_of(moved), op_phase::forward, region, 1};
    };
    const std::string_view norm = m.norm == norm_kind::layernorm ? "layernorm" : "rmsnorm";
    sink(op(norm, 2 * hidden * a));
    if (fw.head_layout_copies) sink(op("split_heads_copy", 2 * 3 * hidden_tp * a));
    if (!fw.flash_attention) {
        const auto core = op_region::attention_core;
        if (fw.fused_softmax) {
            sink(op("scale_mask_softmax", 2 * scores * a, core));
        } else {
            sink(op("scale", 2 * scores * a, core));
            // Causal mask (decoders) or padding mask (encoders): one more pass either way.
            sink(op("attention_mask", 2 * scores * a + scores * mask, core));
            sink(op("softmax", 2 * scores * a, core));
        }
        if (m.dropout) sink(op("attention_dropout", 2 * scores * a + scores * mask, core));
    } else {
        // One fused kernel reads q, k, v and writes the context; GEMM FLOPs stay in the GEMMs.
        sink(op("flash_attention_io", 4 * hidden_tp * a, op_region::attention_core));
    }
    if (fw.head_layout_copies) sink(op("merge_heads_copy", 2 * hidden_tp * a));
    const auto residual_block = [&](std::string_view fused_name, std::string_view dropout_name,
                                    std::string_view add_name) {
        if (!m.dropout) {
            sink(op(add_name, 3 * hidden * a));
        } else if (fw.fused_bias_dropout_add) {
            sink(op(fused_name, 3 * hidden * a + hidden * mask));
        } else {
            sink(op(dropout_name, 2 * hidden * a + hidden * mask));
            sink(op(add_name, 3 * hidden * a));
        }
    };
    residual_block("bias_dropout_add_attention", "dropout_attention", "residual_add_attention");
    // The second norm (before the FFN); one norm feeding attention and FFN in parallel
    // (Falcon-7B) has none, and extra post-norms (norms_per_layer 3-4) are passes like it.
    for (int k = 1; k < m.norms_per_layer; ++k) sink(op(norm, 2 * hidden * a));
    if (m.ffn == ffn_kind::swiglu) {
        // silu(gate) · up: one fused kernel, or silu then multiply.
        if (fw.fused_bias_gelu) {
            sink(op("swiglu", 3 * ffn * a));
        } else {
            sink(op("silu", 2 * ffn * a));
            sink(op("gate_multiply", 3 * ffn * a));
        }
    } else if (fw.fused_bias_gelu) {
        sink(op("bias_gelu", 2 * ffn * a));
    } else {
        for (int k = 0; k < fw.gelu_kernels; ++k) sink(op("gelu_part", 2 * ffn * a));
    }
    residual_block("bias_dropout_add_ffn", "dropout_ffn", "residual_add_ffn");
}

inline layer_memory_list layer_forward_memory_ops(const transformer_config& m, const layer_context& c,
                                                  const framework_profile& fw) {
    validate(c, m);
    layer_memory_list ops;
    for_each_layer_forward_memory_op(m, c, fw, [&ops](const memory_op& op) { ops.push_back(op); });
    return ops;
}

// The elementwise backward of a forward memory op, and of each op of a list.
constexpr memory_op backward_of(const memory_op& f, const framework_profile& fw) {
    return {f.name, fw.backward_traffic_ratio * f.moved, op_phase::backward, f.region, f.launches};
}

inline layer_memory_list backward_of(const layer_memory_list& forward, const framework_profile& fw) {
    layer_memory_list ops;
    for (const auto& f : forward) ops.push_back(backward_of(f, fw));
    return ops;
}

// ---- One micro-batch on the busiest pipeline stage -----------------------------------

// Which part of a micro-batch's time an op adds to.
enum class step_part { forward, backward, tensor_parallel, pipeline };

template <>
struct enum_names<step_part> {
    static constexpr std::array<enum_name<step_part>, 4> table{
        {{step_part::forward, "forward"}, {step_part::backward, "backward"},
         {step_part::tensor_parallel, "tensor-parallel"}, {step_part::pipeline, "pipeline"}}};
};

// An op of the stage: `count` times per micro-batch, and `recomputed` more times when
// backward rebuilds what was not kept (recompute repeats forward ops).
template <class Op>
struct stage_op {
    Op op{};
    double count = 1;
    double recomputed = 0;
    step_part part = step_part::forward;
};

struct stage_workload {
    op_list<stage_op<gemm_op>, 32> gemms;
    op_list<stage_op<memory_op>, 72> memory;
    op_list<stage_op<collective_op>, 4> collectives;
};

// Transformer layers on the busiest stage.
constexpr int stage_layers(const training_setup& s) { return layers_per_stage(s.model, s.layout.pp); }

// The pipeline sends of one micro-batch: activations forward and gradients backward at
// each stage boundary, once per virtual stage; Megatron's scatter-gather splits each
// send over the tp ranks.
constexpr stage_op<collective_op> pipeline_sends(const training_setup& s, const layout_groups& groups) {
    const auto& l = s.layout;
    const double tokens = double(l.micro_batch) * sequence_length(s);
    const bytes message = bytes_of(tokens * s.model.hidden * size_of(s.precision.activations) / l.tp);
    return {{"pipeline_send", collective::p2p, message, stage_pair(groups)}, 2.0 * l.interleave, 0,
            step_part::pipeline};
}

// The busiest stage is the last one (logits and loss); with pp = 1 the only stage
// also embeds. Tensor parallelism: 2 all-reduces of the b·s·h activations per layer
// forward and 2 in backward (Megatron's f/g operators); with sequence parallelism each
// becomes a reduce-scatter plus an all-gather of the same volume, and the scattered
// input of each column-parallel GEMM is all-gathered again in backward for its weight
// gradient: 2 more all-gathers per layer (Korthikanti et al. 2022, §4.2.2). Full
// recompute repeats the forward's collectives.
//
// The ops go to sink(const stage_op<gemm_op>&), sink(const stage_op<memory_op>&) and
// sink(const stage_op<collective_op>&) one by one; micro_batch_workload collects them.
template <class Sink>
constexpr void for_each_stage_op(const training_setup& s, Sink&& sink) {
    const auto& m = s.model;
    const auto& l = s.layout;
    const auto& fw = s.framework;
    const int seq = sequence_length(s);
    const layer_context ctx{.micro_batch = l.micro_batch, .seq = seq, .tp = l.tp, .sp = l.sp,
                            .math = s.precision.math, .activations = s.precision.activations};
    const double layers = stage_layers(s);
    const auto recomputed = [&](op_region region) {
        if (l.recompute == recompute_mode::full) return layers;
        if (l.recompute == recompute_mode::selective && region == op_region::attention_core) return layers;
        return 0.0;
    };

    const auto forward_gemms = layer_forward_gemms(m, ctx);
    for (const auto& g : forward_gemms)
        sink(stage_op<gemm_op>{g, layers, recomputed(g.region), step_part::forward});
    for (const auto& g : backward_gemms_of(forward_gemms))
        sink(stage_op<gemm_op>{g, layers, 0, step_part::backward});
    for_each_layer_forward_memory_op(m, ctx, fw, [&](const memory_op& op) {
        sink(stage_op<memory_op>{op, layers, recomputed(op.region), step_part::forward});
        sink(stage_op<memory_op>{backward_of(op, fw), layers, 0, step_part::backward});
    });

    // Head and loss: the logits GEMM over the vocabulary (split by tp) and the loss's
    // upcast/softmax/cross-entropy, a few passes over b·s·V/t, forward and backward.
    const double tokens = double(l.micro_batch) * seq;
    const double a = size_of(s.precision.activations);
    const gemm_shape logits{tokens, double(m.vocab) / l.tp, double(m.hidden), 1, s.precision.math};
    sink(stage_op<gemm_op>{{"logits", logits, op_phase::forward}, 1, 0, step_part::forward});
    sink(stage_op<gemm_op>{{"logits", dgrad_of(logits), op_phase::backward_data}, 1, 0, step_part::backward});
    sink(stage_op<gemm_op>{{"logits", wgrad_of(logits), op_phase::backward_weight}, 1, 0, step_part::backward});
    const double loss_element = fw.memory.fp32_logits ? size_of(dtype::fp32) : a;
    // ASSUMPTION: 4 passes (upcast write, softmax read and write, cross-entropy read).
    constexpr double loss_passes = 4.0;
    const bytes loss_traffic = bytes_of(tokens * double(m.vocab) / l.tp * loss_element * loss_passes);
    sink(stage_op<memory_op>{{"loss", loss_traffic, op_phase::forward}, 1, 0, step_part::forward});
    sink(stage_op<memory_op>{{"loss", loss_traffic, op_phase::backward}, 1, 0, step_part::backward});
    if (l.pp == 1) {
        // Embedding lookup (and positions) forward, its scatter-add backward. ASSUMPTION:
        // 3 passes over b·s·h (read the rows, read the positions, write the sum).
        const bytes embedding = bytes_of(3.0 * tokens * m.hidden * a);
        sink(stage_op<memory_op>{{"embedding", embedding, op_phase::forward}, 1, 0,
                                 step_part::forward});
        sink(stage_op<memory_op>{{"embedding", embedding, op_phase::backward}, 1, 0,
                                 step_part::backward});
    }

    const layout_groups groups = place(l, s.cluster.gpus_per_node, s.cluster.order);
    if (l.tp > 1) {
        const bytes activation = bytes_of(tokens * m.hidden * a);
        const double full = l.recompute == recompute_mode::full ? 2.0 * layers : 0.0;
        const auto tensor_parallel = [&](std::string_view name, collective kind, double count) {
            sink(stage_op<collective_op>{{name, kind, activation, groups.tensor}, count * layers, full,
                                         step_part::tensor_parallel});
        };
        if (l.sp) {
            tensor_parallel("sequence_parallel_all_gather", collective::all_gather, 6);
            tensor_parallel("sequence_parallel_reduce_scatter", collective::reduce_scatter, 4);
        } else {
            tensor_parallel("tensor_parallel_all_reduce", collective::all_reduce, 4);
        }
    }
    if (l.pp > 1) sink(pipeline_sends(s, groups));
}

inline stage_workload micro_batch_workload(const training_setup& s) {
    stage_workload w;
    struct collect {
        stage_workload& w;
        void operator()(const stage_op<gemm_op>& op) { w.gemms.push_back(op); }
        void operator()(const stage_op<memory_op>& op) { w.memory.push_back(op); }
        void operator()(const stage_op<collective_op>& op) { w.collectives.push_back(op); }
    };
    for_each_stage_op(s, collect{w});
    return w;
}

// ---- Once per step ---------------------------------------------------------------------

// Parameters held (and updated) by one GPU, after tp·pp model splitting (before ZeRO).
constexpr double parameters_per_gpu(const training_setup& s, const model_state& model) {
    return model.parameters / (double(s.layout.tp) * s.layout.pp);
}

// When a per-step collective runs relative to the micro-batches and the optimizer.
enum class sync_point {
    every_micro_batch,   // during every micro-batch's backward
    end_of_backward,     // once, may overlap the last micro-batch's backward
    after_optimizer,     // once, after the update: exposed
    end_of_step,         // once, outside any overlap: exposed
};

template <>
struct enum_names<sync_point> {
    static constexpr std::array<enum_name<sync_point>, 4> table{
        {{sync_point::every_micro_batch, "every-micro-batch"}, {sync_point::end_of_backward, "end-of-backward"},
         {sync_point::after_optimizer, "after-optimizer"}, {sync_point::end_of_step, "end-of-step"}}};
};

struct sync_op {
    collective_op op{};
    sync_point when = sync_point::end_of_step;
    double count = 1;
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
    op_list<sync_op, 6> sync;
    optimizer_work optimizer{};
};

// Bytes the update touches per parameter: it reads the gradient, reads and writes the
// fp32 master (or the weights themselves) and every state tensor; around it the
// gradient-norm clip reads every gradient, mixed precision copies the master back into
// the 16-bit weights, and a persistent fp32 gradient buffer (Megatron main_grad) is
// zeroed for the next step.
constexpr double optimizer_bytes_per_parameter(const training_setup& s, const model_state& model) {
    const precision_recipe stored = stored_precision(s);
    const double state = model.optimizer_state.value() / model.parameters;
    const double grad = size_of(stored.gradients);
    const double weights = size_of(s.precision.weights);
    const double master = size_of(dtype::fp32);
    const double update = grad + 2 * (s.precision.fp32_master ? master : weights) + 2 * state;
    const double around = grad + (s.precision.fp32_master ? master + weights : 0.0) +
                          (s.framework.fp32_gradient_accumulation ? grad : 0.0);
    return update + around;
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
    const double partition = local / (l.zero >= 1 ? l.dp : 1.0);
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
    const double shard = l.zero >= 1 ? l.dp : 1.0;
    const double params = parameters_per_gpu(s, model) / shard;
    const double moved = params * optimizer_bytes_per_parameter(s, model);
    optimizer_work w;
    if (fw.fused_optimizer || is_fused(s.optimizer)) {
        // Multi-tensor apply: a handful of launches, one pass over everything.
        w.update = {"optimizer_update", bytes_of(moved), op_phase::backward, op_region::other, 1};
        return w;
    }
    const double tensors = model.tensors / (double(l.tp) * l.pp);
    w.update = {"optimizer_update", bytes_of(moved * fw.unfused_optimizer_passes),
                op_phase::backward, op_region::other, tensors * fw.unfused_kernels_per_tensor};
    return w;
}

// Data-parallel synchronisation of one GPU's shard. ZeRO 0 keeps whole gradients and
// all-reduces them once per step; ZeRO-1 reduce-scatters them instead and all-gathers
// the updated weights after its shard's update. ZeRO-2 keeps only its gradient shard,
// so it reduce-scatters after every micro-batch; ZeRO-3 also gathers the weights for
// every micro-batch's forward and backward (Rajbhandari et al. 2020, §5 and §7: 1.5×
// the all-reduce volume per pass). Tied embeddings split over the first and the last
// pipeline stage have their gradients all-reduced between those two stages (Megatron).
constexpr step_ops step_workload(const training_setup& s, const model_state& model) {
    const auto& l = s.layout;
    step_ops w;
    w.optimizer = optimizer_workload(s, model);
    const layout_groups groups = place(l, s.cluster.gpus_per_node, s.cluster.order);
    const double params = parameters_per_gpu(s, model);
    const bytes gradients = bytes_of(params * size_of(stored_precision(s).gradients));
    const bytes weights = bytes_of(params * size_of(s.precision.weights));
    if (l.dp > 1) {
        const auto op = [&](std::string_view name, collective kind, bytes size) {
            return collective_op{name, kind, size, groups.data};
        };
        const collective_op reduce = op("gradient_reduce_scatter", collective::reduce_scatter, gradients);
        const collective_op gather = op("weight_all_gather", collective::all_gather, weights);
        switch (l.zero) {
            case 0:
                w.sync.push_back({op("gradient_all_reduce", collective::all_reduce, gradients),
                                  sync_point::end_of_backward});
                break;
            case 1:
                w.sync.push_back({reduce, sync_point::end_of_backward});
                w.sync.push_back({gather, sync_point::after_optimizer});
                break;
            case 2:
                w.sync.push_back({reduce, sync_point::every_micro_batch});
                w.sync.push_back({gather, sync_point::after_optimizer});
                break;
            default:
                w.sync.push_back({reduce, sync_point::every_micro_batch});
                w.sync.push_back({gather, sync_point::every_micro_batch, 2});
                break;
        }
    }
    if (l.pp > 1 && s.model.tied_embeddings) {
        const bytes embedding = bytes_of(double(s.model.vocab) * s.model.hidden / l.tp *
                                         size_of(stored_precision(s).gradients));
        w.sync.push_back({{"tied_embedding_all_reduce", collective::all_reduce, embedding, stage_pair(groups)},
                          sync_point::end_of_step});
    }
    return w;
}

inline optimizer_work optimizer_workload(const training_setup& s) { return optimizer_workload(s, model_state_of(s)); }
inline step_ops step_workload(const training_setup& s) { return step_workload(s, model_state_of(s)); }

}  // namespace trainperf
