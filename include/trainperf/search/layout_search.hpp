// Search over parallel layouts: for a model, a system of N GPUs and a global batch,
// every layout — tensor parallel size, context parallel size (long sequences),
// pipeline stages, virtual stages, layers on the first and last stage, the pipeline
// schedule, data-parallel replicas, micro-batch (every divisor of the per-replica
// batch), sequence parallelism, the recompute modes the framework offers, the ZeRO stages and
// hybrid shard groups the profile offers, optimizer offload, data-parallel overlap
// on/off — and the framework's switches where its profile offers them (FlashAttention,
// tensor-parallel overlap, parameter-gather overlap), and on a job over several NVLink
// domains the rank orders the framework runs (which groups a domain holds; tensor
// parallelism is searched inside a domain) that reaches the global batch
// exactly and that the framework's software runs (spec/setup.hpp
// require_framework_runs), ranked by predicted step time. The
// search is exhaustive: a candidate is skipped only when a bound proves it cannot fit
// (memory grows with the micro-batch) or cannot enter the top k (its compute alone is
// slower than the k-th best found). Pricing reuses what does not change: a stage's ops
// are priced once per (tp, cp, sp, recompute, FlashAttention, tp overlap, micro-batch),
// for every pipeline depth, and every stage of every split is built from them (cost/stage_pricer.hpp
// stage_pricer::stage); a stage's memory in two parts (cost/memory.hpp): what it holds for
// its micro-batches once per (…, micro-batch, pipeline configuration), its state once
// per (…, its layers, ZeRO, shard group, offload, overlap). A layout that does not fit
// gets its memory verdict only (cost/memory.hpp certainly_exceeds, without the breakdown);
// stage parts and stage times are priced when a bound or a fitting layout first needs
// them. Threads share the candidates.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../core/error.hpp"
#include "../cost/memory.hpp"
#include "../cost/step.hpp"
#include "../spec/parallel.hpp"
#include "../spec/checked_setup.hpp"
#include "../spec/setup.hpp"
#include "../workload/placement.hpp"
#include "../workload/step_ops.hpp"
#include "layout_ranking.hpp"
#include "plan_candidate.hpp"

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

struct plan_options {
    std::size_t top = 10;          // layouts kept, fastest first
    unsigned threads = 0;          // 0: one per hardware thread
    bool prune = true;             // false: predict every candidate (for checking the bounds)
    // Keep at most one layout per family (search/layout_ranking.hpp same_family), its fastest: `top`
    // distinct families. Off: every layout, variants of one family side by side.
    bool fold_variants = false;
    long long max_candidates = max_plan_candidates;  // a larger space is refused before searching
    // Called from the calling thread about ten times a second with the fraction of the
    // space done, once the search has run for a second.
    std::function<void(double fraction)> progress;
};

struct plan_result {
    std::vector<plan_candidate> best;  // fastest first
    long long candidates = 0;          // layouts in the space
    long long evaluated = 0;           // of those, predicted
    long long pruned = 0;              // skipped by a bound (cannot fit / cannot enter the top)
    long long fitting = 0;             // of the evaluated, layouts that fit in memory
    bool folded = false;               // best holds one layout per family (plan_options::fold_variants)
    seconds wall = seconds_of(0.0);    // time the search took
};

// Everything but the layout is checked once, as predict() checks it; the search builds
// only valid layouts and checks again only the layout of each micro-batch it prices
// (checked_setup::with_layout).
inline void validate(const plan_request& r) {
    require(r.gpus >= 1 && r.gpus <= max_gpus, "gpus", r.gpus, "must be between 1 and 2^22");
    // The search offers full recompute, ZeRO-3 and offload, which graphs refuse (spec/setup.hpp).
    require(!r.base.framework.cuda_graphs, "cuda_graphs", "on",
            "is not searched: plan without it, then predict the layout with --cuda-graphs on");
    require(r.global_batch >= 1 && r.global_batch <= max_global_batch, "global_batch", r.global_batch,
            "must be between 1 and 2^40");
    require(r.max_micro_batch >= 0, "max_micro_batch", r.max_micro_batch, "must not be negative (0: no cap)");
    require(!has_moe(r.base.model), "model", r.base.model.name,
            "a mixture-of-experts model: the search over expert parallelism is not built yet (predict or sweep "
            "its layouts with --ep and --etp)");
    training_setup one_gpu = r.base;
    one_gpu.layout = {};
    validate(one_gpu);
    require_framework_rank_order(r.base);  // a layout with stages and replicas needs it
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

// One unit of work: a (tp, cp, sp, recompute, FlashAttention, tp overlap), each
// pipeline depth in `pps` and all its micro-batches. A worker prices a stage's parts
// (one layer, the head, the embedding) once per micro-batch and builds the stages of
// every depth from them: the parts depend on none of pp, dp or what follows (the
// stage's sends do, and are priced per pipeline configuration).
struct unit {
    int tp = 1, cp = 1;
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
// each, split evenly (as spec/parallel.hpp pipeline_split_of accepts).
inline std::vector<pipeline_config> pipeline_configs_for(const plan_request& r, int pp) {
    const auto& m = r.base.model;
    std::vector<pipeline_config> out{{1, 0, 0}};
    if (pp == 1) return out;
    if (r.base.framework.interleaved_pipeline)
        for (int v = 2; 1LL * pp * v <= m.layers; ++v)
            if (interleave_splits_layers(m, pp, v)) out.push_back({v, 0, 0});
    if (!r.base.framework.uneven_pipeline_split || m.layers > max_layers_for_uneven_splits) return out;
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
    std::vector<bool> parameter_gathers;       // with ZeRO 1 and 2

    std::size_t gathers(int zero) const { return zero == 1 || zero == 2 ? parameter_gathers.size() : 1; }
    std::size_t schedules_for(const pipeline_config& p) const { return p.interleave == 1 ? schedules.size() : 1; }
    // Per pipeline configuration and schedule: every (ZeRO, offload, overlap, gather).
    std::size_t per_schedule() const {
        std::size_t n = 0;
        for (const zero_config& z : zeros) n += gathers(z.zero);
        return n * offloads.size() * overlaps.size();
    }
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
    // whole cp groups, 2 ranks or more, that divides dp × cp.
    const int ranks = dp * cp;
    for (int z = 0; z <= (ranks > 1 ? 3 : 0); ++z) {
        if (!(fw.zero_stages & (1u << z))) continue;
        c.zeros.push_back({z, 0});
        if (z >= 1 && fw.hybrid_sharding)
            for (long long shard : divisors(ranks))
                if (shard >= 2 && shard < ranks && shard % cp == 0) c.zeros.push_back({z, int(shard)});
    }
    c.offloads.push_back(offload_mode::none);
    // What validate_layout refuses is never offered: offload needs a GPU with its own
    // memory and a host link, full training, and an optimizer the framework runs there.
    if (r.allow_offload && fw.optimizer_offload && fw.host_optimizers.contains(r.base.optimizer) &&
        !r.base.cluster.gpu.memory_shared_with_host &&
        r.base.cluster.gpu.host_link.kind != link_kind::none && !r.base.finetune.freezes_base())
        c.offloads.push_back(offload_mode::optimizer);
    if (dp * cp > 1) c.overlaps = {dp_overlap_mode::off, dp_overlap_mode::on};
    else c.overlaps = {dp_overlap_mode::framework};
    c.parameter_gathers = switch_values(fw.overlap_parameter_gather, dp * cp > 1);
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

struct worker_result {
    top_k best;
    long long evaluated = 0, pruned = 0, fitting = 0;
};

// A unit's stage parts, priced per micro-batch when first needed: for the unit's
// setup with the layout `layout` of that micro-batch, checked again (the parts refer to
// the setup they were priced for, which is kept with them).
struct priced_parts {
    struct priced {
        std::unique_ptr<const checked_setup> setup;
        stage_pricer parts;
    };
    std::vector<std::pair<int, priced>> by_micro_batch;

    const stage_pricer& of(const checked_setup& unit, const parallel_layout& layout) {
        const int b = layout.micro_batch;
        for (const auto& [batch, p] : by_micro_batch)
            if (batch == b) return p.parts;
        auto setup = std::make_unique<const checked_setup>(unit.with_layout(layout));
        stage_pricer parts = price_stage_parts(*setup);
        return by_micro_batch.emplace_back(b, priced{std::move(setup), std::move(parts)}).second.parts;
    }
};

// The state part of the candidate stages' memory (cost/memory.hpp stage_state_memory) for
// one unit at one pipeline depth: computed once per stage (the first, the last, the
// second: memory_detail::candidate_stages_of), its layers and the memory variant (ZeRO
// configuration, offload, overlap, whether gradients accumulate), and reused for every
// micro-batch and pipeline configuration that has them.
class stage_state_parts {
public:
    stage_state_parts(int pp, int layers, std::size_t variants)
        : pp_(pp), layers_(layers), variants_(variants), block_of_(3 * std::size_t(layers + 1), -1) {}

    // The reference stays valid until the next call.
    template <class Compute>
    const memory_breakdown& of(const memory_detail::stage_micro_batch_memory& held, std::size_t variant,
                               Compute&& compute) {
        const std::size_t position = held.stage == 0 ? 0 : held.stage == pp_ - 1 ? 1 : 2;
        int& block = block_of_[position * std::size_t(layers_ + 1) + std::size_t(held.layers)];
        if (block < 0) {
            block = int(parts_.size() / variants_);
            parts_.resize(parts_.size() + variants_);
        }
        std::optional<memory_breakdown>& part = parts_[std::size_t(block) * variants_ + variant];
        if (!part) part = compute(held);
        return *part;
    }

private:
    int pp_, layers_;
    std::size_t variants_;
    std::vector<int> block_of_;  // by (position, layers): the block of its variants, −1 before the first
    std::vector<std::optional<memory_breakdown>> parts_;  // empty until first asked for
};

// All candidates of one unit at one pipeline depth: micro-batches in increasing order so
// that a configuration that did not fit stays pruned for the larger ones. One loop nest
// on purpose: its levels (micro-batch, pipeline configuration, ZeRO configuration and
// offload, overlap, gather, schedule) share what each computes lazily, and split into a
// class with a method per level it ran about 25 % slower on the planner benchmarks (the
// levels' state read through `this` instead of held in registers).
inline void search_pipeline_depth(const plan_request& r, const unit& u, int pp, const plan_options& options,
                                  training_setup& s, priced_parts& priced, worker_result& out) {
    const int dp = dp_of(r, u.tp, pp, u.cp);
    const auto batches = micro_batches_for(r, dp);
    s.cluster.order = u.order;
    const layout_groups groups =
        place({.dp = dp, .tp = u.tp, .cp = u.cp, .pp = pp}, gpus_per_domain(s.cluster), s.cluster.order);
    s.framework = r.base.framework;
    s.framework.flash_attention = u.flash_attention;
    s.framework.tensor_parallel_overlap = u.tensor_parallel_overlap;
    s.layout = {.dp = dp, .tp = u.tp, .cp = u.cp, .pp = pp, .sp = u.sp, .recompute = u.recompute};
    // Checked once for the unit at this depth; each micro-batch's layout again below.
    const checked_setup unit_setup(s);
    const flop_counts flop = flop_counts_of(unit_setup);
    const model_state state = model_state_of(unit_setup);
    const int seq = sequence_length(s);
    const bytes capacity = usable_memory(s.cluster.gpu, s.framework);
    // Data-parallel sync and the optimizer depend on (ZeRO stage, offload) only.
    const inner_choices choices = choices_for(r, pp, dp, u.cp);
    std::vector<step_prices> step_costs;
    for (const zero_config& z : choices.zeros)
        for (offload_mode offload : choices.offloads) {
            s.layout.zero = z.zero;
            s.layout.shard_group = z.shard_group;
            s.layout.offload = offload;
            step_costs.push_back(price_step(step_workload(s, state, groups_of(s)), unit_setup.with_layout(s.layout)));
        }
    // Whether a (pipeline configuration, ZeRO, offload) did not fit at a smaller
    // micro-batch (a batch whose grad-accum rules interleaving out leaves the entries of
    // the interleaved ones as they are).
    const std::size_t per_pipeline = choices.zeros.size() * choices.offloads.size();
    std::vector<char> did_not_fit(choices.pipelines.size() * per_pipeline, 0);
    const int most_layers = layers_per_stage(s.model, pp);
    stage_state_parts state_parts(pp, s.model.layers, per_pipeline * choices.overlaps.size() * 2);

    for (int b : batches) {
        const int accum = int(r.global_batch / (1LL * b * dp));
        const bool interleaving = interleaving_allowed(pp, accum);
        const long long per_batch = static_cast<long long>(choices.count(interleaving));
        s.layout.micro_batch = b;
        s.layout.grad_accum = accum;
        s.layout.interleave = 1;
        s.layout.first_stage_layers = s.layout.last_stage_layers = 0;
        s.layout.pipeline_layout = {};
        s.layout.schedule = pipeline_schedule::one_f_one_b;
        s.layout.zero = 0;
        s.layout.shard_group = 0;
        s.layout.offload = offload_mode::none;
        s.layout.dp_overlap = dp_overlap_mode::framework;
        s.framework.overlap_parameter_gather = r.base.framework.overlap_parameter_gather;
        // The stage's parts priced once per micro-batch, when first needed (not for a
        // micro-batch none of whose layouts fits); every split's stages from them. The
        // stage's ops depend on none of what the loops below vary but the split.
        const stage_pricer* parts = nullptr;
        const auto priced_parts = [&]() -> const stage_pricer& {
            if (parts == nullptr) parts = &priced.of(unit_setup, s.layout);
            return *parts;
        };
        // Bound: some stage holds ⌈L/p⌉ layers or more, so every candidate of this
        // micro-batch runs at least the compute of such a stage, m times.
        if (options.prune && out.best.full() &&
            double(accum) * priced_parts().stage(most_layers, false, false, seconds_of(0.0)).compute() >
                out.best.worst()) {
            out.pruned += per_batch;
            continue;
        }
        // Memory: each layer's activations once per micro-batch.
        const precision_recipe stored = stored_precision(s);
        const memory_detail::layer_activations layer =
            memory_detail::layer_activations_of(s.model, stored, s.layout, seq, s.framework, s.finetune);
        for (std::size_t pi = 0; pi < choices.pipelines.size(); ++pi) {
            const pipeline_config& pc = choices.pipelines[pi];
            if (pc.interleave > 1 && !interleaving) continue;
            s.layout.interleave = pc.interleave;
            s.layout.first_stage_layers = pc.first_stage_layers;
            s.layout.last_stage_layers = pc.last_stage_layers;
            // The stages' times, when first needed: for the bound below, or for the first
            // layout that fits (one that does not fit has only its memory verdict).
            std::optional<pipeline_times> stage_times;
            const auto stages = [&]() -> const pipeline_times& {
                if (!stage_times) {
                    const seconds sends =
                        pp > 1 ? price_collective(pipeline_sends(s, groups), s.cluster) : seconds_of(0.0);
                    stage_times = pipeline_stage_times(priced_parts(), s, sends);
                }
                return *stage_times;
            };
            const std::size_t schedules = choices.schedules_for(pc);
            const long long per_pipeline_candidates = static_cast<long long>(schedules * choices.per_schedule());
            // Bound: the slowest stage paces every micro-batch, whatever follows.
            if (options.prune && out.best.full() &&
                double(accum) * stages().bottleneck.compute() > out.best.worst()) {
                out.pruned += per_pipeline_candidates;
                continue;
            }
            // What the stages hold for their micro-batches, whatever the ZeRO stage,
            // offload and overlap below.
            const memory_detail::candidate_stages held =
                memory_detail::candidate_stages_of(state, s.model, stored, s.layout, seq, s.framework, layer, s.finetune);
            std::size_t step_config = 0, config = pi * per_pipeline;
            memory_report at_overlap;  // of the (ZeRO configuration, offload, overlap) below
            for (const zero_config& z : choices.zeros) {
                const int zero = z.zero;
                s.layout.zero = zero;
                s.layout.shard_group = z.shard_group;
                for (offload_mode offload : choices.offloads) {
                    s.layout.offload = offload;
                    const long long variants = static_cast<long long>(choices.overlaps.size() *
                                                                      choices.gathers(zero) * schedules);
                    const std::size_t zero_offload = step_config++;  // (ZeRO configuration, offload)
                    const step_prices& costs = step_costs[zero_offload];
                    char& failed = did_not_fit[config++];
                    if (options.prune && failed) {
                        out.pruned += variants;
                        continue;
                    }
                    // The memory report at an overlap choice; a layout that certainly
                    // does not fit gets its verdict without the breakdown (most of a
                    // space: nothing but the verdict is reported for it).
                    const auto fits_at = [&](std::size_t overlap) {
                        const std::size_t variant =
                            (zero_offload * choices.overlaps.size() + overlap) * 2 + (accum > 1 ? 1 : 0);
                        const auto state_part =
                            [&](const memory_detail::stage_micro_batch_memory& h) -> const memory_breakdown& {
                            return state_parts.of(h, variant, [&](const memory_detail::stage_micro_batch_memory& x) {
                                return memory_detail::stage_state_memory(x, s.model, stored, state, s.layout,
                                                                         s.framework, s.finetune);
                            });
                        };
                        if (memory_detail::certainly_exceeds(held, state_part, s.framework.memory, capacity)) {
                            at_overlap.fits = false;
                            return false;
                        }
                        at_overlap = memory_report_of(
                            memory_detail::busiest_stage(held, state_part, s.framework.memory), capacity);
                        return at_overlap.fits;
                    };
                    // Offloaded, the GPU's buckets depend on the overlap (DeepSpeed's
                    // overlap_comm keeps two): memory per overlap choice, and the
                    // configuration fails only if none of them fits.
                    const bool per_overlap = offload == offload_mode::optimizer;
                    s.layout.dp_overlap = choices.overlaps.front();
                    bool any_fits = fits_at(0);
                    for (std::size_t o = 0; o < choices.overlaps.size(); ++o) {
                        s.layout.dp_overlap = choices.overlaps[o];
                        if (per_overlap && o > 0) any_fits = fits_at(o) || any_fits;
                        for (std::size_t g = 0; g < choices.gathers(zero); ++g) {
                            s.framework.overlap_parameter_gather =
                                zero == 1 || zero == 2 ? bool(choices.parameter_gathers[g])
                                                       : r.base.framework.overlap_parameter_gather;
                            for (std::size_t k = 0; k < schedules; ++k) {
                                s.layout.schedule = choices.schedules[k];
                                ++out.evaluated;
                                // A layout that does not fit has no step time: its memory
                                // is the verdict (as in every report).
                                if (!at_overlap.fits) continue;
                                ++out.fitting;
                                // The whole report only for a candidate that can enter the top k.
                                const seconds step_time = step_times(s, stages(), costs).total();
                                if (out.best.full() && step_time > out.best.worst()) continue;
                                out.best.offer({s.layout, switches_of(s.framework),
                                                schedule(s, stages(), costs, at_overlap, flop), s.cluster.order});
                            }
                            s.layout.schedule = pipeline_schedule::one_f_one_b;
                        }
                    }
                    if (!any_fits) failed = 1;
                }
            }
        }
    }
}

inline void search_unit(const plan_request& r, const unit& u, const plan_options& options, training_setup& s,
                        worker_result& out) {
    priced_parts priced;
    for (int pp : u.pps) search_pipeline_depth(r, u, pp, options, s, priced, out);
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

inline space build_space(const plan_request& r) {
    const auto& m = r.base.model;
    const auto& fw = r.base.framework;
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
            std::vector<int> pps, ordered_pps;  // ordered: both pipeline and data parallel
            long long inner = 0, ordered_inner = 0;  // candidates of one unit
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
                inner += at_depth;
                pps.push_back(pp);
                // The rank order only moves groups where there are both stages and replicas.
                if (pp > 1 && dp > 1) {
                    ordered_inner += at_depth;
                    ordered_pps.push_back(pp);
                }
            }
            if (pps.empty()) continue;
            for (bool sequence_parallel : {false, true}) {
                if (sequence_parallel && (tp == 1 || !fw.sequence_parallel)) continue;
                for (auto rc : enum_values<recompute_mode>()) {
                    if (!fw.recompute_modes.contains(rc)) continue;
                    for (bool flash : switch_values(fw.flash_attention))
                        for (bool overlap : switch_values(fw.tensor_parallel_overlap, sequence_parallel)) {
                            sp.units.push_back({.tp = tp, .cp = cp, .pps = pps, .sp = sequence_parallel,
                                                .recompute = rc, .flash_attention = flash,
                                                .tensor_parallel_overlap = overlap, .order = r.base.cluster.order});
                            sp.candidates += inner;
                            if (ordered_pps.empty()) continue;
                            for (rank_order o : other_orders) {
                                unit ordered = sp.units.back();
                                ordered.pps = ordered_pps;
                                ordered.order = o;
                                sp.units.push_back(std::move(ordered));
                                sp.candidates += ordered_inner;
                            }
                        }
                }
            }
        }
    }
    return sp;
}

}  // namespace planner_detail

// Every valid layout of request.gpus GPUs reaching request.global_batch exactly;
// keeps the options.top fastest that fit (with options.fold_variants, the fastest of
// options.top distinct families).
inline plan_result plan(const plan_request& request, const plan_options& options = {}) {
    using namespace planner_detail;
    validate(request);
    require(options.top >= 1 && options.top <= max_plan_top, "top", options.top, "must be between 1 and 2^24");
    const auto start = std::chrono::steady_clock::now();
    const space sp = build_space(request);
    require(options.max_candidates >= 1 && options.max_candidates <= max_plan_candidates, "max_candidates",
            options.max_candidates, "must be between 1 and 2^36");
    if (sp.candidates > options.max_candidates)
        detail::fail("candidates", sp.candidates,
                     "the search space exceeds " + std::to_string(options.max_candidates) +
                         " layouts: cap the micro-batch or fix part of the layout");
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const unsigned threads =
        std::max(1u, std::min<unsigned>(options.threads == 0 ? hardware : options.threads,
                                        static_cast<unsigned>(std::max<std::size_t>(1, sp.units.size()))));
    std::atomic<std::size_t> next{0}, done{0};
    std::vector<worker_result> results(threads, worker_result{top_k(options.top, options.fold_variants)});
    std::exception_ptr failure;
    std::mutex failure_mutex;
    const auto work = [&](unsigned id) {
        try {
            training_setup s = request.base;
            for (std::size_t i = next++; i < sp.units.size(); i = next++) {
                search_unit(request, sp.units[i], options, s, results[id]);
                ++done;
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(failure_mutex);
            if (!failure) failure = std::current_exception();
            next = sp.units.size();
        }
    };
    // With a progress callback every worker is a thread and the calling thread
    // reports; without one the calling thread works too.
    const unsigned first_thread = options.progress ? 0 : 1;
    const auto stopped = [&] {
        std::lock_guard<std::mutex> lock(failure_mutex);
        return failure != nullptr;
    };
    std::vector<std::thread> pool;
    const auto stop_and_join = [&] {
        next = sp.units.size();
        for (auto& t : pool)
            if (t.joinable()) t.join();
    };
    try {
        for (unsigned id = first_thread; id < threads; ++id) pool.emplace_back(work, id);
        if (options.progress) {
            using namespace std::chrono_literals;
            auto reported = start;
            while (done < sp.units.size() && !stopped()) {
                std::this_thread::sleep_for(2ms);
                const auto now = std::chrono::steady_clock::now();
                if (now - start > 1s && now - reported >= 100ms) {
                    options.progress(double(done) / double(sp.units.size()));
                    reported = now;
                }
            }
        } else {
            work(0);
        }
    } catch (...) {
        stop_and_join();  // no thread outlives the search, whatever failed
        throw;
    }
    stop_and_join();
    if (failure) std::rethrow_exception(failure);

    plan_result result;
    result.candidates = sp.candidates;
    std::vector<plan_candidate> all;
    for (auto& w : results) {
        result.evaluated += w.evaluated;
        result.pruned += w.pruned;
        result.fitting += w.fitting;
        all.insert(all.end(), w.best.items().begin(), w.best.items().end());
    }
    result.folded = options.fold_variants;
    if (options.fold_variants) {
        // Each worker holds the top families of what it saw, each by its best there. A
        // family among the top of the whole space has its best seen by some worker, and
        // there fewer families than `top` rank before it (each would rank before it in
        // the whole space too): that worker holds it. So the workers' lists, ranked,
        // hold every top family's best as the family's first entry.
        std::sort(all.begin(), all.end(), ranks_before);
        result.best = first_of_each_family(all, options.top);
    } else {
        const std::size_t keep = std::min(options.top, all.size());
        std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(keep), all.end(), ranks_before);
        all.resize(keep);
        result.best = std::move(all);
    }
    result.wall = seconds_of(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return result;
}

// The old call shape: the `top` fastest.
inline plan_result plan(const plan_request& request, std::size_t top) {
    plan_options options;
    options.top = top;
    return plan(request, options);
}

}  // namespace trainperf
