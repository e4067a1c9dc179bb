// Data-parallel scaling as the engine predicts it: the same replica on 1…N replicas,
// and the communication fraction r that the textbook formula N / (1 + (N−1)·r) needs
// to match the engine (cost/scaling.hpp has the formula).
#pragma once

#include <algorithm>
#include <vector>

#include "../core/error.hpp"
#include "../cost/scaling.hpp"
#include "../cost/step.hpp"
#include "../spec/setup.hpp"

namespace trainperf {

// Data-parallel scaling as the engine predicts it: the same replica (micro-batch,
// tp, pp, grad-accum) on 1…max_replicas replicas. speedup(N) = throughput(N) /
// throughput(1); r is the communication fraction that the textbook formula
// N / (1 + (N−1)·r) needs to match the engine at max_replicas.
struct engine_scaling_point {
    int replicas = 1;
    int gpus = 1;
    double engine_speedup = 1;
    double formula_speedup = 1;   // N / (1 + (N−1)·r) with the derived r
};

struct engine_scaling {
    double r = 0;                 // derived at max_replicas
    std::vector<engine_scaling_point> points;
    // The engine's speedup exceeds the replica count: each replica's step is shorter with
    // more replicas, as where ZeRO shards the optimizer step (and its state) over them. The
    // formula, r ≥ 0, cannot exceed N: r is then 0.
    bool above_linear = false;
    // One replica fits in memory; where it does not, its throughput is what it would run
    // at with enough memory, the baseline every speedup is measured against.
    bool one_replica_fits = true;
};

// One prediction per replica count: bounded so that a sweep ends in seconds.
inline constexpr int max_sweep_replicas = 1 << 16;

inline engine_scaling data_parallel_scaling(training_setup s, int max_replicas) {
    require(max_replicas >= 2, "replicas", max_replicas, "at least 2 data-parallel replicas are needed to derive r");
    require(max_replicas <= max_sweep_replicas, "replicas", max_replicas, "at most 65536 replicas can be swept");
    // The sweep starts from one replica: an MoE model's experts must fold onto it.
    require(1LL * s.layout.expert_tp() * s.layout.ep <= 1LL * s.layout.tp * s.layout.cp, "ep", s.layout.ep,
            "scaling is swept from one data-parallel replica, so ep x etp must not exceed tp x cp (predict or sweep "
            "the larger layouts instead)");
    std::vector<double> throughput;
    const int shard_group = s.layout.shard_group;
    engine_scaling result;
    for (int n = 1; n <= max_replicas; ++n) {
        s.layout.dp = n;
        // A hybrid shard group where it divides the replicas' ranks, else all of them.
        s.layout.shard_group = shards_evenly(shard_group, n, s.layout.cp) ? shard_group : 0;
        const step_report r = predict(s);
        if (n == 1) result.one_replica_fits = r.fits;
        throughput.push_back(r.samples_per_second);
    }
    const double top = throughput.back() / throughput.front();
    result.above_linear = top > max_replicas * (1 + 1e-9);
    // Overlapped sync can make the engine scale perfectly; r is then 0.
    result.r = implied_r(max_replicas, std::clamp(top, 1.0, double(max_replicas)));
    for (int n = 1; n <= max_replicas; ++n)
        result.points.push_back({n, n * s.layout.tp * s.layout.cp * s.layout.pp, throughput[n - 1] / throughput.front(),
                                 speedup(n, result.r)});
    return result;
}

}  // namespace trainperf
