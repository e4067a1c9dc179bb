// Where the ranks of a parallel layout sit on the nodes, and so which links each
// communication group uses. Megatron-LM and DeepSpeed number ranks with tensor
// parallelism fastest, then data parallelism, then pipeline stages (Megatron-Core
// parallel_state.initialize_model_parallel, order "tp-cp-ep-dp-pp"; DeepSpeed
// PipeModelDataParallelTopology, axes pipe, data, model), and consecutive ranks fill
// a node. A group whose stride reaches gpus_per_node has one member per node.
#pragma once

#include <algorithm>

#include "error.hpp"
#include "hardware.hpp"
#include "ops.hpp"
#include "parallel.hpp"

namespace trainperf {

// A group of `size` ranks spaced `stride` ranks apart on nodes of gpus_per_node.
constexpr rank_group strided_group(int size, long long stride, int gpus_per_node) {
    require(size >= 1, "group.size", size, "must be at least 1");
    require(gpus_per_node >= 1, "gpus_per_node", gpus_per_node, "must be at least 1");
    if (size == 1) return {1, 1};
    if (stride >= gpus_per_node) return {size, 1};
    const long long per_node = std::max(1LL, gpus_per_node / std::max(1LL, stride));
    return {size, int(std::min<long long>(size, per_node))};
}

struct layout_groups {
    rank_group tensor{};     // one tensor-parallel group
    rank_group data{};       // one data-parallel group (ZeRO shards over it)
    rank_group pipeline{};   // the stages of one pipeline
};

constexpr layout_groups place(const parallel_layout& l, int gpus_per_node,
                              rank_order order = rank_order::tp_dp_pp) {
    if (order == rank_order::tp_pp_dp)
        return {.tensor = strided_group(l.tp, 1, gpus_per_node),
                .data = strided_group(l.dp, 1LL * l.tp * l.pp, gpus_per_node),
                .pipeline = strided_group(l.pp, l.tp, gpus_per_node)};
    return {.tensor = strided_group(l.tp, 1, gpus_per_node),
            .data = strided_group(l.dp, l.tp, gpus_per_node),
            .pipeline = strided_group(l.pp, 1LL * l.tp * l.dp, gpus_per_node)};
}

// Two neighbouring pipeline stages (a send) or the first and the last stage (tied
// embeddings): in one node only while the whole pipeline is.
constexpr rank_group stage_pair(const layout_groups& g) {
    return {2, g.pipeline.inside_one_node() ? 2 : 1};
}

}  // namespace trainperf
