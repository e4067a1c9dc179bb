// Links and nodes as specs: a link must be usable, the defaults for a link kind named
// without a GPU, a measured bandwidth in place of the datasheet's, and the usual
// cluster of nodes. Spec-level (no cost is computed here); cost/comm.hpp prices
// collectives over these links.
#pragma once

#include <string>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "hardware.hpp"

namespace trainperf {

// A link must be usable before anything is sent over it.
constexpr void validate(const link_spec& l) {
    require(l.kind != link_kind::none, "link", to_string(link_kind::none),
            "no GPU-to-GPU link: this GPU cannot take part in a collective");
    validate_link_numbers(l, "link.per_direction_bytes_per_second");
}

// An NVLink domain of `domain` GPUs over nodes of `gpus_per_node` joined by `intra`: 0
// (the node), or whole nodes of an NVLink system.
constexpr void validate_nvlink_domain(int domain, int gpus_per_node, link_kind intra) {
    require(domain >= 0 && domain <= limits::max_gpus_per_node, "nvlink_domain", domain,
            "must be between 0 (the node) and 4096");
    if (domain == 0 || domain == gpus_per_node) return;
    if (domain % gpus_per_node != 0 || domain < gpus_per_node)  // the message is built only on failure
        detail::fail("nvlink_domain", domain,
                     "must be a multiple of gpus_per_node (" + std::to_string(gpus_per_node) + "): whole nodes");
    if (intra != link_kind::nvlink)  // the message is built only on failure
        detail::fail("nvlink_domain", domain, "spans nodes only over NVLink, not " + std::string(to_string(intra)));
}

// A cluster a user filled: its GPU, node size, links and counts in range.
constexpr void validate(const cluster_spec& c) {
    validate(c.gpu);
    require(c.gpus_per_node >= 1 && c.gpus_per_node <= limits::max_gpus_per_node, "gpus_per_node",
            c.gpus_per_node, "must be between 1 and 4096");
    validate_link_numbers(c.intra_node, "intra_node.per_direction_bytes_per_second");
    validate_link_numbers(c.inter_node, "inter_node.per_direction_bytes_per_second");
    require(c.adapters_per_node >= 0 && c.adapters_per_node <= 1024, "adapters_per_node", c.adapters_per_node,
            "must be between 0 (one per GPU) and 1024");
    require(c.sockets_per_node >= 0 && c.sockets_per_node <= 8, "sockets_per_node", c.sockets_per_node,
            "must be between 0 (one) and 8");
    validate(c.host);
    validate_nvlink_domain(c.nvlink_domain, c.gpus_per_node,
                           (c.intra_node.kind == link_kind::none ? c.gpu.gpu_link : c.intra_node).kind);
}

// ---- Link defaults -------------------------------------------------------------------
// Used when the user names a link kind without a GPU. Bandwidths are datasheet/spec
// figures per direction. Latencies and efficiencies are ASSUMPTIONS, the same ones the
// GPU catalog uses (spec/gpu_catalog.hpp): a few µs per NCCL step, and ~0.8 of the
// per-direction rate, which is what nccl-tests all-reduce bus bandwidth reaches on
// NVSwitch systems. Replace them with measured figures through with_bandwidth or a
// custom link_spec.

// A transfer between GPUs without peer-to-peer access is staged through host memory:
// device→host then host→device, each a full PCIe transfer. ASSUMPTION: the two
// copies are not overlapped, so each byte costs two PCIe transfers: per-direction
// bandwidth halves and the per-step latency doubles (a measured figure should replace
// this through with_bandwidth).
constexpr link_spec staged_through_host(const link_spec& pcie) {
    return {.kind = link_kind::pcie_no_p2p,
            .per_direction = pcie.per_direction / 2.0,
            .latency = 2.0 * pcie.latency,
            .efficiency = pcie.efficiency};
}

// One InfiniBand adapter of `gbit_per_s` per GPU. ASSUMPTION: 10 µs per step (the
// transfer also crosses PCIe on both ends) and 0.9 of line rate (RDMA payload
// efficiency is higher than NVLink collectives reach).
constexpr link_spec infiniband_adapter(double gbit_per_s) {
    return {.kind = link_kind::infiniband, .per_direction = gb_per_second(gbit_per_s / 8.0),
            .latency = microseconds_of(10.0), .efficiency = 0.90};
}

constexpr link_spec default_link(link_kind kind) {
    switch (kind) {
        case link_kind::nvlink:
            // NVLink 4 through NVSwitch (H100 SXM5): 900 GB/s total, 450 GB/s each way
            // (NVIDIA H100 Tensor Core GPU datasheet).
            return links::nvlink(900.0);
        case link_kind::nvlink_bridge:
            // GeForce RTX 3090 / 3090 Ti NVLink bridge: 4 links, 112.5 GB/s total,
            // 56.25 GB/s each way (NVIDIA Ampere GA102 GPU architecture whitepaper).
            return links::nvlink_bridge(112.5);
        case link_kind::pcie:
            // PCIe 4.0 x16 peer-to-peer through the host bridge or a PCIe switch.
            return links::pcie(links::pcie4_x16_gb_per_s);
        case link_kind::pcie_no_p2p:
            return staged_through_host(default_link(link_kind::pcie));
        case link_kind::infiniband:
            // InfiniBand HDR, one 200 Gb/s adapter per GPU: 25 GB/s each way
            // (NVIDIA ConnectX-6 VPI datasheet).
            return infiniband_adapter(200);
        case link_kind::infinity_fabric:
            // AMD Instinct MI300X: 7 Infinity Fabric links of 128 GB/s (both ways) to the
            // other 7 GPUs of a node, 896 GB/s aggregate (AMD Instinct MI300X data sheet).
            // ASSUMPTION: collectives spread over all 7 links (RCCL's rings over the full
            // mesh), so a GPU sends 448 GB/s each way; latency and efficiency as NVLink's.
            return {link_kind::infinity_fabric, gb_per_second(896.0 / 2.0), microseconds_of(links::nvlink_latency_us),
                    links::link_efficiency};
        case link_kind::none: break;
    }
    require(false, "link", to_string(kind), "has no default: name a GPU-to-GPU link");
    return {};
}

// The user's override with a measured per-direction figure (e.g. the unidirectional
// P2P bandwidth from CUDA's p2pBandwidthLatencyTest). A measured figure is already
// what the link achieves, so efficiency becomes 1; kind and latency are kept.
constexpr link_spec with_bandwidth(link_spec link, byte_rate per_direction) {
    require_in(per_direction.value(), limits::link_bandwidth, "link_bandwidth_bytes_per_second");
    link.per_direction = per_direction;
    link.efficiency = 1.0;
    return link;
}

// ---- Several nodes -------------------------------------------------------------------

// The link between GPUs of one node: cluster.intra_node, or the GPU's own link when
// the cluster leaves it unset.
constexpr link_spec intra_node_link(const cluster_spec& c) {
    return c.intra_node.kind == link_kind::none ? c.gpu.gpu_link : c.intra_node;
}

// Between nodes, as the GPU's generation of DGX/HGX systems is sold: one adapter per
// GPU, rail-aligned. A100: 8× ConnectX-6 200 Gb/s HDR per node (NVIDIA DGX A100
// datasheet); H100/H200: 8× ConnectX-7 400 Gb/s NDR (NVIDIA DGX H100 datasheet; S.
// Bekman, "Machine Learning Engineering Open Book", compute/accelerator/README.md);
// B200: 8× 400 Gb/s (NVIDIA DGX B200 datasheet, ConnectX-7; AWS P6-B200, 8× 400 Gb/s
// EFA, the same book); MI300X: 8× 400 Gb/s InfiniBand per 8-GPU VM (Microsoft Azure ND
// MI300X v5 announcement, 2024). ASSUMPTION: older and GeForce generations as the A100's.
//
// A GPU whose standard system names its adapter (gpu_spec::system, e.g. ConnectX-8 at
// 800 Gb/s with B300 and GB300) gets that one.
constexpr link_spec default_inter_node_link(const gpu_spec& gpu) {
    if (gpu.system.adapter_gbit_per_s > 0) return infiniband_adapter(gpu.system.adapter_gbit_per_s);
    switch (gpu.architecture) {
        case gpu_architecture::hopper:
        case gpu_architecture::blackwell:
        case gpu_architecture::cdna3: return infiniband_adapter(400);
        case gpu_architecture::volta:
        case gpu_architecture::turing:
        case gpu_architecture::ampere:
        case gpu_architecture::ada: break;
    }
    return infiniband_adapter(200);
}

// The usual system: nodes of gpus_per_node GPUs (0: the standard system's) on the
// GPU's own link, one adapter per GPU between nodes (default_inter_node_link), the
// standard system's NVLink domain and host.
constexpr cluster_spec standard_cluster(const gpu_spec& gpu, int gpus_per_node = 0) {
    return {.gpu = gpu, .gpus_per_node = gpus_per_node > 0 ? gpus_per_node : standard_gpus_per_node(gpu),
            .intra_node = gpu.gpu_link, .inter_node = default_inter_node_link(gpu),
            .host = gpu.system.host.value_or(host_spec{}), .nvlink_domain = gpu.system.nvlink_domain};
}

// What one GPU gets of the network when every GPU of its node sends at once: its own
// adapter, or its share of fewer adapters (never more than one adapter's rate).
constexpr link_spec inter_node_link(const cluster_spec& c) {
    require(c.adapters_per_node >= 0, "adapters_per_node", c.adapters_per_node, "must not be negative (0: one per GPU)");
    link_spec l = c.inter_node;
    if (c.adapters_per_node > 0 && c.adapters_per_node < c.gpus_per_node)
        l.per_direction = l.per_direction * (double(c.adapters_per_node) / c.gpus_per_node);
    return l;
}

// Nodes spanned by total_gpus GPUs; whole nodes only once more than one is used.
constexpr int node_count(const cluster_spec& c, int total_gpus) {
    require(c.gpus_per_node >= 1, "gpus_per_node", c.gpus_per_node, "must be at least 1");
    require(total_gpus >= 1, "gpus", total_gpus, "must be at least 1");
    if (total_gpus <= c.gpus_per_node) return 1;
    require(total_gpus % c.gpus_per_node == 0, "gpus", total_gpus,
            "must be a multiple of gpus_per_node when it spans several nodes");
    return total_gpus / c.gpus_per_node;
}

// NVLink domains spanned by total_gpus consecutive ranks (whole nodes once they span
// more than one node, node_count). A job need not fill its last domain (e.g. 128 GPUs
// on 72-GPU NVL72 racks): that one counts too.
constexpr int domain_count(const cluster_spec& c, int total_gpus) {
    node_count(c, total_gpus);
    const int domain = gpus_per_domain(c);
    return total_gpus <= domain ? 1 : (total_gpus + domain - 1) / domain;
}

// The slower of two links for a ring that crosses both: its rate is the lower, and
// every step waits for the longer latency.
constexpr link_spec slowest_of(const link_spec& a, const link_spec& b) {
    link_spec slow = b.achievable() < a.achievable() ? b : a;
    if (a.latency > slow.latency) slow.latency = a.latency;
    if (b.latency > slow.latency) slow.latency = b.latency;
    return slow;
}

// Two cards of one host over PCIe: the GPU's own host link, or staged through host
// memory where the product has no PCIe peer-to-peer (GeForce).
constexpr link_spec pcie_peer_link(const gpu_spec& g) {
    const link_spec pcie{.kind = link_kind::pcie, .per_direction = g.host_link.per_direction,
                         .latency = g.host_link.latency, .efficiency = g.host_link.efficiency};
    return g.pcie_peer_to_peer ? pcie : staged_through_host(pcie);
}

// The link a ring over `members` GPUs of one node waits on. An NVLink bridge joins two
// cards only: with more members the ring also crosses PCIe between the pairs, and its
// every step waits for the slowest hop.
//
// Cards split over CPU sockets: a ring whose members span sockets also crosses the
// CPUs' link. ASSUMPTION: PCIe peer-to-peer is not used across sockets (NCCL's default
// P2P level stops at the CPU's host bridge), so that hop is staged through host memory.
// NVLink/NVSwitch nodes are not affected: their GPUs reach each other without the CPUs.
constexpr link_spec node_ring_link(const cluster_spec& c, int members) {
    const link_spec intra = intra_node_link(c);
    const bool over_pcie = intra.kind == link_kind::pcie || intra.kind == link_kind::pcie_no_p2p ||
                           intra.kind == link_kind::nvlink_bridge;
    const int sockets = c.sockets_per_node > 1 ? c.sockets_per_node : 1;
    const bool spans_sockets = over_pcie && sockets > 1 && members > c.gpus_per_node / sockets;
    link_spec ring = intra;
    if (intra.kind == link_kind::nvlink_bridge && members > 2) ring = slowest_of(ring, pcie_peer_link(c.gpu));
    if (spans_sockets) {
        const link_spec& host = c.gpu.host_link;
        ring = slowest_of(ring, staged_through_host({.kind = link_kind::pcie, .per_direction = host.per_direction,
                                                     .latency = host.latency, .efficiency = host.efficiency}));
    }
    return ring;
}

}  // namespace trainperf
