// A layout search as JSON (`trainperf plan --json`, docs/cli.md): the request, how
// much of the space was evaluated, and the fastest layouts that fit, each with its
// layout's fields and its predicted step.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "../planner.hpp"
#include "report_json.hpp"

namespace trainperf {

// The layout's keys (to_json(parallel_layout)) and the step's headline figures.
inline nlohmann::json to_json(const plan_candidate& c) {
    nlohmann::json j = to_json(c.layout);
    j["step_time_seconds"] = c.report.step_time.value();
    j["tokens_per_second"] = c.report.tokens_per_second;
    j["mfu"] = c.report.mfu;
    j["memory_per_gpu_bytes"] = c.report.memory.total().value();
    j["bottleneck"] = std::string(to_string(c.report.bottleneck));
    return j;
}

inline nlohmann::json to_json(const plan_request& request, const plan_result& result) {
    nlohmann::json best = nlohmann::json::array();
    for (const plan_candidate& c : result.best) best.push_back(to_json(c));
    const training_setup& s = request.base;
    return {{"gpu", std::string(s.cluster.gpu.name)},
            {"model", std::string(s.model.name)},
            {"gpus", request.gpus},
            {"global_batch", request.global_batch},
            {"candidates", result.candidates},
            {"evaluated", result.evaluated},
            {"pruned", result.pruned},
            {"fitting", result.fitting},
            {"wall_seconds", result.wall.value()},
            {"best", best}};
}

}  // namespace trainperf
