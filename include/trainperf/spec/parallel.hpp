// A parallel layout: how a model and its batch are split over GPUs.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/attributes.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "model.hpp"
#include "pipeline_layout.hpp"
#include "recompute_modules.hpp"

namespace trainperf {

// What a layer recomputes in backward instead of keeping from its forward:
//   - none;
//   - selective: the attention core (Korthikanti et al. 2022, §5; Megatron-LM
//     --recompute-activations);
//   - full: the whole layer from its input (Megatron-LM --recompute-granularity full; the
//     Hugging Face Trainer's gradient_checkpointing);
//   - op_selective: op-level selective activation checkpointing as torchtitan runs it
//     (torchtitan@b0902b29 torchtitan/models/llama3/infra/parallelize.py, `mode =
//     "selective"`, `selective_ac_option = "op"`): the layer input is kept, and of the
//     ops of its forward the outputs of the attention kernel (SDPA), of the
//     sequence-parallel reduce-scatters, of amax (max) and of every other matmul in
//     forward order (the 1st, 3rd, ...); everything else (norms, RoPE, activations,
//     adds, the other matmuls, the all-gathers) is recomputed from the layer input in
//     backward (cost/memory.hpp, workload/stage.hpp).
enum class recompute_mode { none, selective, full, op_selective };

template <>
struct enum_names<recompute_mode> {
    static constexpr std::array<enum_name<recompute_mode>, 4> table{{{recompute_mode::none, "none"},
                                                                    {recompute_mode::selective, "selective"},
                                                                    {recompute_mode::full, "full"},
                                                                    {recompute_mode::op_selective, "op-selective"}}};
};

constexpr recompute_mode parse_recompute(std::string_view s) { return parse_enum<recompute_mode>("recompute", s); }

// A layer's linear projections in the order its code calls them, to
// visit(name, in_width, out_width, column_parallel): Q, K and V apart (BERT, LLaMA) or one
// QKV projection; the output projection; SwiGLU's gate, up and down, or up and down.
// Names as workload/layer.hpp layer_forward_gemms gives them; widths before tensor
// parallelism (a column-parallel projection splits its output, a row-parallel one its
// input).
template <class Visit>
constexpr void for_each_layer_linear(const transformer_config& m, model_code code, Visit&& visit) {
    const double h = m.hidden, q = m.q_width(), kv = m.kv_width(), f = m.ffn_hidden;
    if (code == model_code::bert || code == model_code::llama) {
        visit("q", h, q, true);
        visit("k", h, kv, true);
        visit("v", h, kv, true);
    } else {
        visit("qkv", h, q + 2 * kv, true);
    }
    visit("attention_out", q, h, false);
    if (m.ffn == ffn_kind::swiglu) visit("ffn_gate", h, f, true);
    visit("ffn_up", h, f, true);
    visit("ffn_down", f, h, false);
}

// Op-level selective checkpointing keeps the output of every other matmul of a layer's
// forward, counting from the first (torchtitan@b0902b29 parallelize.py _custom_policy:
// the mm counter's odd calls are saved, its even ones recomputed), in the order of
// for_each_layer_linear. Only plain matmuls count: FP8 Linears run torch._scaled_mm, which
// the policy neither counts nor saves (fp8: every Linear output is recomputed).
constexpr bool op_selective_keeps_output(const transformer_config& m, std::string_view linear, model_code code,
                                         bool fp8 = false) {
    if (fp8) return false;
    int index = 0, found = 0;
    for_each_layer_linear(m, code, [&](std::string_view name, double, double, bool) {
        ++index;
        if (name == linear) found = index;
    });
    return found % 2 == 1;
}

enum class offload_mode { none, optimizer };

template <>
struct enum_names<offload_mode> {
    static constexpr std::array<enum_name<offload_mode>, 2> table{{
        {offload_mode::none, "none"}, {offload_mode::optimizer, "optimizer"}}};
};

constexpr offload_mode parse_offload(std::string_view s) { return parse_enum<offload_mode>("offload", s); }

// Whether data-parallel gradient sync overlaps backward: as the framework profile
// does it, or forced on/off.
enum class dp_overlap_mode { framework, on, off };

template <>
struct enum_names<dp_overlap_mode> {
    static constexpr std::array<enum_name<dp_overlap_mode>, 3> table{{
        {dp_overlap_mode::framework, "framework"}, {dp_overlap_mode::on, "on"}, {dp_overlap_mode::off, "off"}}};
};

// The pipeline schedule (pp > 1). 1f1b: one forward, one backward in the steady state
// (PipeDream-Flush, Narayanan et al. 2021, §2.2), interleaved over virtual stages when
// interleave > 1. zb-h1: Zero Bubble's schedule ZB-H1 (Qi et al. 2024, "Zero Bubble
// Pipeline Parallelism", ICLR 2024, §3): backward split into the input gradient (B),
// on the critical path, and the weight gradient (W), deferred into the bubble; the
// bubble shrinks from (p−1)(F+B+W) to (p−1)(F+B−W) at the same peak activation memory
// as 1F1B. PyTorch's torch.distributed.pipelining runs zero-bubble schedules; which
// framework profile offers which is spec/framework.hpp's zero_bubble_schedule.
enum class pipeline_schedule { one_f_one_b, zero_bubble_h1 };

template <>
struct enum_names<pipeline_schedule> {
    static constexpr std::array<enum_name<pipeline_schedule>, 2> table{{
        {pipeline_schedule::one_f_one_b, "1f1b"}, {pipeline_schedule::zero_bubble_h1, "zb-h1"}}};
};

// Whether a hybrid shard group of `shard_group` ranks splits dp × cp data-parallel ranks:
// whole cp groups, dividing them.
constexpr bool shards_evenly(int shard_group, int dp, int cp) {
    return shard_group >= 1 && shard_group % cp == 0 && (1LL * dp * cp) % shard_group == 0;
}

struct parallel_layout {
    int dp = 1;                  // data-parallel replicas
    int tp = 1;                  // tensor parallel (Megatron), inside a node
    int cp = 1;                  // context parallel: the sequence split over cp ranks (Megatron-Core + TE)
    int pp = 1;                  // pipeline stages
    int interleave = 1;          // virtual stages per pipeline rank (1 = plain 1F1B)
    bool sp = false;             // sequence parallelism (needs tp > 1 to matter)
    int zero = 0;                // ZeRO stage 0..3, shards over dp
    offload_mode offload = offload_mode::none;
    int micro_batch = 1;         // samples per micro-batch per model replica
    int grad_accum = 1;          // micro-batches per step per replica
    recompute_mode recompute = recompute_mode::none;
    dp_overlap_mode dp_overlap = dp_overlap_mode::framework;
    pipeline_schedule schedule = pipeline_schedule::one_f_one_b;
    // Layers on the first and on the last pipeline stage, 0: an even split. The other
    // stages share the rest evenly (Megatron-Core --decoder-first-pipeline-num-layers,
    // --decoder-last-pipeline-num-layers). A lighter last stage makes room for the head
    // and loss, a lighter first stage for its pp micro-batches in flight (Llama 3 takes
    // one layer off each, Dubey et al. 2024, §3.3.2).
    int first_stage_layers = 0;
    int last_stage_layers = 0;
    // The data-parallel ranks (with cp) that shard ZeRO's state, 0: all dp·cp of them.
    // Fewer, and the state is sharded within each group of shard_group ranks and
    // replicated over the dp·cp/shard_group groups: hybrid sharding (PyTorch FSDP
    // HYBRID_SHARD and FSDP2's HSDP mesh; Megatron-Core's partial distributed optimizer,
    // --num-distributed-optimizer-instances). Whole cp groups: a multiple of cp.
    int shard_group = 0;
    // Expert parallelism (MoE models; Megatron-Core --expert-model-parallel-size and
    // --expert-tensor-parallel-size): each MoE layer's routed experts split over ep ranks,
    // each expert's FFN over etp ranks (0: etp = tp, Megatron-Core's default). The experts
    // are folded onto the ranks of a pipeline stage (megatron/core/parallel_state.py@d98e8a64
    // initialize_model_parallel): the tp·cp·dp ranks that hold attention hold the experts
    // as etp × ep × edp, edp = tp·cp·dp / (etp·ep) expert-data-parallel replicas.
    int ep = 1;
    int etp = 0;
    // A custom pipeline layout (spec/pipeline_layout.hpp; Megatron-Core
    // --pipeline-model-parallel-layout), empty: the split above. A view of text that must
    // outlive the layout.
    std::string_view pipeline_layout{};
    // With recompute selective, the layer's submodules recomputed
    // (spec/recompute_modules.hpp; Megatron-Core --recompute-modules); empty: Megatron-Core's
    // default, the attention core.
    recompute_module_set recompute_modules{};

    constexpr int gpus() const { return dp * tp * cp * pp; }
    // The ranks ZeRO shards over, and the replicas of each shard.
    constexpr int shard_size() const { return shard_group > 0 ? shard_group : dp * cp; }
    constexpr int shard_replicas() const { return dp * cp / shard_size(); }
    // The data-parallel group with context parallelism (Megatron-Core's
    // get_data_parallel_group(with_context_parallel=True)): the cp ranks of a replica
    // hold the same weights, so gradients are reduced, and ZeRO shards, over dp x cp.
    constexpr int dp_cp() const { return dp * cp; }
    // Samples per optimizer step; only for a validated layout (validate bounds it).
    constexpr long long global_batch() const { return 1LL * micro_batch * dp * grad_accum; }
    // Expert tensor parallelism in force, and the expert-data-parallel replicas of each
    // expert shard (only for a layout validated against an MoE model).
    constexpr int expert_tp() const { return etp > 0 ? etp : tp; }
    constexpr int expert_dp() const { return int(1LL * tp * cp * dp / (1LL * expert_tp() * ep)); }
    friend constexpr bool operator==(const parallel_layout&, const parallel_layout&) = default;
};


// The submodules a layout recomputes: with recompute selective its list (the attention
// core when none is given), none otherwise (full and op-selective recompute are their own
// modes).
constexpr recompute_module_set recomputed_modules(const parallel_layout& p) {
    if (p.recompute != recompute_mode::selective) return {};
    return p.recompute_modules.empty() ? default_recompute_modules : p.recompute_modules;
}

// tp × cp × pp, checked: the GPUs of one model replica (cp ranks split its sequence).
constexpr int model_parallel_size(int tp, int pp, int cp = 1) {
    require(tp >= 1 && tp <= max_gpus, "tp", tp, "must be between 1 and 2^22");
    require(pp >= 1 && pp <= max_gpus, "pp", pp, "must be between 1 and 2^22");
    require(cp >= 1 && cp <= max_gpus, "cp", cp, "must be between 1 and 2^22");
    require(1LL * tp * pp * cp <= max_gpus, "gpus", 1LL * tp * pp * cp,
            cp == 1 ? "tp x pp is beyond any real system (at most 2^22 GPUs)"
                    : "tp x cp x pp is beyond any real system (at most 2^22 GPUs)");
    return tp * pp * cp;
}

constexpr void validate(const parallel_layout& p) {
    require(p.dp >= 1, "dp", p.dp, "must be at least 1");
    require(1LL * p.dp * model_parallel_size(p.tp, p.pp, p.cp) <= max_gpus, "gpus", 1LL * p.dp * p.tp * p.cp * p.pp,
            "dp x tp x cp x pp is beyond any real system (at most 2^22 GPUs)");
    require(p.interleave >= 1 && p.interleave <= max_gpus, "interleave", p.interleave, "must be between 1 and 2^22");
    require(p.zero >= 0 && p.zero <= 3, "zero", p.zero, "must be 0, 1, 2 or 3");
    require(p.micro_batch >= 1, "batch", p.micro_batch, "must be at least 1");
    require(p.grad_accum >= 1, "grad_accum", p.grad_accum, "must be at least 1");
    // Checked before global_batch() multiplies: batch, dp and grad_accum each fit an
    // int, their product does not fit a long long.
    if (product_capped(product_capped(p.micro_batch, p.dp, max_global_batch), p.grad_accum, max_global_batch) >
        max_global_batch)
        detail::fail("global_batch",
                     std::to_string(p.micro_batch) + " x " + std::to_string(p.dp) + " x " + std::to_string(p.grad_accum),
                     "batch x dp x grad_accum is beyond any real run (at most 2^40 samples)");
    // Megatron-LM's interleaved 1F1B schedule needs whole rounds of pp micro-batches.
    require(p.interleave == 1 || p.grad_accum % p.pp == 0, "grad_accum", p.grad_accum,
            "must be a multiple of pp with an interleaved schedule");
    require(p.schedule == pipeline_schedule::one_f_one_b || p.pp > 1, "schedule", to_string(p.schedule),
            "needs pipeline stages (pp > 1)");
    require(p.schedule == pipeline_schedule::one_f_one_b || p.interleave == 1, "schedule", to_string(p.schedule),
            "has no interleaved form: use interleave 1");
    require(p.shard_group >= 0 && p.shard_group <= max_gpus, "shard_group", p.shard_group,
            "must be between 0 (every data-parallel rank) and 2^22");
    if (p.shard_group > 0) {
        require(p.zero >= 1, "shard_group", p.shard_group, "shards ZeRO's state: needs zero 1, 2 or 3");
        if (!shards_evenly(p.shard_group, p.dp, p.cp))  // the message is built only on failure
            detail::fail("shard_group", p.shard_group,
                         "must divide dp x cp = " + std::to_string(1LL * p.dp * p.cp) + " and be a multiple of cp");
    }
    for (const auto& [name, layers] : {std::pair<std::string_view, int>{"first_stage_layers", p.first_stage_layers},
                                       std::pair<std::string_view, int>{"last_stage_layers", p.last_stage_layers}}) {
        require(layers >= 0 && layers <= limits::max_layers, name, layers, "must be between 0 (an even split) and 2^16");
        require(layers == 0 || p.pp > 1, name, layers, "needs pipeline stages (pp > 1)");
        // Megatron-Core gives each virtual stage of the first (last) stage
        // num_layers_in_first (last)_pipeline_stage / vp layers (transformer_layer.py
        // get_transformer_layer_offset@767a8a81, which asserts the division).
        if (layers != 0 && layers % p.interleave != 0)  // the message is built only on failure
            detail::fail(name, layers,
                         "must be a multiple of interleave (" + std::to_string(p.interleave) +
                             "): each virtual stage holds as many layers");
    }
    if (!p.recompute_modules.empty() && p.recompute != recompute_mode::selective)
        detail::fail("recompute_modules", names_of(p.recompute_modules, "+"),
                     "needs recompute selective (Megatron-Core's --recompute-granularity selective)");
    // Megatron-Core takes a layout or the first/last stage counts, not both.
    if (!p.pipeline_layout.empty() && (p.first_stage_layers > 0 || p.last_stage_layers > 0))
        detail::fail("pipeline_layout", '"' + std::string(p.pipeline_layout) + '"',
                     "cannot be combined with first_stage_layers or last_stage_layers: the layout places every layer");
}

// Context parallelism with causal load balancing (Megatron-Core
// docs/user-guide/features/context_parallel.md@d98e8a64; TransformerEngine
// transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py@d0067d0d)
// cuts the sequence into 2·cp chunks, rank r holding chunks r and 2cp−1−r: the
// sequence must divide by 2·cp.
constexpr bool cp_splits_sequence(int seq, int cp) { return cp == 1 || (seq > 0 && seq % (2LL * cp) == 0); }

namespace parallel_detail {
// The failure with its message, out of line, so that the check itself stays small enough
// to inline where validate(training_setup) runs it.
[[noreturn]] TRAINPERF_COLD inline void fail_cp_splits_sequence(int seq, int cp) {
    detail::fail("cp", cp,
                 "needs a sequence length divisible by 2 x cp (causal load balancing splits it into 2 x cp "
                 "chunks); seq is " + std::to_string(seq));
}
}  // namespace parallel_detail

constexpr void require_cp_splits_sequence(int seq, int cp) {
    if (!cp_splits_sequence(seq, cp)) parallel_detail::fail_cp_splits_sequence(seq, cp);
}

// Tensor parallelism splits the attention heads, and the kv heads (or replicates a
// kv head on several ranks when there are fewer than tp).
constexpr bool tp_splits_heads(const transformer_config& m, int tp) {
    return m.heads % tp == 0 && (m.effective_kv_heads() % tp == 0 || tp % m.effective_kv_heads() == 0);
}

// Megatron-Core's split where pp·interleave does not divide the layers: the embedding and
// the loss each count as one layer of the first and of the last stage
// (TransformerConfig.account_for_embedding_in_pipeline_split and
// account_for_loss_in_pipeline_split; NVIDIA/Megatron-LM@767a8a81
// megatron/core/transformer/transformer_layer.py get_transformer_layer_offset). The
// L + e + l layer-equivalents split evenly, (L + e + l)/(pp·v) per virtual stage, and the
// first virtual stage of the first rank holds the embedding in place of a layer, the last
// of the last rank the loss. Llama 3.1 405B's 126 layers on 16 stages × 8 virtual stages:
// 128 equivalents, one per virtual stage, none in the first's first and the last's last.
// Both when L + 2 splits; else ASSUMPTION, the loss alone when L + 1 does (the last
// stage also runs the output layer); none otherwise.
struct layer_equivalents {
    int embedding = 0, loss = 0;
    constexpr int total() const { return embedding + loss; }
};

constexpr layer_equivalents split_layer_equivalents(int layers, int pp, int interleave) {
    // More virtual stages than layer-equivalents never split; the rest in 32 bits (a
    // 64-bit division costs several times a 32-bit one on the planner's hot path).
    if (pp == 1 || 1LL * pp * interleave > layers + 2LL) return {};
    const int chunks = pp * interleave;
    if (layers % chunks == 0) return {};
    if ((layers + 2) % chunks == 0) return {1, 1};
    if ((layers + 1) % chunks == 0) return {0, 1};
    return {};
}

// The virtual stages split the layers evenly: pp·interleave divides them, or the layers
// with the embedding and the loss counted (split_layer_equivalents).
constexpr bool interleave_splits_layers(const transformer_config& m, int pp, int interleave) {
    return interleave == 1 || m.layers % (1LL * pp * interleave) == 0 ||
           split_layer_equivalents(m.layers, pp, interleave).total() > 0;
}

// Layers on the busiest pipeline stage of an even split.
constexpr int layers_per_stage(const transformer_config& m, int pp) { return (m.layers + pp - 1) / pp; }

// Layers on the first, on each middle and on the last pipeline stage (pp = 1: the one
// stage is first and last). An even split gives every stage L/(p) when p·v divides L;
// else Megatron-Core's split with the embedding and the loss counted as layers
// (split_layer_equivalents: 126 layers on 16 stages are 7, 8, …, 8, 7) where that splits;
// else every stage ⌈L/p⌉ (the busiest's count). With first_stage_layers or
// last_stage_layers set, the other stages share what is left evenly; stages = 0 when that
// does not split.
struct pipeline_split {
    int first = 0, middle = 0, last = 0;
    constexpr bool valid() const { return first >= 1 && middle >= 0 && last >= 1; }
};

namespace parallel_detail {
// pipeline_split_of's other cases, out of the way of the usual one: a split that counts the
// embedding and the loss, ⌈L/p⌉ where none splits, or the first and last stages given.
// A custom layout's first and last ranks, and the busiest of the others.
TRAINPERF_NOINLINE inline pipeline_split layout_split(const transformer_config& m, const parallel_layout& p) {
    const std::vector<pipeline_rank_load> ranks = pipeline_rank_loads(p.pipeline_layout, m, p.pp);
    pipeline_split split{ranks.front().layers, 0, ranks.back().layers};
    for (std::size_t r = 1; r + 1 < ranks.size(); ++r) split.middle = std::max(split.middle, ranks[r].layers);
    return split;
}

constexpr pipeline_split uneven_split(const transformer_config& m, const parallel_layout& p) {
    if (!p.pipeline_layout.empty()) return layout_split(m, p);
    if (p.first_stage_layers == 0 && p.last_stage_layers == 0) {
        const layer_equivalents counted = split_layer_equivalents(m.layers, p.pp, p.interleave);
        if (counted.total() == 0) {
            const int most = layers_per_stage(m, p.pp);
            return {most, most, most};
        }
        const int per_stage = (m.layers + counted.total()) / p.pp;
        return {per_stage - counted.embedding, per_stage, per_stage - counted.loss};
    }
    const int others = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
    const long long rest = 1LL * m.layers - p.first_stage_layers - p.last_stage_layers;
    if (others == 0 ? rest != 0 : (rest < others || rest % others != 0)) return {0, 0, 0};
    const int middle = others == 0 ? 0 : int(rest / others);
    return {p.first_stage_layers > 0 ? p.first_stage_layers : middle, middle,
            p.last_stage_layers > 0 ? p.last_stage_layers : middle};
}
}  // namespace parallel_detail

// The usual case inline: one stage, or p·v dividing the layers (32-bit arithmetic: a
// prediction asks for the split of several stages, the planner of every candidate).
constexpr pipeline_split pipeline_split_of(const transformer_config& m, const parallel_layout& p) {
    if (p.pp == 1) return {m.layers, 0, m.layers};
    const long long chunks = 1LL * p.pp * p.interleave;
    if (p.first_stage_layers == 0 && p.last_stage_layers == 0 && p.pipeline_layout.empty() && chunks <= m.layers &&
        m.layers % int(chunks) == 0) {
        const int even = m.layers / p.pp;
        return {even, even, even};
    }
    return parallel_detail::uneven_split(m, p);
}

// Whether the experts' ep·etp ranks fold onto a pipeline stage's tp·cp·dp (Megatron-Core
// places them there).
constexpr bool experts_fold_onto_stage(const parallel_layout& p) {
    return (1LL * p.tp * p.cp * p.dp) % (1LL * p.expert_tp() * p.ep) == 0;
}

namespace parallel_detail {
// Expert parallelism against the model: only an MoE model has experts to split, over
// ranks that fold onto a stage's tp·cp·dp. Out of line: a dense model's layout with
// ep = 1 never comes here.
TRAINPERF_NOINLINE constexpr void validate_expert_parallelism(const parallel_layout& p, const transformer_config& m) {
    require(p.ep >= 1 && p.ep <= max_gpus, "ep", p.ep, "must be between 1 and 2^22");
    require(p.etp >= 0 && p.etp <= max_gpus, "etp", p.etp, "must be between 0 (= tp) and 2^22");
    if (!has_moe(m)) {
        require(p.ep == 1, "ep", p.ep, "needs a mixture-of-experts model (this model has no experts to split)");
        require(p.etp == 0 || p.etp == p.tp, "etp", p.etp,
                "needs a mixture-of-experts model (this model has no experts to split)");
        return;
    }
    require(m.moe.experts % p.ep == 0, "ep", p.ep,
            "must divide the routed experts (" + std::to_string(m.moe.experts) + ")");
    require(p.expert_tp() <= m.moe.expert_ffn_hidden, "etp", p.expert_tp(),
            "must not exceed an expert's ffn width (each rank holds a part of every local expert)");
    if (!experts_fold_onto_stage(p))
        detail::fail("ep", p.ep,
                     "ep x etp = " + std::to_string(1LL * p.expert_tp() * p.ep) + " must divide tp x cp x dp = " +
                         std::to_string(1LL * p.tp * p.cp * p.dp) +
                         " (Megatron-Core folds the experts onto the ranks of a pipeline stage)");
    // Megatron-Core's MoELayer.forward raises in training with tensor parallelism and no
    // sequence parallelism (megatron/core/transformer/moe/moe_layer.py@d98e8a64).
    require(p.tp == 1 || p.sp, "sp", "false",
            "an MoE model with tensor parallelism needs sequence parallelism (Megatron-Core refuses it without)");
}
}  // namespace parallel_detail

namespace parallel_detail {
// The recomputed submodules the model has (transformer_config.py@d98e8a64 refuses
// mla_up_proj without latent attention; an MoE submodule without experts is refused here
// too, where it could only be a mistake; shared_experts without shared experts, mlp without
// dense layers and layernorm without a norm module recompute nothing, as in Megatron-Core).
TRAINPERF_NOINLINE inline void validate_recompute_modules(const parallel_layout& p, const transformer_config& m) {
    const recompute_module_set& r = p.recompute_modules;
    for (recompute_module k : {recompute_module::moe, recompute_module::moe_act, recompute_module::shared_experts})
        if (r.contains(k) && !has_moe(m))
            detail::fail("recompute_modules", to_string(k), "needs a mixture-of-experts model");
    if (r.contains(recompute_module::mla_up_proj) && !m.mla.enabled())
        detail::fail("recompute_modules", "mla-up-proj", "needs multi-head latent attention");
}
}  // namespace parallel_detail

// The layout must fit the model: heads split over tp, layers over pp·interleave.
constexpr void validate(const parallel_layout& p, const transformer_config& m) {
    validate(p);
    if (!p.recompute_modules.empty()) parallel_detail::validate_recompute_modules(p, m);
    if (p.ep != 1 || p.etp != 0 || has_moe(m)) parallel_detail::validate_expert_parallelism(p, m);
    require(m.heads % p.tp == 0, "tp", p.tp, "must divide the number of attention heads");
    require(tp_splits_heads(m, p.tp), "tp", p.tp, "must divide the number of kv heads (or be a multiple of it)");
    // Every rank holds at least one column of the FFN and of the output layer, and the
    // attention GEMMs' batch (micro-batch × heads per rank) stays within a GEMM's sizes
    // (workload/ops.hpp validate(gemm_shape)).
    require(p.tp <= m.ffn_hidden, "tp", p.tp,
            "must not exceed the model's ffn_hidden (each rank holds a part of the FFN)");
    require(p.tp <= m.vocab, "tp", p.tp,
            "must not exceed the vocabulary (each rank holds a part of the output layer)");
    require(double(p.micro_batch) * (m.heads / p.tp) <= limits::max_op_size, "batch", p.micro_batch,
            "micro-batch x heads per tensor-parallel rank must be at most 2^31 (the attention GEMMs' batch)");
    if (!p.pipeline_layout.empty()) {
        // The layout places every layer itself (a rank may hold none: Megatron-Core allows
        // empty stages).
        validate_pipeline_layout(p.pipeline_layout, m, p.pp, p.interleave);
        return;
    }
    require(p.pp <= m.layers, "pp", p.pp, "must not exceed the number of layers");
    const bool explicit_split = p.first_stage_layers > 0 || p.last_stage_layers > 0;
    // An even split is always valid; only one that counts the embedding and the loss, or
    // none that works, is checked further.
    const long long chunks = 1LL * p.pp * p.interleave;  // pp ≤ layers here; interleave may be large
    const bool divides = chunks <= m.layers && m.layers % int(chunks) == 0;
    if (!explicit_split && !divides) {
        require(interleave_splits_layers(m, p.pp, p.interleave), "interleave", p.interleave,
                "pp x interleave must divide the number of layers, or the layers with the embedding and the loss "
                "counted as one each (Megatron-Core's account_for_embedding/loss_in_pipeline_split)");
        require(pipeline_split_of(m, p).valid(), "pp", p.pp,
                "leaves the first or the last stage without a layer (the embedding or the loss counted as one)");
    }
    if (explicit_split) {
        const int others = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
        if (!pipeline_split_of(m, p).valid())
            detail::fail(p.last_stage_layers > 0 ? "last_stage_layers" : "first_stage_layers",
                         p.last_stage_layers > 0 ? p.last_stage_layers : p.first_stage_layers,
                         others == 0 ? "with the first stage's, must add up to the " + std::to_string(m.layers) +
                                           " layers (pp 2)"
                                     : "leaves layers that do not split evenly, at least one each, over the other " +
                                           std::to_string(others) + " stage(s) of " + std::to_string(m.layers));
        if (pipeline_split_of(m, p).middle % p.interleave != 0)
            detail::fail("interleave", p.interleave,
                         "must divide the " + std::to_string(pipeline_split_of(m, p).middle) +
                             " layers of each middle stage (each virtual stage holds as many)");
    }
}

}  // namespace trainperf
