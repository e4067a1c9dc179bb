// A node's host as a JSON object, shared by system files (io/system_json.hpp: each
// node's host) and GPU files (io/gpu_json.hpp: the host of the system a GPU is sold in):
//
//   {"cores": 32, "simd_lanes": 16, "clock_hertz": 2e9,
//    "memory_bandwidth_bytes_per_second": 150e9, "pageable_copy_efficiency": 0.0833,
//    "eager_op_seconds": 5e-6}
//
// Every field is required but eager_op_seconds (added later; absent: the default).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "../core/limits.hpp"
#include "../spec/host.hpp"
#include "description_file.hpp"

namespace trainperf::io {

inline nlohmann::json host_to_json(const host_spec& h) {
    return {{"cores", h.cores},
            {"simd_lanes", h.simd_lanes},
            {"clock_hertz", h.clock.value()},
            {"memory_bandwidth_bytes_per_second", h.memory_bandwidth.value()},
            {"pageable_copy_efficiency", h.pageable_copy_efficiency},
            {"eager_op_seconds", h.eager_op_time.value()}};
}

// A host object; errors name "host.<field>" (ranges as validate(host_spec)).
inline host_spec host_from_json(const nlohmann::json& j, std::string_view context) {
    require_nesting(j, context, max_description_depth);
    namespace dd = description_detail;
    dd::only_keys(j, context,
                  {"cores", "simd_lanes", "clock_hertz", "memory_bandwidth_bytes_per_second",
                   "pageable_copy_efficiency", "eager_op_seconds"});
    host_spec h;
    h.cores = dd::integer(j, context, "cores", 1, limits::max_host_cores);
    h.simd_lanes = dd::integer(j, context, "simd_lanes", 1, limits::max_simd_lanes);
    h.clock = hertz::from_value(dd::number(j, context, "clock_hertz", limits::clock.lo, limits::clock.hi, "Hz"));
    h.memory_bandwidth = byte_rate::from_value(dd::number(j, context, "memory_bandwidth_bytes_per_second",
                                                          limits::memory_bandwidth.lo, limits::memory_bandwidth.hi,
                                                          "B/s"));
    h.pageable_copy_efficiency = dd::number(j, context, "pageable_copy_efficiency", limits::link_efficiency.lo,
                                            limits::link_efficiency.hi, "(a fraction of the pinned rate)");
    if (j.contains("eager_op_seconds"))
        h.eager_op_time = seconds_of(dd::number(j, context, "eager_op_seconds", 1e-7, 1e-2, "s"));
    validate(h);
    return h;
}

}  // namespace trainperf::io
