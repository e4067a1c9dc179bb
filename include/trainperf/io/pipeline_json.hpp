// A four-stage training step as JSON (`trainperf pipeline --json`, docs/cli.md): the
// sequential and prefetched step, the GPU's utilisation in each, the bottleneck and
// the stage times, all in milliseconds.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "../core/enum_names.hpp"
#include "../cost/input_pipeline.hpp"

namespace trainperf {

inline nlohmann::json to_json(const stage_times& t, const pipeline_report& r) {
    const auto ms = [](seconds s) { return s.value() * 1e3; };
    return {{"sequential_ms", ms(r.sequential)},
            {"prefetched_ms", ms(r.prefetched)},
            {"gpu_utilization", r.gpu_utilization_sequential},
            {"gpu_utilization_prefetched", r.gpu_utilization_prefetched},
            {"idle_share", r.idle_share},
            {"bottleneck", std::string(to_string(r.bottleneck))},
            {"stages_ms", {{"data", ms(t.data)}, {"pcie", ms(t.pcie)}, {"compute", ms(t.compute)}, {"sync", ms(t.sync)}}}};
}

}  // namespace trainperf
