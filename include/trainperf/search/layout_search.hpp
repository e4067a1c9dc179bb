// Search over parallel layouts: for a model, a system of N GPUs and a global batch,
// every layout — tensor parallel size, context parallel size (long sequences),
// pipeline stages, virtual stages, layers on the first and last stage, the pipeline
// schedule, data-parallel replicas, micro-batch (every divisor of the per-replica
// batch), an MoE model's expert and expert-tensor parallel sizes, sequence parallelism,
// the recompute modes the framework offers, the ZeRO stages and
// hybrid shard groups the profile offers, optimizer offload, data-parallel overlap
// on/off — and the framework's switches where its profile offers them (FlashAttention,
// tensor-parallel overlap, parameter-gather overlap), and on a job over several NVLink
// domains the rank orders the framework runs (which groups a domain holds; tensor
// parallelism is searched inside a domain) that reaches the global batch
// exactly and that the framework's software runs (spec/setup.hpp
// require_framework_runs), ranked by predicted step time (the space: search/layout_space.hpp). The
// search is exhaustive: a candidate is skipped only when a bound proves it cannot fit
// (memory grows with the micro-batch) or cannot enter the top k (its compute alone is
// slower than the k-th best found). Pricing reuses what does not change: a stage's ops
// are priced once per (tp, cp, ep, etp, sp, recompute, FlashAttention, tp overlap, micro-batch),
// for every pipeline depth, and every stage of every split is built from them (cost/stage_pricer.hpp
// stage_pricer::stage); a stage's memory in two parts (cost/memory.hpp): what it holds for
// its micro-batches once per (…, micro-batch, pipeline configuration), its state once
// per (…, its layers, ZeRO, shard group, offload, overlap). A layout that does not fit
// gets its memory verdict only (cost/memory.hpp certainly_exceeds, without the breakdown);
// stage parts and stage times are priced when a bound or a fitting layout first needs
// them. Threads share the candidates.
#pragma once

#include <algorithm>
#include <array>
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
#include "../cost/fit_margin.hpp"
#include "../cost/memory.hpp"
#include "../cost/step.hpp"
#include "../spec/parallel.hpp"
#include "../spec/checked_setup.hpp"
#include "../spec/setup.hpp"
#include "../workload/placement.hpp"
#include "../workload/step_ops.hpp"
#include "layout_ranking.hpp"
#include "layout_space.hpp"
#include "plan_candidate.hpp"

namespace trainperf {

struct plan_options {
    std::size_t top = 10;          // layouts kept, fastest first
    unsigned threads = 0;          // 0: one per hardware thread
    bool prune = true;             // false: predict every candidate (for checking the bounds)
    // Keep at most one layout per family (search/layout_ranking.hpp same_family), its fastest: `top`
    // distinct families. Off: every layout, variants of one family side by side.
    bool fold_variants = false;
    long long max_candidates = max_plan_candidates;  // a larger space is refused before searching
    // Rank only layouts whose fit does not rest on an assumption (cost/fit_margin.hpp): that
    // would still fit with twice the caching allocator's assumed slack and CUDA context.
    // A layout with less headroom is counted (plan_result::borderline) and set aside:
    // what the allocator really reserves beyond the allocated peak is not derived here
    // (cost/fit_margin.hpp), and a run that close to the capacity is one a practitioner
    // would not choose. Off: every layout that fits.
    bool firm_fit = true;
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
    long long borderline = 0;          // of those, set aside as borderline (plan_options::firm_fit)
    bool only_borderline = false;      // every layout that fits is: `best` holds them
    bool folded = false;               // best holds one layout per family (plan_options::fold_variants)
    seconds wall = seconds_of(0.0);    // time the search took
};

namespace planner_detail {

struct worker_result {
    top_k best;
    long long evaluated = 0, pruned = 0, fitting = 0, borderline = 0;
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
// second: memory_detail::candidate_stages_of), its layers (and of them an MoE model's MoE
// layers, which an uneven split moves on the second stage) and the memory variant (ZeRO
// configuration, offload, overlap, whether gradients accumulate), and reused for every
// micro-batch and pipeline configuration that has them. A pipeline configuration finds its
// stages' blocks once (blocks_of), its candidates their parts by block.
class stage_state_parts {
public:
    stage_state_parts(int pp, int layers, int moe_layers, std::size_t variants)
        : pp_(pp), layers_(layers), moe_layers_(moe_layers), variants_(variants),
          block_of_(3 * std::size_t(layers + 1) * std::size_t(moe_layers + 1), -1) {}

    // The block of each of the candidate stages.
    std::array<int, 3> blocks_of(const memory_detail::candidate_stages& c) {
        std::array<int, 3> blocks{};
        for (int i = 0; i < c.count; ++i) {
            const memory_detail::stage_micro_batch_memory& held = c.stages[std::size_t(i)];
            const std::size_t position = held.stage == 0 ? 0 : held.stage == pp_ - 1 ? 1 : 2;
            int& block = block_of_[(position * std::size_t(layers_ + 1) + std::size_t(held.layers)) *
                                       std::size_t(moe_layers_ + 1) +
                                   std::size_t(held.moe_layers)];
            if (block < 0) {
                block = int(parts_.size() / variants_);
                parts_.resize(parts_.size() + variants_);
            }
            blocks[std::size_t(i)] = block;
        }
        return blocks;
    }

    // The part of `held`, whose block is `block`. The reference stays valid until the next
    // blocks_of.
    template <class Compute>
    const memory_breakdown& of(int block, const memory_detail::stage_micro_batch_memory& held, std::size_t variant,
                               Compute&& compute) {
        std::optional<memory_breakdown>& part = parts_[std::size_t(block) * variants_ + variant];
        if (!part) part = compute(held);
        return *part;
    }

private:
    int pp_, layers_, moe_layers_;
    std::size_t variants_;
    std::vector<int> block_of_;  // by (position, layers, MoE layers): the block of its variants, −1 before the first
    std::vector<std::optional<memory_breakdown>> parts_;  // empty until first asked for
};

// The least compute of a stage of `layers` of the model's `total` layers, `moe_total` of
// them MoE layers (0: a dense model's stage): of an MoE model's, the least over every
// count of MoE layers such a stage can hold (a pass takes the larger of the GPU's time
// and the host's, each linear in the count, so the least can lie between the ends).
inline seconds least_stage_compute(const stage_pricer& parts, int layers, int total, int moe_total) {
    seconds least = parts.stage(layers, false, false, seconds_of(0.0)).compute();
    if (moe_total == 0) return least;
    const int fewest = std::max(0, layers - (total - moe_total)), most = std::min(layers, moe_total);
    if (fewest > 0) least = parts.stage(layers, false, false, seconds_of(0.0), fewest).compute();
    for (int k = fewest + 1; k <= most; ++k)
        least = std::min(least, parts.stage(layers, false, false, seconds_of(0.0), k).compute());
    return least;
}

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
    s.layout.ep = u.ep;
    s.layout.etp = u.etp;
    const inner_choices choices = choices_for(r, pp, dp, u.cp);
    if (choices.pipelines.empty()) return;  // (the EP overlap where no interleave splits the layers)
    // The layouts below start from the first pipeline configuration (an interleaved one,
    // with a whole round of micro-batches, where the EP overlap allows no other).
    const int first_interleave = choices.pipelines.front().interleave;
    s.layout.interleave = first_interleave;
    if (first_interleave > 1) s.layout.grad_accum = pp;
    // Checked once for the unit at this depth; each micro-batch's layout again below.
    const checked_setup unit_setup(s);
    const flop_counts flop = flop_counts_of(unit_setup);
    const model_state state = model_state_of(unit_setup);
    const int seq = sequence_length(s);
    const bytes capacity = usable_memory(s.cluster.gpu, s.framework);
    // Data-parallel sync and the optimizer depend on (ZeRO stage, offload) only.
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
    const int model_moe_layers = moe_layers(s.model);
    stage_state_parts state_parts(pp, s.model.layers, model_moe_layers, per_pipeline * choices.overlaps.size() * 2);

    for (int b : batches) {
        const int accum = int(r.global_batch / (1LL * b * dp));
        const bool interleaving = interleaving_allowed(pp, accum);
        const long long per_batch = static_cast<long long>(choices.count(interleaving));
        if (per_batch == 0) continue;  // only interleaved configurations, which this grad-accum rules out
        s.layout.micro_batch = b;
        s.layout.grad_accum = accum;
        s.layout.interleave = first_interleave;
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
        // micro-batch runs at least the compute of such a stage, m times (of an MoE
        // model's, the least over the MoE layers it can hold).
        if (options.prune && out.best.full() &&
            double(accum) * least_stage_compute(priced_parts(), most_layers, s.model.layers, model_moe_layers) >
                out.best.worst()) {
            out.pruned += per_batch;
            continue;
        }
        // Memory: each layer's activations once per micro-batch (with the EP overlap, once
        // per interleave below: its extra micro-batch in flight depends on it).
        const precision_recipe stored = stored_precision(s);
        memory_detail::layer_activations layer =
            memory_detail::layer_activations_of(s.model, stored, s.layout, seq, s.framework, s.finetune, s.moe);
        int layer_interleave = first_interleave;
        for (std::size_t pi = 0; pi < choices.pipelines.size(); ++pi) {
            const pipeline_config& pc = choices.pipelines[pi];
            if (pc.interleave > 1 && !interleaving) continue;
            s.layout.interleave = pc.interleave;
            s.layout.first_stage_layers = pc.first_stage_layers;
            s.layout.last_stage_layers = pc.last_stage_layers;
            if (s.moe.a2a_overlap && pc.interleave != layer_interleave) {
                layer = memory_detail::layer_activations_of(s.model, stored, s.layout, seq, s.framework, s.finetune,
                                                            s.moe);
                layer_interleave = pc.interleave;
            }
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
            const std::array<int, 3> blocks = state_parts.blocks_of(held);
            std::size_t step_config = 0, config = pi * per_pipeline;
            memory_report at_overlap;  // of the (ZeRO configuration, offload, overlap) below
            bool firm = true;          // its verdict rests on no assumption (plan_options::firm_fit)
            for (const zero_config& z : choices.zeros) {
                const int zero = z.zero;
                s.layout.zero = zero;
                s.layout.shard_group = z.shard_group;
                for (offload_mode offload : choices.offloads) {
                    s.layout.offload = offload;
                    const long long variants = static_cast<long long>(choices.gathers(zero) * schedules);
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
                            const auto stage = std::size_t(&h - held.stages.data());  // h is one of them
                            return state_parts.of(blocks[stage], h, variant, [&](const memory_detail::stage_micro_batch_memory& x) {
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
                        // A borderline fit grows no firmer with the micro-batch: pruned as
                        // one that does not fit.
                        firm = !options.firm_fit || !at_overlap.fits ||
                               !margin_of(at_overlap, s.framework.memory).borderline();
                        return at_overlap.fits && firm;
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
                        for (std::size_t g = 0; g < choices.gathers(zero, s.layout.dp_overlap); ++g) {
                            s.framework.overlap_parameter_gather =
                                zero == 1 || zero == 2 ? choices.gather(g, s.layout.dp_overlap)
                                                       : r.base.framework.overlap_parameter_gather;
                            for (std::size_t k = 0; k < schedules; ++k) {
                                s.layout.schedule = choices.schedules[k];
                                ++out.evaluated;
                                // A layout that does not fit has no step time: its memory
                                // is the verdict (as in every report).
                                if (!at_overlap.fits) continue;
                                ++out.fitting;
                                if (!firm) {
                                    ++out.borderline;
                                    continue;
                                }
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
        result.borderline += w.borderline;
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
    // Where every layout that fits is borderline, those are the answer, said so.
    if (options.firm_fit && result.best.empty() && result.borderline > 0) {
        plan_options every = options;
        every.firm_fit = false;
        plan_result borderline = plan(request, every);
        borderline.borderline = result.borderline;
        borderline.only_borderline = true;
        borderline.wall += result.wall;
        return borderline;
    }
    return result;
}

// The old call shape: the `top` fastest.
inline plan_result plan(const plan_request& request, std::size_t top) {
    plan_options options;
    options.top = top;
    return plan(request, options);
}

}  // namespace trainperf
