// Catalog entries as JSON (`trainperf gpus --json`, `trainperf models --json`: the
// description-file formats) and links as reports show them (`trainperf comm --json`,
// predict's links: with the derived two-way total): every figure in base units, names
// from the enums' name tables.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "../spec/hardware.hpp"
#include "../spec/model.hpp"
#include "gpu_json.hpp"
#include "model_json.hpp"

namespace trainperf {

inline nlohmann::json to_json(const link_spec& l) {
    return {{"kind", std::string(to_string(l.kind))},
            {"per_direction_bytes_per_second", l.per_direction.value()},
            {"total_bytes_per_second", l.total().value()},
            {"latency_seconds", l.latency.value()},
            {"efficiency", l.efficiency}};
}

// A GPU and a model as their description files hold them (io/gpu_json.hpp,
// io/model_json.hpp): what `trainperf gpus --json` and `models --json` print reads back
// through --gpu-file and --model-file.
inline nlohmann::json to_json(const gpu_spec& g) { return io::gpu_to_json(g); }
inline nlohmann::json to_json(const transformer_config& m) { return io::model_to_json(m); }

// A whole catalog (`trainperf gpus --json`, `models --json`, `frameworks --json`):
// {"NAME": [each entry as describe writes it]}.
template <class Catalog, class Describe>
nlohmann::json catalog_to_json(const std::string& name, const Catalog& catalog, Describe describe) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& entry : catalog) list.push_back(describe(entry));
    return {{name, list}};
}

}  // namespace trainperf
