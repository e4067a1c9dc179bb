// How a run routes the tokens of its MoE layers: the token dispatcher that moves them to
// their experts' ranks, the capacity of each expert, and how unevenly the router loads
// the experts. Expert parallelism itself (ep, etp) is part of the layout
// (spec/parallel.hpp).
#pragma once

#include <array>
#include <string_view>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"

namespace trainperf {

// Megatron-Core's token dispatchers (--moe-token-dispatcher-type,
// megatron/core/transformer/moe/token_dispatcher.py@d98e8a64):
//   alltoall  (MoEAlltoAllTokenDispatcher): each rank permutes its tokens by expert and
//             sends each expert's share to that expert's rank with an all-to-all over the
//             expert-parallel group (tokens, then their routing probabilities), then
//             all-gathers them over the expert-tensor-parallel group; combine runs the
//             mirror (reduce-scatter over ETP, all-to-all back, unpermute);
//   allgather (MoEAllGatherTokenDispatcher): every rank all-gathers the hidden states and
//             routing of the whole expert-tensor × expert-parallel group and keeps the
//             tokens of its local experts; combine reduce-scatters the outputs back;
//   deepep    (MoEFlexTokenDispatcher with the DeepEP backend, --moe-token-dispatcher-type
//             flex --moe-flex-dispatcher-backend deepep): DeepEP's normal kernels send each
//             token once to every node that holds one of its experts and forward it there
//             over NVLink (deepseek-ai/DeepEP README); combine is the mirror. Its NVLink
//             side spans at most 8 ranks (NUM_MAX_NVL_PEERS 8, csrc/kernels/configs.cuh):
//             a node, never a whole multi-node NVLink domain;
//   hybridep  (the flex dispatcher with the HybridEP backend, --moe-flex-dispatcher-backend
//             hybridep; megatron/core/transformer/moe/README.md@d98e8a64: "native MNNVL
//             support"): the same hierarchy, RDMA between NVLink domains and NVLink (TMA
//             copies) inside one (deepseek-ai/DeepEP docs/README_Hybrid-EP.md, "Hierarchical
//             Communication Design"), the domain being the whole NVLink domain (an NVL72
//             rack); ASSUMPTION: one copy per remote domain a token goes to, as DeepEP.
enum class moe_dispatcher { alltoall, allgather, deepep, hybridep };

template <>
struct enum_names<moe_dispatcher> {
    static constexpr std::array<enum_name<moe_dispatcher>, 4> table{{{moe_dispatcher::alltoall, "alltoall"},
                                                                     {moe_dispatcher::allgather, "allgather"},
                                                                     {moe_dispatcher::deepep, "deepep"},
                                                                     {moe_dispatcher::hybridep, "hybridep"}}};
};

// The flex dispatcher's backends: each token sent once per remote node (or NVLink domain)
// and forwarded inside it.
constexpr bool forwards_by_node(moe_dispatcher d) { return d == moe_dispatcher::deepep || d == moe_dispatcher::hybridep; }

// The NVLink peers DeepEP's normal kernels forward among (LEGACY_NUM_MAX_NVL_PEERS,
// deepseek-ai/DeepEP csrc/kernels/legacy/compiled.cuh@dd758caf).
inline constexpr int deepep_max_nvlink_peers = 8;

// DeepEP's high-throughput dispatch and combine kernels: 20 SMs (Megatron-Core sets
// Buffer.set_num_sms(20) when moe_flex_dispatcher_num_sms is unset, "DeepEP's historical
// mcore default", token_dispatcher.py@d98e8a64; DeepEP's own Buffer.num_sms = 20,
// deepseek-ai/DeepEP deep_ep/buffer.py@94a9f8f6, hybrid-ep branch).
inline constexpr int deepep_sms = 20;

// DeepEP's tuned configurations of its normal kernels by the rank count of the group it
// dispatches over (Buffer.get_dispatch_config and get_combine_config,
// deepseek-ai/DeepEP deep_ep/buffers/legacy.py@dd758caf: Config(num_sms,
// nvl_chunked_send_tokens, nvl_chunked_recv_tokens, rdma_chunked_send_tokens,
// rdma_chunked_recv_tokens)); DeepEP asserts the group is one of these sizes ("Unsupported
// number of EP ranks"). Kept: what sizes its buffers (cost/dispatcher_buffers.hpp).
struct deepep_config {
    int nvl_recv_tokens = 0;   // per channel, per NVLink peer
    int rdma_send_tokens = 0;  // the RDMA receive buffer is a whole number of send chunks
    int rdma_recv_tokens = 0;
};
struct deepep_tuned {
    int ranks = 0;
    deepep_config dispatch, combine;
};
inline constexpr std::array<deepep_tuned, 12> deepep_tuned_configs{{
    {2, {256, 6, 128}, {256, 6, 128}},
    {4, {256, 6, 128}, {256, 6, 128}},
    {8, {256, 6, 128}, {256, 6, 128}},
    {16, {288, 20, 128}, {288, 12, 128}},
    {24, {288, 8, 128}, {288, 8, 128}},
    {32, {288, 8, 128}, {288, 8, 128}},
    {48, {288, 8, 128}, {288, 8, 128}},
    {64, {288, 8, 128}, {288, 8, 128}},
    {96, {480, 12, 128}, {480, 8, 128}},
    {128, {560, 12, 128}, {560, 8, 128}},
    {144, {720, 12, 128}, {720, 8, 128}},
    {160, {720, 12, 128}, {720, 8, 128}},
}};

// DeepEP's configurations for a group of `ranks`, or none where it has no tuned one.
constexpr const deepep_tuned* deepep_tuned_for(int ranks) {
    for (const deepep_tuned& t : deepep_tuned_configs)
        if (t.ranks == ranks) return &t;
    return nullptr;
}

// HybridEP's dispatch and combine: 24 SMs within one NVLink domain, 8 across domains (the
// num_sms_dispatch_api and num_sms_combine_api defaults, DeepEP's hybrid-ep branch
// csrc/hybrid_ep/config.cuh@94a9f8f6; Megatron-Core passes none, fused_a2a.py@d98e8a64).
inline constexpr int hybridep_sms_one_domain = 24, hybridep_sms_across_domains = 8;

constexpr moe_dispatcher parse_moe_dispatcher(std::string_view s) {
    return parse_enum<moe_dispatcher>("moe_dispatcher", s);
}

// ASSUMPTION: the busiest expert's tokens over the mean in a trained router with load
// balancing (Megatron-Core's auxiliary loss or DeepSeek-V3's auxiliary-loss-free bias),
// per micro-batch. The measure is Wang et al. 2024's maximal violation plus one
// (max_i load_i / mean; "Auxiliary-Loss-Free Load Balancing Strategy for
// Mixture-of-Experts", arXiv:2408.15664); the value 1.2 is not taken from a measurement:
// `--moe-imbalance` sets it per run.
inline constexpr double default_moe_imbalance = 1.2;

struct moe_run {
    moe_dispatcher dispatcher = moe_dispatcher::alltoall;
    // Tokens an expert takes at most, as a multiple of its balanced share
    // (--moe-expert-capacity-factor); 0: dropless (every routed token is computed,
    // Megatron-Core's default).
    double capacity_factor = 0;
    // The busiest expert's tokens over the mean (1: perfectly balanced).
    double imbalance = default_moe_imbalance;
    // Megatron-Core's batch-level EP overlap (--overlap-moe-expert-parallel-comm with
    // --delay-wgrad-compute; megatron/core/pipeline_parallel/combined_1f1b.py@d98e8a64):
    // one micro-batch's forward runs layer by layer beside another's backward, each one's
    // dispatch and combine hidden behind the other's compute (cost/step.hpp).
    bool a2a_overlap = false;
    // Megatron-Core's shared-expert overlap (--moe-shared-expert-overlap): the shared
    // experts run on a side stream after the router, their first linear and activation
    // while the tokens are dispatched, their second while the outputs are combined
    // (token_dispatcher.py, shared_experts.py@d98e8a64), not before the router in stream
    // order (cost/stage_pricer.hpp).
    bool shared_expert_overlap = false;
    friend constexpr bool operator==(const moe_run&, const moe_run&) = default;
};

constexpr void validate(const moe_run& r) {
    require(r.capacity_factor == 0 || (r.capacity_factor >= 1 && r.capacity_factor <= 64), "moe_capacity_factor",
            r.capacity_factor, "must be 0 (dropless) or between 1 and 64");
    require(r.imbalance >= 1 && r.imbalance <= 1024, "moe_imbalance", r.imbalance,
            "must be between 1 (balanced) and 1024 (the busiest expert's tokens over the mean)");
}

// The tokens of the busiest expert over the mean: the imbalance, cut at the capacity an
// expert takes (the tokens beyond it are dropped).
constexpr double busiest_expert_load(const moe_run& r) {
    return r.capacity_factor > 0 && r.capacity_factor < r.imbalance ? r.capacity_factor : r.imbalance;
}

// The tokens of the busiest rank over the mean, a rank holding `local` experts.
// ASSUMPTION: the busiest expert shares its rank with experts of mean load, so the rank
// holds (load + local − 1)/local of its balanced share (with one expert per rank, the
// busiest expert's load; with many, the rank evens out).
constexpr double busiest_rank_load(const moe_run& r, double local) {
    const double load = busiest_expert_load(r);
    return local <= 1 ? load : (load + local - 1) / local;
}

}  // namespace trainperf
