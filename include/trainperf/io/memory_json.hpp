// A memory estimate as JSON (`trainperf memory --json`, docs/cli.md): memory per GPU
// of a model, or the static state of a bare parameter count, under a recipe, an
// optimizer and a layout, against the GPU's memory.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../cost/fit_margin.hpp"
#include "../cost/memory.hpp"
#include "report_json.hpp"

namespace trainperf {

struct memory_estimate {
    gpu_spec gpu{};
    double parameters = 0;
    precision_recipe precision{};             // as stored (fp32 gradients where kept)
    optimizer_kind optimizer = optimizer_kind::adamw;
    parallel_layout layout{};
    memory_report memory{};                   // breakdown, usable capacity, fits
    fit_margin margin{};                      // margin_of(memory, the framework's overheads)
    std::string_view model{};                 // empty: a bare parameter count (static state only)
    int seq = 0;                              // with a model
    int max_micro_batch = 0;                  // with a model

    constexpr bool static_only() const { return model.empty(); }
};

inline nlohmann::json to_json(const memory_estimate& e) {
    const memory_breakdown& mb = e.memory.breakdown;
    nlohmann::json j{{"gpu", std::string(e.gpu.name)},
                     {"parameters", e.parameters},
                     {"precision", std::string(e.precision.name)},
                     {"gradients_dtype", std::string(to_string(e.precision.gradients))},
                     {"optimizer", std::string(to_string(e.optimizer))},
                     {"layout", to_json(e.layout)},
                     {"static_only", e.static_only()},
                     {"static_bytes", mb.static_state().value()},
                     {"activation_bytes", mb.activations.value()},
                     {"peak_allocated_bytes", mb.peak_allocated().value()},
                     {"peak_phase", std::string(to_string(mb.peak_phase()))},
                     {"total_bytes", mb.total().value()},
                     {"capacity_bytes", e.gpu.memory_capacity.value()},
                     {"usable_bytes", e.memory.capacity.value()},
                     {"offloaded_to_host_bytes", mb.offloaded_to_host.value()},
                     {"fits", e.memory.fits},
                     {"margin_bytes", e.margin.margin.value()},
                     {"verdict_decided_by", std::string(to_string(e.margin.decided_by))},
                     {"breakdown", to_json(mb)}};
    if (!e.static_only()) {
        j["model"] = std::string(e.model);
        j["batch"] = e.layout.micro_batch;
        j["seq"] = e.seq;
        j["recompute"] = std::string(to_string(e.layout.recompute));
        j["recompute_modules"] = io::name_list(recomputed_modules(e.layout));
        j["pipeline_layout"] = e.layout.pipeline_layout.empty() ? nlohmann::json(nullptr)
                                                                : nlohmann::json(std::string(e.layout.pipeline_layout));
        j["pipeline_stage"] = mb.stage;
        j["max_micro_batch"] = e.max_micro_batch;
    }
    return j;
}

}  // namespace trainperf
