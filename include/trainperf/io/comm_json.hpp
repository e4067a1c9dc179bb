// One collective as JSON (`trainperf comm --json`, docs/cli.md): its time and nccl-tests'
// bandwidth figures, the model that priced it and, under NCCL's, the algorithm, protocol,
// channels and latency and bandwidth terms picked; the links it runs on (each with where
// its figures came from) and, across nodes, the node count and (α–β) a flat ring's time.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../core/enum_names.hpp"
#include "../cost/comm.hpp"
#include "../spec/links.hpp"
#include "catalog_json.hpp"

namespace trainperf {

// `intra_source` and `inter_source` say where the cluster's links came from (a catalog
// GPU, a measured bandwidth, a system file): the caller knows, the estimate does not.
inline nlohmann::json to_json(const collective_estimate& e, const cluster_spec& cluster, std::string_view intra_source,
                              std::string_view inter_source) {
    const auto link_json = [](const link_spec& l, std::string_view source) {
        nlohmann::json j = to_json(l);
        j["source"] = std::string(source);
        return j;
    };
    nlohmann::json j{{"collective", std::string(to_string(e.kind))},
                     {"algorithm", std::string(e.algorithm)},
                     {"bytes", e.size.value()},
                     {"gpus", e.gpus},
                     {"link", link_json(cluster.intra_node, intra_source)},
                     {"time_seconds", e.time.value()},
                     {"algorithm_bandwidth_bytes_per_second", e.algorithm_bandwidth().value()},
                     {"bus_bandwidth_bytes_per_second", e.bus_bandwidth().value()},
                     {"model", e.nccl ? "nccl" : "alpha-beta"}};
    if (e.nccl)
        j["nccl"] = {{"algorithm", std::string(to_string(e.nccl->algorithm))},
                     {"protocol", std::string(to_string(e.nccl->protocol))},
                     {"channels", e.nccl->channels},
                     {"latency_seconds", e.nccl->latency.value()},
                     {"bandwidth_bytes_per_second", e.nccl->bandwidth.value()}};
    if (e.across_nodes()) {
        j["gpus_per_node"] = cluster.gpus_per_node;
        j["nvlink_domain"] = gpus_per_domain(cluster);
        j["nodes"] = e.nodes;  // NVLink domains spanned
        j["inter_node_link"] = link_json(cluster.inter_node, inter_source);
        if (e.flat_ring) j["flat_ring_time_seconds"] = e.flat_ring->value();
    }
    return j;
}

}  // namespace trainperf
