// The device memory Transformer Engine's userbuffers hold for tensor-parallel
// communication overlapped with the GEMMs (the framework's tensor_parallel_overlap with
// sequence parallelism, Megatron-Core --tp-comm-overlap), outside PyTorch's caching
// allocator. cost/memory.hpp adds them to every stage beside the allocator's peak (no
// slack on them), as it adds DeepEP's buffers (cost/dispatcher_buffers.hpp).
//
// Megatron-LM initialises them once per rank whenever --tp-comm-overlap is given
// (_initialize_tp_communicators, megatron/training/initialize.py@d98e8a64), with the
// shape [s·b/cp, h] (the whole sequence of a micro-batch on the context-parallel rank,
// not split by tp), in bf16, and in FP8 (quantization mode FP8) when --fp8-format is set;
// NVFP4 training sets --fp4-format instead, so its buffers stay bf16. Transformer Engine's
// initialize_ub (transformer_engine/pytorch/module/base.py@d0067d0d) registers one buffer
// per GEMM it overlaps, with its default configuration:
//   ring exchange  qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad   all-gathers
//   pipeline       proj_fprop, fc2_fprop                          reduce-scatters
//   bulk           qkv_dgrad, fc1_dgrad (all-gathers), qkv_wgrad, fc1_wgrad (reduce-scatters)
//   external       proj_wgrad, fc2_wgrad                          all-gathers
// Each holds the shape's elements (CommOverlapBase and CommOverlapP2PBase::initialize,
// transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp@d0067d0d; a ring-
// exchange reduce-scatter would hold (2·tp − 1)/tp of it, none by default), in one byte
// for the all-gathers' buffers under FP8 ("fp8_buf", the layers_all_gather_overlap list)
// and in bf16 otherwise. ASSUMPTIONs: the default configuration (no
// --tp-comm-overlap-cfg; Megatron Bridge's per-model configurations move some dgrads to
// other methods); counted wherever the switch is on with sp and tp > 1, as Megatron-LM
// initialises them whatever the placement (a tensor group spanning NVLink domains is
// priced as not overlapped, spec/setup.hpp overlaps_tensor_parallel); the second set of
// 12 that --first-last-layers-bf16 registers under FP8 (a second quantization mode) and
// the allocation granularity's rounding left out.
#pragma once

#include "../core/dtype.hpp"
#include "../core/units.hpp"
#include "../spec/framework_profile.hpp"
#include "../spec/model.hpp"
#include "../spec/parallel.hpp"
#include "../spec/precision.hpp"

namespace trainperf {

namespace userbuffers_detail {
inline constexpr double all_gather_buffers = 8;      // FP8 under an FP8 recipe
inline constexpr double reduce_scatter_buffers = 4;  // bf16 always
}  // namespace userbuffers_detail

// The userbuffers a rank holds (zero without the overlap): each of the 12 buffers holds
// s·b/cp × h elements.
constexpr bytes userbuffer_bytes(const transformer_config& m, const precision_recipe& r, const parallel_layout& p,
                                 int seq, const framework_profile& fw) {
    using namespace userbuffers_detail;
    if (!(fw.tensor_parallel_overlap && p.sp && p.tp > 1)) return bytes_of(0);
    const double elements = double(seq) * p.micro_batch / p.cp * m.hidden;
    const double bf16 = size_of(dtype::bf16);
    const double gathered = quantized_linears(r) && r.scaling != fp8_scaling::nvfp4 ? size_of(dtype::fp8) : bf16;
    return bytes_of(elements * (all_gather_buffers * gathered + reduce_scatter_buffers * bf16));
}

}  // namespace trainperf
