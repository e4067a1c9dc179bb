// A calibration's outcome as JSON (`trainperf calibrate --json`, docs/calibration.md):
// the fitted kernel parameters and the error on the fitted points, on the held-out
// sweep points and on the layers' GEMMs, per layer too. Error summaries have the keys
// of io/json.hpp's to_json(error_summary).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../calibrate/calibration.hpp"
#include "json.hpp"

namespace trainperf {

inline nlohmann::json to_json(const layer_error& l) {
    return {{"name", l.name},
            {"measured_seconds", l.measured.value()},
            {"predicted_seconds", l.predicted.value()},
            {"rel_error", l.rel_error}};
}

inline nlohmann::json to_json(const holdout_report& r) {
    nlohmann::json layers = nlohmann::json::array();
    for (const layer_error& l : r.layers) layers.push_back(to_json(l));
    return {{"kernel_params", to_json(r.calibration.params)},
            {"memory_efficiency_fitted", r.calibration.memory_efficiency_fitted},
            {"fit", to_json(r.fit)},
            {"held_out", to_json(r.held_out)},
            {"layer_gemms", to_json(r.layer_gemms)},
            {"layer_totals", to_json(r.layer_totals)},
            {"layers", layers}};
}

// The document `trainperf calibrate --json` prints: the outcome, the GPU it was fitted
// for and the calibration file it was written to.
inline nlohmann::json to_json(const holdout_report& r, std::string_view gpu, std::string_view written) {
    nlohmann::json j = to_json(r);
    j["gpu"] = std::string(gpu);
    j["written"] = std::string(written);
    return j;
}

}  // namespace trainperf
