// The device memory an MoE token dispatcher allocates for itself, outside PyTorch's
// caching allocator: DeepEP's communication buffers, sized from its tuned configurations
// (spec/moe_run.hpp deepep_tuned_configs) as Megatron-Core asks for them. cost/memory.hpp
// adds them to a stage that holds MoE layers, beside the allocator's peak (no
// fragmentation on them).
#pragma once

#include <algorithm>

#include "../core/units.hpp"
#include "../spec/model.hpp"
#include "../spec/moe_run.hpp"
#include "../spec/parallel.hpp"

namespace trainperf {

namespace dispatcher_detail {
// DeepEP's legacy kernels' constants (deepseek-ai/DeepEP@dd758caf): at most 8 NVLink
// peers (spec/moe_run.hpp deepep_max_nvlink_peers), a 32 MiB workspace
// (LEGACY_NUM_WORKSPACE_BYTES, cudaMalloc'd by the Buffer, csrc/legacy/buffer.hpp); the
// buffers' per-token metadata slots (Config::get_*_buffer_size_hint,
// csrc/legacy/config.hpp): a SourceMeta of two ints, 128 top-k indices of 8 B (topk_idx_t
// is int64_t by default, deep_ep/include/deep_ep/common/compiled.cuh), 128 top-k weights
// and 128 scales of 4 B.
inline constexpr double workspace_bytes = 32.0 * 1024 * 1024;
inline constexpr double source_meta_bytes = 8;
inline constexpr double token_metadata_bytes = source_meta_bytes + 128 * 8 + 128 * 4 + 128 * 4;

constexpr double align_up(double v, double to) {
    const double whole = double(static_cast<long long>(v / to));
    return (whole * to < v ? whole + 1 : whole) * to;
}

// Config::get_nvl_buffer_size_hint: per channel (num_sms / 2) and NVLink peer, the
// receive queue's tokens with their hidden bytes and metadata, and the queues' head and
// tail counters; rounded up to 128 B.
constexpr double nvl_buffer_bytes(const deepep_config& c, double hidden_bytes, int ranks, int sms) {
    const double channels = sms / 2, nvl = std::min(ranks, deepep_max_nvlink_peers),
                 rdma = std::max(ranks / deepep_max_nvlink_peers, 1);
    const double bytes = channels * nvl * (2 * rdma + 3) * 4 +
                         channels * nvl * c.nvl_recv_tokens * (hidden_bytes + token_metadata_bytes);
    return align_up(bytes, 128);
}

// Config::get_rdma_buffer_size_hint: none within one node (at most 8 ranks); else per
// channel and remote node, send and receive halves of the receive queue (a whole number
// of send chunks: the Config constructor rounds it up) with the tokens' hidden bytes,
// metadata and a 16 B tail each, and the counters; rounded up to 128 B.
constexpr double rdma_buffer_bytes(const deepep_config& c, double hidden_bytes, int ranks, int sms) {
    if (ranks <= deepep_max_nvlink_peers) return 0;
    const double channels = sms / 2, rdma = ranks / deepep_max_nvlink_peers;
    const double recv = align_up(c.rdma_recv_tokens, c.rdma_send_tokens);
    const double bytes = channels * rdma * (deepep_max_nvlink_peers * 2 + 2) * 2 * 4 +
                         channels * rdma * recv * (hidden_bytes + token_metadata_bytes + 16) * 2;
    return align_up(bytes, 128);
}
}  // namespace dispatcher_detail

// DeepEP's buffers for a group of `ranks` (one with a tuned configuration) and tokens of
// `hidden_bytes`: Megatron-Core allocates the larger of the dispatch and combine
// configurations' NVLink and RDMA hints (get_buffer, megatron/core/transformer/moe/
// fused_a2a.py@d98e8a64) with the Buffer's SM count; the NVLink buffer and the workspace
// are cudaMalloc'd, the RDMA buffer comes from NVSHMEM's symmetric heap. ASSUMPTION: the
// heap holds what DeepEP asks for; NVSHMEM's own rounding and bookkeeping are left out, so
// across nodes this is a lower bound: DeepEP sets NVSHMEM_CUMEM_GRANULARITY to 512 MiB
// (deep_ep/buffers/legacy.py), and if the heap maps whole granules, DeepSeek-V3's 336 MB
// RDMA buffer at ep 64 takes 537 MB, 201 MB more.
constexpr bytes deepep_buffer_bytes(double hidden_bytes, int ranks, int sms = deepep_sms) {
    const deepep_tuned* t = deepep_tuned_for(ranks);
    if (t == nullptr) return bytes_of(0);  // validate() refuses such a group
    using namespace dispatcher_detail;
    const double nvl = std::max(nvl_buffer_bytes(t->dispatch, hidden_bytes, ranks, sms),
                                nvl_buffer_bytes(t->combine, hidden_bytes, ranks, sms));
    const double rdma = std::max(rdma_buffer_bytes(t->dispatch, hidden_bytes, ranks, sms),
                                 rdma_buffer_bytes(t->combine, hidden_bytes, ranks, sms));
    return bytes_of(nvl + rdma + workspace_bytes);
}

// What the setup's dispatcher holds outside the allocator on a rank with MoE layers: with
// DeepEP, its buffers over the etp × ep group (etp 1), tokens of h · max(element size, 2)
// bytes (get_hidden_bytes: a 16-bit hidden state, or an FP8 one padded to 2 B); none with
// the other dispatchers (NCCL's buffers are not counted for any collective; HybridEP's are
// not modelled).
constexpr bytes dispatcher_buffer_bytes(const transformer_config& m, const moe_run& run, const parallel_layout& p) {
    if (!has_moe(m) || run.dispatcher != moe_dispatcher::deepep) return bytes_of(0);
    return deepep_buffer_bytes(2.0 * m.hidden, p.ep * p.expert_tp());
}

}  // namespace trainperf
