// Hardware descriptions: one GPU, its links, and how GPUs are grouped into nodes with
// a host each.
// Plain aggregates of typed quantities, usable in constant expressions.
#pragma once

#include <array>
#include <concepts>
#include <optional>
#include <string_view>

#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "host.hpp"

namespace trainperf {

// infinity_fabric: AMD Instinct GPUs joined peer to peer (xGMI) in a fully connected node.
enum class link_kind { none, nvlink, nvlink_bridge, pcie, pcie_no_p2p, infiniband, infinity_fabric };

template <>
struct enum_names<link_kind> {
    static constexpr std::array<enum_name<link_kind>, 7> table{{{link_kind::none, "none"},
                                                                {link_kind::nvlink, "nvlink"},
                                                                {link_kind::nvlink_bridge, "nvlink-bridge"},
                                                                {link_kind::pcie, "pcie"},
                                                                {link_kind::pcie_no_p2p, "pcie-no-p2p"},
                                                                {link_kind::infiniband, "infiniband"},
                                                                {link_kind::infinity_fabric, "infinity-fabric"}}};
};

// A point-to-point or switched link as seen by one GPU. Datasheets often quote the
// total of both directions; collectives are limited by one direction, so the
// per-direction figure is the stored field and the total is derived.
struct link_spec {
    link_kind kind = link_kind::none;
    byte_rate per_direction = byte_rate::from_value(0.0);  // bandwidth each way, per GPU
    seconds latency = seconds::from_value(0.0);            // α of the α–β model
    double efficiency = 1.0;                               // achievable fraction of per_direction

    constexpr byte_rate total() const { return 2.0 * per_direction; }
    constexpr byte_rate achievable() const { return efficiency * per_direction; }
};

// Link constructors shared by the GPU catalog and cost/comm.hpp's defaults.
namespace links {
// PCI Express x16 per direction after line encoding (PCI-SIG base specifications).
inline constexpr double pcie3_x16_gb_per_s = 15.75;  // 8 GT/s × 16 × 128/130 / 8
inline constexpr double pcie4_x16_gb_per_s = 31.5;   // 16 GT/s
inline constexpr double pcie5_x16_gb_per_s = 63.0;   // 32 GT/s

// ASSUMPTION: α of the α–β model for one NCCL step over NVLink / an NVLink bridge
// (order of the few-µs small-message latency seen in nccl-tests).
inline constexpr double nvlink_latency_us = 3.0;
// ASSUMPTION: PCIe round trip through the host bridge plus NCCL/driver overhead.
inline constexpr double pcie_latency_us = 10.0;
// ASSUMPTION: achieved fraction of the per-direction rate. nccl-tests all-reduce
// bus bandwidth on DGX A100 (~230–240 of 300 GB/s) and DGX H100 (~360–370 of
// 450 GB/s) is about 0.8; PCIe payload efficiency (TLP headers) is similar.
inline constexpr double link_efficiency = 0.8;

// Datasheets quote NVLink as the two-way total; the link stores one direction.
constexpr link_spec nvlink(double total_gb_per_s) {
    return {link_kind::nvlink, gb_per_second(total_gb_per_s / 2.0), microseconds_of(nvlink_latency_us),
            link_efficiency};
}
constexpr link_spec nvlink_bridge(double total_gb_per_s) {
    return {link_kind::nvlink_bridge, gb_per_second(total_gb_per_s / 2.0), microseconds_of(nvlink_latency_us),
            link_efficiency};
}
constexpr link_spec pcie(double per_direction_gb_per_s) {
    return {link_kind::pcie, gb_per_second(per_direction_gb_per_s), microseconds_of(pcie_latency_us),
            link_efficiency};
}
}  // namespace links

// Dense peak math rates (sparse is 2x and never used here). An empty optional
// means the chip has no such unit or mode.
struct peak_rates {
    std::optional<flop_rate> fp32;   // CUDA cores, no tensor cores
    std::optional<flop_rate> tf32;   // tensor cores, fp32 accumulate
    std::optional<flop_rate> fp16;   // tensor cores, fp32 accumulate
    std::optional<flop_rate> bf16;   // tensor cores, fp32 accumulate
    std::optional<flop_rate> fp8;    // tensor cores, fp32 accumulate
    std::optional<flop_rate> int8;   // tensor cores, int32 accumulate (TOP/s)
    std::optional<flop_rate> fp4;    // tensor cores, NVFP4 (E2M1, block-scaled), fp32 accumulate

    constexpr std::optional<flop_rate> of(dtype t) const {
        switch (t) {
            case dtype::fp32: return fp32;
            case dtype::tf32: return tf32;
            case dtype::fp16: return fp16;
            case dtype::bf16: return bf16;
            case dtype::fp8: return fp8;
            case dtype::int8: return int8;
            case dtype::fp4: return fp4;
        }
        return std::nullopt;
    }
};

// NVIDIA generations (compute capability 7.0, 7.5, 8.0/8.6/8.7, 8.9, 9.0, 10.0), and AMD
// CDNA 3 (Instinct MI300X: a catalog entry for the analytic model; the cuBLASLt harness
// and calibration stay NVIDIA-only).
enum class gpu_architecture { volta, turing, ampere, ada, hopper, blackwell, cdna3 };

template <>
struct enum_names<gpu_architecture> {
    static constexpr std::array<enum_name<gpu_architecture>, 7> table{{{gpu_architecture::volta, "volta"},
                                                                       {gpu_architecture::turing, "turing"},
                                                                       {gpu_architecture::ampere, "ampere"},
                                                                       {gpu_architecture::ada, "ada"},
                                                                       {gpu_architecture::hopper, "hopper"},
                                                                       {gpu_architecture::blackwell, "blackwell"},
                                                                       {gpu_architecture::cdna3, "cdna3"}}};
};

// GPUs per node when neither a description nor the GPU's standard system says: a usual
// 8-GPU server (HGX/DGX).
inline constexpr int default_gpus_per_node = 8;

// The system a GPU is sold in, which a description of nodes falls back on for what it
// does not say: GPUs per node (an HGX/DGX server: 8; a GB200/GB300 NVL72 compute tray:
// 4), GPUs of one NVLink domain (0: the node; an NVL72 rack: 72, across its trays), the
// line rate of each GPU's network adapter (0: the generation's, spec/links.hpp
// default_inter_node_link) and the node's host (empty: host_spec's ASSUMPTIONS).
struct standard_system {
    int gpus_per_node = 0;            // 0: default_gpus_per_node (8)
    int nvlink_domain = 0;            // 0: the node
    double adapter_gbit_per_s = 0.0;  // per GPU, per direction; 0: the generation's
    std::optional<host_spec> host;    // per node
};

struct gpu_spec {
    std::string_view name;          // CLI name, e.g. "h100-sxm"
    std::string_view full_name;     // e.g. "NVIDIA H100 SXM5 80GB"
    gpu_architecture architecture = gpu_architecture::ampere;
    // CUDA compute capability as major·10 + minor (86 for sm_86); 0 where there is none
    // (not an NVIDIA part): the kernel model's defaults are keyed by it (spec/kernel_params.hpp).
    int compute_capability = 0;
    int sm_count = 0;
    hertz boost_clock = hertz::from_value(0.0);
    // The clock the board holds under sustained load, where it is not the rated boost
    // clock (GeForce boards boost above it); 0: the boost clock. Peak rates are quoted
    // at the boost clock and scale with this one (peak_under_load).
    hertz sustained_clock = hertz::from_value(0.0);
    bytes l2_cache = bytes::from_value(0.0);
    bytes memory_capacity = bytes::from_value(0.0);  // the datasheet's figure ("80 GB": decimal)
    // What the device holds as the driver reports it (nvidia-smi memory.total); 0 when
    // unknown, and the datasheet's figure stands in.
    bytes memory_reported = bytes::from_value(0.0);
    byte_rate memory_bandwidth = byte_rate::from_value(0.0);
    peak_rates peak{};
    link_spec gpu_link{};           // GPU↔GPU inside a node (NVLink, bridge, PCIe)
    link_spec host_link{};          // GPU↔host (PCIe)
    double tdp_watts = 0.0;         // board power (W)
    bool memory_shared_with_host = false;  // Jetson: CPU and OS use the same DRAM
    // Whether two cards of this product reach each other over PCIe directly; without
    // it their traffic is staged through host memory.
    bool pcie_peer_to_peer = true;
    standard_system system{};       // the system it is sold in: a description's defaults

    // The peak for a math dtype, or an error naming the GPU and the dtype.
    constexpr flop_rate peak_for(dtype t) const {
        auto p = peak.of(t);
        require(p.has_value(), "dtype", to_string(t),
                "not supported by this GPU's math units");
        return *p;
    }
    constexpr bool supports(dtype t) const { return peak.of(t).has_value(); }
    // The clock under load, and a datasheet peak scaled to it.
    constexpr hertz clock_under_load() const {
        return sustained_clock.value() > 0 ? sustained_clock : boost_clock;
    }
    constexpr double clock_ratio() const {
        return sustained_clock.value() > 0 && boost_clock.value() > 0 ? sustained_clock.value() / boost_clock.value() : 1.0;
    }
    // The device's memory: as reported where known, else the datasheet's figure.
    constexpr bytes device_memory() const {
        return memory_reported.value() > 0 ? memory_reported : memory_capacity;
    }
};

// The numbers of a link that exists (core/limits.hpp); a link of kind none carries none.
constexpr void validate_link_numbers(const link_spec& l, std::string_view field) {
    if (l.kind == link_kind::none) return;
    require_in(l.per_direction.value(), limits::link_bandwidth, field);
    require_in(l.latency.value(), limits::link_latency, "link.latency_s");
    require_in(l.efficiency, limits::link_efficiency, "link.efficiency");
}

// A GPU description a user filled: every figure in its physical range (core/limits.hpp),
// at least one math unit. (A host link of kind none is a shared-memory device.)
constexpr void validate(const gpu_spec& g) {
    require(!g.name.empty(), "gpu.name", "\"\"", "must not be empty");
    require(g.sm_count >= 1 && g.sm_count <= limits::max_sm_count, "gpu.sm_count", g.sm_count,
            "must be between 1 and 16384");
    require_in(g.boost_clock.value(), limits::clock, "gpu.boost_clock_hz");
    if (g.sustained_clock.value() != 0) require_in(g.sustained_clock.value(), limits::clock, "gpu.sustained_clock_hz");
    require(g.compute_capability == 0 || (g.compute_capability >= 30 && g.compute_capability <= 199),
            "gpu.compute_capability", g.compute_capability, "must be 0 (none) or between 30 and 199 (major*10 + minor)");
    require_in(g.l2_cache.value(), limits::cache_size, "gpu.l2_cache_bytes");
    require_in(g.memory_capacity.value(), limits::memory_capacity, "gpu.memory_capacity_bytes");
    if (g.memory_reported.value() != 0)
        require_in(g.memory_reported.value(), limits::memory_capacity, "gpu.memory_reported_bytes");
    require_in(g.memory_bandwidth.value(), limits::memory_bandwidth, "gpu.memory_bandwidth_bytes_per_second");
    bool any = false;
    // Each rate directly (not through peak_rates::of's switch: this runs on every prediction).
    const peak_rates& r = g.peak;
    for (const std::optional<flop_rate>* p : {&r.fp32, &r.tf32, &r.fp16, &r.bf16, &r.fp8, &r.int8, &r.fp4})
        if (*p) {
            any = true;
            require_in((*p)->value(), limits::peak_rate, "gpu.peak_flops_per_second");
        }
    require(any, "gpu.peak", g.name, "names no math unit (fp32, tf32, fp16, bf16, fp8, int8 or fp4)");
    validate_link_numbers(g.gpu_link, "gpu.gpu_link.per_direction_bytes_per_second");
    validate_link_numbers(g.host_link, "gpu.host_link.per_direction_bytes_per_second");
    require_in(g.tdp_watts, limits::board_power, "gpu.tdp_watts");
}

// The system a GPU description says it is sold in: counts in range, a domain of whole
// nodes over NVLink, a host in range. Checked where a description is read and where a
// cluster is built from it (spec/system.hpp), not on every prediction.
constexpr void validate_system(const gpu_spec& g) {
    const standard_system& sys = g.system;
    require(sys.gpus_per_node >= 0 && sys.gpus_per_node <= limits::max_gpus_per_node, "gpu.system.gpus_per_node",
            sys.gpus_per_node, "must be between 0 (8) and 4096");
    const int node = sys.gpus_per_node > 0 ? sys.gpus_per_node : default_gpus_per_node;
    require(sys.nvlink_domain == 0 || (sys.nvlink_domain <= limits::max_gpus_per_node && sys.nvlink_domain % node == 0),
            "gpu.system.nvlink_domain", sys.nvlink_domain,
            "must be 0 (the node) or a multiple of the GPUs per node, at most 4096");
    require(sys.nvlink_domain <= node || g.gpu_link.kind == link_kind::nvlink, "gpu.system.nvlink_domain",
            sys.nvlink_domain, "spans nodes: needs an NVLink GPU link (gpu_link kind nvlink)");
    require(sys.adapter_gbit_per_s >= 0 && sys.adapter_gbit_per_s <= 1e5, "gpu.system.adapter_gbit_per_s",
            sys.adapter_gbit_per_s, "must be between 0 (the generation's adapter) and 100000 Gb/s");
    if (sys.host) validate(*sys.host);
}

// The GPUs per node of the system `gpu` is sold in (default_gpus_per_node where it does
// not say).
constexpr int standard_gpus_per_node(const gpu_spec& gpu) {
    return gpu.system.gpus_per_node > 0 ? gpu.system.gpus_per_node : default_gpus_per_node;
}

// A compile-time hardware description: a tag type carrying a constexpr gpu_spec.
template <class T>
concept hardware = requires {
    { T::spec } -> std::convertible_to<gpu_spec>;
};

// Several GPUs: nodes of gpus_per_node joined by an intra-node link, nodes joined
// by an inter-node link (per GPU, per direction).
// How a job numbers its ranks, fastest-varying first; consecutive ranks fill a node.
// tp-dp-pp is Megatron-Core's and DeepSpeed's order; tp-pp-dp keeps a model replica's
// pipeline stages together and spreads data parallelism across nodes.
enum class rank_order { tp_dp_pp, tp_pp_dp };

template <>
struct enum_names<rank_order> {
    static constexpr std::array<enum_name<rank_order>, 2> table{
        {{rank_order::tp_dp_pp, "tp-dp-pp"}, {rank_order::tp_pp_dp, "tp-pp-dp"}}};
};

struct cluster_spec {
    gpu_spec gpu{};
    int gpus_per_node = 1;
    link_spec intra_node{};   // defaults to gpu.gpu_link
    link_spec inter_node{};   // one network adapter, e.g. InfiniBand NDR
    // Network adapters per node; 0: one per GPU (rail-aligned DGX/HGX). With fewer,
    // the GPUs of a node share them: all GPUs of a node run their collectives at once.
    int adapters_per_node = 0;
    rank_order order = rank_order::tp_dp_pp;  // how the job numbers its ranks (workload/placement.hpp)
    // CPU sockets the node's cards are split over (PCIe workstations and servers); 0 or
    // 1: one. Cards under different sockets reach each other across the CPUs' link.
    int sockets_per_node = 1;
    // The node's host: CPU cores, SIMD width, clock and DRAM bandwidth its GPUs share
    // when the optimizer is offloaded (spec/host.hpp).
    host_spec host{};
    // GPUs one NVLink fabric joins; 0: the node. An NVL72 rack (GB200, GB300) is one
    // domain of 72 GPUs over 18 trays (nodes) of 4: collectives, sends and the groups of
    // every parallelism inside a domain run on intra_node (NVLink) even across trays, and
    // only groups that span domains cross the network (inter_node). A multiple of
    // gpus_per_node; greater than it only with an NVLink intra_node link.
    int nvlink_domain = 0;
};

// The GPUs that reach each other over the intra-node link: the NVLink domain, or the node.
// Communication groups are placed on domains of this size (workload/placement.hpp).
constexpr int gpus_per_domain(const cluster_spec& c) {
    return c.nvlink_domain > c.gpus_per_node ? c.nvlink_domain : c.gpus_per_node;
}

}  // namespace trainperf
