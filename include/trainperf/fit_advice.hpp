// What would make a training setup that does not fit in GPU memory fit: each of the
// usual single changes — full activation recompute, a smaller micro-batch (more
// accumulation, same global batch), optimizer offload to the host, ZeRO-3 over more
// data-parallel GPUs — tried with the step engine, keeping those that fit, the one
// with the most throughput per GPU first.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "enum_names.hpp"
#include "parallel.hpp"
#include "step.hpp"
#include "system.hpp"
#include "units.hpp"

namespace trainperf {

enum class fit_change { recompute_full, smaller_micro_batch, optimizer_offload, zero3_more_gpus };

template <>
struct enum_names<fit_change> {
    static constexpr std::array<enum_name<fit_change>, 4> table{
        {{fit_change::recompute_full, "recompute-full"},
         {fit_change::smaller_micro_batch, "smaller-micro-batch"},
         {fit_change::optimizer_offload, "optimizer-offload"},
         {fit_change::zero3_more_gpus, "zero3-more-gpus"}}};
};

struct fit_option {
    fit_change change = fit_change::recompute_full;
    training_setup setup{};   // the setup with this one change
    step_report report{};     // its prediction; it fits
};

struct fit_advice {
    bytes needed = bytes_of(0.0);     // memory per GPU of the setup as given
    bytes capacity = bytes_of(0.0);   // what the GPU offers
    std::vector<fit_option> options;  // each fits on its own; most tokens/s per GPU first

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

}  // namespace fit_advice_detail

// Data-parallel replicas tried for ZeRO-3 at most: up to 2^16 GPUs.
inline constexpr int fit_advice_max_gpus = 1 << 16;

inline fit_advice advise_fit(const training_setup& s) {
    namespace fd = fit_advice_detail;
    const step_report base = predict(s);
    fit_advice a{.needed = base.memory.total(), .capacity = base.memory_capacity};
    if (base.fits) return a;
    const parallel_layout& l = s.layout;
    const auto add = [&](fit_change change, const training_setup& t) {
        if (auto r = fd::fitting(t)) a.options.push_back({change, t, *r});
    };

    if (l.recompute != recompute_mode::full) {
        training_setup t = s;
        t.layout.recompute = recompute_mode::full;
        add(fit_change::recompute_full, t);
    }

    // The largest smaller micro-batch that keeps the global batch (it divides the
    // samples per replica per step) and fits.
    const long long per_replica = 1LL * l.micro_batch * l.grad_accum;
    for (int b = l.micro_batch - 1; b >= 1; --b) {
        if (per_replica % b != 0 || per_replica / b > (1LL << 30)) continue;
        training_setup t = s;
        t.layout.micro_batch = b;
        t.layout.grad_accum = int(per_replica / b);
        if (auto r = fd::fitting(t)) {
            a.options.push_back({fit_change::smaller_micro_batch, t, *r});
            break;
        }
    }

    if (l.offload == offload_mode::none && !s.cluster.gpu.memory_shared_with_host) {
        training_setup t = s;
        t.layout.offload = offload_mode::optimizer;
        add(fit_change::optimizer_offload, t);
    }

    // ZeRO-3 shards weights, gradients and optimizer state over dp, so memory only
    // falls as replicas are added: the fewest replicas that fit, found by bisection
    // (same micro-batch and accumulation). Nodes keep their size, or grow to a usual
    // server (default_gpus_per_node) where the setup's are smaller, e.g. one GPU's.
    const int replica_gpus = l.tp * l.pp;
    const auto node_size = [&](int dp) {
        return std::max(s.cluster.gpus_per_node, std::min(dp * replica_gpus, default_gpus_per_node));
    };
    std::vector<int> replicas;  // any count: a last node may be partly filled (placement.hpp)
    for (int dp = l.dp; 1LL * dp * replica_gpus <= fit_advice_max_gpus; ++dp) replicas.push_back(dp);
    training_setup t = s;
    t.layout.zero = 3;
    const auto with_replicas = [&](int dp) {
        t.layout.dp = dp;
        t.cluster.gpus_per_node = node_size(dp);
        return t;
    };
    const auto first = std::partition_point(replicas.begin(), replicas.end(),
                                            [&](int dp) { return !fd::fitting(with_replicas(dp)).has_value(); });
    if (first != replicas.end()) add(fit_change::zero3_more_gpus, with_replicas(*first));

    std::stable_sort(a.options.begin(), a.options.end(), [](const fit_option& x, const fit_option& y) {
        return x.report.tokens_per_second_per_gpu() > y.report.tokens_per_second_per_gpu();
    });
    return a;
}

}  // namespace trainperf
