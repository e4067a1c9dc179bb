// FP8 (NVIDIA Transformer Engine) ops of one layer: the casts of its Linear GEMMs'
// inputs, weights and output gradients, and delayed scaling's amax-history update; and
// the quantized weights a framework makes once a step instead.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/finetune.hpp"
#include "../spec/framework.hpp"
#include "../spec/model.hpp"
#include "../spec/optimizer.hpp"
#include "../spec/parallel.hpp"
#include "../spec/precision.hpp"
#include "../spec/setup.hpp"
#include "layer.hpp"
#include "ops.hpp"
#include "placement.hpp"

namespace trainperf {

// Linear modules of one layer as the code runs them under Transformer Engine: Q, K and
// V as three (BERT's and LLaMA's code, each nn.Linear made a te.Linear) or one fused
// QKV projection; the output projection; the FFN matrices, with SwiGLU's gate and up
// as one Linear in Megatron's layer (linear_fc1 of width 2f; generic code) and as two
// in the Hugging Face code.
constexpr double fp8_linear_modules_per_layer(const transformer_config& m, model_code code) {
    const bool split_qkv = code == model_code::bert || code == model_code::llama;
    const bool swiglu = m.ffn == ffn_kind::swiglu;
    return (split_qkv ? 3.0 : 1.0) + 1.0 + (swiglu && code != model_code::generic ? 3.0 : 2.0);
}

using fp8_quantization_list = op_list<memory_op, 6>;

namespace fp8_detail {
// What one layer's quantized Linears cast, per block (attention, MLP): elements of their
// inputs, weights (on this rank) and output gradients, the Linear modules, and the
// input casts. A Linear whose input another already quantized shares its cast
// (Megatron's fused gate and up: one Linear).
struct casts {
    double inputs = 0, weights = 0, gradients = 0, modules = 0, input_casts = 0;
};

inline std::array<casts, 2> layer_casts(const transformer_config& m, const layer_context& c) {
    std::array<casts, 2> block{};  // attention, MLP
    std::string_view previous;
    for (const auto& g : layer_forward_gemms(m, c)) {  // validates the context
        if (!quantized_format(g.shape.math)) continue;
        casts& b = block[g.block == layer_block::mlp ? 1 : 0];
        const bool fused_with_previous = c.code == model_code::generic && g.name == "ffn_up" && previous == "ffn_gate";
        if (!fused_with_previous) {
            b.inputs += g.shape.m * g.shape.k * g.shape.batch;
            b.input_casts += 1;
            b.modules += 1;
        }
        b.weights += g.shape.k * g.shape.n;
        b.gradients += g.shape.m * g.shape.n * g.shape.batch;
        previous = g.name;
    }
    return block;
}
}  // namespace fp8_detail

// The FP8 casts of one layer's Linear GEMMs (NVIDIA Transformer Engine,
// docs/features/low_precision_training, @d0067d0d), memory-bound ops of
// fp8_quantization_bytes_per_element each (read the 16-bit tensor once, twice with
// current scaling; write the FP8 copy and on Hopper its transpose). Per Linear of
// forward GEMM X[m×k]·W[k×n]:
//   forward: X quantized to E4M3 (m·k elements), and W (k·n, the bf16 weight on this
//     rank) in every forward, unless the framework makes the weights once a step
//     (layer_context::weights_once_a_step: make_fp8_weights_op below, a step op);
//   backward: the output gradient dY quantized to E5M2 (m·n) for the dgrad (dY·Wᵀ,
//     with the Wᵀ copy made in forward) and the wgrad (Xᵀ·dY, with the saved Xᵀ).
// Summed per block: input, weight and output-gradient casts of the attention block, then
// of the MLP block; launches count the casts.
inline fp8_quantization_list layer_fp8_quantization_ops(const transformer_config& m, const layer_context& c) {
    fp8_quantization_list ops;
    if (!c.quantized_linears) return ops;
    const std::array<fp8_detail::casts, 2> block = fp8_detail::layer_casts(m, c);
    // Activations and the working weights are 16-bit (bf16 under the fp8 recipe).
    const double per = fp8_quantization_bytes_per_element(c.scaling, c.fp8_transposes, size_of(c.activations));
    const double launches = fp8_quantization_launches(c.scaling);
    const double gradient_launches = fp8_quantization_launches(c.scaling, true);
    for (std::size_t i = 0; i < block.size(); ++i) {
        const fp8_detail::casts& b = block[i];
        const layer_block where = i == 0 ? layer_block::attention : layer_block::mlp;
        const auto cast = [&](std::string_view name, double elements, op_phase phase, double count) {
            ops.push_back({name, bytes_of(elements * per), phase, op_region::other, count, where, true});
        };
        cast("fp8_quantize_input", b.inputs, op_phase::forward, b.input_casts * launches);
        if (!c.weights_once_a_step) cast("fp8_quantize_weight", b.weights, op_phase::forward, b.modules * launches);
        cast("fp8_quantize_output_gradient", b.gradients, op_phase::backward, b.modules * gradient_launches);
    }
    return ops;
}

// The quantized weights of `layers` layers made outside the layers' forwards
// (layer_context::weights_once_a_step): once a step, in the step's first micro-batch,
// which casts them as a forward would (TE's weight cache: the other micro-batches and
// recompute reuse them), or, FP8 primary weights (`primary`, spec/setup.hpp
// fp8_primary_weights), after their all-gather (the optimizer's, or ZeRO-3's:
// workload/step_ops.hpp), the copy the backward reads built from the gathered data
// (spec/precision.hpp fp8_weight_bytes_built_after_gather: the transpose on Hopper, the
// columnwise blocks; TE's post_all_gather_processing), or an MXFP8 weight quantized again
// from its bf16 gather (both directions written); ASSUMPTION: one read of the gathered
// data and one write, one launch per Linear; nothing where nothing is written. The routed
// experts' weights: workload/moe_layer.hpp expert_fp8_weights_op.
inline memory_op make_fp8_weights_op(const transformer_config& m, const layer_context& c, double layers,
                                     bool primary) {
    memory_op op{"fp8_make_weights", bytes_of(0.0), op_phase::forward, op_region::other, 0,
                 layer_block::other, true};
    if (!c.quantized_linears || !c.weights_once_a_step) return op;
    double weights = 0, modules = 0;
    for (const fp8_detail::casts& b : fp8_detail::layer_casts(m, c)) {
        weights += layers * b.weights;
        modules += layers * b.modules;
    }
    if (!primary) {
        op.moved = bytes_of(weights * fp8_quantization_bytes_per_element(c.scaling, c.fp8_transposes,
                                                                         size_of(c.activations)));
        op.launches = modules * fp8_quantization_launches(c.scaling);
    } else if (const double moved = fp8_primary_weight_rebuild_bytes(c.scaling, c.fp8_transposes); moved > 0) {
        op.moved = bytes_of(weights * moved);
        op.launches = modules;
    }
    return op;
}

// Delayed scaling's per-region update: at the exit of each fp8_autocast region (every
// micro-batch's forward, and its backward) TE reduces the new amaxes and rolls the
// amax history of every scaled tensor in one batched kernel (NVIDIA Transformer
// Engine, docs/features/low_precision_training, @d0067d0d): read and write
// fp8_amax_history_length fp32 entries per tensor, 3 tensors per FP8 GEMM in forward
// and 2 in backward, over `modules` Linear modules. ASSUMPTION: one launch each. The
// amax all-reduce across the data- and tensor-parallel group that reduce_amax adds, a
// latency-bound collective of (3 + 2)·4 B per FP8 GEMM, is left out (microseconds).
constexpr memory_op fp8_amax_update(double modules, op_phase phase) {
    const double tensors = phase == op_phase::forward ? fp8_forward_scaled_tensors_per_gemm
                                                      : fp8_backward_scaled_tensors_per_gemm;
    return {"fp8_amax_history_update",
            bytes_of(2 * fp8_amax_history_length * tensors * modules * size_of(dtype::fp32)), phase,
            op_region::other, 1, layer_block::other, false};
}

}  // namespace trainperf
