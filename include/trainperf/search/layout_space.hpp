// The space of parallel layouts the layout search (search/layout_search.hpp) walks: the
// request (a model, a system of N GPUs, a global batch), what each dimension takes —
// tensor and context parallel sizes, pipeline depths and how the layers go over the
// stages, an MoE model's expert and expert-tensor parallel sizes, sequence parallelism,
// recompute, the framework's switches, ZeRO stages and shard groups, offload, overlap,
// micro-batches, rank orders — and the units of work the search hands its threads,
// counted. Only layouts the framework's software runs (spec/setup.hpp
// require_framework_runs) and that validate() accepts are in it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../spec/parallel.hpp"
#include "../spec/setup.hpp"
#include "../workload/placement.hpp"

namespace trainperf {

struct plan_request {
    training_setup base{};         // system, model, recipe, optimizer, framework, seq
    int gpus = 1;
    long long global_batch = 1;    // samples per optimizer step
    int max_micro_batch = 0;       // 0: every micro-batch up to the per-replica batch
    bool allow_offload = false;    // also try optimizer offload
};

// ASSUMPTION: limits on the work one request may cause. 2^36 candidates is about an
// hour on one core at the measured 10^7 predictions per second before pruning
// (docs/engine.md); 2^24 layouts kept is every candidate of the spaces the tests
// compare exhaustively, and more than anyone reads.
inline constexpr long long max_plan_candidates = 1LL << 36;
inline constexpr std::size_t max_plan_top = std::size_t{1} << 24;

// ASSUMPTION: context parallelism is searched only for sequences of at least 8192
// tokens, and only while each rank keeps at least 1024 of them (its two
// load-balancing chunks 512 each). Megatron-Core documents cp for long-context
// training (docs/user-guide/features/context_parallel.md@d98e8a64); below these sizes
// the activations it splits are small next to the model state, and the ring's
// per-step latency grows against the small attention blocks it overlaps. Above them
// the search decides whether cp pays.
inline constexpr int min_context_parallel_sequence = 8192;
inline constexpr int min_tokens_per_context_rank = 1024;

// Whether the search tries `cp` ranks for a sequence of `seq` tokens: always cp = 1;
// cp > 1 for a long sequence that splits into 2·cp chunks, each rank keeping enough tokens.
constexpr bool context_parallel_candidate(int seq, int cp) {
    return cp == 1 || (seq >= min_context_parallel_sequence && cp_splits_sequence(seq, cp) &&
                       seq / cp >= min_tokens_per_context_rank);
}

// Everything but the layout is checked once, as predict() checks it; the search builds
// only valid layouts and checks again only the layout of each micro-batch it prices
// (checked_setup::with_layout).
// The setup a search starts from: everything the search does not set. Its layout is
// checked as one GPU's, without the conditions only layouts of more GPUs meet (the EP
// overlap's ep > 1, DeepEP's group sizes: the space holds only layouts that meet them).
inline void validate_search_base(const training_setup& base) {
    // The search offers full recompute, ZeRO-3 and offload, which graphs refuse (spec/setup.hpp).
    require(!base.framework.cuda_graphs, "cuda_graphs", "on",
            "is not searched: plan without it, then predict the layout with --cuda-graphs on");
    training_setup one_gpu = base;
    one_gpu.layout = {};
    validate_fixed(one_gpu);
    one_gpu.moe.a2a_overlap = false;
    if (one_gpu.moe.dispatcher == moe_dispatcher::deepep) one_gpu.moe.dispatcher = moe_dispatcher::alltoall;
    validate_layout(one_gpu);
    require_framework_rank_order(base);  // a layout with stages and replicas needs it
}

inline void validate(const plan_request& r) {
    require(r.gpus >= 1 && r.gpus <= max_gpus, "gpus", r.gpus, "must be between 1 and 2^22");
    require(r.global_batch >= 1 && r.global_batch <= max_global_batch, "global_batch", r.global_batch,
            "must be between 1 and 2^40");
    require(r.max_micro_batch >= 0, "max_micro_batch", r.max_micro_batch, "must not be negative (0: no cap)");
    validate_search_base(r.base);
}

namespace planner_detail {

// Divisors of n in increasing order, by trial division up to √n.
inline std::vector<long long> divisors(long long n) {
    std::vector<long long> low, high;
    for (long long i = 1; i * i <= n; ++i)
        if (n % i == 0) {
            low.push_back(i);
            if (i != n / i) high.push_back(n / i);
        }
    low.insert(low.end(), high.rbegin(), high.rend());
    return low;
}

// One unit of work: a (tp, cp, ep, etp, sp, recompute, FlashAttention, tp overlap), each
// pipeline depth in `pps` and all its micro-batches. A worker prices a stage's parts
// (one layer, the head, the embedding) once per micro-batch and builds the stages of
// every depth from them: the parts depend on none of pp, dp or what follows (the
// stage's sends do, and are priced per pipeline configuration; an MoE layer's dispatch
// group is ep·etp consecutive ranks whatever pp and dp, workload/placement.hpp).
struct unit {
    int tp = 1, cp = 1;
    int ep = 1, etp = 0;  // an MoE model's expert parallelism (etp 0: as tp)
    std::vector<int> pps;
    bool sp = false;
    recompute_mode recompute = recompute_mode::none;
    bool flash_attention = false;
    bool tensor_parallel_overlap = false;
    rank_order order = rank_order::tp_dp_pp;
};

struct space {
    std::vector<unit> units;
    long long candidates = 0;
};

constexpr int dp_of(const plan_request& r, int tp, int pp, int cp = 1) { return r.gpus / (tp * pp * cp); }

// The values a framework switch takes: the profile's, and off as well where the profile
// has it on and it acts on the layout.
inline std::vector<bool> switch_values(bool profile, bool acts = true) {
    return profile && acts ? std::vector<bool>{true, false} : std::vector<bool>{profile};
}

// How the layers go over the stages: virtual stages, layers on the first and last.
struct pipeline_config {
    int interleave = 1;
    int first_stage_layers = 0, last_stage_layers = 0;
};

// ASSUMPTION: uneven pipeline splits are searched for models of up to 256 layers (the
// deepest real ones have about 10^2: Llama 3.1 405B 126); their number grows with the
// square of the layers, and a deeper model is searched with even splits only.
inline constexpr int max_layers_for_uneven_splits = 256;

// The pipeline configurations of pp stages: an even split, with every interleave v
// (pp·v dividing the layers; only with a multiple of pp micro-batches per step), and,
// where the framework offers it, every uneven split without interleaving: first and
// last stage any number of layers (at least 1) that leaves the others at least one
// each, split evenly (as spec/parallel.hpp pipeline_split_of accepts). With the EP
// overlap, the interleaved ones only.
inline std::vector<pipeline_config> pipeline_configs_for(const plan_request& r, int pp) {
    const auto& m = r.base.model;
    std::vector<pipeline_config> out{{1, 0, 0}};
    if (pp == 1) return out;
    // The EP overlap with stages runs only interleaved (spec/setup.hpp validate_moe_layout).
    const bool interleaved_only = r.base.moe.a2a_overlap;
    if (interleaved_only) out.clear();
    if (r.base.framework.interleaved_pipeline)
        for (int v = 2; 1LL * pp * v <= m.layers; ++v)
            if (interleave_splits_layers(m, pp, v)) out.push_back({v, 0, 0});
    if (interleaved_only || !r.base.framework.uneven_pipeline_split || m.layers > max_layers_for_uneven_splits)
        return out;
    const bool divides = m.layers % pp == 0;
    const int others = pp - 2;  // the middle stages share L − first − last evenly
    for (int first = 1; first < m.layers; ++first) {
        if (others == 0) {
            if (!(divides && first == m.layers / 2)) out.push_back({1, first, m.layers - first});
            continue;
        }
        // last ≡ L − first (mod others), leaving at least one layer per middle stage.
        const int rest = m.layers - first;
        for (int last = rest % others == 0 ? others : rest % others; rest - last >= others; last += others) {
            if (divides && first == m.layers / pp && last == first) continue;  // the even split itself
            out.push_back({1, first, last});
        }
    }
    return out;
}

// A ZeRO stage and the ranks it shards over (0: all of dp × cp).
struct zero_config {
    int zero = 0;
    int shard_group = 0;
};

// The candidate dimensions once the (unit, micro-batch) are fixed. ZeRO and data-
// parallel overlap act on the gradient group, dp × cp; the parameter-gather overlap on
// ZeRO 1 and 2's gather after the optimizer; the schedule on a pipeline without
// interleaving.
struct inner_choices {
    std::vector<pipeline_config> pipelines;
    std::vector<pipeline_schedule> schedules;  // with interleave 1
    std::vector<zero_config> zeros;
    std::vector<offload_mode> offloads;
    std::vector<dp_overlap_mode> overlaps;
    std::vector<bool> parameter_gathers;       // with ZeRO 1 and 2 (switch_values: on first)

    bool zero3_overlaps = true;  // the framework's ZeRO-3 can overlap (spec/setup.hpp)

    // The parameter-gather switches with ZeRO `zero` and overlap `o`: without the gradient
    // sync's overlap the gather is not overlapped either (overlaps_parameter_gather), so
    // there only its off switch (the last value) is offered; a ZeRO-3 that overlaps
    // nothing (overlaps_data_parallel_sync) is offered with the overlap off only.
    std::size_t gathers(int zero, dp_overlap_mode o) const {
        if (zero >= 3) return o == dp_overlap_mode::on && !zero3_overlaps ? 0 : 1;
        if (zero != 1 && zero != 2) return 1;
        return o == dp_overlap_mode::off ? 1 : parameter_gathers.size();
    }
    bool gather(std::size_t g, dp_overlap_mode o) const {
        return o == dp_overlap_mode::off ? parameter_gathers.back() : parameter_gathers[g];
    }
    // Every (overlap, gather) with ZeRO `zero`, and per pipeline configuration and schedule
    // every (ZeRO, offload, overlap, gather): counted once the lists are built
    // (count_variants; choices_for calls it), since the search asks for them at every
    // configuration.
    std::size_t gathers(int zero) const { return variants_per_zero[std::size_t(std::clamp(zero, 0, 3))]; }
    std::size_t per_schedule() const { return per_schedule_count; }
    std::size_t schedules_for(const pipeline_config& p) const { return p.interleave == 1 ? schedules.size() : 1; }
    void count_variants() {
        for (int zero = 0; zero <= 3; ++zero) {
            std::size_t& n = variants_per_zero[std::size_t(zero)];
            n = 0;
            for (dp_overlap_mode o : overlaps) n += gathers(zero, o);
        }
        per_schedule_count = 0;
        for (const zero_config& z : zeros) per_schedule_count += gathers(z.zero);
        per_schedule_count *= offloads.size();
    }
    std::array<std::size_t, 4> variants_per_zero{};
    std::size_t per_schedule_count = 0;
    // With `interleaving`: whether the micro-batches per step allow the interleaved ones.
    std::size_t count(bool interleaving) const {
        std::size_t n = 0;
        for (const auto& p : pipelines)
            if (interleaving || p.interleave == 1) n += schedules_for(p);
        return n * per_schedule();
    }
};

// Megatron-LM's interleaved 1F1B schedule needs whole rounds of pp micro-batches.
constexpr bool interleaving_allowed(int pp, int accum) { return accum % pp == 0; }

inline inner_choices choices_for(const plan_request& r, int pp, int dp, int cp = 1) {
    const auto& fw = r.base.framework;
    inner_choices c;
    c.pipelines = pipeline_configs_for(r, pp);
    c.schedules.push_back(pipeline_schedule::one_f_one_b);
    if (pp > 1 && fw.zero_bubble_schedule) c.schedules.push_back(pipeline_schedule::zero_bubble_h1);
    // ZeRO stages the profile offers; with hybrid sharding also each shard group of
    // whole cp groups, 2 ranks or more, that divides dp × cp. An MoE model: ZeRO 0 and 1
    // over all the ranks, no offload (what spec/setup.hpp validate_moe_layout models).
    const bool moe = has_moe(r.base.model);
    const int ranks = dp * cp;
    for (int z = 0; z <= (ranks > 1 ? (moe ? 1 : 3) : 0); ++z) {
        if (!(fw.zero_stages & (1u << z))) continue;
        c.zeros.push_back({z, 0});
        if (z >= 1 && fw.hybrid_sharding && !moe)
            for (long long shard : divisors(ranks))
                if (shard >= 2 && shard < ranks && shard % cp == 0) c.zeros.push_back({z, int(shard)});
    }
    c.offloads.push_back(offload_mode::none);
    // What validate_layout refuses is never offered: offload needs a GPU with its own
    // memory and a host link, full training, and an optimizer the framework runs there.
    if (r.allow_offload && fw.optimizer_offload && fw.host_optimizers.contains(r.base.optimizer) &&
        !r.base.cluster.gpu.memory_shared_with_host &&
        r.base.cluster.gpu.host_link.kind != link_kind::none && !r.base.finetune.freezes_base() && !moe)
        c.offloads.push_back(offload_mode::optimizer);
    if (dp * cp > 1) c.overlaps = {dp_overlap_mode::off, dp_overlap_mode::on};
    else c.overlaps = {dp_overlap_mode::framework};
    c.parameter_gathers = switch_values(fw.overlap_parameter_gather, dp * cp > 1);
    // The one rule (spec/setup.hpp): whether this framework's ZeRO-3 overlaps when asked to.
    c.zero3_overlaps =
        overlaps_data_parallel_sync(parallel_layout{.dp = 2, .zero = 3, .dp_overlap = dp_overlap_mode::on}, fw);
    c.count_variants();
    return c;
}

inline std::vector<int> micro_batches_for(const plan_request& r, int dp) {
    std::vector<int> out;
    if (r.global_batch % dp != 0) return out;
    const long long per_replica = r.global_batch / dp;
    for (long long b : divisors(per_replica)) {
        if (r.max_micro_batch > 0 && b > r.max_micro_batch) break;
        if (b > limits::max_micro_batch_for(sequence_length(r.base))) break;  // as cost/memory.hpp's search
        if (per_replica / b > std::numeric_limits<int>::max()) continue;  // grad-accum must be an int
        out.push_back(int(b));
    }
    return out;
}

// The rank orders worth searching besides the request's: where the job spans more than
// one NVLink domain, the framework's others (tp-pp-dp keeps a replica's stages in a
// domain and spreads data parallelism over the network; tp-dp-pp the reverse). Inside
// one domain every group rides NVLink whatever the order.
inline std::vector<rank_order> other_rank_orders(const plan_request& r) {
    std::vector<rank_order> out;
    if (r.gpus <= gpus_per_domain(r.base.cluster)) return out;
    for (rank_order o : enum_values<rank_order>())
        if (o != r.base.cluster.order && r.base.framework.rank_orders.contains(o)) out.push_back(o);
    return out;
}

// An MoE model's expert parallelism (spec/parallel.hpp validate_expert_parallelism).
struct expert_choice {
    int ep = 1, etp = 0;  // etp 0: as tp
};

// The expert layouts searched with tensor parallel size `tp`: ep each divisor of the routed
// experts (the dispatch may cross NVLink domains, priced on the links its group spans),
// etp each divisor of the GPUs up to an NVLink domain and an expert's ffn width, as tensor
// parallelism is searched, only 1 with a dispatcher that forwards by node (DeepEP,
// HybridEP: spec/setup.hpp), ep > 1 with the EP overlap. etp = tp is written 0
// (Megatron-Core's default). A dense model: ep 1 alone.
inline std::vector<expert_choice> expert_choices_for(const plan_request& r, int tp) {
    const transformer_config& m = r.base.model;
    if (!has_moe(m)) return {{1, 0}};
    std::vector<expert_choice> out;
    for (long long ep : divisors(m.moe.experts)) {
        if (ep > r.gpus) break;
        if (ep == 1 && r.base.moe.a2a_overlap) continue;
        // DeepEP runs only the group sizes it has configurations for (validate refuses others).
        if (r.base.moe.dispatcher == moe_dispatcher::deepep && deepep_tuned_for(int(ep)) == nullptr) continue;
        for (long long etp : divisors(r.gpus)) {
            if (etp > gpus_per_domain(r.base.cluster) || etp > m.moe.expert_ffn_hidden || ep * etp > r.gpus) break;
            out.push_back({int(ep), etp == tp ? 0 : int(etp)});
            if (forwards_by_node(r.base.moe.dispatcher)) break;  // etp 1 only
        }
    }
    return out;
}

// Whether the expert layout folds onto a stage of this depth in rank order `order`, as
// validate() requires (spec/parallel.hpp experts_fold_onto_stage, spec/setup.hpp
// expert_ranks_follow_order).
constexpr bool experts_fold(const expert_choice& e, int tp, int cp, int pp, int dp, rank_order order) {
    parallel_layout l{.dp = dp, .tp = tp, .cp = cp, .pp = pp};
    l.ep = e.ep;
    l.etp = e.etp;
    return experts_fold_onto_stage(l) && expert_ranks_follow_order(l, order);
}

inline space build_space(const plan_request& r) {
    const auto& m = r.base.model;
    const auto& fw = r.base.framework;
    const bool moe = has_moe(m);
    const int seq = sequence_length(r.base);
    const std::vector<rank_order> other_orders = other_rank_orders(r);
    space sp;
    for (long long tp_ll : divisors(r.gpus)) {
        const int tp = int(tp_ll);
        // Tensor parallelism is searched inside an NVLink domain: across domains every
        // layer's collectives cross the network (a layout can still ask for it).
        if (tp > gpus_per_domain(r.base.cluster) || !tp_splits_heads(m, tp)) continue;
        if (tp > 1 && !fw.tensor_parallel) continue;  // only what the framework runs
        for (long long cp_ll : divisors(r.gpus / tp)) {
            const int cp = int(cp_ll);
            if (!context_parallel_candidate(seq, cp) || (cp > 1 && !fw.context_parallel)) continue;
            struct depth {
                int pp, dp;
                long long candidates;  // of one unit at this depth
            };
            std::vector<depth> depths;
            for (long long pp_ll : divisors(r.gpus / (1LL * tp * cp))) {
                const int pp = int(pp_ll);
                if (pp > m.layers || (pp > 1 && !fw.pipeline_parallel)) continue;
                const int dp = dp_of(r, tp, pp, cp);
                const auto batches = micro_batches_for(r, dp);
                if (batches.empty()) continue;
                const inner_choices choices = choices_for(r, pp, dp, cp);
                long long at_depth = 0;
                for (int b : batches)
                    at_depth += static_cast<long long>(
                        choices.count(interleaving_allowed(pp, int(r.global_batch / (1LL * b * dp)))));
                depths.push_back({pp, dp, at_depth});
            }
            for (const expert_choice& e : expert_choices_for(r, tp)) {
                // The depths of a unit in rank order `o`; `ordered` (another order than the
                // request's): only where it moves groups, with both stages and replicas.
                const auto depths_in = [&](rank_order o, bool ordered, long long& inner) {
                    std::vector<int> pps;
                    inner = 0;
                    for (const depth& d : depths) {
                        if (ordered && !(d.pp > 1 && d.dp > 1)) continue;
                        if (moe && !experts_fold(e, tp, cp, d.pp, d.dp, o)) continue;
                        pps.push_back(d.pp);
                        inner += d.candidates;
                    }
                    return pps;
                };
                long long inner = 0;
                const std::vector<int> pps = depths_in(r.base.cluster.order, false, inner);
                std::vector<std::pair<std::vector<int>, long long>> ordered;  // per other order
                for (rank_order o : other_orders) {
                    long long n = 0;
                    std::vector<int> at = depths_in(o, true, n);
                    ordered.emplace_back(std::move(at), n);
                }
                for (bool sequence_parallel : {false, true}) {
                    if (sequence_parallel && (tp == 1 || !fw.sequence_parallel)) continue;
                    // Megatron-Core's MoE layer refuses tensor parallelism without it (spec/parallel.hpp).
                    if (moe && tp > 1 && !sequence_parallel) continue;
                    for (auto rc : enum_values<recompute_mode>()) {
                        if (!fw.recompute_modes.contains(rc)) continue;
                        if (rc == recompute_mode::full && r.base.moe.a2a_overlap) continue;  // Megatron-Core refuses it
                        for (bool flash : switch_values(fw.flash_attention))
                            for (bool overlap : switch_values(fw.tensor_parallel_overlap, sequence_parallel)) {
                                const unit u{.tp = tp, .cp = cp, .ep = e.ep, .etp = e.etp, .pps = pps,
                                             .sp = sequence_parallel, .recompute = rc, .flash_attention = flash,
                                             .tensor_parallel_overlap = overlap, .order = r.base.cluster.order};
                                if (!pps.empty()) {
                                    sp.units.push_back(u);
                                    sp.candidates += inner;
                                }
                                for (std::size_t k = 0; k < other_orders.size(); ++k) {
                                    if (ordered[k].first.empty()) continue;
                                    unit in_order = u;
                                    in_order.pps = ordered[k].first;
                                    in_order.order = other_orders[k];
                                    sp.units.push_back(std::move(in_order));
                                    sp.candidates += ordered[k].second;
                                }
                            }
                    }
                }
            }
        }
    }
    return sp;
}

}  // namespace planner_detail

}  // namespace trainperf
