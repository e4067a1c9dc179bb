// Catalog entries as JSON (`trainperf gpus --json`, `trainperf models --json`, and the
// links `trainperf comm --json` reports): every figure in base units, names from the
// enums' name tables.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "../hardware.hpp"
#include "../model.hpp"

namespace trainperf {

inline nlohmann::json to_json(const link_spec& l) {
    return {{"kind", std::string(to_string(l.kind))},
            {"per_direction_bytes_per_second", l.per_direction.value()},
            {"total_bytes_per_second", l.total().value()},
            {"latency_seconds", l.latency.value()},
            {"efficiency", l.efficiency}};
}

// Peaks are dense; int8 in integer ops/s; null where the GPU has no such math mode.
inline nlohmann::json to_json(const gpu_spec& g) {
    nlohmann::json peaks = nlohmann::json::object();
    for (dtype t : all_dtypes)
        peaks[std::string(to_string(t))] = g.supports(t) ? nlohmann::json(g.peak_for(t).value()) : nlohmann::json();
    return {{"name", std::string(g.name)},
            {"full_name", std::string(g.full_name)},
            {"architecture", std::string(to_string(g.architecture))},
            {"sm_count", g.sm_count},
            {"boost_clock_hertz", g.boost_clock.value()},
            {"l2_cache_bytes", g.l2_cache.value()},
            {"memory_bytes", g.memory_capacity.value()},
            {"memory_reported_bytes", g.device_memory().value()},
            {"memory_bandwidth_bytes_per_second", g.memory_bandwidth.value()},
            {"peak_flops_per_second", peaks},
            {"gpu_link", to_json(g.gpu_link)},
            {"host_link", to_json(g.host_link)},
            {"tdp_watts", g.tdp_watts},
            {"memory_shared_with_host", g.memory_shared_with_host}};
}

inline nlohmann::json to_json(const transformer_config& m) {
    return {{"name", std::string(m.name)},
            {"layers", m.layers},
            {"hidden", m.hidden},
            {"heads", m.heads},
            {"kv_heads", m.effective_kv_heads()},
            {"head_dim", m.head_dim()},
            {"ffn_hidden", m.ffn_hidden},
            {"vocab", m.vocab},
            {"max_seq", m.max_seq},
            {"ffn", std::string(to_string(m.ffn))},
            {"positions", std::string(to_string(m.positions))},
            {"norm", std::string(to_string(m.norm))},
            {"tied_embeddings", m.tied_embeddings},
            {"linear_biases", m.linear_biases},
            {"qkv_biases", m.linear_biases && m.qkv_biases},
            {"causal", m.causal},
            {"token_types", m.token_types},
            {"pooler", m.pooler},
            {"parameters", parameter_count(m)}};
}

}  // namespace trainperf
