// Communication cost: collectives over GPU links.
// Over a link alone, and on systems NCCL's model does not cover, an α–β model: time =
// steps · latency (α) + bytes moved per GPU / achievable bandwidth (β⁻¹), where achievable
// bandwidth = link efficiency × per-direction bandwidth. Ring algorithms are
// bandwidth-optimal; tree all-reduce trades fewer latency steps for the same volume.
// A collective over a group of a cluster that NCCL's model covers (NVIDIA GPUs on NVLink
// nodes, cost/nccl_model.hpp) is priced as NCCL's tuner prices it: the fastest algorithm
// and protocol. Derivations and sources: docs/communication.md.
#pragma once

#include <optional>
#include <string_view>
#include <type_traits>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/hardware.hpp"
#include "../spec/links.hpp"
#include "../workload/ops.hpp"
#include "nccl_model.hpp"

namespace trainperf {

// auto: the fastest algorithm for the size and the group, as NCCL's tuner picks the one
// with the lowest predicted time (NVIDIA/nccl@5067397c src/graph/tuning.cc): under NCCL's
// model any of its algorithms and protocols, under the α–β model the faster of ring and
// tree. ring and tree force the algorithm (NCCL_ALGO); NCCL's protocol is still chosen.
enum class collective_algorithm { ring, tree, automatic };

template <>
struct enum_names<collective_algorithm> {
    static constexpr std::array<enum_name<collective_algorithm>, 3> table{
        {{collective_algorithm::ring, "ring"}, {collective_algorithm::tree, "tree"},
         {collective_algorithm::automatic, "auto"}}};
};

namespace comm_detail {
constexpr void validate_size(bytes size, int n) {
    require_in(size.value(), limits::message_size, "bytes");
    require(n >= 1 && n <= max_gpus, "gpus", n, "must be between 1 and 2^22");
}

// ceil(log2(n)) without <cmath>, so it stays a constant expression.
constexpr int ceil_log2(int n) {
    int steps = 0;
    for (long long reach = 1; reach < n; reach *= 2) ++steps;
    return steps;
}

// The formulas of the collectives below, for a size and n ≥ 2 GPUs already checked
// (validate_size) over a link already checked (validate(link)).
constexpr seconds ring_all_reduce(bytes size, int n, const link_spec& link) {
    const double steps = 2.0 * (n - 1);
    return steps * link.latency + (2.0 * (n - 1) / n) * size / link.achievable();
}

constexpr seconds tree_all_reduce(bytes size, int n, const link_spec& link) {
    const double steps = 2.0 * ceil_log2(n);
    return steps * link.latency + 2.0 * size / link.achievable();
}

constexpr seconds all_reduce(bytes size, int n, const link_spec& link, collective_algorithm algorithm) {
    switch (algorithm) {
        case collective_algorithm::tree: return tree_all_reduce(size, n, link);
        case collective_algorithm::automatic: {
            const seconds ring = ring_all_reduce(size, n, link), tree = tree_all_reduce(size, n, link);
            return tree < ring ? tree : ring;
        }
        case collective_algorithm::ring: break;
    }
    return ring_all_reduce(size, n, link);
}

constexpr seconds reduce_scatter(bytes size, int n, const link_spec& link) {
    return (n - 1.0) * link.latency + ((n - 1.0) / n) * size / link.achievable();
}

// Its mirror: `size` is the gathered buffer.
constexpr seconds all_gather(bytes size, int n, const link_spec& link) { return reduce_scatter(size, n, link); }

constexpr seconds p2p(bytes size, const link_spec& link) { return link.latency + size / link.achievable(); }

// All-to-all over one link: each GPU sends (n − 1)/n of its buffer, one part to each
// peer. ASSUMPTION: the sends to all peers run at once (NCCL's grouped send/recv), so
// the latency is paid once, not per peer.
constexpr seconds all_to_all(bytes size, int n, const link_spec& link) {
    return link.latency + ((n - 1.0) / n) * size / link.achievable();
}

constexpr seconds collective_formula(collective c, bytes size, int n, const link_spec& link,
                                     collective_algorithm algorithm) {
    switch (c) {
        case collective::all_reduce: return all_reduce(size, n, link, algorithm);
        case collective::reduce_scatter: return reduce_scatter(size, n, link);
        case collective::all_gather: return all_gather(size, n, link);
        case collective::p2p: return p2p(size, link);
        case collective::all_to_all: return all_to_all(size, n, link);
    }
    return seconds_of(0.0);
}

// One of them checked: nothing to send for one GPU, else over a usable link.
template <class Formula>
constexpr seconds checked(bytes size, int n, const link_spec& link, Formula formula) {
    validate_size(size, n);
    if (n == 1) return seconds_of(0.0);
    validate(link);
    return formula(size, n, link);
}
}  // namespace comm_detail

// ---- Collectives on N GPUs over one link (bytes = the full buffer size) ------------

// Ring: N−1 reduce-scatter steps then N−1 all-gather steps, each GPU sending
// 2·(N−1)/N of the buffer.
constexpr seconds ring_all_reduce_time(bytes size, int n, const link_spec& link) {
    return comm_detail::checked(size, n, link, comm_detail::ring_all_reduce);
}

// Tree: NCCL's double binary tree. Reduce up and broadcast down take 2·⌈log2 N⌉
// latency steps; the two trees each carry half the buffer and a GPU is an inner node
// of one and a leaf of the other, so it sends the whole buffer once up and once down:
// 2·size, a little more than the ring's 2·(N−1)/N·size (Sanders et al. 2009; NCCL 2.4
// release notes). Few latency steps, slightly more volume: the tree wins for small
// buffers on many GPUs, the ring for large ones.
constexpr seconds tree_all_reduce_time(bytes size, int n, const link_spec& link) {
    return comm_detail::checked(size, n, link, comm_detail::tree_all_reduce);
}

constexpr seconds all_reduce_time(bytes size, int n, const link_spec& link,
                                  collective_algorithm algorithm = collective_algorithm::ring) {
    return comm_detail::checked(size, n, link, [algorithm](bytes b, int g, const link_spec& l) {
        return comm_detail::all_reduce(b, g, l, algorithm);
    });
}

// Ring reduce-scatter: N−1 steps, (N−1)/N of the buffer per GPU; each GPU ends with
// 1/N of the reduced buffer.
constexpr seconds reduce_scatter_time(bytes size, int n, const link_spec& link) {
    return comm_detail::checked(size, n, link, comm_detail::reduce_scatter);
}

// Ring all-gather: the mirror of reduce-scatter; `size` is the gathered buffer.
constexpr seconds all_gather_time(bytes size, int n, const link_spec& link) {
    return reduce_scatter_time(size, n, link);
}

// One GPU sends `size` to another (pipeline-parallel activations).
constexpr seconds p2p_time(bytes size, const link_spec& link) {
    comm_detail::validate_size(size, 2);
    validate(link);
    return comm_detail::p2p(size, link);
}

constexpr seconds collective_time(collective c, bytes size, int n, const link_spec& link,
                                  collective_algorithm algorithm = collective_algorithm::ring) {
    return comm_detail::checked(size, n, link, [c, algorithm](bytes b, int g, const link_spec& l) {
        return comm_detail::collective_formula(c, b, g, l, algorithm);
    });
}

// nccl-tests' "bus bandwidth" factor: algorithm bandwidth (size / time) times this is
// the per-GPU link traffic rate, comparable with the link's bandwidth.
constexpr double bus_bandwidth_factor(collective c, int n) {
    require(n >= 1, "gpus", n, "must be at least 1");
    switch (c) {
        case collective::all_reduce: return 2.0 * (n - 1) / n;
        case collective::reduce_scatter:
        case collective::all_gather: return (n - 1.0) / n;
        case collective::p2p: return 1.0;
        case collective::all_to_all: return (n - 1.0) / n;
    }
    return 1.0;
}

// ---- Several nodes -------------------------------------------------------------------

// A single flat ring over all GPUs of several nodes, for comparison: every ring step
// waits for the slowest link it crosses (the inter-node adapter), so the whole
// volume 2·(N−1)/N·size moves at inter-node speed.
constexpr seconds flat_ring_all_reduce_time(bytes size, const cluster_spec& c, int total_gpus) {
    comm_detail::validate_size(size, total_gpus);
    const int nodes = domain_count(c, total_gpus);
    if (nodes == 1) return ring_all_reduce_time(size, total_gpus, node_ring_link(c, total_gpus));
    const link_spec intra = node_ring_link(c, gpus_per_domain(c));
    validate(intra);
    const link_spec network = inter_node_link(c);
    validate(network);
    return ring_all_reduce_time(size, total_gpus, slowest_of(intra, network));
}

// ---- A collective over a placed group (workload ops) --------------------------------

namespace comm_detail {
// An all-to-all over a placed group of n ranks, per_node of them in each NVLink domain
// (for every cluster: NCCL's tuner does not price send/recv). Each rank sends 1/n of its
// buffer to every peer: (per_node − 1)/n of it over the NVLink domain's link and
// (n − per_node)/n over its own network adapter. ASSUMPTION: the two run at once, on
// different links, so the slower paces the collective, each paying its link's latency once
// (all_to_all above). With node forwarding (collective_op::network_share, DeepEP's normal
// kernels: one copy per destination node over the network to the rank with the sender's
// local index, forwarded there over NVLink; deepseek-ai/DeepEP README, "asymmetric-domain
// bandwidth forwarding"), the network carries network_share of the buffer and NVLink
// every copy bound for another rank of a node, (per_node − 1)/per_node of it.
constexpr seconds placed_all_to_all(const collective_op& op, const cluster_spec& c) {
    const rank_group& g = op.group;
    const double n = g.size, local = std::min(g.per_node, g.size);
    const bool forwarded = op.network_share >= 0;
    seconds intra_time = seconds_of(0.0), inter_time = seconds_of(0.0);
    if (local > 1) {
        const link_spec intra = node_ring_link(c, g.per_node);
        validate(intra);
        const double share = forwarded ? (local - 1.0) / local : (local - 1.0) / n;
        intra_time = intra.latency + share * op.size / intra.achievable();
    }
    if (local < n) {
        const link_spec network = inter_node_link(c);
        validate(network);
        const double share = forwarded ? op.network_share : (n - local) / n;
        inter_time = network.latency + share * op.size / network.achievable();
    }
    return intra_time > inter_time ? intra_time : inter_time;
}
}  // namespace comm_detail

// A collective over a group placed on nodes (workload/ops.hpp rank_group).
//
// Where NCCL's model covers the cluster (nccl_models: NVIDIA GPUs on NVLink nodes, an
// adapter between nodes), an all-reduce, reduce-scatter or all-gather is NCCL's pick over
// its algorithms and protocols for the group's ranks, nodes and ranks per node
// (cost/nccl_model.hpp): one NCCL collective over all ranks, its rings and trees crossing
// the network as NCCL's graphs do. A p2p transfer (NCCL's send/recv, which the tuner does
// not price) and every other system keep the α–β model below.
//
// α–β: an all-reduce takes the faster of ring and tree (`auto`). Inside one node it runs
// on the intra-node link. With one member per node every step crosses the network, each
// GPU over its own adapter. Otherwise it is hierarchical (NCCL's intra-node rings and
// inter-node trees/rings, Horovod): reduce-scatter inside each node, the collective on a
// 1/g shard across the nodes (g rings in parallel, one per local member), all-gather
// inside the node; an all-gather or a reduce-scatter runs its two halves the same way.
// Each link is resolved and checked once, before the halves (n ≥ 2 ranks each) are
// priced over it; of two bad links, the node's is named first.
constexpr seconds collective_time(const collective_op& op, const cluster_spec& c) {
    const rank_group& g = op.group;
    validate(g);
    comm_detail::validate_size(op.size, g.size);
    if (g.size == 1) return seconds_of(0.0);
    if (op.kind == collective::all_to_all) return comm_detail::placed_all_to_all(op, c);
    if (op.kind != collective::p2p && nccl_models(c, g)) {
        validate(intra_node_link(c));
        if (!g.inside_one_node()) validate(inter_node_link(c));
        const nccl_inputs in = nccl_inputs_of(c, g);
        if (std::is_constant_evaluated()) return nccl_pick_time(nccl_system_of(in), op.kind, op.size);
        return nccl_pick_time(nccl_system_memo(in), op.kind, op.size);
    }
    constexpr auto nccl = collective_algorithm::automatic;
    using comm_detail::all_gather, comm_detail::reduce_scatter;
    if (g.inside_one_node()) {
        const link_spec link = node_ring_link(c, g.size);
        validate(link);
        return comm_detail::collective_formula(op.kind, op.size, g.size, link, nccl);
    }
    const link_spec network = inter_node_link(c);
    if (g.per_node == 1 || op.kind == collective::p2p) {
        validate(network);
        return comm_detail::collective_formula(op.kind, op.size, g.size, network, nccl);
    }
    const link_spec intra = node_ring_link(c, g.per_node);
    const int local = g.per_node;
    const int nodes = g.nodes();
    const bytes shard = op.size / double(local);
    validate(intra);
    validate(network);
    switch (op.kind) {
        case collective::all_reduce:
            return reduce_scatter(op.size, local, intra) + comm_detail::all_reduce(shard, nodes, network, nccl) +
                   all_gather(op.size, local, intra);
        // NCCL runs these as rings over all n ranks: n − 1 steps, nodes − 1 of them
        // across the network and n − nodes inside nodes, each paying its link's
        // latency (NCCL src/graph/tuning.cc@5067397c: ring latency = base +
        // (nsteps − nInterSteps)·intraLat + nInterSteps·interLat, nsteps = n − 1). The
        // two halves above count local − 1 + nodes − 1 of them; the ring's other
        // (local − 1)·(nodes − 1) intra-node steps are added: at a thousand ranks the
        // latency of one collective reaches milliseconds.
        case collective::reduce_scatter:
            return reduce_scatter(op.size, local, intra) + reduce_scatter(shard, nodes, network) +
                   (local - 1.0) * (nodes - 1.0) * intra.latency;
        case collective::all_gather:
            return all_gather(shard, nodes, network) + all_gather(op.size, local, intra) +
                   (local - 1.0) * (nodes - 1.0) * intra.latency;
        case collective::p2p:
        case collective::all_to_all: break;
    }
    return seconds_of(0.0);
}

// A copy between a GPU and its host over the GPU's host link, one direction: latency +
// size / achievable rate, the rate scaled by the host's pageable_copy_efficiency when
// the host side is pageable memory. The link carries both directions at once (PCIe is
// full duplex), but the workload's copies of one direction queue on one stream.
constexpr seconds host_transfer_time(const host_transfer_op& op, const gpu_spec& gpu, const host_spec& host) {
    comm_detail::validate_size(op.size, 1);
    const link_spec& link = gpu.host_link;
    require(link.kind != link_kind::none, "gpu.host_link", to_string(link_kind::none),
            "no host link: nothing can be copied between this GPU and its host");
    validate_link_numbers(link, "gpu.host_link.per_direction_bytes_per_second");
    validate(host);
    const byte_rate rate = op.pageable ? host.pageable_copy_efficiency * link.achievable() : link.achievable();
    return link.latency + op.size / rate;
}

// `total_gpus` consecutive ranks: whole nodes once they span more than one, as many
// per NVLink domain as it holds.
constexpr rank_group contiguous_group(const cluster_spec& c, int total_gpus) {
    node_count(c, total_gpus);
    const int domain = gpus_per_domain(c);
    return {total_gpus, total_gpus < domain ? total_gpus : domain};
}

// Hierarchical all-reduce over consecutive ranks (NCCL/Horovod style, as above).
constexpr seconds hierarchical_all_reduce_time(bytes size, const cluster_spec& c, int total_gpus) {
    comm_detail::validate_size(size, total_gpus);
    return collective_time(collective_op{"all_reduce", collective::all_reduce, size, contiguous_group(c, total_gpus)},
                           c);
}

// Gradient all-reduce over dp consecutive replicas of one GPU each: a flat ring while
// they fit in one node, hierarchical once they span nodes.
constexpr seconds data_parallel_all_reduce_time(bytes size, int dp, const cluster_spec& c) {
    return hierarchical_all_reduce_time(size, c, dp);
}


// ---- One collective, as a user asks for it -------------------------------------------

// One collective of `size` over `gpus` consecutive ranks of a cluster (`trainperf comm`).
// Where NCCL's model covers the system: NCCL's pick of algorithm and protocol (only among
// the algorithm asked for, when ring or tree is), as the engine prices a placed group.
// Otherwise the α–β model. Inside one node: the algorithm asked for, over the link a ring
// of that many GPUs waits on (node_ring_link). Across nodes: as the engine prices a
// placed group (collective_time(collective_op)): hierarchical where a node holds several
// members, the faster of ring and tree on the network, and for an all-reduce a flat ring
// over all GPUs beside it for comparison.
struct collective_estimate {
    collective kind = collective::all_reduce;
    bytes size = bytes_of(0.0);
    int gpus = 1;
    int nodes = 1;  // NVLink domains spanned: nodes, except where NVLink spans nodes (NVL72)
    // NCCL's model: ring, tree, nvls, pat. α–β: ring, tree, auto; hierarchical (several per
    // node across nodes); p2p.
    std::string_view algorithm;
    link_spec ring_link{};          // the link the ring inside a node waits on
    seconds time = seconds_of(0.0);
    std::optional<seconds> flat_ring;  // α–β: an all-reduce across nodes as one ring over all GPUs
    // NCCL's model, where it covers the system: the algorithm and protocol picked, its
    // latency and bandwidth terms and channel count; empty under the α–β model.
    std::optional<nccl_choice> nccl;

    constexpr bool across_nodes() const { return nodes > 1; }
    // nccl-tests' figures: size / time, and that times bus_bandwidth_factor.
    constexpr byte_rate algorithm_bandwidth() const {
        return time.value() > 0 ? size / time : byte_rate::from_value(0.0);
    }
    constexpr byte_rate bus_bandwidth() const { return algorithm_bandwidth() * bus_bandwidth_factor(kind, gpus); }
};

constexpr collective_estimate estimate_collective(collective c, bytes size, int gpus, const cluster_spec& cluster,
                                                  collective_algorithm algorithm = collective_algorithm::ring) {
    require(gpus >= 1, "gpus", gpus, "must be at least 1");
    require(c != collective::p2p || gpus == 2, "gpus", gpus, "p2p is between 2 GPUs");
    require(algorithm != collective_algorithm::tree || c == collective::all_reduce, "algorithm", "tree",
            "only all-reduce has a tree algorithm");
    collective_estimate e{.kind = c, .size = size, .gpus = gpus, .nodes = domain_count(cluster, gpus)};
    const int domain = gpus_per_domain(cluster);
    e.ring_link = node_ring_link(cluster, gpus < domain ? gpus : domain);
    const rank_group group = contiguous_group(cluster, gpus);
    const bool send_recv = c == collective::p2p || c == collective::all_to_all;  // NCCL's send/recv
    if (gpus > 1 && !send_recv && nccl_models(cluster, group)) {
        comm_detail::validate_size(size, gpus);
        validate(intra_node_link(cluster));
        if (e.across_nodes()) validate(inter_node_link(cluster));
        const unsigned allowed = algorithm == collective_algorithm::ring   ? nccl_only(nccl_algorithm::ring)
                                 : algorithm == collective_algorithm::tree ? nccl_only(nccl_algorithm::tree)
                                                                           : nccl_all_algorithms;
        e.nccl = nccl_pick(nccl_system_of(cluster, group), c, size, allowed);
        e.algorithm = to_string(e.nccl->algorithm);
        e.time = e.nccl->time;
        return e;
    }
    if (!e.across_nodes()) {
        e.algorithm = send_recv                     ? "p2p"
                      : c == collective::all_reduce ? to_string(algorithm)
                                                    : "ring";
        e.time = collective_time(c, size, gpus, e.ring_link, algorithm);
        return e;
    }
    require(algorithm != collective_algorithm::tree, "algorithm", "tree",
            "across nodes the collective is hierarchical: NCCL picks ring or tree on the network");
    e.algorithm = send_recv                    ? "p2p"
                  : group.per_node > 1         ? "hierarchical"
                  : c == collective::all_reduce ? "auto"  // NCCL's faster of ring and tree
                                                : "ring";
    e.time = collective_time(collective_op{"collective", c, size, group}, cluster);
    if (c == collective::all_reduce) e.flat_ring = flat_ring_all_reduce_time(size, cluster, gpus);
    return e;
}

}  // namespace trainperf
