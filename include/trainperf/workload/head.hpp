// The head, the loss and the embedding of one micro-batch, as ops: the logits GEMM over
// the vocabulary (split by tp), the loss's kernels as its code runs them
// (framework_profile::loss), the embedding's lookup, and the tensor-parallel collectives
// of the head's input, the embedding's output and the loss.
#pragma once

#include <string_view>

#include "../core/dtype.hpp"
#include "../core/units.hpp"
#include "../spec/framework_profile.hpp"
#include "../spec/model.hpp"
#include "../spec/precision.hpp"
#include "../spec/setup.hpp"
#include "layer.hpp"
#include "ops.hpp"
#include "placement.hpp"

namespace trainperf {

// What the loss's kernels move per element of the rank's b·s·V/t logits (global-memory
// bytes, forward and backward), how many kernels each pass launches, and how many
// all-reduces of fp32 values per token it runs over tp in forward. Counted from each
// implementation's code (framework_profile::loss), one kernel per eager tensor op.
// ASSUMPTION: every pass over the logits goes to DRAM: a CTA's second and third pass
// over its row (PyTorch's log-softmax) would hit L2 only where the rows in flight fit
// in it, which for the 128k–256k vocabularies where the loss matters they do not.
struct loss_kernels {
    double forward_bytes = 0;
    double backward_bytes = 0;
    double forward_launches = 0;
    double backward_launches = 0;
    double all_reduces = 0;
    double values_per_all_reduce = 1;  // fp32 values per token in each (on average)
};

// `logits`: the format the head's GEMM writes them in; `vocab_split`: the vocabulary
// split over tp > 1 ranks; `compiled`: the loss compiled with torch.compile.
constexpr loss_kernels loss_kernels_of(loss_implementation impl, dtype logits, bool vocab_split, bool compiled) {
    constexpr double f32 = 4;
    const double logit = size_of(logits);
    // Every implementation upcasts the logits to fp32 (a copy unless they are fp32
    // already), and its backward casts the fp32 gradient back.
    const double upcast = logit != f32 ? logit + f32 : 0.0;
    const double cast = logit != f32 ? 1.0 : 0.0;
    const double all_reduces = vocab_split ? 3.0 : 0.0;
    if (impl == loss_implementation::vocab_parallel)
        // Megatron's VocabParallelCrossEntropy (megatron/core/tensor_parallel/
        // cross_entropy.py@d98e8a64): the max over the shard (read), logits −= max in
        // place (read, write), exp in place (read, write), their sum (read), all-reduces
        // of the max, the target's logit and the sum, exp /= sum in place (read, write):
        // 8 fp32 passes and 5 kernels, and 12 per-token kernels (the target's mask,
        // clone and shift, the gather, log, subtract). Backward: the target's entries
        // updated (arange, 1 − mask as float, index, subtract, index_put: 6 per-token
        // kernels) and the softmax scaled by the loss's gradient in place (read, write).
        return {upcast + 8 * f32, 2 * f32 + upcast, 17 + cast, 7 + cast, all_reduces};
    if (impl == loss_implementation::vocab_parallel_fused)
        // Megatron-Core's fused VocabParallelCrossEntropy (megatron/core/fusions/
        // fused_cross_entropy.py@d98e8a64): the same steps in three compiled functions.
        // ASSUMPTION: Inductor makes one kernel of each function's passes over the logits
        // (a reduction storing its elementwise result as it goes; an input mutated in place
        // written back in the same kernel) and one more of the predicted logits' per-token
        // work and one of the loss's: the upcast with the max (a + 4 B), −= max and exp
        // with their sum (read and write fp32, 8 B), /= sum in place (8 B): 3 + 2 kernels;
        // the max all-reduced alone, the target's logit and the sum in one (torch.cat): 2
        // all-reduces of 1.5 values on average. Backward, one compiled function: the
        // targets' entries updated (a per-token kernel), the softmax scaled in place and
        // cast to bf16 in one kernel (read 4, write 4 back and the 16-bit gradient): no
        // separate cast. The function casts to bf16 whatever the logits' format: autograd
        // casts that to the logits' own where it differs (one more kernel); fp32 logits
        // need no upcast (.float() returns them).
        {
            constexpr double bf16 = 2;
            const double recast = logits != dtype::bf16 ? 1.0 : 0.0;
            const double first = logit != f32 ? logit + f32 : f32;  // the upcast stored, or the max's read
            return {first + 4 * f32, 2 * f32 + bf16 + recast * (bf16 + logit), 5, 2 + recast,
                    vocab_split ? 2.0 : 0.0, 1.5};
        }
    if (compiled)
        // ASSUMPTION: Inductor fuses the upcast into the reductions: forward reads the
        // 16-bit row twice (its max; then its sum of exponentials and the target's logit),
        // backward reads it once and writes the gradient in the logits' format (the
        // softmax recomputed from the kept log-sum-exp), one kernel each pass.
        return {2 * logit, 2 * logit, 2, 1, all_reduces};
    if (vocab_split)
        // DTensor's loss_parallel (pytorch/pytorch torch/distributed/tensor/parallel/
        // loss.py@02eef6b8, which torchtitan enters with tp > 1): log-softmax decomposed
        // into amax (read), x − max (read, write), exp (read, write), sum (read),
        // x − log-sum-exp (read, write), with all-reduces of the max and the sum, and the
        // NLL's gather all-reduced: 8 fp32 passes and 5 kernels; the targets' masking
        // into the shard, the gather and the reductions are about 15 per-token kernels.
        // Backward fuses the NLL's and the log-softmax's: zeros (write), exp of the
        // log-softmax (read, write), their sum (2 reads, write), scaled by the loss's
        // gradient (read, write): 8 passes and 4 kernels, and about 11 per-token ones (the
        // targets masked again, their entries set).
        return {upcast + 8 * f32, 8 * f32 + upcast, 20 + cast, 15 + cast, all_reduces};
    // torch.nn.functional.cross_entropy: log_softmax (aten/src/ATen/native/cuda/SoftMax.cu
    // @000cace5, cunn_SoftMaxForward for rows beyond the shared-memory path's 12 Ki fp32
    // elements: the row read for its max, again for its sum of exponentials, again to
    // write the result) and nll_loss's gather: 4 passes, 2 kernels. Backward:
    // nll_loss_backward fills the gradient with zeros (write) and scatters the targets;
    // cunn_SoftMaxBackward reads the gradient for its sum, then it and the output, and
    // writes (4 passes): 5 passes, 3 kernels. The labels' shift and the loss's scaling are
    // per-token or scalar work, left out.
    return {upcast + 4 * f32, 5 * f32 + upcast, 2 + cast, 3 + cast, all_reduces};
}

// Head and loss of one micro-batch: the logits GEMM over the vocabulary (split by tp),
// the loss's kernels (loss_kernels_of), and with tp > 1 the head input's collectives:
// with sequence parallelism an all-gather of the final norm's b·s·h output before the
// GEMM, in backward the same all-gather again for the weight gradient and a
// reduce-scatter of the input's gradient (Megatron's
// LinearWithGradAccumulationAndAsyncCommunication with sequence_parallel,
// megatron/core/tensor_parallel/layers.py@d98e8a64, megatron/mpu/layers.py@28ba253f; as
// the layers' column-parallel GEMMs, Korthikanti et al. 2022 §4.2.2; torchtitan's
// ColwiseParallel(input_layouts=Shard(1)), torchtitan/models/llama3/infra/
// parallelize.py@b0902b29, is taken as the same); without it an all-reduce of the input's
// gradient (the linear's allreduce_dgrad in Megatron-Core; Megatron-LM 2022's
// async_grad_allreduce, or copy_to_tensor_model_parallel_region's backward). b·s/cp
// tokens per rank with context parallelism.
template <class Sink>
constexpr void for_each_head_op(const training_setup& s, const layer_context& ctx, const layout_groups& groups,
                                Sink&& sink) {
    const auto& m = s.model;
    const auto& l = s.layout;
    const auto& fw = s.framework;
    const double tokens = rank_tokens(ctx);
    const double a = size_of(s.precision.activations);
    // The head stays 16-bit under fp8 (spec/precision.hpp quantized_linears).
    const gemm_shape logits{tokens, double(m.vocab) / l.tp, double(m.hidden), 1, high_precision_math(s.precision)};
    sink(stage_op<gemm_op>{{"logits", logits, op_phase::forward}, 1, 0, step_part::forward});
    sink(stage_op<gemm_op>{{"logits", dgrad_of(logits), op_phase::backward_data}, 1, 0, step_part::backward});
    if (!s.finetune.freezes_base())  // the output head is frozen too when fine-tuning with adapters
        sink(stage_op<gemm_op>{{"logits", wgrad_of(logits), op_phase::backward_weight}, 1, 0, step_part::backward});
    const double elements = tokens * double(m.vocab) / l.tp;
    const loss_kernels loss = loss_kernels_of(fw.loss, s.precision.activations, l.tp > 1, fw.compiled);
    sink(stage_op<memory_op>{{"loss", bytes_of(elements * loss.forward_bytes), op_phase::forward, op_region::other,
                              loss.forward_launches},
                             1, 0, step_part::forward});
    sink(stage_op<memory_op>{{"loss", bytes_of(elements * loss.backward_bytes), op_phase::backward, op_region::other,
                              loss.backward_launches},
                             1, 0, step_part::backward});
    if (l.tp > 1) {
        const auto collective_of = [&](std::string_view name, collective kind, bytes size, op_phase phase,
                                       double count) {
            sink(stage_op<collective_op>{{name, kind, size, groups.tensor, phase}, count, 0,
                                         step_part::tensor_parallel});
        };
        collective_of("loss_all_reduce", collective::all_reduce,
                      bytes_of(tokens * loss.values_per_all_reduce * size_of(dtype::fp32)), op_phase::forward,
                      loss.all_reduces);
        const bytes input = bytes_of(tokens * m.hidden * a);
        // The weight gradient's gather: none for a frozen head (adapters). One op for the
        // forward's and the backward's, as the layers' (stage.hpp).
        const double gathers_again = l.sp && !s.finetune.freezes_base() ? 1 : 0;
        if (l.sp) {
            collective_of("head_input_all_gather", collective::all_gather, input, op_phase::forward,
                          1 + gathers_again);
            collective_of("head_input_gradient_reduce_scatter", collective::reduce_scatter, input, op_phase::backward,
                          1);
        } else {
            collective_of("head_input_gradient_all_reduce", collective::all_reduce, input, op_phase::backward, 1);
        }
        // Each called from Python (host_call::collective).
        sink(stage_op<host_op>{
            {"head_collective_calls", host_call::collective, loss.all_reduces + (l.sp ? 1 : 0), op_phase::forward},
            1, 0, step_part::forward});
        sink(stage_op<host_op>{{"head_collective_calls", host_call::collective, 1 + gathers_again, op_phase::backward},
                               1, 0, step_part::backward});
    }
    if (s.precision.autocast) {
        // The logits GEMM's V×h weight cast to 16 bits once per forward (and its
        // gradient cast back into the fp32 .grad), and the final norm's fp32 output cast
        // into it; each cast reads 4 B and writes 2 B per element.
        const auto cast = [&](std::string_view name, double count) {
            const memory_op forward{name, bytes_of(count * (size_of(dtype::fp32) + a)), op_phase::forward,
                                    op_region::other, 1, layer_block::other, true};
            sink(stage_op<memory_op>{forward, 1, 0, step_part::forward});
            sink(stage_op<memory_op>{backward_of(forward, fw), 1, 0, step_part::backward});
        };
        if (!ctx.frozen_16bit_weights) cast("autocast_weight_cast_head", double(m.vocab) / l.tp * m.hidden);
        cast("autocast_cast_head_input", tokens * m.hidden);
    }
}

// Embedding lookup (and positions) forward, its scatter-add backward. ASSUMPTION: 3
// passes over b·s·h (read the rows, read the positions, write the sum), in the residual
// stream's format (fp32 under autocast: embedding is on no autocast list). With tp > 1
// each rank looks up its vocabulary shard and the partial outputs are summed: reduced
// and scattered over the sequence with sequence parallelism and no learned positions
// (Megatron-Core's reduce_scatter_embeddings, megatron/core/models/common/embeddings/
// language_model_embedding.py@d98e8a64; torchtitan's RowwiseParallel(output_layouts=
// Shard(1))), all-reduced otherwise (VocabParallelEmbedding; Megatron-LM 2022 always,
// megatron/mpu/layers.py@28ba253f); with sequence parallelism the backward all-gathers
// the output's gradient (the backward of the reduce-scatter, or of the scatter to the
// sequence-parallel region) for the embedding's weight gradient, which a frozen base
// (adapters) does not compute.
template <class Sink>
constexpr void for_each_embedding_op(const training_setup& s, const layer_context& ctx, const layout_groups& groups,
                                     Sink&& sink) {
    const double residual = size_of(activation_formats_of(s.precision).residual);
    const bytes embedding = bytes_of(3.0 * rank_tokens(ctx) * s.model.hidden * residual);
    sink(stage_op<memory_op>{{"embedding", embedding, op_phase::forward}, 1, 0, step_part::forward});
    sink(stage_op<memory_op>{{"embedding", embedding, op_phase::backward}, 1, 0, step_part::backward});
    const auto& l = s.layout;
    if (l.tp == 1) return;
    const bytes output = bytes_of(rank_tokens(ctx) * s.model.hidden * residual);
    const bool reduce_scatter = l.sp && s.model.positions != position_kind::learned;
    sink(stage_op<collective_op>{{reduce_scatter ? "embedding_reduce_scatter" : "embedding_all_reduce",
                                  reduce_scatter ? collective::reduce_scatter : collective::all_reduce, output,
                                  groups.tensor, op_phase::forward},
                                 1, 0, step_part::tensor_parallel});
    sink(stage_op<host_op>{{"embedding_collective_calls", host_call::collective, 1, op_phase::forward}, 1, 0,
                           step_part::forward});
    if (!l.sp || s.finetune.freezes_base()) return;
    sink(stage_op<collective_op>{{"embedding_gradient_all_gather", collective::all_gather, output, groups.tensor,
                                  op_phase::backward},
                                 1, 0, step_part::tensor_parallel});
    sink(stage_op<host_op>{{"embedding_collective_calls", host_call::collective, 1, op_phase::backward}, 1, 0,
                           step_part::backward});
}

}  // namespace trainperf
