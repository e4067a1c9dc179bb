// Multi-GPU scaling as JSON (`trainperf scale --json`, docs/cli.md): the formula
// N / (1 + (N−1)·r) at N GPUs (and its curve 1…N), or the engine's data-parallel curve
// with the r derived from it.
#pragma once

#include <nlohmann/json.hpp>

#include "../cost/scaling.hpp"
#include "../search/data_parallel_scaling.hpp"

namespace trainperf {

inline nlohmann::json to_json(const scaling_point& p) {
    return {{"gpus", p.gpus}, {"speedup", p.speedup}, {"efficiency", p.efficiency}, {"wasted_gpus", p.wasted_gpus}};
}

// The formula at `gpus` for `r`, with every point 1…gpus under "curve" when `with_curve`.
inline nlohmann::json scaling_json(int gpus, double r, bool with_curve) {
    nlohmann::json j = to_json(scaling_at(gpus, r));  // validates gpus and r
    j["r"] = r;
    if (with_curve) {
        auto curve = nlohmann::json::array();
        for (const scaling_point& p : scaling_curve(gpus, r)) curve.push_back(to_json(p));
        j["curve"] = curve;
    }
    return j;
}

// The engine's curve (data_parallel_scaling): the last point's speedup over one replica,
// and every point beside the formula's with the derived r.
inline nlohmann::json to_json(const engine_scaling& e) {
    require(!e.points.empty(), "engine_scaling.points", 0, "must hold at least one point");
    const engine_scaling_point& top = e.points.back();
    nlohmann::json j{{"gpus", top.gpus},
                     {"replicas", top.replicas},
                     {"r", e.r},
                     {"speedup", top.engine_speedup},
                     {"efficiency", top.engine_speedup / top.replicas},
                     {"wasted_gpus", top.replicas - top.engine_speedup},
                     {"formula_speedup", top.formula_speedup},
                     {"above_linear", e.above_linear},
                     {"one_replica_fits", e.one_replica_fits}};
    auto curve = nlohmann::json::array();
    for (const engine_scaling_point& p : e.points)
        curve.push_back({{"replicas", p.replicas},
                         {"gpus", p.gpus},
                         {"engine_speedup", p.engine_speedup},
                         {"formula_speedup", p.formula_speedup}});
    j["curve"] = curve;
    return j;
}

}  // namespace trainperf
