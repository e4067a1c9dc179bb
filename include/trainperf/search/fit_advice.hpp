// What would make a training setup that does not fit in GPU memory fit, and what
// would make one that fits faster: the layouts around it, each one change away —
// recompute mode, micro-batch (more or less accumulation, same global batch), ZeRO
// stage, optimizer offload, tensor or pipeline parallel size (same GPUs and global
// batch), sequence parallelism, data-parallel overlap — and the fastest layout of the
// same GPUs and global batch that the planner (search/layout_search.hpp) finds, each predicted by
// the step engine; for a setup that does not fit also ZeRO-3 over more data-parallel
// GPUs, and beyond the layout an optimizer with less state, LoRA or QLoRA adapters, or
// the same layout on a shorter sequence, where the framework runs them. Those that fit (advise_fit) or raise
// tokens/s per GPU (advise_speed) are kept, the best of each kind of change only: the
// nearest to the run asked for first (departure()), within each the most tokens/s per
// GPU first.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "../core/enum_names.hpp"
#include "../core/units.hpp"
#include "../cost/fit_margin.hpp"
#include "../cost/step.hpp"
#include "../spec/finetune.hpp"
#include "../spec/optimizer.hpp"
#include "../spec/parallel.hpp"
#include "../spec/system.hpp"
#include "layout_search.hpp"

namespace trainperf {

enum class fit_change {
    recompute_full, smaller_micro_batch, optimizer_offload, zero3_more_gpus,
    recompute_other, larger_micro_batch, zero_stage, no_offload, tensor_parallel, pipeline_parallel,
    sequence_parallel, dp_overlap, flash_attention, best_layout, context_parallel, shorter_sequence,
    optimizer, lora, qlora, expert_parallel, moe_overlap
};

template <>
struct enum_names<fit_change> {
    static constexpr std::array<enum_name<fit_change>, 21> table{
        {{fit_change::recompute_full, "recompute-full"},
         {fit_change::smaller_micro_batch, "smaller-micro-batch"},
         {fit_change::optimizer_offload, "optimizer-offload"},
         {fit_change::zero3_more_gpus, "zero3-more-gpus"},
         {fit_change::recompute_other, "recompute"},
         {fit_change::larger_micro_batch, "larger-micro-batch"},
         {fit_change::zero_stage, "zero-stage"},
         {fit_change::no_offload, "no-offload"},
         {fit_change::tensor_parallel, "tensor-parallel"},
         {fit_change::pipeline_parallel, "pipeline-parallel"},
         {fit_change::sequence_parallel, "sequence-parallel"},
         {fit_change::dp_overlap, "dp-overlap"},
         {fit_change::flash_attention, "flash-attention"},
         {fit_change::best_layout, "best-layout"},
         {fit_change::context_parallel, "context-parallel"},
         {fit_change::shorter_sequence, "shorter-sequence"},
         {fit_change::optimizer, "optimizer"},
         {fit_change::lora, "lora"},
         {fit_change::qlora, "qlora"},
         {fit_change::expert_parallel, "expert-parallel"},
         {fit_change::moe_overlap, "moe-overlap"}}};
};

// How far a change departs from the run asked for: 0, the same training on another
// layout (or with FlashAttention); 1, another optimizer's update rule on the same model;
// 2, adapters trained instead of every weight (fine-tuning only); 3, a shorter context.
// Advice lists the nearer ones first.
constexpr int departure(fit_change c) {
    switch (c) {
        case fit_change::optimizer: return 1;
        case fit_change::lora:
        case fit_change::qlora: return 2;
        case fit_change::shorter_sequence: return 3;
        default: return 0;
    }
}

struct fit_option {
    fit_change change = fit_change::recompute_full;
    training_setup setup{};   // the setup with this change
    step_report report{};     // its prediction; it fits
    double gain = 0;          // tokens/s per GPU over the setup's, minus 1 (0 when the setup does not fit)
    fit_margin margin{};      // how far under the usable memory, and the assumption a borderline fit rests on
};

struct fit_advice {
    bytes needed = bytes_of(0.0);     // memory per GPU of the setup as given
    bytes capacity = bytes_of(0.0);   // what the GPU offers
    std::vector<fit_option> options;  // each fits on its own; nearest to the run asked for first (departure())

    constexpr bool fits() const { return needed <= capacity; }
    constexpr bytes excess() const { return fits() ? bytes_of(0.0) : needed - capacity; }
};

namespace fit_advice_detail {
// The prediction when the changed setup is valid and fits.
inline std::optional<step_report> fitting(const training_setup& s) {
    try {
        step_report r = predict(s);
        if (r.fits) return r;
    } catch (const trainperf::invalid_argument&) {
        // the change makes the setup invalid (e.g. a GPU count no node split allows)
    }
    return std::nullopt;
}

// The layouts one change away that keep the GPUs and the global batch: every other
// recompute mode, every other micro-batch that divides the samples per replica per
// step, every other ZeRO stage, offload on or off, tp, cp or pp halved or doubled (dp
// takes up the GPUs, accumulation the batch; cp only where the sequence splits into
// 2·cp chunks), an MoE model's ep halved or doubled, sequence parallelism and data-parallel
// overlap switched, FlashAttention turned on where the framework does not use it and the
// GPU has it. Some may be invalid (fitting() drops them).
inline std::vector<std::pair<fit_change, training_setup>> neighbours(const training_setup& s) {
    std::vector<std::pair<fit_change, training_setup>> out;
    const parallel_layout& l = s.layout;
    const auto with = [&](fit_change c, auto change) {
        training_setup t = s;
        change(t.layout);
        out.emplace_back(c, t);
    };
    for (recompute_mode r : enum_values<recompute_mode>())
        if (r != l.recompute && s.framework.recompute_modes.contains(r))
            with(r == recompute_mode::full ? fit_change::recompute_full : fit_change::recompute_other,
                 [r](parallel_layout& p) {
                     p.recompute = r;
                     p.recompute_modules = {};  // another mode, or selective's default list
                 });
    const long long per_replica = 1LL * l.micro_batch * l.grad_accum;
    for (long long b : planner_detail::divisors(per_replica)) {
        if (b == l.micro_batch || b > (1 << 24) || per_replica / b > (1LL << 30)) continue;
        with(b < l.micro_batch ? fit_change::smaller_micro_batch : fit_change::larger_micro_batch,
             [&](parallel_layout& p) {
                 p.micro_batch = int(b);
                 p.grad_accum = int(per_replica / b);
             });
    }
    if (l.dp_cp() > 1)
        for (int z = 0; z <= 3; ++z)
            if (z != l.zero)
                with(fit_change::zero_stage, [z](parallel_layout& p) {
                    p.zero = z;
                    if (z == 0) p.shard_group = 0;  // nothing to shard
                });
    if (l.offload == offload_mode::none && !s.cluster.gpu.memory_shared_with_host && !s.finetune.freezes_base())
        with(fit_change::optimizer_offload, [](parallel_layout& p) { p.offload = offload_mode::optimizer; });
    if (l.offload != offload_mode::none)
        with(fit_change::no_offload, [](parallel_layout& p) { p.offload = offload_mode::none; });
    // tp, cp or pp changed, dp taking up the GPUs and accumulation the global batch.
    const long long global = l.global_batch();
    const auto resized = [&](fit_change c, int tp, int pp, int cp) {
        if (tp < 1 || pp < 1 || cp < 1 || l.gpus() % (1LL * tp * pp * cp) != 0) return;
        if (!cp_splits_sequence(sequence_length(s), cp)) return;
        const int dp = int(l.gpus() / (1LL * tp * pp * cp));
        if (global % (1LL * dp * l.micro_batch) != 0) return;
        const long long accum = global / (1LL * dp * l.micro_batch);
        if (accum > (1LL << 30)) return;
        with(c, [&](parallel_layout& p) {
            p.tp = tp;
            p.pp = pp;
            p.cp = cp;
            p.dp = dp;
            p.grad_accum = int(accum);
            if (pp == 1) p.interleave = 1;
            if (pp != l.pp) {  // split the new stages evenly
                p.first_stage_layers = p.last_stage_layers = 0;
                p.pipeline_layout = {};
            }
            if (tp == 1) p.sp = false;
            if (dp * cp == 1) p.zero = 0;
            // A hybrid shard group the new data-parallel ranks no longer divide: shard over all.
            if (p.zero == 0 || !shards_evenly(p.shard_group, dp, cp)) p.shard_group = 0;
        });
    };
    if (l.tp % 2 == 0) resized(fit_change::tensor_parallel, l.tp / 2, l.pp, l.cp);
    resized(fit_change::tensor_parallel, l.tp * 2, l.pp, l.cp);
    if (l.pp % 2 == 0) resized(fit_change::pipeline_parallel, l.tp, l.pp / 2, l.cp);
    resized(fit_change::pipeline_parallel, l.tp, l.pp * 2, l.cp);
    if (l.cp % 2 == 0) resized(fit_change::context_parallel, l.tp, l.pp, l.cp / 2);
    resized(fit_change::context_parallel, l.tp, l.pp, l.cp * 2);
    if (l.tp > 1) with(fit_change::sequence_parallel, [](parallel_layout& p) { p.sp = !p.sp; });
    // An MoE model's experts over twice or half the ranks: ep folds onto the stage's
    // ranks, so the GPUs and the batch stay.
    if (has_moe(s.model)) {
        with(fit_change::expert_parallel, [](parallel_layout& p) { p.ep *= 2; });
        if (l.ep % 2 == 0) with(fit_change::expert_parallel, [](parallel_layout& p) { p.ep /= 2; });
    }
    if (l.dp_cp() > 1)
        for (dp_overlap_mode o : {dp_overlap_mode::on, dp_overlap_mode::off})
            if (o != l.dp_overlap) with(fit_change::dp_overlap, [o](parallel_layout& p) { p.dp_overlap = o; });
    // The attention core as one fused kernel where the framework runs it unfused:
    // FlashAttention-2 supports Ampere, Ada and Hopper GPUs (Dao-AILab/flash-attention
    // README), i.e. compute capability 8.0 and up.
    if (!s.framework.flash_attention && s.cluster.gpu.compute_capability >= 80) {
        training_setup t = s;
        t.framework.flash_attention = true;
        out.emplace_back(fit_change::flash_attention, t);
    }
    // An MoE model's dispatch hidden behind compute as Megatron-Core can: beside the shared
    // experts, or beside another micro-batch's pass (one or the other; where their
    // conditions fail, fitting() leaves them out).
    if (has_moe(s.model)) {
        if (!s.moe.shared_expert_overlap && !s.moe.a2a_overlap && s.model.moe.shared_ffn_hidden > 0) {
            training_setup t = s;
            t.moe.shared_expert_overlap = true;
            out.emplace_back(fit_change::moe_overlap, t);
        }
        if (!s.moe.a2a_overlap && s.layout.ep > 1) {
            training_setup t = s;
            t.moe.a2a_overlap = true;
            t.moe.shared_expert_overlap = false;
            out.emplace_back(fit_change::moe_overlap, t);
        }
    }
    return out;
}

// ASSUMPTION: advice may search up to 5·10^8 layouts (about a second with the bounds:
// the 2.0·10^8 of GPT-3 175B on 512 A100 under megatron-core take about 0.2 s on 2 cores,
// docs/engine.md); a larger space is left out of the advice rather than making a
// prediction slow.
inline constexpr long long advice_max_candidates = 500'000'000;

// The fastest layout of the setup's GPUs and global batch that fits (offload tried
// too), when there is one and the space is small enough to search in passing.
inline std::optional<training_setup> best_layout(const training_setup& s) {
    plan_request r;
    r.base = s;
    r.gpus = s.layout.gpus();
    r.global_batch = s.layout.global_batch();
    r.allow_offload = !s.cluster.gpu.memory_shared_with_host;
    plan_result found;
    try {
        found = plan(r, {.top = 1, .max_candidates = advice_max_candidates});
    } catch (const invalid_argument&) {
        return std::nullopt;  // a space too large to search in passing
    }
    if (found.best.empty()) return std::nullopt;
    return setup_of(s, found.best.front());
}

// Keeps the best option of each kind (each optimizer a kind of its own), and a setup once
// (the planner's layout may be one already listed): the nearest to the run asked for first
// (departure()), within each the most tokens/s per GPU first; each with its margin.
inline void best_of_each_kind(std::vector<fit_option>& options) {
    std::stable_sort(options.begin(), options.end(), [](const fit_option& x, const fit_option& y) {
        if (departure(x.change) != departure(y.change)) return departure(x.change) < departure(y.change);
        return x.report.tokens_per_second_per_gpu() > y.report.tokens_per_second_per_gpu();
    });
    std::vector<fit_option> kept;
    for (const fit_option& o : options)
        if (std::none_of(kept.begin(), kept.end(), [&](const fit_option& k) {
                const bool same_kind = k.change == o.change && (o.change != fit_change::optimizer ||
                                                                k.setup.optimizer == o.setup.optimizer);
                return same_kind ||
                       (k.setup.layout == o.setup.layout &&
                        k.setup.cluster.gpus_per_node == o.setup.cluster.gpus_per_node && k.report.seq == o.report.seq &&
                        k.setup.optimizer == o.setup.optimizer && k.setup.finetune.mode == o.setup.finetune.mode);
            }))
            kept.push_back(o);
    for (fit_option& o : kept)
        o.margin = margin_of(memory_report{o.report.memory, o.report.memory_capacity, o.report.fits},
                             o.setup.framework.memory);
    options = std::move(kept);
}

// An optimizer with less state than the setup's, that the framework runs: 8-bit Adam
// (block-wise quantized moments, Dettmers et al. 2022) for an Adam-like one, and
// Adafactor (a factored second moment, no first, Shazeer & Stern 2018). Each trains the
// same model with another update rule.
// Adapters' state is small (the base is frozen): none is offered with LoRA or QLoRA. With
// optimizer offload, an optimizer the framework does not run on the host is tried on the
// GPU.
inline std::vector<training_setup> lighter_optimizers(const training_setup& s) {
    std::vector<training_setup> out;
    if (s.finetune.freezes_base()) return out;
    const bytes own = optimizer_state_bytes(s.optimizer, s.model);
    for (optimizer_kind k : {optimizer_kind::adam8bit, optimizer_kind::adafactor})
        if (k != s.optimizer && s.framework.optimizers.contains(k) && optimizer_state_bytes(k, s.model) < own) {
            training_setup t = s;
            t.optimizer = k;
            if (t.layout.offload == offload_mode::optimizer && !t.framework.host_optimizers.contains(k))
                t.layout.offload = offload_mode::none;
            out.push_back(t);
        }
    return out;
}

}  // namespace fit_advice_detail

// Data-parallel replicas tried for ZeRO-3 at most: up to 2^16 GPUs.
inline constexpr int fit_advice_max_gpus = 1 << 16;

// ASSUMPTION: a sequence shorter than 128 tokens is not a training run anyone plans (BERT
// pre-trained 90 % of its steps at 128, Devlin et al. 2019 §A.2): the shortest advised.
inline constexpr int shortest_advised_sequence = 128;

inline fit_advice advise_fit(const training_setup& s) {
    namespace fd = fit_advice_detail;
    const step_report base = predict(s);
    fit_advice a{.needed = base.memory.total(), .capacity = base.memory_capacity};
    if (base.fits) return a;
    const parallel_layout& l = s.layout;
    const auto add = [&](fit_change change, const training_setup& t) {
        if (auto r = fd::fitting(t)) a.options.push_back({change, t, *r});
    };

    // Every layout one change away that fits, and the planner's fastest of the same
    // GPUs and global batch.
    for (const auto& [change, t] : fd::neighbours(s)) add(change, t);
    if (auto t = fd::best_layout(s)) add(fit_change::best_layout, *t);

    // Beyond the layout: an optimizer with less state; adapters instead of every weight
    // (the finetune_spec defaults: rank 16 on q and v), QLoRA only where LoRA does not fit.
    for (const training_setup& t : fd::lighter_optimizers(s)) add(fit_change::optimizer, t);
    if (!s.finetune.freezes_base())
        for (fit_change c : {fit_change::lora, fit_change::qlora}) {
            training_setup t = s;
            t.finetune = {.mode = c == fit_change::lora ? finetune_mode::lora : finetune_mode::qlora};
            if (!s.framework.finetune_modes.contains(t.finetune.mode)) continue;
            if (t.layout.offload == offload_mode::optimizer) t.layout.offload = offload_mode::none;  // nothing to offload
            if (auto r = fd::fitting(t)) {
                a.options.push_back({c, t, *r});
                break;
            }
        }

    // The same layout on a shorter sequence: the longest of seq/2, seq/4, … that fits.
    // It changes what is trained (the context the model sees, the tokens per step), so it
    // is offered after the layouts, never chosen for the user.
    for (int seq = sequence_length(s) / 2; seq >= shortest_advised_sequence; seq /= 2) {
        training_setup shorter = s;
        shorter.seq = seq;
        if (auto r = fd::fitting(shorter)) {
            a.options.push_back({fit_change::shorter_sequence, shorter, *r});
            break;
        }
    }

    // ZeRO-3 shards weights, gradients and optimizer state over dp, so memory only
    // falls as replicas are added: the fewest replicas that fit, found by bisection
    // (same micro-batch and accumulation). Nodes keep their size, or grow to the node of
    // the system the GPU is sold in (standard_gpus_per_node: an 8-GPU server, a GB200
    // tray of 4) where the setup's are smaller, e.g. one GPU's.
    const int replica_gpus = l.tp * l.cp * l.pp;
    const int standard_node = standard_gpus_per_node(s.cluster.gpu);
    const auto node_size = [&](int dp) {
        return std::max(s.cluster.gpus_per_node, std::min(dp * replica_gpus, standard_node));
    };
    std::vector<int> replicas;  // any count: a last node may be partly filled (workload/placement.hpp)
    for (int dp = l.dp; 1LL * dp * replica_gpus <= fit_advice_max_gpus; ++dp) replicas.push_back(dp);
    training_setup t = s;
    t.layout.zero = 3;
    t.layout.shard_group = 0;  // over every replica: memory falls as they are added
    const auto with_replicas = [&](int dp) {
        t.layout.dp = dp;
        t.cluster.gpus_per_node = node_size(dp);
        return t;
    };
    if (s.framework.zero_stages & (1u << 3)) {  // only where the framework shards weights
        const auto first = std::partition_point(replicas.begin(), replicas.end(),
                                                [&](int dp) { return !fd::fitting(with_replicas(dp)).has_value(); });
        if (first != replicas.end()) add(fit_change::zero3_more_gpus, with_replicas(*first));
    }

    fd::best_of_each_kind(a.options);
    return a;
}

// ASSUMPTION: a step is dominated by a cost other than its compute when that cost
// takes at least a quarter of it; below that, the compute is what the step is.
inline constexpr double dominant_cost_share = 0.25;

// ASSUMPTION: a faster layout is worth pointing out, even in a step its compute
// dominates, when it gives at least 10 % more tokens/s per GPU.
inline constexpr double worthwhile_gain = 0.10;

struct speed_advice {
    step_report report{};                          // the setup's own step
    bottleneck_kind largest = bottleneck_kind::compute;  // its largest cost other than compute
    double largest_share = 0;                      // that cost's share of the step
    std::vector<fit_option> options;               // each fits and has more tokens/s per GPU; best first

    constexpr bool dominated() const { return largest_share >= dominant_cost_share; }
    // Dominated by a cost, or a change that gains worthwhile_gain or more.
    bool worth_saying() const {
        return !options.empty() && (dominated() || options.front().gain >= worthwhile_gain);
    }
};

// What would make a setup that fits faster: the layouts one change away and the
// planner's fastest of the same GPUs and global batch, those that fit with more
// tokens/s per GPU, each with its gain. A setup that does not fit: advise_fit.
inline speed_advice advise_speed(const training_setup& s) {
    namespace fd = fit_advice_detail;
    speed_advice a;
    a.report = predict(s);
    require(a.report.fits, "layout", "does not fit", "in memory: what would make it fit is advise_fit's");
    const step_report& r = a.report;
    const std::array<std::pair<bottleneck_kind, seconds>, 4> costs{{{bottleneck_kind::communication, r.time.communication},
                                                                    {bottleneck_kind::optimizer, r.time.optimizer},
                                                                    {bottleneck_kind::bubble, r.time.bubble},
                                                                    {bottleneck_kind::data, r.time.data}}};
    const auto largest = std::max_element(costs.begin(), costs.end(),
                                          [](const auto& x, const auto& y) { return x.second < y.second; });
    a.largest = largest->first;
    a.largest_share = r.fraction(largest->second);
    const double base = r.tokens_per_second_per_gpu();
    const auto add = [&](fit_change change, const training_setup& t) {
        if (auto p = fd::fitting(t); p && p->tokens_per_second_per_gpu() > base)
            a.options.push_back({change, t, *p, p->tokens_per_second_per_gpu() / base - 1});
    };
    for (const auto& [change, t] : fd::neighbours(s)) add(change, t);
    if (auto t = fd::best_layout(s)) add(fit_change::best_layout, *t);  // kept only when faster
    fd::best_of_each_kind(a.options);
    return a;
}

}  // namespace trainperf
