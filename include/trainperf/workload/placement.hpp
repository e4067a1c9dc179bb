// Where the ranks of a parallel layout sit on the nodes, and so which links each
// communication group uses. Megatron-LM and DeepSpeed number ranks with tensor
// parallelism fastest, then context parallelism (Megatron-Core only), then data
// parallelism, then pipeline stages (Megatron-Core
// parallel_state.initialize_model_parallel, order "tp-cp-ep-dp-pp"; DeepSpeed
// PipeModelDataParallelTopology, axes pipe, data, model), and consecutive ranks fill
// a node. A group whose stride reaches gpus_per_node has one member per node. The
// context-parallel group sits right after tp (stride tp) in either order.
//
// "Node" here is what one intra-node link joins: the caller passes the NVLink domain
// (spec/hardware.hpp gpus_per_domain), which is the node except on systems whose NVLink
// spans nodes (an NVL72 rack: 72 GPUs over 18 trays of 4).
#pragma once

#include <algorithm>

#include "../core/error.hpp"
#include "../spec/hardware.hpp"
#include "../spec/parallel.hpp"
#include "ops.hpp"

namespace trainperf {

namespace placement_detail {
constexpr void require_members(long long size) { require(size >= 1, "group.size", size, "must be at least 1"); }
constexpr void require_node_size(int gpus_per_node) {
    require(gpus_per_node >= 1, "gpus_per_node", gpus_per_node, "must be at least 1");
}
constexpr void require_at_most_max_gpus(long long size) {
    require(size <= max_gpus, "group.size", size, "must be at most 2^22");
}

// strided_group and nested_group below, for sizes and a node size already checked.
constexpr rank_group strided(int size, long long stride, int gpus_per_node) {
    if (size == 1) return {1, 1};
    if (stride >= gpus_per_node) return {size, 1};
    const long long per_node = std::max(1LL, gpus_per_node / std::max(1LL, stride));
    return {size, int(std::min<long long>(size, per_node))};
}

constexpr rank_group nested(int inner, long long inner_stride, int outer, long long outer_stride, int gpus_per_node) {
    const rank_group in = strided(inner, inner_stride, gpus_per_node);
    const rank_group out = strided(outer, outer_stride, gpus_per_node);
    const long long size = 1LL * inner * outer;
    if (!in.inside_one_node() || 1LL * inner * inner_stride > gpus_per_node) return {int(size), in.per_node};
    return {int(size), int(std::min<long long>(size, 1LL * in.per_node * out.per_node))};
}
}  // namespace placement_detail

// A group of `size` ranks spaced `stride` ranks apart on nodes of gpus_per_node.
constexpr rank_group strided_group(int size, long long stride, int gpus_per_node) {
    placement_detail::require_members(size);
    placement_detail::require_node_size(gpus_per_node);
    return placement_detail::strided(size, stride, gpus_per_node);
}

// A group of `inner` ranks `inner_stride` apart, repeated `outer` times `outer_stride`
// apart (the data-parallel-with-cp group: the cp ranks, then the dp replicas). Its
// members in one node: those of the inner group there, times the outer repeats that
// share the node once the inner group fits in one.
constexpr rank_group nested_group(int inner, long long inner_stride, int outer, long long outer_stride,
                                  int gpus_per_node) {
    placement_detail::require_members(inner);
    placement_detail::require_node_size(gpus_per_node);
    placement_detail::require_members(outer);
    placement_detail::require_at_most_max_gpus(1LL * inner * outer);
    return placement_detail::nested(inner, inner_stride, outer, outer_stride, gpus_per_node);
}

struct layout_groups {
    rank_group tensor{};     // one tensor-parallel group
    rank_group data{};       // one data-parallel group (the replicas of one rank)
    rank_group pipeline{};   // the stages of one pipeline
    rank_group context{};    // one context-parallel group (the KV ring)
    rank_group data_context{};  // dp × cp: gradients reduce and ZeRO shards over it
    // Hybrid sharding (layout.shard_group): the ranks one shard of ZeRO's state spans
    // (the cp ranks and consecutive dp replicas), and the replicas of a shard. Without
    // it, shard = data_context and replica is one rank.
    rank_group shard{};
    rank_group replica{};
    // Expert parallelism (MoE models), numbered as Megatron-Core numbers the expert ranks
    // (parallel_state.py@d98e8a64: the same order with etp for tp, ep, edp for dp and no
    // cp): one expert's etp ranks (stride 1), the ep ranks the experts are split over
    // (stride etp: the token dispatch's group), and the edp replicas of an expert shard
    // (their gradients reduce over it).
    rank_group expert_tensor{};
    rank_group expert{};
    rank_group expert_data{};
    rank_group expert_tensor_and_expert{};  // etp·ep consecutive ranks (the allgather dispatcher's)
};

constexpr layout_groups place(const parallel_layout& l, int gpus_per_node,
                              rank_order order = rank_order::tp_dp_pp) {
    using namespace placement_detail;
    // The checks of the groups' strided_group and nested_group, each once, in the order
    // the groups are built.
    require_members(l.tp);
    require_node_size(gpus_per_node);
    require_members(l.dp);
    require_members(l.pp);
    require_members(l.cp);
    require_at_most_max_gpus(1LL * l.cp * l.dp);
    const int shard_replicas_dp = l.shard_size() / l.cp;  // dp replicas in one shard group
    require_members(shard_replicas_dp);
    require_at_most_max_gpus(1LL * l.cp * shard_replicas_dp);
    require_members(l.shard_replicas());
    const long long tp_cp = 1LL * l.tp * l.cp;
    // The stride between data-parallel replicas in the rank order.
    const long long dp_stride = order == rank_order::tp_pp_dp ? tp_cp * l.pp : tp_cp;
    return {.tensor = strided(l.tp, 1, gpus_per_node),
            .data = strided(l.dp, dp_stride, gpus_per_node),
            .pipeline = order == rank_order::tp_pp_dp ? strided(l.pp, tp_cp, gpus_per_node)
                                                      : strided(l.pp, tp_cp * l.dp, gpus_per_node),
            .context = strided(l.cp, l.tp, gpus_per_node),
            .data_context = nested(l.cp, l.tp, l.dp, dp_stride, gpus_per_node),
            .shard = nested(l.cp, l.tp, shard_replicas_dp, dp_stride, gpus_per_node),
            .replica = strided(l.shard_replicas(), dp_stride * shard_replicas_dp, gpus_per_node),
            .expert_tensor = strided(l.expert_tp(), 1, gpus_per_node),
            .expert = strided(l.ep, l.expert_tp(), gpus_per_node),
            .expert_data = strided(l.expert_dp(), order == rank_order::tp_pp_dp ? 1LL * l.expert_tp() * l.ep * l.pp
                                                                                 : 1LL * l.expert_tp() * l.ep,
                                   gpus_per_node),
            .expert_tensor_and_expert = strided(l.expert_tp() * l.ep, 1, gpus_per_node)};
}

// Two neighbouring pipeline stages (a send) or the first and the last stage (tied
// embeddings): in one node only while the whole pipeline is.
constexpr rank_group stage_pair(const layout_groups& g) {
    return {2, g.pipeline.inside_one_node() ? 2 : 1};
}

}  // namespace trainperf
