// Memory per GPU during training: static state (weights, gradients, master copy,
// optimizer state) split by tensor/pipeline parallelism and sharded by ZeRO;
// activations per layer (cost/activations.hpp: Korthikanti et al. 2022, under
// autocast tensor by tensor in mixed formats); autocast's 16-bit weight copies; logits, workspace and communication
// buffers. Reports peak allocated (what torch.cuda.max_memory_allocated shows), the
// phase that peaks, and whether it fits. Derivations: docs/memory.md.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/attributes.hpp"
#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/finetune.hpp"
#include "../spec/framework.hpp"
#include "../spec/hardware.hpp"
#include "../spec/model.hpp"
#include "../spec/model_catalog.hpp"
#include "../spec/moe_run.hpp"
#include "../spec/optimizer.hpp"
#include "../spec/parallel.hpp"
#include "../spec/pipeline_layout.hpp"
#include "../spec/precision.hpp"
#include "../spec/checked_setup.hpp"
#include "../spec/setup.hpp"
#include "activations.hpp"
#include "allocator_slack.hpp"

namespace trainperf {

enum class memory_phase { forward_backward, optimizer_step };

template <>
struct enum_names<memory_phase> {
    static constexpr std::array<enum_name<memory_phase>, 2> table{
        {{memory_phase::forward_backward, "forward-backward"}, {memory_phase::optimizer_step, "optimizer-step"}}};
};

struct memory_breakdown {
    bytes weights = bytes_of(0);
    bytes gradients = bytes_of(0);
    bytes master_weights = bytes_of(0);
    bytes weight_copies = bytes_of(0);    // autocast's 16-bit copies (forward to backward), fp8's quantized ones
    bytes optimizer_state = bytes_of(0);
    bytes activations = bytes_of(0);      // kept for backward, all micro-batches in flight
    bytes logits = bytes_of(0);           // logits and loss buffers
    bytes workspace = bytes_of(0);
    bytes buffers = bytes_of(0);  // gradient buckets, ZeRO-3 gathered weights, DeepEP's buffers, TE's userbuffers
    bytes temporaries = bytes_of(0);      // backward temporaries
    bytes optimizer_temporaries = bytes_of(0);
    bytes fragmentation = bytes_of(0);    // reserved beyond the allocated peak
    bytes offloaded_to_host = bytes_of(0);  // host memory of an offloaded optimizer (not on the GPU)
    int stage = 0;                        // the pipeline stage reported (the one that peaks)
    int allocating_streams = 1;           // the streams the caching allocator keeps segments for

    constexpr bytes static_state() const {
        return weights + gradients + master_weights + optimizer_state;
    }
    // End of forward / start of backward: all activations, the logits and autocast's
    // weight copies are live. Gradients are counted as allocated (the second and later
    // steps without zero_grad(set_to_none), DDP buckets), which errs on the safe side.
    constexpr bytes forward_backward_peak() const {
        return static_state() + weight_copies + activations + logits + workspace + buffers + temporaries;
    }
    constexpr bytes optimizer_step_peak() const {
        return static_state() + workspace + buffers + optimizer_temporaries;
    }
    constexpr memory_phase peak_phase() const {
        return optimizer_step_peak() > forward_backward_peak() ? memory_phase::optimizer_step
                                                                : memory_phase::forward_backward;
    }
    // The two peaks share static state, workspace and buffers (as peak_phase()); what
    // else each holds is given apart. memory_detail::stage_total computes the same sum
    // from a stage's two parts without building the breakdown.
    static constexpr bytes peak_of(bytes static_state, bytes workspace, bytes buffers, bytes forward_backward,
                                   bytes optimizer_step) {
        return static_state + workspace + buffers +
               (optimizer_step > forward_backward ? optimizer_step : forward_backward);
    }
    constexpr bytes peak_allocated() const {
        return peak_of(static_state(), workspace, buffers, weight_copies + activations + logits + temporaries,
                       optimizer_temporaries);
    }
    // What the GPU must hold: peak allocated plus allocator fragmentation.
    constexpr bytes total() const { return peak_allocated() + fragmentation; }
};

// The components in print order with their report names (CLI tables and JSON keys).
struct named_bytes {
    std::string_view name;
    bytes value;
};

constexpr std::array<named_bytes, 12> components(const memory_breakdown& m) {
    return {{{"weights", m.weights},
             {"gradients", m.gradients},
             {"master_weights", m.master_weights},
             {"weight_copies", m.weight_copies},
             {"optimizer_state", m.optimizer_state},
             {"activations", m.activations},
             {"logits", m.logits},
             {"workspace", m.workspace},
             {"buffers", m.buffers},
             {"temporaries", m.temporaries},
             {"optimizer_temporaries", m.optimizer_temporaries},
             {"fragmentation", m.fragmentation}}};
}

// The components as they stand at the peak: those not live in the phase that peaks
// are zero (activations, logits, weight copies and backward temporaries at the
// optimizer step; the optimizer's temporaries during forward-backward). They add up to
// total().
constexpr std::array<named_bytes, 12> components_at_peak(const memory_breakdown& m) {
    memory_breakdown at = m;
    if (m.peak_phase() == memory_phase::forward_backward) {
        at.optimizer_temporaries = bytes_of(0);
    } else {
        at.activations = bytes_of(0);
        at.logits = bytes_of(0);
        at.weight_copies = bytes_of(0);
        at.temporaries = bytes_of(0);
    }
    return components(at);
}

// ---- Static state for a bare parameter count -----------------------------------
// Bytes per parameter: weights + gradients + master + optimizer state, e.g. fp32 +
// AdamW: 4 + 4 + 8 = 16 B; bf16 mixed + AdamW: 2 + 2 + 4 + 8 = 16 B as well (only
// activations shrink); pure bf16 + AdamW: 2 + 2 + 4 = 8 B.
constexpr bytes static_state_bytes(double params, const precision_recipe& r, optimizer_kind k) {
    require(params > 0 && params < 1e16, "params", params, "must be a positive parameter count");
    return bytes_of(params * model_state_bytes_per_parameter(r)) +
           optimizer_state_bytes(k, params, r.optimizer_state);
}

namespace memory_detail {

// Weights, gradients, master copy and optimizer state of `local` parameters (after
// tp·pp splitting) whose whole optimizer state is `state`, sharded by ZeRO over dp × cp
// (the cp ranks of a replica hold the same weights; Megatron-Core's distributed
// optimizer shards over the data-parallel group with cp): stage 1 shards master and
// state, 2 also gradients, 3 also weights.
//
// Offloaded (ZeRO-Offload, DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py@v0.12.6),
// the host holds, per GPU, for its partition (÷dp with ZeRO ≥ 1): the fp32 weights
// (single_partition_of_fp32_groups, 4 B/param, also with an fp32 recipe), the optimizer
// state (AdamW m and v: 8 B/param) and the fp32 gradients the CPU step reads (4 B/param):
// 16 B/param with AdamW; with ZeRO ≥ 2 and gradient accumulation also the 16-bit
// accumulated gradients (accumulated_grads_in_cpu, 2 B/param). The GPU keeps its
// weights (16-bit with mixed precision); with ZeRO ≥ 2 no gradient partition stays on it
// (each bucket's part goes straight to the host; its buckets are counted in
// stage_memory), with ZeRO 0/1 the gradients accumulate on it as without offload.
constexpr void add_static_state(memory_breakdown& mb, double local, bytes state, const precision_recipe& r,
                                const parallel_layout& p) {
    const double dp = p.shard_size();  // ZeRO's shards: dp × cp, or the hybrid shard group
    const double shard = p.zero >= 1 ? dp : 1.0;
    const double fp32 = size_of(dtype::fp32);
    mb.weights = bytes_of(local * size_of(r.weights) / (p.zero >= 3 ? dp : 1.0));
    mb.gradients = bytes_of(local * size_of(r.gradients) / (p.zero >= 2 ? dp : 1.0));
    if (p.offload == offload_mode::optimizer) {
        const double partition = local / shard;
        const double accumulated = p.zero >= 2 && p.grad_accum > 1 ? size_of(r.weights) : 0.0;
        mb.offloaded_to_host = bytes_of(partition * (fp32 + fp32 + accumulated)) + state / shard;
        if (p.zero >= 2) mb.gradients = bytes_of(0);
        return;
    }
    mb.master_weights = bytes_of(r.fp32_master ? local * fp32 / shard : 0.0);
    mb.optimizer_state = state / shard;
}

// The GPU's gradient buffers with optimizer offload: DeepSpeed allocates a bucket of
// reduce_bucket_size elements in the parameters' dtype in every backward, two with
// overlap_comm (spec/framework.hpp deepspeed_reduce_bucket_elements), and, with CPU offload,
// a buffer of the largest parameter tensor (largest_param_numel) into which the host's
// accumulated gradients are copied back to be added on the GPU (stage_1_and_2.py@v0.12.6).
// ASSUMPTION: that buffer is allocated with the optimizer, whatever the gradient
// accumulation, and is the model's largest tensor split by tp, whichever stage holds it.
constexpr bytes offload_gradient_buffers(const model_state& state, const precision_recipe& r,
                                         const parallel_layout& p, const framework_profile& fw) {
    const double buckets = overlaps_data_parallel_sync(p, fw) ? 2.0 : 1.0;
    return bytes_of((buckets * deepspeed_reduce_bucket_elements + state.largest_tensor / p.tp) * size_of(r.weights));
}

// The static state of a stage whose base is frozen (LoRA, QLoRA): `params` base
// parameters of the stage (before tp), of which `projections` are QLoRA-quantized
// projection weights, and `adapters` adapter parameters.
//   base: frozen 16-bit weights (frozen_weight_bytes), no gradients, no master, no
//     optimizer state (Hu et al. 2021 §4.2); QLoRA stores the projections in NF4 with
//     double quantization (qlora_bytes_per_parameter = 0.515869140625 B) and keeps the
//     embeddings, norms and the output head in 16 bits (ASSUMPTION: bitsandbytes
//     replaces nn.Linear layers only, and PEFT/QLoRA setups skip lm_head);
//   adapters: fp32 weights and gradients and their optimizer state, sharded by ZeRO as
//     a full model's would be; no master copy (they are fp32 already).
// ZeRO-3 also shards the frozen base over dp.
constexpr void add_frozen_static_state(memory_breakdown& mb, double params, double projections, double adapters,
                                       bytes adapter_state, const precision_recipe& r, const parallel_layout& p,
                                       bool quantized) {
    add_static_state(mb, adapters, adapter_state, recipe(precision_kind::fp32), p);
    const double quantized_params = quantized ? projections : 0.0;
    const double base = (params - quantized_params) * frozen_weight_bytes(r) +
                        quantized_params * qlora_bytes_per_parameter;
    mb.weights += bytes_of(base / (p.zero >= 3 ? p.shard_size() : 1.0));
}

// One stage's memory in two parts, so that a search computes each once per what it
// depends on. The first (stage_micro_batches): what the stage holds for its
// micro-batches (activations, logits, autocast's or FP8's weight copies, workspace and
// temporaries) and the parameter counts the second needs; it depends on the layout's
// micro-batch, grad_accum, pipeline split, interleave, tp, sp, cp and recompute, not on
// its ZeRO stage, shard group, offload or data-parallel overlap. The second
// (stage_state_memory below): the static state, communication buffers and optimizer
// temporaries, which depend on those and on the stage's parameters, not on the
// micro-batch size or interleave, and on grad_accum only through whether it exceeds 1
// (an offloaded optimizer's host copy of accumulated gradients): a search reuses it.
// stage_memory joins the two and adds the fragmentation over the whole.
struct stage_micro_batch_memory {
    int stage = 0;
    int layers = 0;      // the stage's transformer layers
    int moe_layers = 0;  // of them, an MoE model's MoE layers
    double local = 0;    // parameters the stage holds, after tp (its routed experts' after ep·etp)
    double expert_local = 0;  // of them, an MoE model's routed experts
    double trained = 0;  // what the optimizer updates of them (before ZeRO): all, or the adapters
    // fp8, nvfp4: the Linear weights the stage quantizes, after tp (its routed experts'
    // after ep·etp); the state part (stage_state_memory) counts their quantized copies,
    // which depend on whether they are FP8 primary weights, that is on the ZeRO stage.
    double quantized = 0;
    bytes activations = bytes_of(0);
    bytes weight_copies = bytes_of(0);
    bytes logits = bytes_of(0);
    bytes workspace = bytes_of(0);
    bytes temporaries = bytes_of(0);
    // The MoE dispatcher's own buffers on a stage with MoE layers and the tensor-parallel
    // overlap's userbuffers, outside the caching allocator (in the breakdown's buffers,
    // without its slack).
    bytes outside_allocator = bytes_of(0);
};

// What an MoE or multi-token-prediction model's stage holds beyond its layers counted as
// dense ones: its MoE layers (the first stage's layers from 0, the last's up to the
// model's last, a middle stage's after the first's and the middle ones before it; under a
// custom pipeline layout, those the layout gives the rank), the parameters that changes
// (an MoE layer's dense part for a dense layer's, and the multi-token prediction modules
// where they run, the last stage unless a layout says otherwise: their layer and
// projection, and, off the first stage, the embedding Megatron-Core builds for them:
// GPTModel builds LanguageModelEmbedding where pre_process or mtp_process holds,
// megatron/core/models/gpt/gpt_model.py@d98e8a64) and its routed experts after ep·etp (the
// modules' split like the others').
struct stage_variants {
    int moe_layers = 0;
    int mtp = 0;              // multi-token prediction modules on this rank
    double params = 0;        // added to stage_layers × the dense layer's, before tp
    double expert_local = 0;  // routed experts on this rank
};

constexpr stage_variants stage_variants_with(const transformer_config& m, const model_state& state,
                                             const parallel_layout& p, int moe_layers, int mtp, bool first) {
    stage_variants v;
    v.moe_layers = moe_layers;
    v.mtp = mtp;
    // Each MoE layer's router is whole on every tensor-parallel rank (TopKRouter's weight
    // is not split: megatron/core/transformer/moe/router.py@d98e8a64): router·(tp − 1)
    // more before the division by tp.
    v.params = moe_layers * (state.moe_layer_parameters - state.layer_parameters +
                             router_parameters(m) * double(p.tp - 1));
    const double mtp_experts = mtp * state.expert_layer_parameters;
    if (mtp > 0) v.params += mtp_parameters(m) - mtp_experts + (first ? 0.0 : state.embedding_parameters);
    v.expert_local = (moe_layers * state.expert_layer_parameters + mtp_experts) / (double(p.expert_tp()) * p.ep);
    return v;
}

TRAINPERF_NOINLINE constexpr stage_variants stage_variants_of(const transformer_config& m, const model_state& state,
                                                              const parallel_layout& p, const pipeline_split& split,
                                                              int stage) {
    const bool first = stage == 0, last = stage == p.pp - 1;
    const int layers = first ? split.first : last ? split.last : split.middle;
    const int first_layer = first ? 0 : last ? m.layers - split.last : split.first + (stage - 1) * split.middle;
    return stage_variants_with(m, state, p, moe_layers_in(m.moe, first_layer, layers), last ? m.mtp_layers : 0,
                               first);
}

// The stage's micro-batch part from its transformer layers and what an MoE or
// multi-token-prediction model adds (`v`).
constexpr stage_micro_batch_memory stage_micro_batches_holding(const transformer_config& m, const precision_recipe& r,
                                                               const model_state& state, const parallel_layout& p,
                                                               int seq, const framework_profile& fw,
                                                               const layer_activations& layer, int stage,
                                                               int stage_layers, const stage_variants& v,
                                                               const finetune_spec& ft) {
    const memory_overheads& o = fw.memory;
    stage_micro_batch_memory mb;
    mb.stage = stage;
    const bool first = stage == 0, last = stage == p.pp - 1;
    const double t = p.tp;
    // This rank's tokens: s/cp of the sequence with context parallelism.
    const double s = double(seq) / p.cp, b = p.micro_batch, h = m.hidden;
    const activation_formats x = activation_formats_of(r);
    mb.layers = stage_layers;
    const double fp32 = size_of(dtype::fp32);

    // Parameters held by this stage, then split by TP (vocab-parallel embedding too).
    double params = stage_layers * state.layer_parameters;
    if (first) params += state.embedding_parameters;
    if (last) params += state.head_parameters;
    if (last && !first && m.tied_embeddings) params += double(m.vocab) * h;  // Megatron's copy
    // An MoE model's MoE layers among the stage's, its routed experts split by ep·etp, and
    // its multi-token prediction modules.
    params += v.params;
    mb.moe_layers = v.moe_layers;
    mb.expert_local = v.expert_local;
    mb.local = params / t + mb.expert_local;
    mb.trained = ft.freezes_base() ? stage_layers * adapter_parameters_per_layer(m, ft) / t : mb.local;
    // Activations: micro-batches in flight on this stage (1F1B, and zb-h1 alike: p − i
    // on stage i, p on the first, 1 on the last), interleaving's extra factor on the
    // first stage.
    const double in_flight = std::min(p.pp - stage, p.grad_accum) + layer.extra_in_flight;
    const double interleave =
        (first && p.interleave > 1 && p.pp > 1) ? 1.0 + double(p.pp - 1) / (p.pp * p.interleave)
                                                : 1.0;
    const int moe = v.moe_layers;
    // DeepEP creates its buffers at a rank's first dispatch (fused_a2a.py get_buffer):
    // ranks that run an MoE layer (or an MoE model's multi-token prediction module).
    if (moe > 0 || (v.mtp > 0 && has_moe(m))) mb.outside_allocator = layer.dispatcher_buffers;
    // Transformer Engine's userbuffers, on every rank of the overlapped tensor group.
    mb.outside_allocator += layer.userbuffers;
    bytes act = in_flight * interleave * (double(stage_layers - moe) * layer.kept + double(moe) * layer.moe_kept);
    const double seq_split = p.sp ? t : 1.0;
    if (first && o.dropout && m.dropout) act += bytes_of(in_flight * s * b * h / seq_split);  // embedding mask
    // Final norm input (the residual stream) and head input (16-bit under autocast).
    if (last) act += bytes_of((size_of(x.residual) + size_of(x.gemm_inputs)) * s * b * h / seq_split);
    // Multi-token prediction: each module's layer, for each micro-batch in flight where
    // the modules run (one on the last stage).
    if (v.mtp > 0) act += in_flight * interleave * double(v.mtp) * (has_moe(m) ? layer.moe_kept : layer.kept);
    // Full recompute: one layer rebuilt during its backward (the larger kind).
    act += moe > 0 && layer.moe_rebuilt > layer.rebuilt ? layer.moe_rebuilt : layer.rebuilt;
    mb.activations = act;
    // Autocast's 16-bit weight copies, one set per micro-batch in flight (each forward
    // is its own autocast region, and autograd keeps its copies until that backward).
    // Not sharded by ZeRO-3: the copies are made of the gathered weights.
    // A frozen 16-bit base is not cast; the fp32 adapters are (fine-tuning).
    // fp8 (Transformer Engine): the Linear weights the stage quantizes, whose copies the
    // state part counts (stage_state_memory).
    if (quantized_linears(r))
        mb.quantized = ((stage_layers - moe) * layer_projection_matrix_parameters(m) +
                        (moe > 0 ? moe * layer_projection_matrix_parameters(moe_dense_part(m)) : 0.0)) /
                           t +
                       mb.expert_local;
    else if (r.autocast && ft.freezes_base())
        mb.weight_copies = bytes_of(in_flight * mb.trained * weight_copy_bytes_per_parameter(r));
    else if (r.autocast)
        mb.weight_copies = bytes_of(in_flight * autocast_cast_parameters(m, stage_layers, last) / t *
                                    weight_copy_bytes_per_parameter(r));

    if (last) {
        const double loss_bytes = o.fp32_logits ? fp32 : size_of(r.activations);
        // The head's, and each multi-token prediction module's own logits and loss.
        mb.logits = bytes_of((1.0 + m.mtp_layers) * b * s * double(m.vocab) / t *
                             (size_of(r.activations) + o.loss_buffers * loss_bytes));
    }
    mb.workspace = o.workspace;
    mb.temporaries = o.temporaries;
    // QLoRA: bitsandbytes dequantizes a 4-bit weight into a 16-bit tensor before each
    // matmul that uses it. ASSUMPTION: one dequantized projection is live at a time (it
    // is freed after its matmul): the largest one of the layer, in 16 bits, split by tp.
    if (ft.quantized()) mb.temporaries += bytes_of(largest_projection(m) / t * frozen_weight_bytes(r));
    return mb;
}

// `split` is pipeline_split_of(m, p), computed once for all the stages compared (an MoE
// or multi-token-prediction model's variants out of a dense model's way).
constexpr stage_micro_batch_memory stage_micro_batches(const transformer_config& m, const precision_recipe& r,
                                                       const model_state& state, const parallel_layout& p, int seq,
                                                       const framework_profile& fw, const layer_activations& layer,
                                                       const pipeline_split& split, int stage,
                                                       const finetune_spec& ft) {
    const bool first = stage == 0, last = stage == p.pp - 1;
    return stage_micro_batches_holding(
        m, r, state, p, seq, fw, layer, stage, first ? split.first : last ? split.last : split.middle,
        has_moe(m) || m.mtp_layers > 0 ? stage_variants_of(m, state, p, split, stage) : stage_variants{}, ft);
}

// Under a custom pipeline layout: the rank as the layout fills it.
constexpr stage_micro_batch_memory stage_micro_batches(const transformer_config& m, const precision_recipe& r,
                                                       const model_state& state, const parallel_layout& p, int seq,
                                                       const framework_profile& fw, const layer_activations& layer,
                                                       const pipeline_rank_load& load, int stage,
                                                       const finetune_spec& ft) {
    return stage_micro_batches_holding(m, r, state, p, seq, fw, layer, stage, load.layers,
                                       stage_variants_with(m, state, p, load.moe_layers, load.mtp, stage == 0), ft);
}

// The second part's own terms: the static state, communication buffers and optimizer
// temporaries of the stage's parameters (held.stage, held.layers, held.local and
// held.trained; nothing of its micro-batches), at the layout's ZeRO stage, shard group,
// offload and data-parallel overlap.
constexpr memory_breakdown stage_state_memory(const stage_micro_batch_memory& held, const transformer_config& m,
                                              const precision_recipe& r, const model_state& state,
                                              const parallel_layout& p, const framework_profile& fw,
                                              const finetune_spec& ft) {
    const memory_overheads& o = fw.memory;
    memory_breakdown mb;
    mb.stage = held.stage;
    mb.allocating_streams = allocating_streams(p);
    const double t = p.tp;
    const double local = held.local, trained = held.trained;
    const double share = local / state.parameters;  // shape-aware optimizer state, prorated
    const double zero_optimizer = p.zero >= 1 ? p.shard_size() : 1.0;
    const double fp32 = size_of(dtype::fp32);
    if (ft.freezes_base()) {
        const double projections = held.layers * layer_projection_matrix_parameters(m) / t;
        add_frozen_static_state(mb, local, projections, trained, trained / state.trainable_parameters *
                                state.optimizer_state, r, p, ft.quantized());
    } else if (held.expert_local > 0) {
        // The routed experts' state: the distributed optimizer shards it over their
        // expert-data-parallel replicas (edp), the rest over dp × cp.
        const double dense = local - held.expert_local;
        add_static_state(mb, dense, dense / state.parameters * state.optimizer_state, r, p);
        parallel_layout experts = p;
        experts.dp = p.expert_dp();
        experts.cp = 1;
        experts.shard_group = 0;
        memory_breakdown e;
        add_static_state(e, held.expert_local, held.expert_local / state.parameters * state.optimizer_state, r,
                         experts);
        mb.weights += e.weights;
        mb.gradients += e.gradients;
        mb.master_weights += e.master_weights;
        mb.optimizer_state += e.optimizer_state;
        mb.offloaded_to_host += e.offloaded_to_host;
    } else {
        add_static_state(mb, local, share * state.optimizer_state, r, p);
        // FSDP's fp32 shard is the master (spec/framework_profile.hpp
        // fp32_sharded_parameters); the 16-bit copy is gathered (buffers below).
        if (fw.fp32_sharded_parameters && p.zero >= 3 && p.shard_size() > 1 && r.fp32_master &&
            p.offload == offload_mode::none)
            mb.weights = bytes_of(0);
    }
    // fp8 (Transformer Engine): the FP8 copy of every Linear weight of the stage, and
    // its transpose on Hopper (fp8_weight_copy_bytes_per_parameter: 1 or 2 B per
    // parameter), held for the step; the bf16 weights stay. ASSUMPTION: one set (the
    // module keeps it in a workspace the next micro-batch overwrites), split by tp, not
    // sharded by ZeRO-3; counted at the forward-backward peak only, though TE keeps
    // the workspace through the optimizer step too.
    // FP8 primary weights (spec/setup.hpp fp8_primary_weights) are the parameters
    // themselves, without a 16-bit copy. Under ZeRO 1 and 2 `weights` holds their quantized
    // data and what is built beside it after the gather, fp8_weight_copy_bytes_per_parameter
    // in all, at every peak: Megatron-Core keeps the transpose through the optimizer step
    // (manual_post_all_gather_processing, megatron/core/fp8_utils.py@d98e8a64). Under
    // ZeRO-3 (Megatron-FSDP) the shard holds the quantized data
    // (fp8_primary_weight_bytes_per_parameter; the routed experts' over their own shards)
    // and the gathered units hold it with the transpose, which Megatron-FSDP drops with the
    // unit (keep_fp8_transpose_cache off, megatron/core/distributed/fsdp/src/megatron_fsdp/
    // megatron_fsdp.py@d98e8a64): in the buffers below. (A ZeRO-3 whose fp32 shard is the
    // master holds no other shard.)
    const bool primary = held.quantized > 0 && fp8_primary_weights(r, p, fw, ft);
    const double sixteen = size_of(r.weights), quantized_copies = fp8_weight_copy_bytes_per_parameter(r);
    if (primary && p.zero >= 3) {
        const double shard = (held.quantized - held.expert_local) / p.shard_size() + held.expert_local / p.expert_dp();
        const double saved = sixteen - fp8_primary_weight_bytes_per_parameter(r);
        if (mb.weights.value() > 0) mb.weights -= bytes_of(shard * saved);
    } else if (primary) {
        mb.weights -= bytes_of(held.quantized * (sixteen - quantized_copies));
    } else if (held.quantized > 0) {
        mb.weight_copies = bytes_of(held.quantized * quantized_copies);
    }
    // Communication buckets when dp > 1; DDP's copy of every gradient into them only
    // while gradients are whole (ZeRO 0/1): sharded gradients (ZeRO 2/3) are
    // reduce-scattered from the buckets, which hold no second copy.
    if (p.offload == offload_mode::optimizer)
        mb.buffers = offload_gradient_buffers(state, r, p, fw);
    else if (p.dp_cp() > 1)
        mb.buffers = o.gradient_buckets + (p.zero <= 1 ? o.gradient_bucket_copy * mb.gradients : bytes_of(0));
    // ZeRO-3's gathered weights: the layer in use and the one prefetched, or, kept from
    // forward to backward (reshard_after_forward off), every layer of the stage.
    // FP8 primary weights: a layer's Linear weights gathered quantized, with the transpose.
    if (p.zero == 3 && p.shard_size() > 1) {
        const double linear = primary ? layer_projection_matrix_parameters(m) : 0.0;
        const double unit = ft.freezes_base() ? state.layer_parameters * frozen_weight_bytes(r)
                                              : (state.layer_parameters - linear) * sixteen + linear * quantized_copies;
        mb.buffers += bytes_of((reshards_after_forward(fw, p) ? 2.0 : held.layers) * unit / t);
    }
    if (p.offload == offload_mode::none)
        mb.optimizer_temporaries = bytes_of(o.optimizer_temporaries * trained * fp32 / zero_optimizer);
    return mb;
}

// A stage's memory from its two parts (`state_part` from stage_state_memory of the same
// held stage), and the allocator's slack over their peak (cost/allocator_slack.hpp).
constexpr memory_breakdown stage_memory(const memory_breakdown& state_part, const stage_micro_batch_memory& held,
                                        const memory_overheads& o) {
    memory_breakdown mb = state_part;
    mb.activations = held.activations;
    mb.weight_copies = state_part.weight_copies + held.weight_copies;
    mb.logits = held.logits;
    mb.workspace = held.workspace;
    mb.temporaries = held.temporaries;
    mb.buffers += held.outside_allocator;
    mb.fragmentation = allocator_slack(o, mb.peak_allocated() - held.outside_allocator, state_part.allocating_streams);
    return mb;
}

// stage_memory(state_part, held, o).total() without building the breakdown: the same
// sums in the same order.
constexpr bytes stage_total(const memory_breakdown& state_part, const stage_micro_batch_memory& held,
                            const memory_overheads& o) {
    const bytes peak = memory_breakdown::peak_of(
        state_part.static_state(), held.workspace, state_part.buffers + held.outside_allocator,
        state_part.weight_copies + held.weight_copies + held.activations + held.logits + held.temporaries,
        state_part.optimizer_temporaries);
    return peak + allocator_slack(o, peak - held.outside_allocator, state_part.allocating_streams);
}

constexpr memory_breakdown stage_memory(const stage_micro_batch_memory& held, const transformer_config& m,
                                        const precision_recipe& r, const model_state& state,
                                        const parallel_layout& p, const framework_profile& fw,
                                        const finetune_spec& ft) {
    return stage_memory(stage_state_memory(held, m, r, state, p, fw, ft), held, fw.memory);
}

constexpr memory_breakdown stage_memory(const transformer_config& m, const precision_recipe& r,
                                        const model_state& state, const parallel_layout& p, int seq,
                                        const framework_profile& fw, const layer_activations& layer, int stage,
                                        const finetune_spec& ft = {}) {
    const stage_micro_batch_memory held =
        p.pipeline_layout.empty()
            ? stage_micro_batches(m, r, state, p, seq, fw, layer, pipeline_split_of(m, p), stage, ft)
            : stage_micro_batches(m, r, state, p, seq, fw, layer,
                                  pipeline_rank_load_of(p.pipeline_layout, m, p.pp, stage), stage, ft);
    return stage_memory(held, m, r, state, p, fw, ft);
}
}  // namespace memory_detail

// Memory of the GPU that needs the most: with pp > 1 the first stage (embedding, p
// micro-batches in flight) or the last (head, logits), whichever is larger.
// layout.micro_batch is the micro-batch size b; layout.grad_accum the number of
// micro-batches per step (it bounds those in flight). The framework profile supplies
// what it holds beyond the model's tensors (spec/framework.hpp memory_overheads).
// `state` is model_state_of(optimizer, m, r.optimizer_state), which no layout changes.
namespace memory_detail {
// Whether the second stage can need more than the first and the last: only when the
// split is uneven (in an even one it holds the first's layers, fewer micro-batches in
// flight and no embedding); of the middle stages it holds the most in flight.
constexpr bool second_stage_may_be_busiest(const parallel_layout& p, const pipeline_split& split) {
    if (p.pp <= 2 || (p.first_stage_layers == 0 && p.last_stage_layers == 0)) return false;
    return split.middle > split.first;
}

// The stages that can need the most (the first, the last, and the second when the split
// is uneven), their micro-batch parts: what a search keeps while only the layout's ZeRO
// stage, shard group, offload or overlap changes.
struct candidate_stages {
    std::array<stage_micro_batch_memory, 3> stages{};
    int count = 0;
};

// For inputs already validated (the planner builds only valid layouts), with each
// layer's activations given.
constexpr candidate_stages candidate_stages_of(const model_state& state, const transformer_config& m,
                                               const precision_recipe& r, const parallel_layout& p, int seq,
                                               const framework_profile& fw, const layer_activations& layer,
                                               const finetune_spec& ft) {
    const pipeline_split split = pipeline_split_of(m, p);
    const auto of = [&](int stage) { return stage_micro_batches(m, r, state, p, seq, fw, layer, split, stage, ft); };
    const stage_micro_batch_memory first = of(0);
    if (p.pp == 1) return {{first}, 1};
    const stage_micro_batch_memory last = of(p.pp - 1);
    // An MoE model whose dense layers sit on the first stage: the second holds more
    // experts than the first and more micro-batches in flight than the others.
    const bool dense_first = has_moe(m) && m.moe.dense_layers > 0 && p.pp > 2;
    if (!second_stage_may_be_busiest(p, split) && !dense_first) return {{first, last}, 2};
    return {{first, last, of(1)}, 3};
}

// The busiest of the candidate stages at the layout's ZeRO stage, offload and overlap
// (on a tie the earlier: the first, then the last).
// `state_part_of(held)` gives the state part of each (stage_state_memory, or one a
// search computed before for the same stage parameters and layout).
template <class StatePart>
constexpr memory_breakdown busiest_stage(const candidate_stages& c, StatePart&& state_part_of,
                                         const memory_overheads& o) {
    memory_breakdown busiest = stage_memory(state_part_of(c.stages[0]), c.stages[0], o);
    bytes most = busiest.total();
    for (std::size_t i = 1; i < std::size_t(c.count); ++i) {
        const memory_breakdown next = stage_memory(state_part_of(c.stages[i]), c.stages[i], o);
        if (const bytes total = next.total(); total > most) {  // on a tie the earlier
            busiest = next;
            most = total;
        }
    }
    return busiest;
}

// Whether some candidate stage certainly needs more than `capacity` (so the busiest does
// not fit), from stage_total, without building a breakdown: a total within a relative
// 1e-9 of the capacity is left to the full report, so this verdict agrees with
// memory_report_of(busiest_stage(...)).fits however a compiler rounds the two computations.
template <class StatePart>
constexpr bool certainly_exceeds(const candidate_stages& c, StatePart&& state_part_of, const memory_overheads& o,
                                 bytes capacity) {
    const bytes limit = capacity * (1.0 + 1e-9);
    for (std::size_t i = 0; i < std::size_t(c.count); ++i)
        if (stage_total(state_part_of(c.stages[i]), c.stages[i], o) > limit) return true;
    return false;
}

constexpr memory_breakdown busiest_stage(const candidate_stages& c, const model_state& state,
                                         const transformer_config& m, const precision_recipe& r,
                                         const parallel_layout& p, const framework_profile& fw,
                                         const finetune_spec& ft) {
    return busiest_stage(
        c, [&](const stage_micro_batch_memory& held) { return stage_state_memory(held, m, r, state, p, fw, ft); },
        fw.memory);
}

// Under a custom pipeline layout, the busiest of all the ranks as the layout fills them
// (on a tie the earlier), taken three at a time as the candidate stages are.
TRAINPERF_NOINLINE inline memory_breakdown busiest_layout_rank(const model_state& state, const transformer_config& m,
                                                               const precision_recipe& r, const parallel_layout& p,
                                                               int seq, const framework_profile& fw,
                                                               const layer_activations& layer,
                                                               const finetune_spec& ft) {
    const std::vector<pipeline_rank_load> loads = pipeline_rank_loads(p.pipeline_layout, m, p.pp);
    memory_breakdown busiest{};
    for (int rank = 0; rank < p.pp;) {
        candidate_stages c;
        for (; c.count < int(c.stages.size()) && rank < p.pp; ++rank)
            c.stages[std::size_t(c.count++)] =
                stage_micro_batches(m, r, state, p, seq, fw, layer, loads[std::size_t(rank)], rank, ft);
        const memory_breakdown next = busiest_stage(c, state, m, r, p, fw, ft);
        if (c.stages[0].stage == 0 || next.total() > busiest.total()) busiest = next;
    }
    return busiest;
}

// The busiest of the split's candidate stages; a custom pipeline layout's ranks are
// busiest_layout_rank's (memory_of takes the one that applies).
constexpr memory_breakdown busiest_stage(const model_state& state, const transformer_config& m,
                                         const precision_recipe& r, const parallel_layout& p, int seq,
                                         const framework_profile& fw, const layer_activations& layer,
                                         const finetune_spec& ft) {
    return busiest_stage(candidate_stages_of(state, m, r, p, seq, fw, layer, ft), state, m, r, p, fw, ft);
}
}  // namespace memory_detail

// Memory the training process may allocate: the device's memory as its driver
// reports it, less the CUDA context; on devices that share DRAM with the CPU (Jetson)
// also less what the OS and the CPU side keep.
constexpr bytes usable_memory(const gpu_spec& g, const framework_profile& fw) {
    const bytes device = g.device_memory() - fw.memory.cuda_context;
    return g.memory_shared_with_host ? device - fw.memory.host_reserve : device;
}

namespace memory_detail {
// The largest b in [1, limit] for which fits_batch(b) holds, 0 when none does. Memory
// grows with the batch, so a doubling search then bisection finds it.
template <class Fits>
constexpr int largest_fitting_batch(Fits fits_batch, int limit) {
    if (!fits_batch(1)) return 0;
    int good = 1, bad = 2;
    while (bad <= limit && fits_batch(bad)) {
        good = bad;
        bad *= 2;
    }
    if (bad > limit) return good;
    while (bad - good > 1) {
        const int mid = good + (bad - good) / 2;
        if (fits_batch(mid)) good = mid;
        else bad = mid;
    }
    return good;
}
}  // namespace memory_detail

// ---- A training setup's memory: the one path `memory`, `fit`, `predict` and `plan` take

struct memory_report {
    memory_breakdown breakdown{};
    bytes capacity = bytes_of(0);   // usable on the device
    bool fits = true;

    constexpr double fraction() const { return breakdown.total() / capacity; }
};

// A busiest stage's breakdown against what the device can use.
constexpr memory_report memory_report_of(const memory_breakdown& busiest, bytes capacity) {
    return {busiest, capacity, busiest.total() <= capacity};
}

// Peak memory per GPU as the setup's framework holds it (its stored precision, e.g.
// fp32 main gradients, and its overheads), against what the device can use. `state`
// is model_state_of(s), which no layout changes.
constexpr memory_report memory_of(checked_view c, const model_state& state) {
    const training_setup& s = c;
    const precision_recipe r = stored_precision(s);
    const int seq = sequence_length(s);
    const memory_detail::layer_activations layer =
        memory_detail::layer_activations_of(s.model, r, s.layout, seq, s.framework, s.finetune, s.moe);
    if (!s.layout.pipeline_layout.empty())
        return memory_report_of(
            memory_detail::busiest_layout_rank(state, s.model, r, s.layout, seq, s.framework, layer, s.finetune),
            usable_memory(s.cluster.gpu, s.framework));
    return memory_report_of(memory_detail::busiest_stage(state, s.model, r, s.layout, seq, s.framework, layer,
                                                         s.finetune),
                            usable_memory(s.cluster.gpu, s.framework));
}

constexpr memory_report memory_of(checked_view s) { return memory_of(s, model_state_of(s)); }

// The largest micro-batch of the setup that fits (its own micro-batch is checked with
// the setup, then replaced): each micro-batch tried checks only the layout again.
constexpr int max_micro_batch(checked_view s) {
    const model_state state = model_state_of(s);
    parallel_layout l = s->layout;
    return memory_detail::largest_fitting_batch(
        [&](int b) {
            l.micro_batch = b;
            return memory_of(s.with_layout(l), state).fits;
        },
        limits::max_micro_batch_for(sequence_length(s)));
}

// Static state of a bare parameter count (no model shape: no activations), split by
// tp·pp and sharded by ZeRO; static_state_report sets it against the device. Under
// autocast the 16-bit weight copies of the forward are added, every parameter taken
// as cast (without shapes; HF's "1.5x the original model"); under fp8 the FP8 copies.
constexpr memory_breakdown static_state_memory(double params, const precision_recipe& r, optimizer_kind k,
                                               const parallel_layout& p) {
    require(params > 0 && params < 1e16, "params", params, "must be a positive parameter count");
    validate(p);
    memory_breakdown mb;
    const double split = double(p.tp) * p.pp;
    memory_detail::add_static_state(mb, params / split, optimizer_state_bytes(k, params, r.optimizer_state) / split, r, p);
    // fp8: every parameter taken as a Linear weight with its FP8 copy (an upper bound:
    // embeddings and norms have none).
    mb.weight_copies =
        bytes_of(params / split * (weight_copy_bytes_per_parameter(r) + fp8_weight_copy_bytes_per_parameter(r)));
    return mb;
}

// The static state of `params` parameters under the setup's recipe (as its framework
// stores it), optimizer and layout, against what the setup's GPU can use. The setup's
// model is ignored.
constexpr memory_report static_state_report(double params, const training_setup& s) {
    memory_report r;
    r.breakdown = static_state_memory(params, stored_precision(s), s.optimizer, s.layout);
    r.capacity = usable_memory(s.cluster.gpu, s.framework);
    r.fits = r.breakdown.total() <= r.capacity;
    return r;
}

}  // namespace trainperf
