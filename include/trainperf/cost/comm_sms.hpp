// The SMs a collective's kernels hold while they run, and so the share of the GPU left to
// compute that overlaps them (an MoE layer's dispatch beside the shared experts or another
// micro-batch's pass: cost/stage_pricer.hpp, cost/step.hpp). Communication kernels are
// resident for the whole collective; the compute beside it runs on the other SMs.
#pragma once

#include <algorithm>
#include <bit>

#include "../spec/hardware.hpp"
#include "../workload/ops.hpp"
#include "nccl_model.hpp"

namespace trainperf {

// The SMs of one collective: its own count where the op says (collective_op::sms: DeepEP's
// and HybridEP's, spec/moe_run.hpp), else
// NCCL's, one CTA per channel: a collective (all-gather, reduce-scatter) on the
// communicator's channels (its ring graph's, cost/nccl_model.hpp), point-to-point sends and
// receives (an all-to-all) on p2pnChannels, the channels rounded up to a power of two
// (ncclTopoComputeP2pChannels, NVIDIA/nccl src/graph/paths.cc@5067397c: NCCL_MAX_P2P_NCHANNELS
// defaults to MAXCHANNELS, above the 32 ring channels NCCL searches). ASSUMPTION: every
// channel runs for the whole collective (NCCL may use fewer channels per peer or for small
// messages: an upper bound on the SMs held); where NCCL's model does not price the group
// (no NVLink, cost/comm.hpp's α–β model) the channel count is not known and none is counted.
inline double collective_sms(const collective_op& op, const cluster_spec& c) {
    if (op.sms > 0) return op.sms;
    if (op.group.size < 2 || !nccl_models(c, op.group)) return 0;
    const int channels = nccl_system_memo(nccl_inputs_of(c, op.group)).ring.channels;
    if (channels < 1) return 0;
    return op.kind == collective::all_to_all ? double(std::bit_ceil(unsigned(channels))) : double(channels);
}

// The share of the GPU's SMs that compute overlapping the collective keeps.
inline double compute_share_beside(const collective_op& op, const cluster_spec& c) {
    const double sms = c.gpu.sm_count;
    return std::max(0.0, 1.0 - collective_sms(op, c) / sms);
}

}  // namespace trainperf
