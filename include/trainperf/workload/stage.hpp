// One micro-batch on the busiest pipeline stage, as ops: the layers' GEMMs, memory-bound
// ops, fused attention and FP8 casts (recompute repeating forward ops), the host's calls,
// tensor-parallel collectives, context parallelism's KV ring, LoRA adapters, the
// embedding, the head and loss, and the stage's pipeline sends. micro_batch_workload()
// collects them; for_each_stage_op() streams them to a sink (cost/stage_pricer.hpp).
#pragma once

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
#include "head.hpp"
#include "layer.hpp"
#include "moe_layer.hpp"
#include "ops.hpp"
#include "placement.hpp"

namespace trainperf {

struct stage_workload {
    // A layer's GEMMs (at most 30 with latent attention), the head's 3; adapters add 6 per
    // target; an MoE model a second layer kind and 9 routed, a multi-token prediction
    // module a layer of each, 3 more and the head again.
    op_list<stage_op<gemm_op>, 128> gemms;
    op_list<stage_op<memory_op>, 256> memory;
    op_list<stage_op<collective_op>, 64> collectives;  // an MoE model's dispatch adds at most 12 per layer kind, a head 4
    op_list<stage_op<host_op>, 112> host;  // for_each_layer_host_op: at most 17 per layer kind; a head 3
    // The fused attention kernel, forward and backward, of each layer kind (a dense layer,
    // an MoE layer's dense part, a multi-token prediction module's layer).
    op_list<stage_op<attention_op>, 6> attention;
};

// Transformer layers on the busiest stage.
constexpr int stage_layers(const training_setup& s) { return layers_per_stage(s.model, s.layout.pp); }

// The setup's layout placed on its cluster (workload/placement.hpp place): which ranks share an
// NVLink domain (the node, or an NVL72 rack), for every group. The overloads below that take
// `groups` expect this value; a prediction computes it once and passes it on.
constexpr layout_groups groups_of(const training_setup& s) {
    return place(s.layout, gpus_per_domain(s.cluster), s.cluster.order);
}

// The pipeline sends of one micro-batch: activations forward and gradients backward at
// each stage boundary, once per virtual stage; Megatron's scatter-gather splits each
// send over the tp ranks.
constexpr stage_op<collective_op> pipeline_sends(const training_setup& s, const layout_groups& groups) {
    const auto& l = s.layout;
    const double tokens = double(l.micro_batch) * sequence_length(s) / l.cp;  // this rank's s/cp
    // The residual stream (fp32 under autocast).
    const double residual = size_of(activation_formats_of(s.precision).residual);
    const bytes message = bytes_of(tokens * s.model.hidden * residual / l.tp);
    return {{"pipeline_send", collective::p2p, message, stage_pair(groups)}, 2.0 * l.interleave, 0,
            step_part::pipeline};
}

// Context parallelism's KV ring, p2p type (Megatron-Core
// docs/user-guide/features/context_parallel.md@d98e8a64, cp_comm_type "p2p", the
// default; TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/
// context_parallel.py@d0067d0d, AttnFuncWithCPAndKVP2P; Liu et al. 2023, Ring
// Attention, arXiv:2310.01889): forward runs cp steps, each sending the K and V chunk in
// hand to the next rank while attending to it, cp − 1 sends of 2·b·(s/cp)·kv/t elements
// in the activation format (kv = kv heads × d, so GQA shrinks it; fewer kv heads than
// t leave one replicated head per rank); backward passes KV around the ring again and
// the dKV chunks with it (TE sends dKV to the next rank at each step: a reduce-scatter
// in ring form), 2·(cp − 1) sends of the same size. Recomputing the attention core
// (selective or full recompute) runs the forward ring again. On the cp group's link.
// `layers` layers; the two ops are tagged with their pass (forward, backward).
//
// Each step attends to one KV chunk and yields a partial output and log-sum-exp, which
// are merged into the rank's output (framework_profile::ring_merge), per element of the
// output (b·(s/cp)·q/t), a its 16-bit format:
//   fused (Transformer Engine): per step one kernel reads the fp32 output and the
//     step's partial and writes the output, 4 + a + 4 B, and one corrects the
//     log-sum-exp (rows only, its bytes left out); the output cast back once, 4 + a:
//     cp·(8 + a) + (4 + a) B over 2·cp + 1 launches;
//   eager (PyTorch's _SDPAMerger): each step after the first casts the partial to
//     fp32 (a + 4), subtracts it from the output (12), scales the difference by the
//     sigmoid of the log-sum-exp gap (8) and subtracts that from the output (12), over
//     8 kernels with the log-sum-exp's own (cast, subtract, sigmoid, logsigmoid,
//     subtract: rows only); the output cast back once: (cp − 1)·(36 + a) + (4 + a) B
//     over 8·(cp − 1) + 1 launches.
// Backward accumulates each step's dQ into an fp32 dQ and the dK, dV it passes on
// (ASSUMPTION: one fp32 read-modify-write of the step's 16-bit gradient per step,
// 8 + a B per element of Q and of K and V, one kernel each when fused; eager, a cast and
// an add, two kernels each, (a + 4) + 12 B).
template <class Sink>
constexpr void for_each_kv_ring_op(const training_setup& s, const layout_groups& groups, double layers,
                                   double recomputed, Sink&& sink) {
    const auto& l = s.layout;
    const auto& m = s.model;
    if (l.cp == 1) return;
    const double tokens = double(l.micro_batch) * sequence_length(s) / l.cp;
    // K and V per token on this rank (latent attention: every head's key of d_qk and value
    // of d_v after the up projection).
    const double kv_per_rank = m.mla.enabled() ? m.heads / double(l.tp) * (m.qk_head_dim() + m.v_head_dim()) / 2
                                               : kv_width_per_rank(m, l.tp);
    const double a = size_of(activation_formats_of(s.precision).gemm_inputs);
    const bytes chunk = bytes_of(2 * tokens * kv_per_rank * a);
    const double sends = l.cp - 1.0;
    sink(stage_op<collective_op>{{"context_parallel_kv_send", collective::p2p, chunk, groups.context,
                                  op_phase::forward},
                                 sends * layers, sends * recomputed, step_part::context_parallel});
    sink(stage_op<collective_op>{{"context_parallel_kv_dkv_send", collective::p2p, chunk, groups.context,
                                  op_phase::backward},
                                 2 * sends * layers, 0, step_part::context_parallel});
    const double out = tokens * m.heads * m.v_head_dim() / double(l.tp);  // output elements on this rank
    const double kv = 2 * tokens * kv_per_rank;           // K and V elements
    const double cp = l.cp, f32 = size_of(dtype::fp32);
    const bool fused = s.framework.ring_merge == kv_ring_merge::fused;
    const auto op = [&](std::string_view name, double moved, double launches, op_phase phase) {
        return memory_op{name, bytes_of(moved), phase, op_region::other, launches, layer_block::attention};
    };
    const memory_op merge =
        fused ? op("context_parallel_merge", out * (cp * (2 * f32 + a) + (f32 + a)), 2 * cp + 1, op_phase::forward)
              : op("context_parallel_merge", out * ((cp - 1) * (9 * f32 + a) + (f32 + a)), 8 * (cp - 1) + 1,
                   op_phase::forward);
    const double per_element = fused ? 2 * f32 + a : (a + f32) + 3 * f32;
    const memory_op accumulate = op("context_parallel_gradient_accumulation", (out + kv) * cp * per_element,
                                    (fused ? 2.0 : 4.0) * cp, op_phase::backward);
    sink(stage_op<memory_op>{merge, layers, recomputed, step_part::forward});
    sink(stage_op<memory_op>{accumulate, layers, 0, step_part::backward});
}

// The adapters' ops of one layer (LoRA, QLoRA), `layers` times per micro-batch and
// `recomputed` more with full recompute; returns the forward kernel launches. Per
// adapted projection W (d_in → d_out), after Hu et al. 2021 §4.1, h = W·x + B·A·x:
//   forward: x·A (tokens × r over d_in) and (xA)·B (tokens × d_out over r), then the
//     scaling (α/r) multiply and the add into W's output: 2a + 3a = 5a bytes per output
//     element over 2 kernels, a the GEMM format;
//   backward: the dgrad and the wgrad of both GEMMs (A's and B's weight gradients, and
//     the input gradients the layer below needs), the elementwise backward of the add.
// Tensor parallelism splits B's output for a column-parallel projection and A's input
// for a row-parallel one (ASSUMPTION: as the projection itself is split; r is whole).
// Under autocast the fp32 adapter weights are cast to 16 bits once per forward (and
// their gradients cast back), 4 + 2 B per parameter.
// QLoRA: before each GEMM that uses a 4-bit weight, bitsandbytes dequantizes it to 16
// bits, a memory-bound kernel reading qlora_bytes_per_parameter (NF4 values and their
// constants) and writing the 16-bit weight, once per projection, in forward and again
// in backward for the dgrad (ASSUMPTION: bitsandbytes' 4-bit matmul, MatMul4Bit,
// dequantizes then runs a 16-bit matmul, in forward and for the input gradient in
// backward, and keeps no dequantized copy between them; full recompute dequantizes
// again with the forward it repeats).
template <class Sink>
constexpr double for_each_adapter_op(const training_setup& s, const layer_context& ctx, double layers,
                                     double recomputed, Sink&& sink) {
    const auto& m = s.model;
    const finetune_spec& ft = s.finetune;
    const double tokens = rank_tokens(ctx);
    const double t = ctx.tp, r = ft.rank;
    const double a = size_of(activation_formats_of(ctx.activations, ctx.autocast).gemm_inputs);
    double launches = 0, outputs = 0;
    for (const auto& x : lora_matrices(m)) {
        if (!x.present || !ft.adapts(x.target)) continue;
        const double d_in = x.column_parallel ? x.d_in : x.d_in / t;
        const double d_out = x.column_parallel ? x.d_out / t : x.d_out;
        const layer_block block =
            x.target == lora_target::gate || x.target == lora_target::up || x.target == lora_target::down
                ? layer_block::mlp
                : layer_block::attention;
        const gemm_op down{x.a_name, {tokens, r, d_in, 1, ctx.math}, op_phase::forward, op_region::other, block};
        const gemm_op up{x.b_name, {tokens, d_out, r, 1, ctx.math}, op_phase::forward, op_region::other, block};
        for (const gemm_op& g : {down, up}) {
            sink(stage_op<gemm_op>{g, layers, recomputed, step_part::forward});
            sink(stage_op<gemm_op>{{g.name, dgrad_of(g.shape), op_phase::backward_data, g.region, block}, layers, 0,
                                   step_part::backward});
            sink(stage_op<gemm_op>{{g.name, wgrad_of(g.shape), op_phase::backward_weight, g.region, block}, layers, 0,
                                   step_part::backward});
        }
        launches += 2;
        outputs += tokens * d_out;
    }
    const double adapted = adapted_matrices_per_layer(m, ft);
    const auto both = [&](const memory_op& f) {
        launches += f.launches;
        sink(stage_op<memory_op>{f, layers, recomputed, step_part::forward});
        sink(stage_op<memory_op>{backward_of(f, s.framework), layers, 0, step_part::backward});
    };
    both({"lora_scale_add", bytes_of(5 * a * outputs), op_phase::forward, op_region::other, 2 * adapted,
          layer_block::other});
    if (ctx.autocast)
        both({"autocast_lora_weight_cast", bytes_of(adapter_parameters_per_layer(m, ft) / t * (size_of(dtype::fp32) + a)),
              op_phase::forward, op_region::other, 2 * adapted, layer_block::other, true});
    if (ft.quantized()) {
        const double matrices = layer_projection_matrices(m);
        const bytes moved = bytes_of(layer_projection_matrix_parameters(m) / t *
                                     (qlora_bytes_per_parameter + frozen_weight_bytes(s.precision)));
        const memory_op forward{"dequantize_4bit", moved, op_phase::forward, op_region::other, matrices,
                                layer_block::other, true};
        launches += matrices;
        sink(stage_op<memory_op>{forward, layers, recomputed, step_part::forward});
        sink(stage_op<memory_op>{{"dequantize_4bit", moved, op_phase::backward, op_region::other, matrices,
                                  layer_block::other, true},
                                 layers, 0, step_part::backward});
    }
    return launches;
}

// The tensor-parallel blocks of a layer: attention and the FFN (1), or attention alone in
// the dense part of an MoE layer without shared experts (ffn_hidden 0: the routed
// experts' dispatch replaces the FFN's collectives).
constexpr double tensor_parallel_blocks(const transformer_config& m) { return m.ffn_hidden > 0 ? 1.0 : 0.5; }

// What the host calls for one layer besides the kernels' launches (which cost/stage_pricer.hpp
// charges per launch), to sink(const stage_op<host_op>&), `layers` times:
//   - views and module calls in forward (again when recomputed), from the model's code
//     (host_calls_per_layer) or the framework's own layer (framework_profile::layer_host);
//   - in backward one autograd node per recorded op and view, and one AccumulateGrad per
//     parameter tensor;
//   - the framework's own layer: its Python Functions (apply in forward, a Python
//     backward each), scripted calls, RNG tracker forks, Transformer Engine modules'
//     bookkeeping, the data-parallel wrapper's hook per parameter;
//   - each tensor-parallel collective called from Python (forward: 2 all-reduces, or 2
//     all-gathers and 2 reduce-scatters with sequence parallelism; backward: 2, or 4
//     all-gathers and 2 reduce-scatters; Megatron-LM megatron/mpu/layers.py and
//     mappings.py@28ba253f);
//   - a full-recompute checkpoint's Function, state saves and restores (spec/framework.hpp
//     checkpoint_rng_calls).
// With CUDA graphs (framework_profile::cuda_graphs) all of that is captured: each pass of
// a layer is one replay Function, the copy of its static inputs and the graph's launch
// (Megatron-Core cuda_graphs.py@d98e8a64 _CudagraphReplayNode); cost/stage_pricer.hpp then charges no
// launch of the layer's kernels. ASSUMPTION: the layer's autograd nodes and gradient
// hooks go with them (the replay node stands for the layer's graph in backward).
template <class Sink>
constexpr void for_each_layer_host_op(const training_setup& s, double layers, double forward_launches,
                                      Sink&& sink) {
    const auto& m = s.model;
    const auto& l = s.layout;
    const auto& fw = s.framework;
    const auto host = [&](std::string_view name, host_call call, double count, double recomputed, step_part part) {
        if (count > 0)
            sink(stage_op<host_op>{{name, call, count,
                                    part == step_part::forward ? op_phase::forward : op_phase::backward},
                                   layers, recomputed, part});
    };
    const auto fwd = step_part::forward;
    const auto bwd = step_part::backward;
    if (fw.cuda_graphs) {
        host("layer_graph_replay", host_call::function, 1, 0, fwd);
        host("layer_graph_launch", host_call::graph_launch, 2, 0, fwd);
        host("layer_graph_replay", host_call::function_backward, 1, 0, bwd);
        host("layer_graph_launch", host_call::graph_launch, 2, 0, bwd);
        return;
    }
    const bool full = l.recompute == recompute_mode::full;
    const bool op_level = l.recompute == recompute_mode::op_selective;
    const double again = full || op_level ? 1.0 : 0.0;  // forward calls repeated per layer when recomputed
    const double blocks = tensor_parallel_blocks(m);
    const model_code code = code_run(m, fw);
    const finetune_spec& ft = s.finetune;
    const bool frozen = ft.freezes_base();
    if (fw.compiled) {
        // torch.compile: the layer's module call, then one compiled region per pass (the
        // checkpoint and its recompute are traced into the regions, Dynamo's
        // higher-order op); the backward is one autograd node (the compiled Function)
        // and an AccumulateGrad per parameter. Its kernels' launches are charged by the
        // pricer (compiled_launch). The tensor-parallel collectives stay c10d calls.
        host("layer_modules", host_call::module, 1, 0, fwd);
        host("layer_compiled_region", host_call::compiled_graph, 1, 0, fwd);
        host("layer_compiled_region", host_call::compiled_graph, 1, 0, bwd);
        host("layer_autograd_nodes", host_call::backward_node,
             1 + (frozen ? 2 * adapted_matrices_per_layer(m, ft) : layer_parameter_tensors(m, code)), 0, bwd);
        if (l.tp > 1 && !overlaps_tensor_parallel(s)) {
            host("tensor_parallel_calls", host_call::collective, blocks * (l.sp ? 4 : 2), again * layers, fwd);
            host("tensor_parallel_calls", host_call::collective, blocks * (l.sp ? 6 : 2), 0, bwd);
        }
        return;
    }
    const bool own = !fw.runs_model_code && fw.layer_host.described();
    const layer_host_inventory& inv = fw.layer_host;
    const host_calls calls = own ? host_calls{inv.views, inv.modules} : host_calls_per_layer(code).total();
    host("layer_views", host_call::view, calls.views, again * layers, fwd);
    // Fine-tuning: PEFT's LoRA layer calls its base layer, the adapter dropout, A and B
    // (ASSUMPTION: 3 module calls per adapted projection besides the base's own); only
    // the adapters' A and B have an AccumulateGrad node.
    const double adapted = adapted_matrices_per_layer(m, ft);
    const double parameter_tensors = frozen ? 2 * adapted : layer_parameter_tensors(m, code);
    host("layer_modules", host_call::module, calls.modules + 3 * adapted, again * layers, fwd);
    host("layer_autograd_nodes", host_call::backward_node, forward_launches + calls.views + parameter_tensors, 0,
         bwd);
    if (own) {
        const double functions =
            inv.functions + (m.positions == position_kind::rotary ? inv.rotary_functions : 0.0);
        host("layer_functions", host_call::function, functions + inv.scripted_calls, again * layers, fwd);
        host("layer_functions", host_call::function_backward, functions, 0, bwd);
        host("layer_rng_forks", host_call::rng_state, 4 * inv.rng_forks, again * layers, fwd);
        host("layer_library_modules", host_call::library_module, inv.library_modules, again * layers, fwd);
        host("layer_library_modules", host_call::library_module_backward, inv.library_modules, 0, bwd);
        if (inv.gradient_hooks) host("layer_gradient_hooks", host_call::gradient_hook, parameter_tensors, 0, bwd);
    }
    // With tensor-parallel overlap Transformer Engine's userbuffers move the data from C++:
    // no Python collective (ASSUMPTION: their set-up is in the TE modules' bookkeeping).
    if (l.tp > 1 && !overlaps_tensor_parallel(s)) {
        host("tensor_parallel_calls", host_call::collective, blocks * (l.sp ? 4 : 2), again * layers, fwd);
        host("tensor_parallel_calls", host_call::collective, blocks * (l.sp ? 6 : 2), 0, bwd);
    }
    if (full || op_level) {
        host("checkpoint", host_call::function, 1, 0, fwd);
        host("checkpoint", host_call::function_backward, 2, 0, bwd);
        if (fw.checkpoint_rng_state) {
            host("checkpoint_rng_states", host_call::rng_state, checkpoint_rng_calls_forward, 0, fwd);
            host("checkpoint_rng_states", host_call::rng_state, checkpoint_rng_calls_backward, 0, bwd);
        }
    }
    // Op-level checkpointing's policy runs in a Python TorchDispatchMode on every op the
    // layer dispatches, in its forward and again in the recompute (the kernels and the
    // views; torch/utils/checkpoint.py _CachingTorchDispatchMode and
    // _CachedTorchDispatchMode).
    if (op_level) host("checkpoint_policy", host_call::dispatch_mode, forward_launches + calls.views, layers, fwd);
}

// A pipeline stage: its layers (of which moe_layers are MoE layers), and whether it
// embeds (the first), holds the head and loss (the last; the logits and loss of the
// multi-token prediction modules too) or runs the model's multi-token prediction modules
// (the last, or where a custom pipeline layout puts them: spec/pipeline_layout.hpp); with
// pp = 1 the one stage does all.
struct stage_shape {
    double layers = 1;
    bool embedding = true;
    bool head = true;
    double moe_layers = 0;
    bool mtp = false;
};

// Which part of a stage an op belongs to, for a sink that wants to know: each of its
// layers, the head and loss, the embedding, or the stage as a whole (pipeline sends, FP8
// amax bookkeeping's launches). A sink with a member section(stage_section) is told
// before the ops of each part.
// An MoE model's MoE layer is two parts: moe_layer (attention, norms, shared experts: a
// dense layer's ops) and experts (the routed part, workload/moe_layer.hpp); `layer` is
// then each dense layer. mtp: the multi-token prediction modules' projections and layers
// (their logits and loss are the head's).
enum class stage_section { layer, head, embedding, stage, moe_layer, experts, mtp };

template <>
struct enum_names<stage_section> {
    static constexpr std::array<enum_name<stage_section>, 7> table{
        {{stage_section::layer, "layer"}, {stage_section::head, "head"}, {stage_section::embedding, "embedding"},
         {stage_section::stage, "stage"}, {stage_section::moe_layer, "moe-layer"},
         {stage_section::experts, "experts"}, {stage_section::mtp, "mtp"}}};
};

template <class Sink>
constexpr void enter_section(Sink& sink, stage_section part) {
    if constexpr (requires { sink.section(part); }) sink.section(part);
}

// The ops of `layers` transformer layers for one micro-batch: the GEMMs, the fused
// attention kernel, the memory-bound ops, the adapters', FP8's casts and amax history, the
// host's calls, and the tensor-parallel collectives and the KV ring. Tensor parallelism: 2
// all-reduces of the b·s·h activations per layer forward and 2 in backward (Megatron's
// f/g operators); with sequence parallelism each becomes a reduce-scatter plus an
// all-gather of the same volume, and the scattered input of each column-parallel GEMM
// is all-gathered again in backward for its weight gradient: 2 more all-gathers per
// layer (Korthikanti et al. 2022, §4.2.2). Full recompute repeats the forward's ops,
// collectives included; selective recompute the attention core's.
// `moe_part`: the layers are MoE layers' dense parts (spec/model.hpp moe_dense_part), whose
// FFN is the shared experts'.
template <class Sink>
constexpr void for_each_layer_op(const training_setup& s, const layer_context& ctx, const layout_groups& groups,
                                 double layers, Sink&& sink, bool moe_part = false) {
    const auto& m = s.model;
    const auto& l = s.layout;
    const auto& fw = s.framework;
    const bool frozen = s.finetune.freezes_base();
    // What each recompute mode repeats of the forward: selective the submodules it names
    // (the attention core by default; spec/recompute_modules.hpp), full everything;
    // op-level selective every op but the fused attention kernel's (its output is saved)
    // and the matmuls it keeps (op_selective_keeps_output).
    const bool op_level = l.recompute == recompute_mode::op_selective;
    const recompute_module_set modules = recomputed_modules(l);
    const double recomputed_core = modules.contains(recompute_module::core_attn) ||
                                           l.recompute == recompute_mode::full || (op_level && !fw.flash_attention)
                                       ? layers
                                       : 0.0;
    const double recomputed_other = l.recompute == recompute_mode::full || op_level ? layers : 0.0;
    const auto recomputed = [&](op_region region) {
        return region == op_region::attention_core ? recomputed_core : recomputed_other;
    };
    // Submodules recomputed by name: the MLP whole (a dense layer's mlp; an MoE layer's
    // shared experts, with moe or shared_experts) but the residual add after it and, in an
    // MoE layer, the pre-MLP norm (its output is kept); a norm that is a module of its own
    // (layernorm: an MoE layer's pre-MLP norm, latent attention's input norm); latent
    // attention's up projections, their norms and RoPE (mla_up_proj).
    const bool mlp_again = m.ffn_hidden > 0 && (moe_part ? modules.contains(recompute_module::moe) ||
                                                               modules.contains(recompute_module::shared_experts)
                                                         : modules.contains(recompute_module::mlp));
    const bool up_proj_again = modules.contains(recompute_module::mla_up_proj);
    // (Only asked for submodules beyond the attention core: the usual prediction compares no names.)
    const bool named = !(modules.empty() || modules == default_recompute_modules);
    const auto by_module = [&](std::string_view name, layer_block block) {
        const bool norm = name == "rmsnorm" || name == "layernorm";
        const bool residual = name.starts_with("bias_dropout_add") || name.starts_with("dropout_") ||
                              name.starts_with("residual_add");
        if (mlp_again && block == layer_block::mlp && !residual && !(moe_part && norm)) return true;
        if (norm && modules.contains(recompute_module::layernorm) &&
            ((moe_part && block == layer_block::mlp) || (m.mla.enabled() && block == layer_block::attention)))
            return true;
        // (Without a query latent, the query projection is the up projection: "q".)
        return up_proj_again && (name == "q_up" || name == "kv_up" || (name == "q" && m.mla.enabled()) ||
                                 name == "mla_latent_norms" || name == "mla_rope_assemble" || name == "rotary");
    };
    const auto recomputed_memory = [&](const memory_op& op) {
        if (named && op.region != op_region::attention_core && by_module(op.name, op.block)) return layers;
        return recomputed(op.region);
    };
    const auto recomputed_gemm = [&](const gemm_op& g) {
        if (op_level && g.region != op_region::attention_core &&
            op_selective_keeps_output(m, g.name, ctx.code, ctx.quantized_linears))
            return 0.0;
        if (named && g.region != op_region::attention_core && by_module(g.name, g.block)) return layers;
        return recomputed(g.region);
    };

    const auto forward_gemms = layer_forward_gemms(m, ctx);
    double forward_launches = 0;
    for (const auto& g : forward_gemms)
        if (runs_as_gemm(g, fw)) {
            sink(stage_op<gemm_op>{g, layers, recomputed_gemm(g), step_part::forward});
            forward_launches += 1;
        }
    // A frozen weight needs no weight gradient: its wgrad GEMM does not run; its dgrad
    // still does, to carry the gradient to the adapters below (Hu et al. 2021 §4.2).
    for_each_backward_gemm(forward_gemms, [&](const gemm_op& g) {
        if (runs_as_gemm(g, fw) && !(frozen && g.phase == op_phase::backward_weight))
            sink(stage_op<gemm_op>{g, layers, 0, step_part::backward});
    });
    if (fw.flash_attention) {
        // Its backward recomputes the scores itself; recompute of the core (selective,
        // full) runs the forward kernel again.
        const fused_attention_ops core = attention_core_ops(m, ctx, fw);
        sink(stage_op<attention_op>{core.forward, layers, recomputed(op_region::attention_core), step_part::forward});
        sink(stage_op<attention_op>{core.backward, layers, 0, step_part::backward});
        forward_launches += 1;
    }
    for_each_layer_forward_memory_op(m, ctx, fw, [&](const memory_op& op) {
        if (has_forward_kernel(op)) {
            forward_launches += op.launches;
            sink(stage_op<memory_op>{op, layers, recomputed_memory(op), step_part::forward});
        }
        sink(stage_op<memory_op>{backward_of(op, fw), layers, 0, step_part::backward});
    });
    if (frozen) forward_launches += for_each_adapter_op(s, ctx, layers, recomputed(op_region::other), sink);
    // FP8 (Transformer Engine): the Linear GEMMs' casts, repeated with the forward they
    // belong to; they run inside the Linear's autograd function (no node of their own).
    // (Without fp8 the list is empty; the test only spares building it.)
    if (ctx.quantized_linears)
        for (const memory_op& q : layer_fp8_quantization_ops(m, ctx)) {
            const bool forward = q.phase == op_phase::forward;
            sink(stage_op<memory_op>{q, layers, forward ? recomputed_memory(q) : 0.0,
                                     forward ? step_part::forward : step_part::backward});
        }
    // Delayed scaling's amax-history update: its bytes grow with the stage's modules,
    // its launch is the stage's (for_each_stage_op).
    if (ctx.quantized_linears && ctx.scaling == fp8_scaling::delayed) {
        const double modules = fp8_linear_modules_per_layer(m, ctx.code);
        for (op_phase phase : {op_phase::forward, op_phase::backward}) {
            memory_op bytes_part = fp8_amax_update(modules, phase);
            bytes_part.launches = 0;
            sink(stage_op<memory_op>{bytes_part, layers, 0,
                                     phase == op_phase::forward ? step_part::forward : step_part::backward});
        }
    }
    for_each_layer_host_op(s, layers, forward_launches, sink);

    if (l.tp > 1) {
        const bytes activation = bytes_of(rank_tokens(ctx) * m.hidden * size_of(s.precision.activations));
        // Recompute repeats the forward's 2 collectives per layer (full), or those whose
        // outputs op-level checkpointing does not save: the all-gathers and all-reduces,
        // not the reduce-scatters.
        // A recomputed MLP repeats its forward's own (FC1's all-gather and FC2's
        // reduce-scatter, or its all-reduce), latent attention's recomputed up projections
        // their all-gather.
        const double full = l.recompute == recompute_mode::full ? 2.0 * layers : 0.0;
        const double blocks = tensor_parallel_blocks(m);
        const auto tensor_parallel = [&](std::string_view name, collective kind, double count) {
            const double again = op_level && kind != collective::reduce_scatter ? 2.0 * layers : full;
            const double modules_again = (mlp_again ? layers : 0.0) +
                                         (up_proj_again && kind == collective::all_gather ? layers : 0.0);
            sink(stage_op<collective_op>{{name, kind, activation, groups.tensor}, blocks * count * layers,
                                         blocks * again + modules_again, step_part::tensor_parallel});
        };
        if (l.sp) {
            tensor_parallel("sequence_parallel_all_gather", collective::all_gather, 6);
            tensor_parallel("sequence_parallel_reduce_scatter", collective::reduce_scatter, 4);
        } else {
            tensor_parallel("tensor_parallel_all_reduce", collective::all_reduce, 4);
        }
    }
    for_each_kv_ring_op(s, groups, layers, recomputed_core, sink);
}

// The routed part of `layers` MoE layers for one micro-batch (workload/moe_layer.hpp):
// the router's GEMM, the experts' grouped GEMMs (with their dgrad and wgrad), the
// memory-bound ops of routing, permutation and activation (with their elementwise
// backward), the dispatch and combine collectives (step_part::expert_parallel; backward
// runs each again on the gradients), and the host's calls. Full recompute repeats the
// forward's ops, collectives included.
//
// Host calls per layer, ASSUMPTION (Megatron-Core moe_layer.py, router.py,
// token_dispatcher.py, experts.py@d98e8a64): 2 modules (router, experts) and 2 library
// modules (TE's GroupedLinear fc1 and fc2); 4 autograd Functions (permute, unpermute,
// and the sort and unsort of chunks or the router's score function) plus one per
// collective, each a Python call into c10d; 8 views; in backward a node per forward
// kernel and per collective that has a backward, and an AccumulateGrad for the router
// and for each local expert's fc1 and fc2 weight (TE's GroupedLinear holds one parameter
// per GEMM, weight0 … weightN-1: TransformerEngine@d0067d0d
// transformer_engine/pytorch/module/grouped_linear.py).
template <class Sink>
constexpr void for_each_routed_expert_op(const training_setup& s, const layer_context& ctx, const layout_groups& groups,
                                         double layers, Sink&& sink) {
    const auto& m = s.model;
    const auto& l = s.layout;
    // Full recompute or the moe submodule's repeats the routed part's forward, collectives
    // included; moe_act the experts' activation.
    const recompute_module_set modules = recomputed_modules(l);
    const double again =
        l.recompute == recompute_mode::full || modules.contains(recompute_module::moe) ? layers : 0.0;
    const double activation_again = modules.contains(recompute_module::moe_act) ? layers : again;
    const moe_layer_extent e = moe_layer_extent_of(m, l, s.moe, ctx);
    double launches = 0;
    const auto gemm = [&](const gemm_op& g) {
        sink(stage_op<gemm_op>{g, layers, again, step_part::forward});
        sink(stage_op<gemm_op>{{g.name, dgrad_of(g.shape), op_phase::backward_data, g.region, g.block}, layers, 0,
                               step_part::backward});
        sink(stage_op<gemm_op>{{g.name, wgrad_of(g.shape), op_phase::backward_weight, g.region, g.block}, layers, 0,
                               step_part::backward});
        launches += 1;
    };
    gemm(router_gemm(m, e, ctx));
    const expert_gemms experts = expert_forward_gemms(m, e, ctx);
    gemm(experts.fc1);
    gemm(experts.fc2);
    for_each_routed_memory_op(m, l, s.moe, e, ctx, [&](const memory_op& op) {
        launches += op.launches;
        sink(stage_op<memory_op>{op, layers, op.name == "expert_activation" ? activation_again : again,
                                 step_part::forward});
        sink(stage_op<memory_op>{backward_of(op, s.framework), layers, 0, step_part::backward});
    });
    const double a = size_of(activation_formats_of(ctx.activations, ctx.autocast).gemm_inputs);
    double collectives = 0, backward_collectives = 0;
    for_each_dispatch_collective(m, l, s.moe, e, a, groups, s.cluster.gpus_per_node,
                                 [&](const collective_op& c, bool with_backward) {
        sink(stage_op<collective_op>{c, layers, again, step_part::expert_parallel});
        collectives += 1;
        if (!with_backward) return;
        backward_collectives += 1;
        collective_op backward = c;
        backward.phase = op_phase::backward;
        sink(stage_op<collective_op>{backward, layers, 0, step_part::expert_parallel});
    });
    const auto host = [&](std::string_view name, host_call call, double count, double recomputed, bool forward) {
        if (count > 0)
            sink(stage_op<host_op>{{name, call, count, forward ? op_phase::forward : op_phase::backward}, layers,
                                   recomputed, forward ? step_part::forward : step_part::backward});
    };
    const double calls_again = again;  // full recompute, or the moe submodule's
    host("moe_modules", host_call::module, 2, calls_again, true);
    host("moe_library_modules", host_call::library_module, 2, calls_again, true);
    host("moe_library_modules", host_call::library_module_backward, 2, 0, false);
    host("moe_functions", host_call::function, 4 + collectives, calls_again, true);
    host("moe_functions", host_call::function_backward, 4 + backward_collectives, 0, false);
    host("moe_views", host_call::view, 8, calls_again, true);
    host("moe_collective_calls", host_call::collective, collectives, calls_again, true);
    host("moe_collective_calls", host_call::collective, backward_collectives, 0, false);
    host("moe_autograd_nodes", host_call::backward_node, launches + backward_collectives + 1 + 2 * e.local, 0, false);
}

// Multi-token prediction (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §2.2;
// Megatron-Core --mtp-num-layers, megatron/core/transformer/multi_token_prediction.py@d98e8a64),
// on the last stage or the rank a custom layout gives it, per module and micro-batch: the
// normalised embedding and hidden state concatenated and projected 2h → h (eh_proj, split
// by tp: ASSUMPTION as a column-parallel Linear) and one more layer (an MoE layer in an
// MoE model: its dense part and its routed experts). The shared head's logits and loss of
// each module run with the head, on the loss's rank (GPTModel._postprocess calls
// process_mtp_loss where post_process holds, megatron/core/models/gpt/gpt_model.py@d98e8a64).
// ASSUMPTION: the module's kernels launched eagerly (outside the layers' CUDA graphs); the
// embedding lookup it repeats and its two norms are left out (small beside the layer).
template <class Sink>
constexpr void for_each_mtp_op(const training_setup& s, const layer_context& ctx, const layout_groups& groups,
                               Sink&& sink) {
    const auto& m = s.model;
    const double modules = m.mtp_layers;
    const gemm_shape projection{rank_tokens(ctx), double(m.hidden) / s.layout.tp, 2.0 * m.hidden, 1, ctx.math};
    sink(stage_op<gemm_op>{{"mtp_projection", projection, op_phase::forward}, modules, 0, step_part::forward});
    sink(stage_op<gemm_op>{{"mtp_projection", dgrad_of(projection), op_phase::backward_data}, modules, 0,
                           step_part::backward});
    sink(stage_op<gemm_op>{{"mtp_projection", wgrad_of(projection), op_phase::backward_weight}, modules, 0,
                           step_part::backward});
    if (has_moe(m)) {
        training_setup dense_part = s;
        dense_part.model = moe_dense_part(m);
        for_each_layer_op(dense_part, ctx, groups, modules, sink, true);
        for_each_routed_expert_op(s, ctx, groups, modules, sink);
    } else {
        for_each_layer_op(s, ctx, groups, modules, sink);
    }
}

// The ops of one micro-batch on a stage of the given shape, section by section
// (workload/stage.hpp stage_section): its layers (for_each_layer_op), the stage's own
// (pipeline sends, the FP8 amax update's launch), the head and loss on the last stage,
// the embedding on the first.
//
// The ops go to sink(const stage_op<gemm_op>&), sink(const stage_op<memory_op>&) and
// sink(const stage_op<collective_op>&) one by one; micro_batch_workload collects them.
// `groups` must be groups_of(s), passed where the caller has it already.
template <class Sink>
constexpr void for_each_stage_op(checked_view checked, const stage_shape& shape, const layout_groups& groups,
                                 Sink&& sink) {
    const training_setup& s = checked;
    const layer_context ctx = layer_context_of(s);
    enter_section(sink, stage_section::layer);
    if (shape.layers > shape.moe_layers || !has_moe(s.model))
        for_each_layer_op(s, ctx, groups, shape.layers - shape.moe_layers, sink);
    if (has_moe(s.model) && shape.moe_layers > 0) {
        // An MoE layer: its dense part as a layer of the model whose FFN is the shared
        // experts', then its routed experts.
        training_setup dense_part = s;
        dense_part.model = moe_dense_part(s.model);
        enter_section(sink, stage_section::moe_layer);
        for_each_layer_op(dense_part, ctx, groups, shape.moe_layers, sink, true);
        enter_section(sink, stage_section::experts);
        for_each_routed_expert_op(s, ctx, groups, shape.moe_layers, sink);
    }

    enter_section(sink, stage_section::stage);
    if (s.layout.pp > 1) sink(pipeline_sends(s, groups));
    if (ctx.quantized_linears && ctx.scaling == fp8_scaling::delayed)
        for (op_phase phase : {op_phase::forward, op_phase::backward})
            sink(stage_op<memory_op>{fp8_amax_update(0, phase), 1, 0,
                                     phase == op_phase::forward ? step_part::forward : step_part::backward});
    if (shape.head) {
        enter_section(sink, stage_section::head);
        // The head's logits and loss, and again for each multi-token prediction module.
        for (int k = 0; k <= s.model.mtp_layers; ++k) for_each_head_op(s, ctx, groups, sink);
    }
    if (shape.mtp && s.model.mtp_layers > 0) {
        enter_section(sink, stage_section::mtp);
        for_each_mtp_op(s, ctx, groups, sink);
    }
    if (shape.embedding) {
        enter_section(sink, stage_section::embedding);
        for_each_embedding_op(s, ctx, groups, sink);
    }
}

template <class Sink>
constexpr void for_each_stage_op(checked_view s, const stage_shape& shape, Sink&& sink) {
    for_each_stage_op(s, shape, groups_of(s), sink);
}

// One layer of each kind the model has, the head and the embedding: the parts a stage of
// any split is built from (cost/stage_pricer.hpp price_stage_parts).
constexpr stage_shape one_layer_of_each(const transformer_config& m) {
    return has_moe(m) ? stage_shape{2, true, true, 1, true} : stage_shape{1, true, true, 0, true};
}

// The stage a micro_batch_workload lists: the last (head and loss), the one whose
// micro-batch takes longest in an even split; with pp = 1 the only stage also embeds.
// Under a custom pipeline layout, the last rank as the layout fills it.
constexpr stage_shape last_stage_shape(const training_setup& s) {
    if (!s.layout.pipeline_layout.empty()) {
        const pipeline_rank_load r =
            pipeline_rank_load_of(s.layout.pipeline_layout, s.model, s.layout.pp, s.layout.pp - 1);
        return {double(r.layers), r.embedding, true, double(r.moe_layers), r.mtp > 0};
    }
    const int last = pipeline_split_of(s.model, s.layout).last;
    return {double(last), s.layout.pp == 1, true, double(moe_layers_in(s.model.moe, s.model.layers - last, last)),
            true};
}

template <class Sink>
constexpr void for_each_stage_op(checked_view s, Sink&& sink) {
    for_each_stage_op(s, last_stage_shape(s), sink);
}

inline stage_workload micro_batch_workload(checked_view s) {
    stage_workload w;
    struct collect {
        stage_workload& w;
        void operator()(const stage_op<gemm_op>& op) { w.gemms.push_back(op); }
        void operator()(const stage_op<memory_op>& op) { w.memory.push_back(op); }
        void operator()(const stage_op<collective_op>& op) { w.collectives.push_back(op); }
        void operator()(const stage_op<host_op>& op) { w.host.push_back(op); }
        void operator()(const stage_op<attention_op>& op) { w.attention.push_back(op); }
    };
    for_each_stage_op(s, collect{w});
    return w;
}

}  // namespace trainperf
