// A training setup: everything one prediction depends on — one system, one model,
// one precision recipe and optimizer, one parallel layout, one software profile —
// and its validation. Specs only: no cost is computed here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "finetune.hpp"
#include "framework.hpp"
#include "hardware.hpp"
#include "kernel_params.hpp"
#include "links.hpp"
#include "model.hpp"
#include "moe_run.hpp"
#include "optimizer.hpp"
#include "parallel.hpp"
#include "precision.hpp"

namespace trainperf {

struct training_setup {
    cluster_spec cluster{};
    transformer_config model{};
    precision_recipe precision = recipe(precision_kind::bf16);
    optimizer_kind optimizer = optimizer_kind::adamw;
    finetune_spec finetune{};                     // which parameters train (default: all)
    parallel_layout layout{};
    int seq = 0;                                  // 0: the model's training length (train_seq, else max_seq)
    framework_profile framework = megatron_profile;
    std::optional<kernel_params> kernels;         // empty: the GPU architecture's defaults
    // The input pipeline per step (cost/input_pipeline.hpp's first two stages): reading the
    // global batch's share of one GPU from storage and copying it to the device. With
    // prefetching they overlap the step and only what exceeds it is exposed.
    seconds data_loading = seconds_of(0.0);
    seconds host_to_device = seconds_of(0.0);
    bool prefetch = true;
    // How an MoE model's tokens reach their experts (ignored for a dense model).
    moe_run moe{};
    // The host side of optimizer offload (its cores, SIMD width, clock and DRAM
    // bandwidth) is the node's: cluster.host (spec/host.hpp).
};

// The kernel-model parameters in force: calibrated ones when given, else the
// defaults of the GPU's compute capability.
constexpr kernel_params kernel_params_of(const training_setup& s) {
    return s.kernels ? *s.kernels : default_kernel_params(s.cluster.gpu);
}

// The setup's sequence: its own, else the model's training length (spec/model.hpp).
constexpr int sequence_length(const training_setup& s) { return s.seq > 0 ? s.seq : training_length(s.model); }

// The recipe as the framework stores it on the setup's GPU: fp32 main gradients where
// it keeps them, fp8's transposed copies where the GPU needs them (precision_on).
constexpr precision_recipe stored_precision(const training_setup& s) {
    return precision_on(s.framework.fp32_gradient_accumulation ? with_fp32_gradients(s.precision) : s.precision,
                        s.cluster.gpu);
}

// The format gradients are accumulated and reduced in: fp32 main gradients, or the
// recipe's own format (16-bit in the mixed and pure 16-bit recipes). Megatron-LM with
// --bf16 keeps fp32 main gradients unless --grad-reduce-in-bf16 is given
// (megatron/training/arguments.py@d98e8a64); Megatron-Core's
// DistributedDataParallelConfig.grad_reduce_in_fp32 defaults to False, and NeMo's
// bf16 mixed-precision plugin sets it to True (nemo/lightning/pytorch/plugins/
// mixed_precision.py@8cfedd72) while its performance recipes set it back to False.
constexpr void set_gradient_format(training_setup& s, dtype gradients) {
    require(gradients == dtype::fp32 || gradients == s.precision.gradients, "grad_reduce_dtype",
            to_string(gradients),
            "must be fp32 or the recipe's own gradient format (the weights' 16-bit format in the mixed and pure "
            "16-bit recipes; fp32 otherwise)");
    s.framework.fp32_gradient_accumulation = gradients == dtype::fp32;
}

// Whether the Linear weights are FP8 primary weights (framework_profile::
// fp8_primary_weights; spec/precision.hpp fp8_primary_weight_bytes_per_parameter): an
// FP8 recipe (NVFP4 has its own switch), a sharded optimizer (Megatron-LM asserts
// "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron
// fsdp", megatron/training/arguments.py@d98e8a64, and turns it off under FSDP2 with
// Transformer Engine 2: ZeRO 1 and 2 are the distributed optimizer, ZeRO-3
// Megatron-FSDP), with the optimizer offloaded only under delayed scaling (it asserts
// "When `--fp8-param-gather` is enabled, the optimizer cpu offload must be used in
// conjunction with `--fp8-recipe delayed`": 16-bit weights otherwise, as a run must turn
// them off), every weight trained. Offloaded, the copy of the updated weights to the GPU
// stays counted in 16 bits (ASSUMPTION, the larger).
constexpr bool fp8_primary_weights(const precision_recipe& r, const parallel_layout& p, const framework_profile& fw,
                                   const finetune_spec& ft) {
    return fw.fp8_primary_weights && fp8_primary_weight_bytes_per_parameter(r) > 0 && p.zero >= 1 &&
           (p.offload == offload_mode::none || r.scaling == fp8_scaling::delayed) && !ft.freezes_base();
}

constexpr bool fp8_primary_weights(const training_setup& s) {
    return fp8_primary_weights(s.precision, s.layout, s.framework, s.finetune);
}

// Whether data-parallel gradient sync overlaps backward: the layout's choice, or the
// framework's habit. With optimizer offload this is DeepSpeed's overlap_comm: the
// gradient copies to the host overlap backward too, and it keeps two reduce buckets.
constexpr bool overlaps_data_parallel_sync(const parallel_layout& l, const framework_profile& fw) {
    // A ZeRO-3 that moves each tensor on its own (DeepSpeed before v0.6) overlaps nothing,
    // whatever its overlap_comm says (spec/framework.hpp megatron_deepspeed_profile).
    if (l.zero >= 3 && fw.zero3_per_tensor_collectives) return false;
    switch (l.dp_overlap) {
        case dp_overlap_mode::on: return true;
        case dp_overlap_mode::off: return false;
        case dp_overlap_mode::framework: break;
    }
    return fw.overlap_data_parallel_sync;
}

constexpr bool overlaps_data_parallel_sync(const training_setup& s) {
    return overlaps_data_parallel_sync(s.layout, s.framework);
}

// Whether the sharded optimizer's parameter all-gather runs during the next forward:
// the framework's switch, where the gradient sync overlaps backward too (Megatron-LM
// asserts --overlap-grad-reduce with --overlap-param-gather, megatron/training/
// arguments.py@d98e8a64). Otherwise the gather runs after the optimizer step.
constexpr bool overlaps_parameter_gather(const training_setup& s) {
    return s.framework.overlap_parameter_gather && overlaps_data_parallel_sync(s);
}

// Whether tensor-parallel communication overlaps the GEMMs (the framework's
// tensor_parallel_overlap): Megatron-Core requires sequence parallelism for it
// (--tp-comm-overlap asserts --sequence-parallel), and it needs tp > 1. ASSUMPTION: only
// inside one NVLink domain. Transformer Engine's userbuffers map the peers' buffers
// through CUDA IPC (or NVLink multicast on an NVL72 rack) and copy with the GPU's copy
// engines or SMs, which reach no GPU across the network; a tensor group that spans
// domains runs its collectives through NCCL, exposed.
constexpr bool overlaps_tensor_parallel(const training_setup& s) {
    return s.framework.tensor_parallel_overlap && s.layout.sp && s.layout.tp > 1 &&
           s.layout.tp <= gpus_per_domain(s.cluster);
}

// NVLink domains one tensor-parallel group spans (1: all on NVLink). Its ranks are
// consecutive (every rank order numbers tp fastest), so tp ranks over domains of
// gpus_per_domain.
constexpr int tensor_parallel_domains(const training_setup& s) {
    const int domain = gpus_per_domain(s.cluster);
    return s.layout.tp <= domain ? 1 : (s.layout.tp + domain - 1) / domain;
}

// GPUs of one node that run at the same time, and so share its host: the node's GPUs,
// or all of the job's when it uses fewer.
constexpr int gpus_sharing_a_host(const training_setup& s) {
    return s.layout.gpus() < s.cluster.gpus_per_node ? s.layout.gpus() : s.cluster.gpus_per_node;
}

// A layout asks only for what its framework's software runs (spec/framework.hpp).
// Megatron-Core numbers expert ranks in the same order as the others and requires, with
// tp-pp-dp and pipeline stages, as many expert-data-parallel replicas as data-parallel
// ones (parallel_state.py@d98e8a64 initialize_model_parallel): ep·etp = tp·cp there.
constexpr bool expert_ranks_follow_order(const parallel_layout& l, rank_order order) {
    return !(order == rank_order::tp_pp_dp && l.pp > 1 && 1LL * l.expert_tp() * l.ep != 1LL * l.tp * l.cp);
}

namespace setup_detail {
// The catalog frameworks that offer what `offers` says, for the message.
template <class Offers>
std::string frameworks_offering(Offers offers) {
    std::string names;
    for (const framework_profile& f : framework_profiles)
        if (offers(f)) names += (names.empty() ? "" : ", ") + std::string(f.name);
    return names.empty() ? "" : "; " + names + (names.find(',') == std::string::npos ? " offers it" : " offer it");
}

template <class Value, class Offers>
[[noreturn]] TRAINPERF_COLD void fail_framework_lacks(std::string_view field, const Value& value,
                                                      const framework_profile& fw, std::string_view lacks,
                                                      Offers offers) {
    detail::fail(field, value,
                 "framework " + std::string(fw.name) + " (" + std::string(fw.software) + ") " + std::string(lacks) +
                     frameworks_offering(offers));
}
// An MoE model's layout beyond the layout's own checks (spec/parallel.hpp): what is
// modelled with experts, and Megatron-Core's rank order with experts.
TRAINPERF_NOINLINE inline void validate_moe_layout(const training_setup& s) {
    const parallel_layout& l = s.layout;
    // The expert shards' ZeRO: the distributed optimizer (ZeRO-1) over all the
    // expert-data-parallel ranks is modelled; sharded gradients and weights, hybrid
    // sharding and optimizer offload of the experts are not.
    require(l.zero <= 1, "zero", l.zero,
            "with a mixture-of-experts model only 0 and 1 (the distributed optimizer) are modelled yet");
    require(l.shard_group == 0, "shard_group", l.shard_group,
            "hybrid sharding of a mixture-of-experts model's experts is not modelled yet");
    require(l.offload == offload_mode::none, "offload", to_string(l.offload),
            "optimizer offload of a mixture-of-experts model's experts is not modelled yet");
    // The flex dispatcher's group is etp × ep (Megatron-Core's tp_ep_group; etp 1 with DeepEP).
    if (s.moe.dispatcher == moe_dispatcher::deepep && deepep_tuned_for(l.ep * l.expert_tp()) == nullptr) {
        std::string counts;
        for (const deepep_tuned& t : deepep_tuned_configs) counts += (counts.empty() ? "" : ", ") + std::to_string(t.ranks);
        detail::fail("ep", l.ep,
                     "is a group size DeepEP has no configuration for (it runs " + counts +
                         " ranks: deep_ep/buffers/legacy.py)");
    }
    if (!expert_ranks_follow_order(l, s.cluster.order))
        detail::fail("ep", l.ep,
                     "with rank order tp-pp-dp and pipeline stages, ep x etp must equal tp x cp (Megatron-Core keeps "
                     "expert-data-parallel replicas equal to data-parallel ones there)");
    // The EP overlap's own checks (TransformerConfig.__post_init__, transformer_config.py@d98e8a64).
    if (s.moe.a2a_overlap) {
        require(l.ep > 1, "moe_a2a_overlap", "on", "needs expert parallelism (ep > 1): there is no dispatch to hide");
        require(l.recompute != recompute_mode::full, "moe_a2a_overlap", "on",
                "cannot run with full recomputation (Megatron-Core refuses it)");
        // "virtual_pipeline_model_parallel_size must be specified when
        // pipeline_model_parallel_size > 1", and Megatron-LM reads a value of 1 as none
        // (megatron/training/arguments.py@d98e8a64).
        require(l.pp == 1 || l.interleave > 1, "moe_a2a_overlap", "on",
                "with pipeline stages needs virtual stages (--interleave 2 or more; Megatron-Core)");
    }
}
}  // namespace setup_detail

constexpr void require_framework_runs(const framework_profile& fw, const parallel_layout& l) {
    using setup_detail::fail_framework_lacks;
    if (l.tp > 1 && !fw.tensor_parallel)
        fail_framework_lacks("tp", l.tp, fw, "has no tensor parallelism",
                             [](const framework_profile& f) { return f.tensor_parallel; });
    if (l.sp && l.tp > 1 && !fw.sequence_parallel)  // sp without tp changes nothing
        fail_framework_lacks("sp", "on", fw, "has no Megatron-style sequence parallelism",
                             [](const framework_profile& f) { return f.sequence_parallel; });
    if (l.cp > 1 && !fw.context_parallel)
        fail_framework_lacks("cp", l.cp, fw, "has no context parallelism",
                             [](const framework_profile& f) { return f.context_parallel; });
    if (l.pp > 1 && !fw.pipeline_parallel)
        fail_framework_lacks("pp", l.pp, fw, "has no pipeline parallelism",
                             [](const framework_profile& f) { return f.pipeline_parallel; });
    if (l.interleave > 1 && !fw.interleaved_pipeline)
        fail_framework_lacks("interleave", l.interleave, fw, "has no interleaved (virtual) pipeline stages",
                             [](const framework_profile& f) { return f.interleaved_pipeline; });
    if (l.schedule == pipeline_schedule::zero_bubble_h1 && !fw.zero_bubble_schedule)
        fail_framework_lacks("schedule", "zb-h1", fw, "has no zero-bubble schedule",
                             [](const framework_profile& f) { return f.zero_bubble_schedule; });
    if ((l.first_stage_layers > 0 || l.last_stage_layers > 0) && !fw.uneven_pipeline_split)
        fail_framework_lacks(l.first_stage_layers > 0 ? "first_stage_layers" : "last_stage_layers",
                             l.first_stage_layers > 0 ? l.first_stage_layers : l.last_stage_layers, fw,
                             "splits the layers evenly over the pipeline stages",
                             [](const framework_profile& f) { return f.uneven_pipeline_split; });
    if (!l.pipeline_layout.empty() && !fw.custom_pipeline_layout)
        fail_framework_lacks("pipeline_layout", '"' + std::string(l.pipeline_layout) + '"', fw,
                             "takes no custom pipeline layout",
                             [](const framework_profile& f) { return f.custom_pipeline_layout; });
    if ((fw.zero_stages & (1u << l.zero)) == 0) {
        const unsigned stage = 1u << l.zero;
        fail_framework_lacks("zero", l.zero, fw, "has no ZeRO stage " + std::to_string(l.zero),
                             [stage](const framework_profile& f) { return (f.zero_stages & stage) != 0; });
    }
    if (!l.recompute_modules.empty() && !fw.fine_grained_recompute)
        fail_framework_lacks("recompute_modules", names_of(l.recompute_modules, "+"), fw,
                             "recomputes no submodules by name (only its recompute modes)",
                             [](const framework_profile& f) { return f.fine_grained_recompute; });
    if (!fw.recompute_modes.contains(l.recompute)) {
        const recompute_mode r = l.recompute;
        fail_framework_lacks("recompute", to_string(r), fw,
                             "does not offer this recompute (it offers " + names_of(fw.recompute_modes) + ")",
                             [r](const framework_profile& f) { return f.recompute_modes.contains(r); });
    }
    if (l.shard_group > 0 && !fw.hybrid_sharding)
        fail_framework_lacks("shard_group", l.shard_group, fw, "has no hybrid sharding",
                             [](const framework_profile& f) { return f.hybrid_sharding; });
    if (l.offload == offload_mode::optimizer && !fw.optimizer_offload)
        fail_framework_lacks("offload", "optimizer", fw, "does not run the optimizer on the host",
                             [](const framework_profile& f) { return f.optimizer_offload; });
}

// A setup trains only with what its framework's software trains with (spec/framework.hpp):
// its optimizer, number recipe and fine-tuning mode.
namespace setup_detail {
[[noreturn]] TRAINPERF_COLD inline void fail_rank_order(const training_setup& s) {
    const rank_order k = s.cluster.order;
    fail_framework_lacks("rank_order", to_string(k), s.framework,
                         "numbers its ranks only " + names_of(s.framework.rank_orders),
                         [k](const framework_profile& f) { return f.rank_orders.contains(k); });
}
}  // namespace setup_detail

// The setup's rank order is one its framework numbers ranks by (framework_profile::
// rank_orders): a layout with both pipeline stages and replicas needs it (validate_layout),
// a search of layouts needs it of every layout it may try.
constexpr void require_framework_rank_order(const training_setup& s) {
    if (!s.framework.rank_orders.contains(s.cluster.order)) setup_detail::fail_rank_order(s);
}

constexpr void require_framework_trains(const training_setup& s) {
    using setup_detail::fail_framework_lacks;
    const framework_profile& fw = s.framework;
    if (!fw.optimizers.contains(s.optimizer)) {
        const optimizer_kind k = s.optimizer;
        fail_framework_lacks("optimizer", to_string(k), fw, "has no such optimizer (it runs " + names_of(fw.optimizers) + ")",
                             [k](const framework_profile& f) { return f.optimizers.contains(k); });
    }
    if (!fw.precisions.contains(s.precision.kind)) {
        const precision_kind k = s.precision.kind;
        fail_framework_lacks("precision", to_string(k), fw,
                             "does not run this recipe (it runs " + names_of(fw.precisions) + ")",
                             [k](const framework_profile& f) { return f.precisions.contains(k); });
    }
    if (quantized_linears(s.precision) && !fw.fp8_scalings.contains(s.precision.scaling)) {
        const fp8_scaling k = s.precision.scaling;
        fail_framework_lacks("fp8_scaling", to_string(k), fw,
                             "does not scale its quantized Linears this way (it runs " + names_of(fw.fp8_scalings) + ")",
                             [k](const framework_profile& f) {
                                 return f.precisions.contains(precision_kind::fp8) && f.fp8_scalings.contains(k);
                             });
    }
    if (!fw.finetune_modes.contains(s.finetune.mode)) {
        const finetune_mode k = s.finetune.mode;
        fail_framework_lacks("finetune", to_string(k), fw,
                             "does not train adapters (it runs " + names_of(fw.finetune_modes) + ")",
                             [k](const framework_profile& f) { return f.finetune_modes.contains(k); });
    }
}

// What a setup's layout must satisfy given the rest of the setup (which validate_fixed
// checks): the layout alone and against the model, the sequence and the cluster, what
// no framework runs with it, and what the setup's framework runs. A planner that keeps
// everything but the layout re-checks only this (checked_setup::with_layout).
constexpr void validate_layout(const training_setup& s) {
    const auto& l = s.layout;
    validate(l, s.model);
    require(l.interleave <= s.model.layers, "interleave", l.interleave, "must not exceed the number of layers");
    require(1LL * l.micro_batch * sequence_length(s) <= limits::max_micro_batch_tokens, "batch", l.micro_batch,
            "micro-batch x seq must be at most 2^31 tokens");
    require_cp_splits_sequence(sequence_length(s), l.cp);
    // Virtual stages over a split that counts the embedding and the loss (spec/parallel.hpp
    // split_layer_equivalents): only where the framework splits unevenly.
    if (l.interleave > 1 && l.first_stage_layers == 0 && l.last_stage_layers == 0 &&
        !s.framework.uneven_pipeline_split && split_layer_equivalents(s.model.layers, l.pp, l.interleave).total() > 0)
        setup_detail::fail_framework_lacks("interleave", l.interleave, s.framework,
                                           "needs pp x interleave to divide the layers (no uneven pipeline split)",
                                           [](const framework_profile& f) { return f.uneven_pipeline_split; });
    if (has_moe(s.model)) setup_detail::validate_moe_layout(s);
    // transformer_config.py@d98e8a64: moe_act and layernorm recompute under fp8 refuse
    // delayed scaling; moe recompute refuses the EP overlap, shared_experts recompute the
    // shared-expert overlap.
    if (!l.recompute_modules.empty()) {
        if (quantized_linears(s.precision) && s.precision.scaling == fp8_scaling::delayed)
            for (recompute_module k : {recompute_module::moe_act, recompute_module::layernorm})
                if (l.recompute_modules.contains(k))
                    detail::fail("recompute_modules", to_string(k), "cannot run with fp8's delayed scaling (Megatron-Core)");
        require(!(l.recompute_modules.contains(recompute_module::moe) && s.moe.a2a_overlap), "recompute_modules",
                "moe", "cannot run with the EP overlap (--moe-a2a-overlap; Megatron-Core)");
        require(!(l.recompute_modules.contains(recompute_module::shared_experts) && s.moe.shared_expert_overlap),
                "recompute_modules", "shared-experts",
                "cannot run with the shared-expert overlap (--moe-shared-expert-overlap; Megatron-Core)");
    }
    // Sliding windows are priced in the fused attention kernel of one rank's sequence
    // (workload/layer.hpp windowed_keys_per_query): not with a KV ring, nor unfused.
    if (s.model.sliding_window > 0 && sequence_length(s) > s.model.sliding_window) {
        require(l.cp == 1, "cp", l.cp, "with sliding-window attention is not modelled");
        require(s.framework.flash_attention, "flash_attention", "off",
                "sliding-window attention is modelled in a fused attention kernel only");
    }
    // The rank order moves groups only where there are both stages and replicas.
    if (l.pp > 1 && l.dp > 1) require_framework_rank_order(s);
    require(!(l.offload == offload_mode::optimizer && s.cluster.gpu.memory_shared_with_host), "offload",
            "optimizer", "this GPU shares its memory with the host: offloading frees nothing");
    require(!(l.offload == offload_mode::optimizer && s.cluster.gpu.host_link.kind == link_kind::none), "offload",
            "optimizer", "this GPU has no host link (gpu.host_link) to copy gradients and weights over");
    require(!(s.finetune.freezes_base() && l.offload == offload_mode::optimizer), "offload", "optimizer",
            "is not modelled with lora or qlora (the adapters' optimizer state is small)");
    // CUDA graphs capture a layer's kernels once; what changes from one run to the next
    // cannot be captured (spec/framework.hpp cuda_graphs).
    if (s.framework.cuda_graphs) {
        require(l.recompute != recompute_mode::full, "cuda_graphs", "on",
                "cannot be used with full recompute (Megatron-Core captures layers, not checkpoints)");
        require(l.offload == offload_mode::none, "cuda_graphs", "on", "cannot be used with optimizer offload");
        require(l.zero < 3, "cuda_graphs", "on", "cannot be used with ZeRO-3 (its per-layer gathers are not captured)");
    }
    // What the framework's software runs, once what no framework runs is refused.
    require_framework_runs(s.framework, l);
    if (l.offload == offload_mode::optimizer && !s.framework.host_optimizers.contains(s.optimizer)) {
        const optimizer_kind k = s.optimizer;
        setup_detail::fail_framework_lacks(
            "offload", "optimizer", s.framework,
            "does not run " + std::string(to_string(k)) + " on the host (it runs " +
                (s.framework.host_optimizers.empty() ? std::string("none") : names_of(s.framework.host_optimizers)) +
                " there)",
            [k](const framework_profile& f) { return f.optimizer_offload && f.host_optimizers.contains(k); });
    }
    // An adapter's GEMMs run on the projection's part per rank (workload/stage.hpp
    // for_each_adapter_op): at least one column of it.
    if (s.finetune.freezes_base())
        for (const lora_matrix& x : lora_matrices(s.model))
            if (x.present && s.finetune.adapts(x.target))
                require((x.column_parallel ? x.d_out : x.d_in) >= l.tp, "tp", l.tp,
                        "must not exceed the width of an adapted projection's part per rank (lora_targets)");
}

// Everything of a setup but its layout: the system, the model and its sequence, the
// recipe on the GPU, the framework, the kernel parameters, fine-tuning and the input
// pipeline.
namespace setup_detail {

// An MoE model's dispatcher among those the framework runs.
inline void require_framework_dispatches(const training_setup& s) {
    const moe_dispatcher d = s.moe.dispatcher;
    if (!s.framework.moe_dispatchers.contains(d))
        fail_framework_lacks("moe_dispatcher", to_string(d), s.framework,
                             s.framework.moe_dispatchers.empty()
                                 ? "trains no mixture-of-experts model with expert parallelism here"
                                 : "does not dispatch tokens this way (it runs " + names_of(s.framework.moe_dispatchers) +
                                       ")",
                             [d](const framework_profile& f) { return f.moe_dispatchers.contains(d); });
}

// An MoE model: the framework's dispatcher, and what is not modelled with experts yet.
TRAINPERF_NOINLINE inline void validate_moe_setup(const training_setup& s) {
    const moe_dispatcher d = s.moe.dispatcher;
    if (forwards_by_node(d) && s.layout.expert_tp() != 1)
        detail::fail("etp", s.layout.expert_tp(),
                     "with the " + std::string(to_string(d)) +
                         " dispatcher must be 1 (expert tensor parallelism with the flex dispatcher is not modelled)");
    require_framework_dispatches(s);
    require(!s.finetune.freezes_base(), "finetune", to_string(s.finetune.mode),
            "adapters on a mixture-of-experts model are not modelled");
    require(!s.moe.a2a_overlap || d != moe_dispatcher::allgather, "moe_a2a_overlap", "on",
            "runs with the alltoall, deepep or hybridep dispatcher only (Megatron-Core: alltoall or flex)");
    require(!s.moe.a2a_overlap || s.model.mtp_layers <= 1, "moe_a2a_overlap", "on",
            "supports at most one multi-token prediction module (Megatron-Core)");
    require(!s.moe.a2a_overlap || s.precision.weights == dtype::bf16 || s.precision.weights == dtype::fp16,
            "moe_a2a_overlap", "on", "needs a bf16 or fp16 model (Megatron-Core; fp8 and fp4 recipes keep one)");
    // The shared-expert overlap's own checks (TransformerConfig.__post_init__,
    // transformer_config.py@d98e8a64; Megatron-Core ignores it without shared experts, where
    // it could only be a mistake here).
    if (s.moe.shared_expert_overlap) {
        require(s.model.moe.shared_ffn_hidden > 0, "moe_shared_expert_overlap", "on",
                "needs shared experts (model " + std::string(s.model.name) + " has none)");
        require(d != moe_dispatcher::allgather, "moe_shared_expert_overlap", "on",
                "runs with the alltoall, deepep or hybridep dispatcher only (Megatron-Core: alltoall or flex)");
        require(!s.moe.a2a_overlap, "moe_shared_expert_overlap", "on",
                "cannot run with moe_a2a_overlap (Megatron-Core: disable one of them)");
    }
    // An expert takes each token at most once: its load is at most E/k times the mean.
    const double most = double(s.model.moe.experts) / s.model.moe.experts_per_token;
    if (s.moe.imbalance > most)
        detail::fail("moe_imbalance", s.moe.imbalance,
                     "must not exceed experts / experts_per_token (" + std::to_string(s.model.moe.experts) + " / " +
                         std::to_string(s.model.moe.experts_per_token) + "): an expert takes each token at most once");
}
}  // namespace setup_detail

constexpr void validate_fixed(const training_setup& s) {
    validate(s.cluster);
    validate(s.model);
    validate(s.framework);
    if (s.kernels) validate(*s.kernels);  // the defaults are valid (spec/kernel_params.hpp)
    validate(s.finetune);
    check_supported(s.cluster.gpu, s.precision);
    require(s.seq >= 0, "seq", s.seq, "must not be negative (0: the model's training length)");
    require(sequence_length(s) >= 1, "seq", s.seq, "must be at least 1 (the model has no max_seq)");
    require(sequence_length(s) <= (1 << 24), "seq", sequence_length(s), "must be at most 2^24 tokens");
    require(s.model.positions != position_kind::learned || s.model.max_seq == 0 || sequence_length(s) <= s.model.max_seq,
            "seq", sequence_length(s), "exceeds the model's learned position table (max_seq)");
    require(s.cluster.gpus_per_node >= 1, "gpus_per_node", s.cluster.gpus_per_node, "must be at least 1");
    require_in(s.data_loading.value(), limits::step_time, "data_loading_s");
    require_in(s.host_to_device.value(), limits::step_time, "host_to_device_s");
    // The only projection a model can lack is the gate (no SwiGLU): targets that adapt
    // nothing are exactly {gate}.
    require(!s.finetune.freezes_base() || adapted_matrices_per_layer(s.model, s.finetune) > 0, "lora_targets",
            "gate", "names no projection this model has (it has no gate without SwiGLU)");
    // A fused attention kernel's head size (workload/ops.hpp validate(attention_op)).
    require(!s.framework.flash_attention || s.model.head_dim() <= limits::max_attention_head_dim,
            "attention_head_dim", s.model.head_dim(),
            "must be at most 4096 with a fused attention kernel (the framework's flash_attention)");
    require_framework_trains(s);
    validate(s.moe);  // checked for a dense model too: a bad value is refused wherever it is given
    require(!s.moe.a2a_overlap || has_moe(s.model), "moe_a2a_overlap", "on",
            "needs a mixture-of-experts model (this model dispatches no tokens)");
    require(!s.moe.shared_expert_overlap || has_moe(s.model), "moe_shared_expert_overlap", "on",
            "needs a mixture-of-experts model (this model dispatches no tokens)");
    if (has_moe(s.model)) setup_detail::validate_moe_setup(s);
}

// Every input of a prediction. Throws trainperf::invalid_argument naming the first field
// that is wrong. spec/checked_setup.hpp keeps a setup that passed.
constexpr void validate(const training_setup& s) {
    validate_fixed(s);
    validate_layout(s);
}

}  // namespace trainperf
