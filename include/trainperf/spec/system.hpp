// A system as a user describes it: a GPU, how many, how many per node, which link
// joins the GPUs of a node (by name, optionally with a measured bandwidth) and how fast
// each GPU's adapter between nodes is, and the host each node has. resolve_link and build_cluster turn that into
// the link_spec and cluster_spec the cost models use, so every program that takes
// such a description (the CLI's predict, scale, plan, fit and comm) gets the same
// links for the same words.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "hardware.hpp"
#include "host.hpp"
#include "links.hpp"

namespace trainperf {

// Where resolve_link takes a link's figures from.
enum class link_source {
    gpu_link,          // the GPU's own GPU-to-GPU link (its kind was asked for)
    host_pcie,         // the GPU's PCIe host link, used peer-to-peer
    host_pcie_staged,  // the GPU's PCIe host link, staged through host memory (no P2P)
    kind_default,      // spec/links.hpp's default_link for the kind
};

template <>
struct enum_names<link_source> {
    static constexpr std::array<enum_name<link_source>, 4> table{{{link_source::gpu_link, "gpu-link"},
                                                                  {link_source::host_pcie, "host-pcie"},
                                                                  {link_source::host_pcie_staged, "host-pcie-staged"},
                                                                  {link_source::kind_default, "default"}}};
};

// The rule behind resolve_link: the GPU's own link when it is of the kind asked for;
// for pcie (and pcie-no-p2p) the GPU's own PCIe host link, so a Gen5 card is not
// given Gen4 figures; otherwise the kind's default. A gpu_spec without links
// (gpu_spec{}) always gets the defaults.
constexpr link_source link_source_of(const gpu_spec& gpu, link_kind kind) {
    if (kind == gpu.gpu_link.kind) return link_source::gpu_link;
    if (gpu.host_link.kind == link_kind::pcie) {
        if (kind == link_kind::pcie) return link_source::host_pcie;
        if (kind == link_kind::pcie_no_p2p) return link_source::host_pcie_staged;
    }
    return link_source::kind_default;
}

// The link of `kind` between two GPUs of this model in one node (link_source_of says
// where its figures come from). Kind none is no link at all: one GPU only.
constexpr link_spec resolve_link(const gpu_spec& gpu, link_kind kind) {
    if (kind == link_kind::none) return {};
    switch (link_source_of(gpu, kind)) {
        case link_source::gpu_link: return gpu.gpu_link;
        case link_source::host_pcie: return pcie_peer_link(gpu);
        case link_source::host_pcie_staged: return staged_through_host(gpu.host_link);
        case link_source::kind_default: break;
    }
    return default_link(kind);
}

// The link with another datasheet (line) rate per direction, e.g. a 400 Gb/s
// InfiniBand adapter instead of the 200 Gb/s default: latency and efficiency are
// kept. Unlike with_bandwidth, whose figure is a measured, achieved rate (efficiency
// becomes 1), this is a rate the link's efficiency still applies to.
constexpr link_spec with_line_rate(link_spec link, byte_rate per_direction) {
    require_in(per_direction.value(), limits::link_bandwidth, "line_rate_bytes_per_second");
    link.per_direction = per_direction;
    return link;
}


// A system as described by a user.
struct cluster_request {
    gpu_spec gpu{};
    int gpus = 1;                                    // all GPUs of the run
    int gpus_per_node = 0;                           // 0: min(gpus, the GPU's standard system's node)
    int nvlink_domain = -1;                          // GPUs of one NVLink domain; 0: the node;
                                                     // -1: the GPU's standard system's
    std::string_view link{};                         // a link_kind name; empty: the GPU's own link
    std::optional<byte_rate> link_bandwidth;         // measured, per direction (replaces the
                                                     // datasheet figure and its efficiency)
    std::optional<byte_rate> inter_node_line_rate;   // per adapter, per direction (default:
                                                     // the GPU's systems', efficiency kept)
    int adapters_per_node = 0;                       // 0: one per GPU
    rank_order order = rank_order::tp_dp_pp;         // how the job numbers its ranks
    int sockets_per_node = 1;                        // CPU sockets the cards are split over
    std::optional<host_spec> host;                   // each node's host (spec/host.hpp); empty:
                                                     // the GPU's standard system's
};

// Nodes of gpus_per_node GPUs joined by the named link (resolve_link), one adapter
// per GPU between nodes (InfiniBand, at the line rate given); what the request leaves
// out, as in the system the GPU is sold in (gpu_spec::system: an NVL72 rack's trays of
// 4 in one NVLink domain of 72 for GB200 and GB300, 8-GPU servers otherwise). Throws
// trainperf::invalid_argument for an unknown link name, a bad count or bandwidth, or
// several GPUs without a GPU-to-GPU link (the GPU has none and none was named, or
// the link named is none).
constexpr cluster_spec build_cluster(const cluster_request& r) {
    validate_system(r.gpu);
    require(r.gpus >= 1, "gpus", r.gpus, "must be at least 1");
    require(r.gpus_per_node >= 0, "gpus_per_node", r.gpus_per_node,
            "must be at least 1 (or 0 for min(gpus, 8))");
    cluster_spec c;
    c.gpu = r.gpu;
    c.gpus_per_node = r.gpus_per_node > 0 ? r.gpus_per_node : std::min(r.gpus, standard_gpus_per_node(r.gpu));
    c.intra_node = r.link.empty() ? r.gpu.gpu_link : resolve_link(r.gpu, parse_enum<link_kind>("link", r.link));
    require(c.intra_node.kind != link_kind::none || r.gpus == 1, "link", to_string(c.intra_node.kind),
            "no GPU-to-GPU link: name one to use more than one GPU");
    if (r.link_bandwidth) c.intra_node = with_bandwidth(c.intra_node, *r.link_bandwidth);
    c.inter_node = default_inter_node_link(r.gpu);
    if (r.inter_node_line_rate) c.inter_node = with_line_rate(c.inter_node, *r.inter_node_line_rate);
    require(r.adapters_per_node >= 0 && r.adapters_per_node <= 1024, "adapters_per_node", r.adapters_per_node,
            "must be between 0 (one per GPU) and 1024");
    c.adapters_per_node = r.adapters_per_node;
    c.order = r.order;
    require(r.sockets_per_node >= 1 && r.sockets_per_node <= 8, "sockets_per_node", r.sockets_per_node,
            "must be between 1 and 8");
    c.sockets_per_node = r.sockets_per_node;
    c.host = r.host.value_or(r.gpu.system.host.value_or(host_spec{}));
    validate(c.host);
    // The standard system's domain holds whole nodes of its own size; a node size asked
    // for that does not divide it keeps the node as the domain.
    const int domain = r.gpu.system.nvlink_domain;
    c.nvlink_domain = r.nvlink_domain >= 0 ? r.nvlink_domain
                      : domain > 0 && domain % c.gpus_per_node == 0 && c.intra_node.kind == link_kind::nvlink
                          ? domain
                          : 0;
    validate_nvlink_domain(c.nvlink_domain, c.gpus_per_node, c.intra_node.kind);
    return c;
}

// A system as a file describes it (io/system_json.hpp): nodes and their links, for any
// GPU. The GPU comes separately (a catalog name or a GPU file), as does the job's size.
struct system_description {
    std::string_view name = "custom";
    int gpus_per_node = 1;
    // The link between GPUs of a node: a kind resolved against the GPU (resolve_link, as
    // `--link` does), or, without a kind, the explicit intra_node link.
    std::optional<link_kind> intra_node_kind;
    link_spec intra_node{};
    // One network adapter's link between nodes; kind none: one node, no network.
    link_spec inter_node{};
    int adapters_per_node = 0;  // 0: one per GPU
    int sockets_per_node = 1;   // CPU sockets the node's cards are split over
    host_spec host{};           // each node's host: cores, SIMD width, clock, DRAM (spec/host.hpp)
    int nvlink_domain = 0;      // GPUs of one NVLink domain, whole nodes (NVL72: 72); 0: the node
};

constexpr void validate(const system_description& d) {
    require(d.gpus_per_node >= 1 && d.gpus_per_node <= 1024, "gpus_per_node", d.gpus_per_node,
            "must be between 1 and 1024");
    if (!d.intra_node_kind && d.intra_node.kind != link_kind::none) validate(d.intra_node);
    if (d.inter_node.kind != link_kind::none) validate(d.inter_node);
    require(d.adapters_per_node >= 0 && d.adapters_per_node <= 1024, "adapters_per_node", d.adapters_per_node,
            "must be between 0 (one per GPU) and 1024");
    require(d.sockets_per_node >= 1 && d.sockets_per_node <= 8, "sockets_per_node", d.sockets_per_node,
            "must be between 1 and 8");
    validate(d.host);
    // The kind is the one named, or the explicit link's (a kind resolved against a GPU keeps it).
    validate_nvlink_domain(d.nvlink_domain, d.gpus_per_node, d.intra_node_kind.value_or(d.intra_node.kind));
}

// The cluster of `gpus` GPUs of model `gpu` on the described system.
inline cluster_spec build_cluster(const gpu_spec& gpu, const system_description& d, int gpus,
                                  rank_order order = rank_order::tp_dp_pp) {
    validate(d);
    require(gpus >= 1, "gpus", gpus, "must be at least 1");
    cluster_spec c;
    c.gpu = gpu;
    c.gpus_per_node = d.gpus_per_node;
    c.intra_node = d.intra_node_kind ? resolve_link(gpu, *d.intra_node_kind) : d.intra_node;
    require(c.intra_node.kind != link_kind::none || gpus == 1, "intra_node_link", to_string(c.intra_node.kind),
            "no GPU-to-GPU link: name one to use more than one GPU");
    const int reach = std::max(d.gpus_per_node, d.nvlink_domain);  // what NVLink alone joins
    require(d.inter_node.kind != link_kind::none || gpus <= reach, "inter_node_link", "none",
            "one node or NVLink domain only (" + std::to_string(reach) + " GPUs), but " + std::to_string(gpus) +
                " GPUs span several");
    c.inter_node = d.inter_node;
    c.adapters_per_node = d.adapters_per_node;
    c.order = order;
    c.sockets_per_node = d.sockets_per_node;
    c.host = d.host;
    c.nvlink_domain = d.nvlink_domain;
    return c;
}

}  // namespace trainperf
