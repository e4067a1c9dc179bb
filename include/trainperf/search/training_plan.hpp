// End-to-end plans: how many GPUs, in which layout, to train a model on a number of
// tokens, by a deadline, and at what cost. For each GPU count of a bounded set (whole
// powers of two up to a node, then whole nodes: 1, 2, 3, 4, 6, 8, 12, 16, … nodes,
// each a power of two or 1.5 times one) the layout search (search/layout_search.hpp) finds the
// fastest layout that fits; cost/training_run.hpp turns its step into days, GPU-hours,
// energy and cost. Of the counts that meet the deadline, the cheapest (fewest GPU-
// hours, so the lowest cost at one price per GPU-hour) and the fastest (fewest days).
// Energy is the GPUs' board power (TDP) for the whole run: an upper bound for the
// GPUs alone, without hosts, network or cooling (cost/training_run.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../cost/training_run.hpp"
#include "../spec/system.hpp"
#include "layout_search.hpp"

namespace trainperf {

// ASSUMPTION: a bound that keeps a plan to a few dozen layout searches of at most
// 2^16 GPUs each; no published run is larger.
inline constexpr int max_training_plan_gpus = 1 << 16;

// ASSUMPTION: the GPU counts a plan tries when the caller names no limit: up to 4096
// (512 nodes of 8), the scale of the clusters most pre-training runs are planned on;
// docs/cli.md ("End-to-end plans") gives the time such a plan takes.
inline constexpr int default_training_plan_max_gpus = 4096;

struct training_plan_request {
    plan_request layouts{};          // system, model, recipe, global batch, micro-batch cap, offload;
                                     // layouts.gpus is ignored (every count is tried)
    double train_tokens = 0;
    double deadline_days = 0;        // 0: no deadline
    double price_per_gpu_hour = 0;   // 0: no cost wanted
    std::string currency = "USD";    // the price's ISO 4217 code
    int gpus_per_node = default_gpus_per_node;  // the node; smaller counts share one node
    int max_gpus = default_training_plan_max_gpus;  // the largest count tried
};

// The fastest layout that fits on one GPU count, and the whole run with it.
struct gpu_count_plan {
    int gpus = 1;
    std::optional<plan_candidate> best;   // none: no layout of this count fits / reaches the batch
    bool reaches_global_batch = true;     // some layout of this count reaches the global batch exactly
    std::optional<training_run> run;      // with best
    bool meets_deadline = false;          // with best: run days ≤ deadline (always, without one)
    long long evaluated = 0;              // layouts predicted for this count
};

struct training_plan {
    std::vector<gpu_count_plan> counts;   // every count tried, fewest GPUs first
    std::optional<std::size_t> cheapest;  // index into counts: fewest GPU-hours that meet the deadline
    std::optional<std::size_t> fastest;   // index into counts: fewest days that meet the deadline
    seconds wall = seconds_of(0.0);

    double days(std::size_t i) const {
        require(i < counts.size() && counts[i].run.has_value(), "count", i, "has no layout that fits: no days");
        return counts[i].run->days();
    }
};

// The GPU counts tried: 1, 2, 4, … below a node, then 1, 2, 3, 4, 6, 8, 12, … nodes, up to
// max_gpus.
inline std::vector<int> training_plan_gpu_counts(int gpus_per_node, int max_gpus) {
    require(gpus_per_node >= 1 && gpus_per_node <= limits::max_gpus_per_node, "gpus_per_node", gpus_per_node,
            "must be between 1 and 4096");
    require(max_gpus >= 1 && max_gpus <= max_training_plan_gpus, "max_gpus", max_gpus,
            "must be between 1 and 65536");
    std::vector<int> counts;
    for (int g = 1; g < gpus_per_node && g <= max_gpus; g *= 2) counts.push_back(g);
    for (long long nodes = 1; nodes * gpus_per_node <= max_gpus; nodes *= 2) {
        counts.push_back(int(nodes * gpus_per_node));
        if (nodes >= 2 && nodes * 3 / 2 * gpus_per_node <= max_gpus) counts.push_back(int(nodes * 3 / 2 * gpus_per_node));
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    return counts;
}

inline void validate(const training_plan_request& r) {
    require(r.train_tokens > 0 && r.train_tokens < 1e18, "train_tokens", r.train_tokens,
            "must be a positive token count");
    require(r.deadline_days >= 0 && r.deadline_days < 1e6, "deadline_days", r.deadline_days,
            "must be finite and not negative (0: no deadline)");
    require(r.price_per_gpu_hour >= 0 && r.price_per_gpu_hour < 1e9, "price_per_gpu_hour", r.price_per_gpu_hour,
            "must be finite and not negative");
    validate_currency(r.currency);
    (void)training_plan_gpu_counts(r.gpus_per_node, r.max_gpus);
    require(r.max_gpus == 1 || r.layouts.base.cluster.intra_node.kind != link_kind::none, "link",
            to_string(r.layouts.base.cluster.intra_node.kind),
            "no GPU-to-GPU link: name one to plan for more than one GPU");
    plan_request one = r.layouts;
    one.gpus = 1;
    validate(one);
}

// Every count of training_plan_gpu_counts searched with plan(); `options.top` is
// ignored (the fastest layout per count is kept).
inline training_plan plan_training(const training_plan_request& r, plan_options options = {}) {
    validate(r);
    const auto start = std::chrono::steady_clock::now();
    options.top = 1;
    training_plan result;
    for (int gpus : training_plan_gpu_counts(r.gpus_per_node, r.max_gpus)) {
        plan_request request = r.layouts;
        request.gpus = gpus;
        request.base.cluster.gpus_per_node = std::min(gpus, r.gpus_per_node);
        const plan_result found = plan(request, options);
        gpu_count_plan c;
        c.gpus = gpus;
        c.evaluated = found.evaluated;
        c.reaches_global_batch = found.candidates > 0;
        if (!found.best.empty()) {
            c.best = found.best.front();
            c.run = estimate_training_run(c.best->report, request.base.cluster.gpu, r.train_tokens,
                                          r.price_per_gpu_hour, r.currency);
            c.meets_deadline = r.deadline_days == 0 || c.run->days() <= r.deadline_days;
        }
        result.counts.push_back(c);
    }
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
        const gpu_count_plan& c = result.counts[i];
        if (!c.meets_deadline) continue;
        const auto hours = [&](std::size_t k) { return result.counts[k].run->gpu_hours; };
        const auto time = [&](std::size_t k) { return result.counts[k].run->time; };
        if (!result.cheapest || hours(i) < hours(*result.cheapest) ||
            (hours(i) == hours(*result.cheapest) && time(i) < time(*result.cheapest)))
            result.cheapest = i;
        if (!result.fastest || time(i) < time(*result.fastest) ||
            (time(i) == time(*result.fastest) && hours(i) < hours(*result.fastest)))
            result.fastest = i;
    }
    result.wall = seconds_of(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return result;
}

// The setup of one count's plan: the request's system on that many GPUs, in its layout.
inline training_setup setup_of(const training_plan_request& r, const gpu_count_plan& c) {
    require(c.best.has_value(), "gpus", c.gpus, "has no layout that fits");
    training_setup s = setup_of(r.layouts.base, *c.best);
    s.cluster.gpus_per_node = std::min(c.gpus, r.gpus_per_node);
    return s;
}

}  // namespace trainperf
