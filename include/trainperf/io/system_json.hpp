// A system as a JSON description (schema "trainperf.system.v1"): nodes and their links,
// for whichever GPU the run names (`--system-file` with `--gpu` or `--gpu-file`).
//
//   {"schema": "trainperf.system.v1", "name": "workstation-4x4090", "gpus_per_node": 4,
//    "intra_node_link": "pcie-no-p2p",          // a link kind, resolved against the GPU
//                                               // as --link does, or a link object
//    "inter_node_link": null,                   // one node; or a link object per adapter
//    "adapters_per_node": 0, "sockets_per_node": 1,
//    "nvlink_domain": 0,                        // GPUs of one NVLink domain, whole nodes
//                                               // (an NVL72 rack: 72); 0: the node
//    "host": {"cores": 32, "simd_lanes": 16, "clock_hertz": 2e9,   // each node's host, for
//             "memory_bandwidth_bytes_per_second": 150e9,          // optimizer offload
//             "pageable_copy_efficiency": 0.0833,                  // (spec/host.hpp), and
//             "eager_op_seconds": 5e-6}}                           // eager PyTorch's bare op
//
// A link object is the GPU file's: {"kind", "per_direction_bytes_per_second",
// "latency_seconds", "efficiency"}. Every field is required, except "host": a file
// without it (written before hosts were described) gets the default host_spec; a
// "host" object given must have all its fields but eager_op_seconds (added later;
// absent: the default); and "nvlink_domain" (added later; absent: 0, the node).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../core/limits.hpp"
#include "../spec/host.hpp"
#include "../spec/system.hpp"
#include "description_file.hpp"
#include "gpu_json.hpp"
#include "host_json.hpp"

namespace trainperf::io {

inline constexpr std::string_view system_schema = "trainperf.system.v1";

inline nlohmann::json system_to_json(const system_description& d) {
    return {{"schema", std::string(system_schema)},
            {"name", std::string(d.name)},
            {"gpus_per_node", d.gpus_per_node},
            {"intra_node_link", d.intra_node_kind ? nlohmann::json(std::string(to_string(*d.intra_node_kind)))
                                                  : link_to_json(d.intra_node)},
            {"inter_node_link", d.inter_node.kind == link_kind::none ? nlohmann::json() : link_to_json(d.inter_node)},
            {"adapters_per_node", d.adapters_per_node},
            {"sockets_per_node", d.sockets_per_node},
            {"nvlink_domain", d.nvlink_domain},
            {"host", host_to_json(d.host)}};
}

inline system_description system_from_json(const nlohmann::json& j) {
    require_nesting(j, "", max_description_depth);
    namespace dd = description_detail;
    dd::only_keys(j, "",
                  {"schema", "name", "gpus_per_node", "intra_node_link", "inter_node_link", "adapters_per_node",
                   "sockets_per_node", "nvlink_domain", "host"});
    dd::schema(j, system_schema);
    system_description d;
    d.name = keep_text(dd::name_text(j, "", "name"));
    d.gpus_per_node = dd::integer(j, "", "gpus_per_node", 1, 1024);
    const auto& intra = dd::field(j, "", "intra_node_link");
    if (intra.is_string()) {
        d.intra_node_kind = dd::enum_value<link_kind>(j, "", "intra_node_link");
        require(*d.intra_node_kind != link_kind::infiniband, "intra_node_link", "\"infiniband\"",
                "is the link between nodes (inter_node_link)");
    } else {
        require(intra.is_object(), "intra_node_link", dd::shown(intra),
                "must be a link kind (" + enum_name_list<link_kind>(", ") + ") or a link object");
        d.intra_node = link_from_json(intra, "intra_node_link");
        require(d.intra_node.kind != link_kind::infiniband, "intra_node_link.kind", "infiniband",
                "is the link between nodes (inter_node_link)");
    }
    const auto& inter = dd::field(j, "", "inter_node_link");
    if (!inter.is_null()) {
        require(inter.is_object(), "inter_node_link", dd::shown(inter),
                "must be a link object, or null for a single node");
        d.inter_node = link_from_json(inter, "inter_node_link");
        require(d.inter_node.kind != link_kind::none, "inter_node_link.kind", "none",
                "write null for a single node without network");
    }
    d.adapters_per_node = dd::integer(j, "", "adapters_per_node", 0, 1024);
    d.sockets_per_node = dd::integer(j, "", "sockets_per_node", 1, 8);
    if (j.contains("host")) d.host = host_from_json(j.at("host"), "host");
    if (j.contains("nvlink_domain")) d.nvlink_domain = dd::integer(j, "", "nvlink_domain", 0, limits::max_gpus_per_node);
    validate(d);
    return d;
}

// `trainperf --system-file PATH`: the system the file describes; errors name the file.
inline system_description load_system_file(const std::filesystem::path& path) {
    const auto j = read_description_file(path);
    return with_file_context(path, [&] { return system_from_json(j); });
}

inline void save_system_file(const std::filesystem::path& path, const system_description& d) {
    write_description_file(path, system_to_json(d));
}

}  // namespace trainperf::io
