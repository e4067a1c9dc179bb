// NCCL's own cost model of a collective: the tuner's latency and bandwidth for every
// algorithm (Ring, Tree, NVLS, PAT) and protocol (LL, LL128, Simple) it has for the
// collective on the system, time = latency + bytes / bandwidth, and the minimum, as
// NCCL's tuner picks (NVIDIA/nccl@5067397c src/graph/tuning.cc ncclTopoTuneModel and
// ncclTopoGetAlgoTime). The channel counts and per-channel bandwidths the tuner starts
// from come out of NCCL's topology search (src/graph/search.cc ncclTopoCompute); this
// header re-derives them from the hardware description (GPU compute capability, the
// node's NVLink and PCIe rates, the network adapters, GPUs per node, nodes) with the
// search's own speed tables and rules, simplified where it says ASSUMPTION.
// It applies where NCCL's model does: NVIDIA GPUs (compute capability 7.0 and up, NCCL's
// tuner tables start at Volta) on NVLink/NVSwitch nodes, between nodes over a network
// adapter. Elsewhere (PCIe-only nodes, NVLink bridges, AMD Infinity Fabric / RCCL)
// cost/comm.hpp keeps its α–β model. Derivations and measured checks:
// docs/communication.md, "NCCL's model".
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <optional>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/hardware.hpp"
#include "../spec/links.hpp"
#include "../workload/ops.hpp"

namespace trainperf {

enum class nccl_algorithm { tree, ring, nvls, pat };
enum class nccl_protocol { ll, ll128, simple };

template <>
struct enum_names<nccl_algorithm> {
    static constexpr std::array<enum_name<nccl_algorithm>, 4> table{{{nccl_algorithm::tree, "tree"},
                                                                    {nccl_algorithm::ring, "ring"},
                                                                    {nccl_algorithm::nvls, "nvls"},
                                                                    {nccl_algorithm::pat, "pat"}}};
};

// NCCL's own names (NCCL_PROTO=LL,LL128,Simple).
template <>
struct enum_names<nccl_protocol> {
    static constexpr std::array<enum_name<nccl_protocol>, 3> table{
        {{nccl_protocol::ll, "LL"}, {nccl_protocol::ll128, "LL128"}, {nccl_protocol::simple, "Simple"}}};
};

namespace nccl {
// Every constant below is NVIDIA/nccl@5067397c; tuning.cc unless another file is named.
// Indices: protocol LL 0, LL128 1, Simple 2; algorithm as nccl_algorithm; compute-capability
// row Volta 0, Ampere 1, Hopper 2, Blackwell 3; node-count column 1 node, 2 nodes, more.
using row3 = std::array<double, 3>;

// ncclTunerConstantsDefaults.baseLatencies (µs): Tree, Ring; NVLS 0; PAT 8.0.
inline constexpr std::array<row3, 4> base_latency{{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {8.0, 8.0, 8.0}}};
// hwLatencies (µs) per hop kind: NVLink, PCI, network; rows Tree, Ring, NVLS, PAT.
inline constexpr std::array<row3, 4> nvlink_latency{{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 4.0}}};
inline constexpr std::array<row3, 4> pci_latency{{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 4.0}}};
inline constexpr std::array<row3, 4> net_latency{{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}}};
// llMaxBws (GB/s): one node by GPU generation (row = compute-capability row); several
// nodes by the host CPU, row 0 Intel (and others), row 1 AMD.
inline constexpr std::array<row3, 4> ll_max_bw{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0},
                                                {2 * 141.0, 2 * 45.0, 2 * 35.0}}};
inline constexpr std::array<row3, 4> per_channel_max_ring_ll128_bw{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
inline constexpr std::array<row3, 4> per_channel_max_tree_ll128_bw{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
inline constexpr std::array<row3, 4> per_channel_max_tree_bw{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
// nvlsEfficiency by compute-capability row.
inline constexpr std::array<double, 4> nvls_efficiency{0.0, 0.0, 0.85, 0.74};
// treeCorrectionFactor: the tree all-reduce's bandwidth for 64 B·2^i, per protocol.
inline constexpr std::array<std::array<double, 24>, 3> tree_correction{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}}};
// 1 / treeCorrectionFactor, for the hot path (a product instead of a quotient).
inline constexpr std::array<std::array<double, 24>, 3> inverse_tree_correction = [] {
    std::array<std::array<double, 24>, 3> inv{};
    for (std::size_t p = 0; p < 3; ++p)
        for (std::size_t i = 0; i < 24; ++i) inv[p][i] = 1.0 / tree_correction[p][i];
    return inv;
}();
// getNetOverhead (µs) an inter-node ring step pays at least, by host CPU (Intel/other 1.0,
// AMD 2.0), three times for Simple.
inline constexpr double net_overhead_intel = 1.0, net_overhead_amd = 2.0;
// ncclTopoGetAlgoTime: a multi-node Ring/Simple all-reduce's latency past the plateau.
inline constexpr double ring_plateau_sm80 = 1.4, ring_plateau_older = 1.9;

// search.cc: the per-channel speeds (GB/s) the topology search tries, fastest first, in a
// node (speedArrayIntra) and across nodes (speedArrayInter), by generation.
struct speed_table {
    std::array<double, 20> speeds{};
    int count = 0;
};
inline constexpr speed_table intra_speeds{{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0}, 13};
inline constexpr speed_table inter_speeds{{48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                                           4.0, 3.0, 2.4, 1.2, 0.24, 0.12},
                                          19};
inline constexpr speed_table sm90_intra_speeds{{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0}, 11};
inline constexpr speed_table sm90_inter_speeds{{48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                                3.0, 2.4, 1.2, 0.24, 0.12},
                                               17};
inline constexpr speed_table sm100_intra_speeds{
    {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0}, 12};
inline constexpr speed_table sm100_inter_speeds{{96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                                 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12},
                                                20};
// init.cc: ring graphs search up to MAXCHANNELS/2 = 32 channels (device.h MAXCHANNELS 64);
// NVLS up to NCCL_MAX_NVLS_ARITY = 32 (device.h).
inline constexpr int max_ring_channels = 32, max_nvls_channels = 32;

// topo.h: NCCL's bandwidth of one NVLink, GB/s (SM70/SM80 20.0, SM90 20.6, SM100 40.1), and
// the datasheet rate of one link each way it stands for: NVLink 2/3/4 25 GB/s, NVLink 5
// 50 GB/s (V100 300 GB/s total over 6 links, A100 600 over 12, H100 900 over 18 (their
// datasheets), B200 1.8 TB/s over 18 (NVIDIA Blackwell architecture technical brief)).
// NCCL's figure for a GPU is links × its per-link bandwidth = per_direction × the ratio.
constexpr double nvlink_bw_ratio(int compute_capability) {
    if (compute_capability >= 100) return 40.1 / 50.0;
    if (compute_capability >= 90) return 20.6 / 25.0;
    return 20.0 / 25.0;
}

// topo.cc kvDictPciGen and `bw = width * speed / 80`: a PCIe x16 link is 1.5 GB/s per GT/s
// (Gen3 12, Gen4 24, Gen5 48 GB/s). A link_spec holds GT/s × 16 × 128/130 / 8 per direction
// (15.75, 31.5, 63 GB/s), so NCCL's figure is that × 0.75 × 130/128, rounded to 0.1 GB/s as
// the stored rates are themselves rounded.
constexpr double pcie_bw(byte_rate per_direction) {
    const double gb = per_direction.value() / 1e9 * 0.75 * 130.0 / 128.0;
    return static_cast<long long>(gb * 10.0 + 0.5) / 10.0;
}

// Channels of `speed` that fit in `capacity` GB/s (NCCL subtracts with 1e-3 rounding:
// search.cc SUB_ROUND).
constexpr int fitting(double capacity, double speed) {
    const double n = capacity / speed + 1e-6;
    return n >= 1e9 ? 1000000000 : static_cast<int>(n);
}

// log2i (src/include/utils.h): ⌊log2 n⌋, −1 for 0.
constexpr int log2_down(long long n) {
    return n > 0 ? static_cast<int>(std::bit_width(static_cast<unsigned long long>(n))) - 1 : -1;
}

constexpr int compute_capability_row(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }
}  // namespace nccl

// The host CPU of the usual system of a GPU generation, which NCCL's multi-node LL
// bandwidth and network overhead depend on. ASSUMPTION, by the DGX of the generation: DGX
// A100 has 2 AMD EPYC 7742 (NVIDIA DGX A100 datasheet); DGX-1/DGX-2 (V100), DGX H100/H200
// and DGX B200 have Intel Xeon (their datasheets); other generations Intel.
constexpr bool nccl_amd_host(const gpu_spec& gpu) { return gpu.architecture == gpu_architecture::ampere; }

// One of NCCL's graphs for the communicator: channels and their per-channel bandwidth in a
// node and across nodes (GB/s, NCCL's units).
struct nccl_graph {
    int channels = 0;
    double bw_intra = 0.0;
    double bw_inter = 0.0;
};

// ncclTopoTuneModel's latency (µs) and algorithm bandwidth (GB/s) of one combination, 0
// bandwidth where NCCL has none; and µs per byte, 1 / (1000 × bandwidth), for the hot path.
struct nccl_tuned {
    double latency = 0.0, bandwidth = 0.0;
    double us_per_byte = 0.0;
};

// The communicator as NCCL's tuner sees it: ranks, nodes, generation, its graphs and the
// tuner's table (comm->latencies/bandwidths) for all-reduce, reduce-scatter, all-gather,
// each indexed algorithm × 3 + protocol.
struct nccl_system {
    int compute_capability = 0;
    int ranks = 1;
    int nodes = 1;
    int per_node = 1;
    bool amd_host = false;
    nccl_graph ring{}, tree{}, nvls{};  // nvls.channels 0: no NVLS
    std::array<std::array<nccl_tuned, 12>, 3> table{};
    // Per collective, the entries that can be the fastest for some size (the others are
    // slower at every size: more latency and less bandwidth whatever the size adjusts),
    // the ones nccl_pick_time tries.
    std::array<std::array<int, 12>, 3> candidates{};
    std::array<int, 3> candidate_count{};

    constexpr int row() const { return nccl::compute_capability_row(compute_capability); }
    constexpr int node_column() const { return nodes <= 2 ? nodes - 1 : 2; }
    constexpr const nccl_graph& graph(nccl_algorithm a) const {
        return a == nccl_algorithm::ring ? ring : a == nccl_algorithm::nvls ? nvls : tree;  // PAT: the tree's (init.cc)
    }
};

// Whether NCCL's model prices collectives on this cluster for a group: an NVIDIA GPU of
// compute capability ≥ 7.0 whose node joins its GPUs by NVLink (through NVSwitch), and,
// across nodes, a network adapter (InfiniBand). Otherwise cost/comm.hpp keeps the α–β model.
constexpr bool nccl_models(const cluster_spec& c, const rank_group& g) {
    const link_kind intra = (c.intra_node.kind == link_kind::none ? c.gpu.gpu_link : c.intra_node).kind;
    if (c.gpu.compute_capability < 70 || intra != link_kind::nvlink) return false;
    return g.inside_one_node() || c.inter_node.kind == link_kind::infiniband;
}

namespace nccl_detail {
// What bounds the channels of a speed: NVLink bandwidth per GPU in a node, and across
// nodes the network paths (one per GPU: its adapter, or its share of fewer, through its
// PCIe link; ASSUMPTION: the adapter sits on the GPU's PCIe switch, as in DGX/HGX nodes).
struct node_bandwidth {
    double nvlink = 0.0;  // NCCL GB/s per GPU, all its NVLinks
    double net_path = 0.0;  // NCCL GB/s per GPU to its adapter
    int per_node = 1;
    bool across_nodes = false;
};

// Ring channels of `speed` that fit. In a node through NVSwitch every GPU sends and receives
// `speed` per channel. Across nodes a channel enters a node from an adapter and leaves by
// one (search.cc "NET n -> GPU a -> ... -> GPU x -> NET n"): each of the per_node paths
// carries whole channels, and a GPU's NVLinks carry (per_node − 1)/per_node of them
// (ASSUMPTION: the channels' first and last GPUs are spread evenly over the node).
constexpr int ring_channels(const node_bandwidth& b, double speed) {
    int n = b.across_nodes ? b.per_node * nccl::fitting(b.net_path, speed) : nccl::fitting(b.nvlink, speed);
    if (b.across_nodes && b.per_node > 1) {
        const int nvl = nccl::fitting(b.nvlink * b.per_node / (b.per_node - 1.0), speed);
        if (nvl < n) n = nvl;
    }
    return n < nccl::max_ring_channels ? n : nccl::max_ring_channels;
}

// search.cc ncclTopoCompute for the ring pattern, as a speed search: start at the fastest
// speed within the best path and the GPU's total; keep the graph with the most bandwidth
// (channels × speed), stopping once it covers the total or the next speed is under
// 0.49 of the best's; ncclTopoDupChannels doubles the channels at half the speed where the
// speed is at least 25 GB/s (not past SM80 under 50 GB/s with more than 4 channels); pass 2
// raises the speed while the channels still fit.
constexpr nccl_graph ring_graph(const node_bandwidth& b, const nccl::speed_table& t, int cc) {
    const double max_bw = b.across_nodes ? b.net_path : b.nvlink;
    const double total = b.across_nodes && b.net_path > b.nvlink ? b.net_path : b.nvlink;
    int i = 0;
    while ((t.speeds[i] > max_bw || t.speeds[i] > total) && i < t.count - 1) ++i;
    nccl_graph best{};
    for (;;) {
        const int n = ring_channels(b, t.speeds[i]);
        if (n >= 1 && n * t.speeds[i] > best.channels * best.bw_intra) best = {n, t.speeds[i], t.speeds[i]};
        // Done: as many channels as allowed, or the best covers the total.
        if (n >= nccl::max_ring_channels || (best.channels > 0 && best.channels * best.bw_intra >= total)) break;
        if (i < t.count - 1 && (best.channels == 0 || t.speeds[i + 1] / best.bw_intra > .49)) ++i;
        else break;
    }
    if (best.channels == 0) return {1, 0.1, 0.1};  // search.cc: "falling back to simple order"
    if (best.bw_intra >= 25.0 && !(cc > 80 && best.bw_intra < 50.0 && best.channels > 4)) {
        const int doubled = 2 * best.channels < nccl::max_ring_channels ? 2 * best.channels : nccl::max_ring_channels;
        const int divide = (doubled + best.channels - 1) / best.channels;
        best = {doubled, best.bw_intra / divide, best.bw_inter / divide};
    }
    int j = 0;
    while (t.speeds[j] > best.bw_intra && j < t.count - 1) ++j;
    for (; j > 0; --j) {
        const int n = ring_channels(b, t.speeds[j - 1]);
        if (n < best.channels) break;
        best = {n, t.speeds[j - 1], t.speeds[j - 1]};
    }
    return best;
}

// The tree graph searches with the ring's channel count (init.cc: minChannels = maxChannels
// = ring's). In a node it is a chain through NVSwitch: like the ring, but a channel's last
// GPU sends nothing, and the search's start speed allows for that (search.cc: totalBw ×
// ndevs/(ndevs − 1) for patterns other than the ring); pass 2 raises its speed while the
// channels fit and the speed stays under twice the first. ASSUMPTION: across nodes the
// tree graph is the ring's (the balanced tree's network paths carry as much).
constexpr nccl_graph tree_graph(const node_bandwidth& b, const nccl::speed_table& t, const nccl_graph& ring) {
    if (b.across_nodes || b.per_node < 2) return ring;
    const double spread = b.nvlink * b.per_node / (b.per_node - 1.0);
    const auto fits = [&](double s) { return nccl::fitting(spread, s) >= ring.channels; };
    int i = 0;
    while ((t.speeds[i] > b.nvlink || t.speeds[i] * ring.channels > spread) && i < t.count - 1) ++i;
    while (!fits(t.speeds[i]) && i < t.count - 1) ++i;
    if (!fits(t.speeds[i])) return ring;
    const double first = t.speeds[i];
    double intra = first;
    while (i > 0 && intra < 2 * first && fits(t.speeds[i - 1])) intra = t.speeds[--i];
    return {ring.channels, intra, first};
}

// The NVLS graph in one node (search.cc ncclTopoSearchTryNvls): one channel per GPU
// (min = max = the node's GPUs, at most 32), each moving `speed` to and from every GPU and
// twice that at its head GPU. Its start speed allows ndevs/(ndevs − 1) of the total; it
// slows until the channels fit, then pass 2 raises bwInter (while under twice bwIntra).
constexpr nccl_graph nvls_graph(const node_bandwidth& b, const nccl::speed_table& t) {
    const int n = b.per_node < nccl::max_nvls_channels ? b.per_node : nccl::max_nvls_channels;
    if (n < 2) return {};
    const auto fits = [&](double s) { return s * n * (1.0 + 1.0 / b.per_node) <= b.nvlink * (1 + 1e-6); };
    const double total = b.nvlink * b.per_node / (b.per_node - 1.0);
    int i = 0;
    while ((t.speeds[i] > b.nvlink || t.speeds[i] * n > total) && i < t.count - 1) ++i;
    while (!fits(t.speeds[i]) && i < t.count - 1) ++i;
    if (!fits(t.speeds[i])) return {};
    const double intra = t.speeds[i];
    double inter = intra;
    while (i > 0 && inter < 2 * intra) inter = t.speeds[--i];
    return {n, intra, inter};
}
}  // namespace nccl_detail

namespace nccl_detail {
// One entry of ncclTopoTuneModel's table.
constexpr nccl_tuned tune(const nccl_system& s, collective c, nccl_algorithm a, nccl_protocol proto) {
    const int p = static_cast<int>(proto), ai = static_cast<int>(a), row = s.row(), column = s.node_column();
    const bool all_reduce = c == collective::all_reduce;
    const int nsteps = all_reduce ? 2 * (s.ranks - 1) : s.ranks - 1;
    const double ppn = double(s.ranks) / s.nodes;
    const nccl_graph& graph = s.graph(a);
    if (graph.channels == 0) return {};
    if (a == nccl_algorithm::nvls && (proto != nccl_protocol::simple || graph.channels < 2)) return {};
    if (a == nccl_algorithm::pat && proto != nccl_protocol::simple) return {};
    const double ll_max = nccl::ll_max_bw[s.nodes == 1 ? row : s.amd_host ? 1 : 0][column];
    double bw = s.nodes <= 2 ? graph.bw_intra : graph.bw_inter;
    if (a == nccl_algorithm::nvls) {
        double intra = graph.bw_intra * nccl::nvls_efficiency[row] * (graph.channels - 1) / graph.channels;
        intra *= all_reduce ? 2.0 : (ppn - 1) / ppn;
        bw = intra < graph.bw_inter ? intra : graph.bw_inter;
    }
    double bus = graph.channels * bw;
    const auto at_most = [](double x, double cap) { return x < cap ? x : cap; };
    if (a == nccl_algorithm::ring && proto == nccl_protocol::ll) bus = at_most(bus * .5, ll_max);
    if (a == nccl_algorithm::ring && proto == nccl_protocol::ll128)
        bus = at_most(bus * 0.92, graph.channels * nccl::per_channel_max_ring_ll128_bw[row][column]);
    if (a == nccl_algorithm::tree && all_reduce)
        bus = at_most(bus * .92, graph.channels * nccl::per_channel_max_tree_bw[row][column]);
    if (a == nccl_algorithm::tree && proto == nccl_protocol::ll) bus = at_most(bus / 3.8, ll_max);
    if (a == nccl_algorithm::tree && proto == nccl_protocol::ll128)
        bus = at_most(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                      graph.channels * nccl::per_channel_max_tree_ll128_bw[row][column]);
    if (a == nccl_algorithm::pat) bus *= .75;
    // Bus to algorithm bandwidth; NCCL leaves it for all-gather and reduce-scatter off the ring.
    if (a == nccl_algorithm::ring || all_reduce) bus *= a == nccl_algorithm::tree ? .5 : double(s.ranks) / nsteps;

    // Latency. In a node every hop is NVLink (nccl_models); the network's latency with one
    // GPU per node is the tree's; graphs' latencyInter is 0 (ASSUMPTION: the InfiniBand
    // plugin reports none).
    const double intra_lat = nccl::nvlink_latency[ai][p];
    const double inter_lat = nccl::net_latency[ppn == 1 ? 0 : ai][p];
    double lat = nccl::base_latency[ai][p];
    switch (a) {
        case nccl_algorithm::ring: {
            double overhead = 0.0;
            if (s.nodes > 1) {
                overhead = s.amd_host ? nccl::net_overhead_amd : nccl::net_overhead_intel;
                if (proto == nccl_protocol::simple) overhead *= 3;
            }
            const double step = intra_lat > overhead ? intra_lat : overhead;
            const int inter_steps = s.nodes == 1 ? 0 : all_reduce ? 2 * (s.nodes - 1) : s.nodes - 1;
            lat += (nsteps - inter_steps) * step + inter_steps * inter_lat;
            break;
        }
        case nccl_algorithm::tree:
            if (!all_reduce) return {};  // NCCL has no tree all-gather or reduce-scatter
            lat += 2 * ((s.ranks / s.nodes - 1) * intra_lat + nccl::log2_down(s.nodes) * inter_lat);
            break;
        case nccl_algorithm::nvls: lat = intra_lat; break;
        case nccl_algorithm::pat:
            // ncclPatEnable: one GPU per node; only all-gather and reduce-scatter.
            if (all_reduce || s.nodes != s.ranks) return {};
            lat += nccl::log2_down(s.nodes) * (inter_lat / 3.5) + s.ranks * 2.8;
            break;
    }
    return {lat, bus};
}
}  // namespace nccl_detail

namespace nccl_detail {
// The entries of the table that can win for some size. An entry loses at every size to
// another whose latency is at most its own and whose µs per byte is at most its own over
// the whole range ncclTopoGetAlgoTime adjusts them by: the tree all-reduce's bandwidth by
// its correction (down to its smallest factor), the ring Simple all-reduce's latency by
// the plateau factor (up to 1.9).
constexpr void keep_candidates(nccl_system& s) {
    for (int c = 0; c < 3; ++c) {
        const auto& row = s.table[c];
        const auto range = [&](int k, double& lat_lo, double& lat_hi, double& byte_lo, double& byte_hi) {
            lat_lo = lat_hi = row[k].latency;
            byte_lo = byte_hi = row[k].us_per_byte;
            if (c == static_cast<int>(collective::all_reduce) && k < 3) {
                double smallest = 1.0;
                for (double f : nccl::tree_correction[k]) smallest = f < smallest ? f : smallest;
                byte_hi /= smallest;
            }
            if (c == static_cast<int>(collective::all_reduce) && k == 5 && s.nodes > 1) lat_hi *= nccl::ring_plateau_older;
        };
        int count = 0;
        for (int k = 0; k < 12; ++k) {
            if (row[k].bandwidth <= 0) continue;
            double lat_lo, lat_hi, byte_lo, byte_hi;
            range(k, lat_lo, lat_hi, byte_lo, byte_hi);
            bool loses = false;
            for (int j = 0; j < 12 && !loses; ++j) {
                if (j == k || row[j].bandwidth <= 0) continue;
                double other_lat_lo, other_lat_hi, other_byte_lo, other_byte_hi;
                range(j, other_lat_lo, other_lat_hi, other_byte_lo, other_byte_hi);
                loses = other_lat_hi < lat_lo && other_byte_hi < byte_lo;
            }
            if (!loses) s.candidates[c][count++] = k;
        }
        s.candidate_count[c] = count;
    }
}
}  // namespace nccl_detail

// What NCCL's search and tuner read of the hardware for a communicator: the generation,
// the host CPU, NCCL's bandwidth of a GPU's NVLinks and of its path to the network (GB/s),
// the ranks and how many share a node.
struct nccl_inputs {
    int compute_capability = 0;
    bool amd_host = false;
    double nvlink = 0.0;
    double net_path = 0.0;
    int ranks = 1;
    int per_node = 1;

    constexpr bool operator==(const nccl_inputs&) const = default;
};

// Those of group `g` on cluster `c` (nccl_models(c, g) must hold).
constexpr nccl_inputs nccl_inputs_of(const cluster_spec& c, const rank_group& g) {
    const link_spec intra = c.intra_node.kind == link_kind::none ? c.gpu.gpu_link : c.intra_node;
    const int cc = c.gpu.compute_capability;
    nccl_inputs in{.compute_capability = cc, .amd_host = nccl_amd_host(c.gpu),
                   .nvlink = intra.per_direction.value() / 1e9 * nccl::nvlink_bw_ratio(cc),
                   .ranks = g.size, .per_node = g.per_node < g.size ? g.per_node : g.size};
    if (!g.inside_one_node()) {
        const double adapter = inter_node_link(c).per_direction.value() / 1e9;  // mbps / 8000: the line rate
        const double pcie = nccl::pcie_bw(c.gpu.host_link.per_direction);
        in.net_path = pcie > 0 && pcie < adapter ? pcie : adapter;
    }
    return in;
}

// The communicator as NCCL's tuner sees it: the graphs searched over the inputs and the
// tuner's table over the graphs.
constexpr nccl_system nccl_system_of(const nccl_inputs& in) {
    const int cc = in.compute_capability;
    const rank_group g{in.ranks, in.per_node};
    nccl_system s{.compute_capability = cc, .ranks = g.size, .nodes = g.nodes(), .per_node = g.per_node,
                  .amd_host = in.amd_host};
    if (g.size < 2) return s;
    const nccl_detail::node_bandwidth b{.nvlink = in.nvlink, .net_path = in.net_path, .per_node = g.per_node,
                                        .across_nodes = !g.inside_one_node()};
    const bool sm100 = cc >= 100, sm90 = cc >= 90;
    const nccl::speed_table& t = b.across_nodes ? (sm100 ? nccl::sm100_inter_speeds
                                                  : sm90   ? nccl::sm90_inter_speeds
                                                           : nccl::inter_speeds)
                                 : (sm100 ? nccl::sm100_intra_speeds
                                    : sm90 ? nccl::sm90_intra_speeds
                                           : nccl::intra_speeds);
    s.ring = nccl_detail::ring_graph(b, t, cc);
    s.tree = nccl_detail::tree_graph(b, t, s.ring);
    // NVLS: NVLink SHARP in NVSwitch, Hopper and later (search.cc: no NVLS graph without an
    // NVSwitch or under SM90); across nodes only with CollNet, which is not modelled
    // (tuning.cc disables NVLS on several nodes without it).
    if (sm90 && !b.across_nodes) s.nvls = nccl_detail::nvls_graph(b, t);
    for (collective kind : {collective::all_reduce, collective::reduce_scatter, collective::all_gather})
        for (int k = 0; k < 12; ++k) {
            nccl_tuned& t = s.table[static_cast<int>(kind)][k];
            t = nccl_detail::tune(s, kind, static_cast<nccl_algorithm>(k / 3), static_cast<nccl_protocol>(k % 3));
            if (t.bandwidth > 0) t.us_per_byte = 1.0 / (1000.0 * t.bandwidth);
        }
    nccl_detail::keep_candidates(s);
    return s;
}

// The communicator of group `g` on cluster `c` (nccl_models(c, g) must hold).
constexpr nccl_system nccl_system_of(const cluster_spec& c, const rank_group& g) {
    return nccl_system_of(nccl_inputs_of(c, g));
}

// nccl_system_of at run time, remembered: the engine prices the same few groups of one
// cluster over and over (every op of a micro-batch, every layout of a plan), and the
// search and the table cost far more than a collective's time from them. A small cache per
// thread, keyed by the inputs (a pure function of them, so nothing else can go stale).
// The reference holds until this thread's next call, which may reuse its slot: use it
// at once, or copy it.
inline const nccl_system& nccl_system_memo(const nccl_inputs& in) {
    struct memo {
        std::array<nccl_inputs, 64> keys{};  // together, apart from the large values; a plan
                                             // meets a few dozen groups (tp, dp, pp shapes)
        std::array<nccl_system, 64> values{};
        std::size_t count = 0, next = 0, last = 0;
    };
    thread_local memo m;
    if (m.count > 0 && m.keys[m.last] == in) return m.values[m.last];  // the same group again
    for (std::size_t i = 0; i < m.count; ++i)
        if (m.keys[i] == in) return m.values[m.last = i];
    m.last = m.next;
    m.keys[m.last] = in;
    m.values[m.last] = nccl_system_of(in);
    m.next = (m.next + 1) % m.keys.size();
    if (m.count < m.keys.size()) ++m.count;
    return m.values[m.last];
}

// One algorithm and protocol of NCCL's model for a collective and a size.
struct nccl_choice {
    nccl_algorithm algorithm = nccl_algorithm::ring;
    nccl_protocol protocol = nccl_protocol::simple;
    seconds latency = seconds_of(0.0);            // after the ring plateau factor
    byte_rate bandwidth = byte_rate::from_value(0.0);  // algorithm bandwidth, after the tree correction
    int channels = 0;
    seconds time = seconds_of(0.0);                // latency + bytes / bandwidth
};


// A set of NCCL's algorithms (NCCL_ALGO): all of them, or one (nccl_only).
inline constexpr unsigned nccl_all_algorithms = 0xF;
constexpr unsigned nccl_only(nccl_algorithm a) { return 1u << static_cast<int>(a); }

namespace nccl_detail {
// What ncclTopoGetAlgoTime adjusts for the size: the tree all-reduce's bandwidth times its
// correction for the size (64 B × 2^k, k < 23), the ring Simple all-reduce's latency across
// nodes times its plateau factor once each rank's share of a channel reaches 64 B.
struct size_terms {
    long long bytes = 0;
    int log_size = -1;
    bool plateau = false;
};

constexpr size_terms size_terms_of(const nccl_system& s, collective c, bytes size) {
    const long long n = static_cast<long long>(size.value());
    const long long channels = s.ring.channels < s.tree.channels ? s.ring.channels : s.tree.channels;  // comm->nChannels
    // n / (channels × ranks) ≥ 64 in integers, without the division.
    return {n, nccl::log2_down(n >> 6),
            s.nodes > 1 && c == collective::all_reduce && channels > 0 && n >= 64 * channels * s.ranks};
}

// The latency (µs) and bandwidth (GB/s) of entry k for the size.
constexpr nccl_tuned for_size(const nccl_system& s, collective c, const size_terms& z, int k) {
    nccl_tuned t = s.table[static_cast<int>(c)][k];
    const auto a = static_cast<nccl_algorithm>(k / 3);
    const auto p = static_cast<nccl_protocol>(k % 3);
    if (a == nccl_algorithm::tree && c == collective::all_reduce && z.log_size >= 0 && z.log_size < 23) {
        const double f = nccl::tree_correction[k % 3][z.log_size];
        t.bandwidth *= f;
        t.us_per_byte /= f;
    }
    if (a == nccl_algorithm::ring && p == nccl_protocol::simple && z.plateau)
        t.latency *= s.compute_capability < 80 ? nccl::ring_plateau_older : nccl::ring_plateau_sm80;
    return t;
}

// The fastest allowed entry for the size, and its time (µs); −1 where none is allowed.
// for_size's adjustments inline: this is the engine's hot path.
// With `allowed` all algorithms only the candidates are tried (the others lose at every
// size; a strict loss, so the time is the same).
constexpr int fastest(const nccl_system& s, collective c, const size_terms& z, unsigned allowed, double& time) {
    const auto& row = s.table[static_cast<int>(c)];
    const double n = static_cast<double>(z.bytes);
    const bool corrected = c == collective::all_reduce && z.log_size >= 0 && z.log_size < 23;
    const double plateau =
        !z.plateau ? 1.0 : s.compute_capability < 80 ? nccl::ring_plateau_older : nccl::ring_plateau_sm80;
    const bool all = allowed == nccl_all_algorithms;
    const int count = all ? s.candidate_count[static_cast<int>(c)] : 12;
    int best = -1;
    for (int i = 0; i < count; ++i) {
        const int k = all ? s.candidates[static_cast<int>(c)][i] : i;
        const nccl_tuned& e = row[k];
        if ((allowed & (1u << (k / 3))) == 0 || e.bandwidth <= 0) continue;
        double lat = e.latency, per_byte = e.us_per_byte;
        if (k < 3 && corrected) per_byte *= nccl::inverse_tree_correction[k][z.log_size];  // the tree's
        if (k == 5) lat *= plateau;                                                         // ring/Simple
        const double t = lat + n * per_byte;
        if (best < 0 || t < time) {
            best = k;
            time = t;
        }
    }
    return best;
}

constexpr nccl_choice choice(const nccl_system& s, bytes size, int k, const nccl_tuned& t) {
    const auto a = static_cast<nccl_algorithm>(k / 3);
    return nccl_choice{.algorithm = a, .protocol = static_cast<nccl_protocol>(k % 3),
                       .latency = microseconds_of(t.latency), .bandwidth = gb_per_second(t.bandwidth),
                       .channels = s.graph(a).channels,
                       .time = microseconds_of(t.latency + size.value() / (1000.0 * t.bandwidth))};
}

constexpr void check_kind(collective c) {
    if (c == collective::p2p)
        require(false, "collective", to_string(c), "NCCL's tuner prices all-reduce, reduce-scatter and all-gather");
}
}  // namespace nccl_detail

// The time of one combination for `size` bytes (ncclTopoGetAlgoTime, one operation):
// latency + bytes / bandwidth, as adjusted for the size. Empty where NCCL has no such
// combination.
constexpr std::optional<nccl_choice> nccl_time(const nccl_system& s, collective c, bytes size, nccl_algorithm a,
                                               nccl_protocol p) {
    nccl_detail::check_kind(c);
    const int k = 3 * static_cast<int>(a) + static_cast<int>(p);
    const nccl_tuned t = nccl_detail::for_size(s, c, nccl_detail::size_terms_of(s, c, size), k);
    if (t.bandwidth <= 0) return std::nullopt;
    return nccl_detail::choice(s, size, k, t);
}

// NCCL's pick for a collective of `size` (all-reduce, reduce-scatter, all-gather): the
// fastest of the allowed algorithms over every protocol.
constexpr nccl_choice nccl_pick(const nccl_system& s, collective c, bytes size,
                                unsigned allowed = nccl_all_algorithms) {
    nccl_detail::check_kind(c);
    const nccl_detail::size_terms z = nccl_detail::size_terms_of(s, c, size);
    double time = 0.0;
    const int best = nccl_detail::fastest(s, c, z, allowed, time);
    require(best >= 0, "algorithm", to_string(c), "NCCL has no such algorithm for this collective");
    return nccl_detail::choice(s, size, best, nccl_detail::for_size(s, c, z, best));
}

// Its time alone, for the engine's hot path.
constexpr seconds nccl_pick_time(const nccl_system& s, collective c, bytes size) {
    nccl_detail::check_kind(c);
    double time = 0.0;
    if (nccl_detail::fastest(s, c, nccl_detail::size_terms_of(s, c, size), nccl_all_algorithms, time) < 0)
        require(false, "algorithm", to_string(c), "NCCL has no algorithm for this collective");
    return microseconds_of(time);
}

}  // namespace trainperf
