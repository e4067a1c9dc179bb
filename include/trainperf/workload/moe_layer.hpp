// The routed experts of one MoE layer on one rank, as ops, as Megatron-Core runs them
// (megatron/core/transformer/moe/, NVIDIA/Megatron-LM@d98e8a64): the router, the
// permutation of the rank's tokens by expert, their dispatch to the experts' ranks and
// back (spec/moe_run.hpp moe_dispatcher), the grouped GEMMs of the rank's local experts
// and their activation, forward and backward. The layer's attention, norms and shared
// experts are a dense layer's ops (workload/stage.hpp for_each_layer_op); nothing here
// prices an op.
#pragma once

#include <algorithm>
#include <string_view>

#include "../core/dtype.hpp"
#include "../core/units.hpp"
#include "../spec/model.hpp"
#include "../spec/moe_run.hpp"
#include "../spec/parallel.hpp"
#include "../spec/precision.hpp"
#include "../spec/setup.hpp"
#include "layer.hpp"
#include "ops.hpp"
#include "placement.hpp"

namespace trainperf {

// What the routed part of an MoE layer handles on the busiest rank of a layout.
//   routed:  the tokens the rank routes: its sequence-parallel share of the micro-batch,
//            b·s/(cp·tp) (Megatron-Core routes the sequence-parallel shard; MoE with
//            tensor parallelism needs sequence parallelism, spec/parallel.hpp);
//   computed: the token copies its local experts compute. Balanced, each of the ep ranks
//            receives routed·k from its expert-parallel group, and the expert-tensor-
//            parallel all-gather brings etp ranks' together: routed·k·etp; the busiest
//            rank holds busiest_rank_load times that (spec/moe_run.hpp), cut at the
//            capacity factor;
//   local:   its experts, E/ep, each an FFN of width f_e/etp on this rank.
struct moe_layer_extent {
    double routed = 1;
    double computed = 1;
    double local = 1;
    double width = 1;      // one local expert's inner width on this rank
    double load = 1;       // the busiest rank's tokens over the mean
};

constexpr moe_layer_extent moe_layer_extent_of(const transformer_config& m, const parallel_layout& l,
                                               const moe_run& run, const layer_context& ctx) {
    const double etp = l.expert_tp();
    const double routed = rank_tokens(ctx) / (ctx.sp ? ctx.tp : 1);
    const double local = double(m.moe.experts) / l.ep;
    const double load = busiest_rank_load(run, local);
    return {.routed = routed,
            .computed = routed * m.moe.experts_per_token * etp * load,
            .local = local,
            .width = m.moe.expert_ffn_hidden / etp,
            .load = load};
}

// The grouped GEMMs of the local experts, forward: fc1 (gate and up together for SwiGLU,
// as Megatron-Core's experts fuse them) and fc2, each a batch of `local` GEMMs of the
// tokens one expert computes. ASSUMPTION: the busiest rank's tokens spread evenly over its
// experts, at least one row each (a GEMM computes whole tiles whatever it is given).
struct expert_gemms {
    gemm_op fc1{}, fc2{};
};

constexpr expert_gemms expert_forward_gemms(const transformer_config& m, const moe_layer_extent& e,
                                            const layer_context& ctx) {
    const dtype lin = ctx.quantized_linears ? quantized_dtype(ctx.scaling) : ctx.math;
    const double rows = std::max(1.0, e.computed / e.local);
    const double in = m.ffn == ffn_kind::swiglu ? 2.0 : 1.0;
    return {{"expert_fc1", {rows, in * e.width, double(m.hidden), e.local, lin}, op_phase::forward, op_region::other,
             layer_block::mlp},
            {"expert_fc2", {rows, double(m.hidden), e.width, e.local, lin}, op_phase::forward, op_region::other,
             layer_block::mlp}};
}

// The router's GEMM: the routed tokens' logits over every expert (a Linear h → E, in the
// layer's 16-bit math: --moe-router-dtype unset).
constexpr gemm_op router_gemm(const transformer_config& m, const moe_layer_extent& e, const layer_context& ctx) {
    return {"router", {e.routed, double(m.moe.experts), double(m.hidden), 1, ctx.math}, op_phase::forward,
            op_region::other, layer_block::mlp};
}

// The nodes a token's copies go to, expected, as DeepEP sizes its traffic (its
// get_expected_topk, deepseek-ai/DeepEP: E experts split evenly over the nodes, k picked
// uniformly: nodes·(1 − C(E − E/nodes, k)/C(E, k))), capped by group-limited routing at
// groups_per_token·nodes/expert_groups (ASSUMPTION: the expert groups map evenly onto the
// nodes, as DeepSeek-V3 sets its 8 groups for 8 nodes).
constexpr double expected_token_nodes(const moe_config& e, double nodes) {
    if (nodes <= 1) return 1;
    const double experts = e.experts, elsewhere = experts - experts / nodes;  // not on one node
    double miss = 1;  // C(elsewhere, k)/C(E, k), as a product
    for (int i = 0; i < e.experts_per_token && miss > 0; ++i)
        miss *= std::max(0.0, elsewhere - i) / (experts - i);
    const double hit = nodes * (1 - miss);
    if (e.expert_groups <= 1) return hit;
    return std::min(hit, std::max(1.0, e.groups_per_token * nodes / e.expert_groups));
}

// The collectives of one MoE layer's dispatch and combine, forward, to sink(op,
// with_backward): with_backward when backward runs it again on the gradients (the same
// size), not for the routing metadata, which carries no gradient. On the groups they span
// (workload/placement.hpp), sized for the busiest rank (what it receives paces the
// collective). a is the activations' format, which the routing probabilities take too
// (Megatron-Core casts them to the logits' dtype without --moe-router-dtype,
// moe_utils.py@d98e8a64).
//   alltoall:  the tokens each expert has from each rank, all-gathered over the etp·ep
//              group (E int64 per rank: the all-to-all's split sizes); the permuted tokens
//              routed·k·h·a·load and their probabilities routed·k·a·load to the experts'
//              ranks over the ep group; with etp > 1 both all-gathered over the
//              expert-tensor-parallel group (computed·h·a and computed·a); combine:
//              reduce-scatter over etp, all-to-all back of the outputs;
//   allgather: the hidden states routed·h·a of every rank of the etp·ep group
//              all-gathered, and apart the routing map (E bytes per token) and the
//              probabilities (E·a); combine: the outputs reduce-scattered;
//   deepep, hybridep: the k copies routed·k·h·a·load over the ep group with node
//              forwarding (collective_op::network_share): over the network one copy per
//              remote node a token goes to, expected_token_nodes·(nodes − 1)/nodes of the
//              k (ASSUMPTION: the rank's own node as likely as any); combine the mirror.
//              DeepEP's "node" is the group's ranks on one node, at most 8
//              (deepep_max_nvlink_peers; `gpus_per_node` is the node's GPUs), so across
//              the trays of an NVL72 rack it sends over RDMA; HybridEP's is the group's
//              ranks in one NVLink domain (the rack), as the group is placed.
template <class Sink>
constexpr void for_each_dispatch_collective(const transformer_config& m, const parallel_layout& l, const moe_run& run,
                                            const moe_layer_extent& e, double a, const layout_groups& groups,
                                            int gpus_per_node, Sink&& sink) {
    const double h = m.hidden, k = m.moe.experts_per_token, experts = m.moe.experts;
    const double etp = l.expert_tp(), ranks = etp * l.ep;
    const rank_group both = groups.expert_tensor_and_expert;
    if (forwards_by_node(run.dispatcher)) {
        if (l.ep == 1) return;  // etp is 1 with the flex dispatcher (spec/setup.hpp)
        const bool deepep = run.dispatcher == moe_dispatcher::deepep;
        rank_group group = groups.expert;
        if (deepep) group.per_node = std::min({group.per_node, gpus_per_node, deepep_max_nvlink_peers});
        const double nodes = group.nodes();
        collective_op dispatch{deepep ? "moe_dispatch_deepep" : "moe_dispatch_hybridep", collective::all_to_all,
                               bytes_of(e.routed * k * h * a * e.load), group};
        dispatch.network_share = expected_token_nodes(m.moe, nodes) * (nodes - 1) / nodes / k;
        dispatch.sms = deepep                     ? deepep_sms
                       : group.inside_one_node() ? hybridep_sms_one_domain
                                                 : hybridep_sms_across_domains;
        sink(dispatch, true);
        collective_op combine = dispatch;
        combine.name = deepep ? "moe_combine_deepep" : "moe_combine_hybridep";
        sink(combine, true);
        return;
    }
    if (run.dispatcher == moe_dispatcher::allgather) {
        if (ranks == 1) return;
        sink(collective_op{"moe_dispatch_all_gather", collective::all_gather, bytes_of(ranks * e.routed * h * a), both},
             true);
        sink(collective_op{"moe_routing_map_all_gather", collective::all_gather, bytes_of(ranks * e.routed * experts),
                           both},
             false);
        sink(collective_op{"moe_probabilities_all_gather", collective::all_gather,
                           bytes_of(ranks * e.routed * experts * a), both},
             false);
        sink(collective_op{"moe_combine_reduce_scatter", collective::reduce_scatter,
                           bytes_of(ranks * e.routed * h * a), both},
             true);
        return;
    }
    if (ranks > 1)
        sink(collective_op{"moe_tokens_per_expert_all_gather", collective::all_gather,
                           bytes_of(ranks * experts * 8.0), both},  // int64 counts
             false);
    if (l.ep > 1) {
        sink(collective_op{"moe_dispatch_all_to_all", collective::all_to_all, bytes_of(e.routed * k * h * a * e.load),
                           groups.expert},
             true);
        sink(collective_op{"moe_probabilities_all_to_all", collective::all_to_all,
                           bytes_of(e.routed * k * a * e.load), groups.expert},
             true);
    }
    if (etp > 1) {
        sink(collective_op{"moe_dispatch_all_gather", collective::all_gather, bytes_of(e.computed * h * a),
                           groups.expert_tensor},
             true);
        sink(collective_op{"moe_probabilities_all_gather", collective::all_gather, bytes_of(e.computed * a),
                           groups.expert_tensor},
             true);
        sink(collective_op{"moe_combine_reduce_scatter", collective::reduce_scatter, bytes_of(e.computed * h * a),
                           groups.expert_tensor},
             true);
    }
    if (l.ep > 1)
        sink(collective_op{"moe_combine_all_to_all", collective::all_to_all, bytes_of(e.routed * k * h * a * e.load),
                           groups.expert},
             true);
}

// The memory-bound ops of one MoE layer's routed part, forward (their backward is the
// elementwise backward, workload/layer.hpp backward_of), to sink(const memory_op&):
//   router_scores   the logits scored (softmax or sigmoid), the top k picked, the
//                   probabilities normalised (and an auxiliary loss where one is
//                   configured): ASSUMPTION 4 passes over routed·E fp32 values, 8 kernels;
//   tokens_per_expert_sync  the tokens per expert copied to the host and waited for
//                   (token_dispatcher.py _maybe_dtoh_and_synchronize; the allgather
//                   dispatcher's .cpu()): ASSUMPTION one kernel launch's idle time on the
//                   GPU, no bytes to speak of (the host's lead over the GPU is lost
//                   besides: not modelled);
//   permute         alltoall: the routed tokens gathered into expert order, k copies:
//                   reads routed·h·a, writes routed·k·h·a; allgather: the local experts'
//                   copies picked from the gathered tokens, deepep and hybridep: the received copies
//                   put in expert order, computed·h·a read and written (Transformer
//                   Engine's fused permute; ASSUMPTION 2 kernels);
//   sort_chunks     the alltoall dispatcher with several local experts re-sorts the
//                   received chunks by local expert (sort_chunks_by_idxs): reads and
//                   writes computed·h·a;
//   expert_activation  SwiGLU on the fc1 output weighted by each copy's probability
//                   (experts.py's weighted activation): reads 2 and writes 1 per element of
//                   computed·width and the probabilities (GELU reads and writes one);
//   unsort_chunks, unpermute  the mirror of sort and permute (the copies summed back);
//   expert_quantize (fp8, nvfp4) the inputs and the local experts' weights of both
//                   grouped GEMMs cast to the quantized format once per forward, and as
//                   many output-gradient elements in backward (expert_cast_bytes_per_element
//                   each), 4 kernels. Where the framework makes
//                   the quantized weights once a step (layer_context::weights_once_a_step:
//                   Megatron-Core's TEGroupedLinear passes is_first_microbatch too,
//                   megatron/core/extensions/transformer_engine.py@d98e8a64), the inputs only, 2
//                   kernels (ASSUMPTION), and the weights in the step's ops
//                   (expert_fp8_weights_op).
// The weights of the rank's local experts in one MoE layer: both grouped GEMMs' (fc1 of
// width in·w, SwiGLU's gate and up, and fc2).
constexpr double local_expert_weights(const transformer_config& m, const moe_layer_extent& e) {
    const double in = m.ffn == ffn_kind::swiglu ? 2.0 : 1.0;
    return e.local * (in + 1) * m.hidden * e.width;
}

// Bytes per element of expert_quantize's cast: ASSUMPTION an amax pass and a cast, reading
// the 16-bit tensor twice and writing the quantized bytes (with the transpose where the GPU
// needs one).
constexpr double expert_cast_bytes_per_element(const layer_context& ctx) {
    const double a = size_of(activation_formats_of(ctx.activations, ctx.autocast).gemm_inputs);
    return 2 * a + size_of(quantized_dtype(ctx.scaling)) * (ctx.fp8_transposes ? 2.0 : 1.0);
}

// The local experts' quantized weights of `layers` MoE layers made once a step
// (layer_context::weights_once_a_step): cast as expert_quantize casts them (2 launches per
// layer, ASSUMPTION), or, FP8 primary weights, what is built after their gather as for a
// Linear (workload/fp8.hpp make_fp8_weights_op), one launch per grouped GEMM.
constexpr memory_op expert_fp8_weights_op(const transformer_config& m, const moe_layer_extent& e,
                                          const layer_context& ctx, double layers, bool primary) {
    memory_op op{"fp8_make_expert_weights", bytes_of(0.0), op_phase::forward, op_region::other, 0,
                 layer_block::mlp, true};
    if (!ctx.quantized_linears || !ctx.weights_once_a_step) return op;
    const double per = primary ? fp8_primary_weight_rebuild_bytes(ctx.scaling, ctx.fp8_transposes)
                               : expert_cast_bytes_per_element(ctx);
    if (per > 0) {
        op.moved = bytes_of(layers * local_expert_weights(m, e) * per);
        op.launches = 2 * layers;
    }
    return op;
}

template <class Sink>
constexpr void for_each_routed_memory_op(const transformer_config& m, const parallel_layout& l, const moe_run& run,
                                         const moe_layer_extent& e, const layer_context& ctx, Sink&& sink) {
    const double a = size_of(activation_formats_of(ctx.activations, ctx.autocast).gemm_inputs);
    const double h = m.hidden, k = m.moe.experts_per_token, f32 = size_of(dtype::fp32);
    const auto op = [](std::string_view name, double moved, double launches) {
        return memory_op{name, bytes_of(moved), op_phase::forward, op_region::other, launches, layer_block::mlp};
    };
    sink(op("router_scores", 4 * e.routed * m.moe.experts * f32, 8));
    sink(op("tokens_per_expert_sync", 0, 1));
    // alltoall: the rank's own tokens into k copies in expert order; the others:
    // the local experts' copies put in expert order as they arrive (reads and writes each).
    const bool local_permute = run.dispatcher != moe_dispatcher::alltoall;
    const bool gathered = run.dispatcher == moe_dispatcher::allgather;
    const double all_gathered = e.routed * l.ep * l.expert_tp();  // the allgather dispatcher's buffer
    sink(op("permute", local_permute ? 2 * e.computed * h * a : e.routed * (1 + k) * h * a, 2));
    const bool sorts = !local_permute && e.local > 1;
    if (sorts) sink(op("sort_chunks", 2 * e.computed * h * a, 2));
    if (ctx.quantized_linears) {
        const double weights = ctx.weights_once_a_step ? 0.0 : local_expert_weights(m, e);
        sink(memory_op{"expert_quantize",
                       bytes_of((e.computed * (h + e.width) + weights) * expert_cast_bytes_per_element(ctx)),
                       op_phase::forward, op_region::other, ctx.weights_once_a_step ? 2.0 : 4.0, layer_block::mlp,
                       true});
    }
    sink(op("expert_activation", ((m.ffn == ffn_kind::swiglu ? 3.0 : 2.0) * e.width + 1) * e.computed * a, 1));
    if (sorts) sink(op("unsort_chunks", 2 * e.computed * h * a, 2));
    // alltoall: the k copies summed back into the rank's tokens; allgather: the local
    // copies scattered into a zeroed buffer of the gathered size; deepep and hybridep: back out of
    // expert order for the combine.
    sink(op("unpermute", gathered        ? (2 * e.computed + all_gathered) * h * a
                         : local_permute ? 2 * e.computed * h * a
                                         : e.routed * (1 + k) * h * a,
            2));
}

}  // namespace trainperf
