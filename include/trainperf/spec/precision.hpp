// Precision recipes: which format the GEMMs run in and which format each piece of
// training state is stored in. A recipe fixes bytes per parameter for weights,
// gradients and the master copy; the optimizer's own state is in spec/optimizer.hpp.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "../core/attributes.hpp"
#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "hardware.hpp"

namespace trainperf {

// fp16-amp and bf16-amp are torch.autocast as the Hugging Face Trainer runs it with
// --fp16 / --bf16 (fp32 parameters, no master copy); fp16-pure is a model converted
// with .half(), the fp16 analogue of bf16-pure.
enum class precision_kind { fp32, tf32, bf16, fp16, bf16_pure, fp8, fp16_amp, bf16_amp, fp16_pure };

template <>
struct enum_names<precision_kind> {
    static constexpr std::array<enum_name<precision_kind>, 9> table{{{precision_kind::fp32, "fp32"},
                                                                     {precision_kind::tf32, "tf32"},
                                                                     {precision_kind::bf16, "bf16"},
                                                                     {precision_kind::fp16, "fp16"},
                                                                     {precision_kind::bf16_pure, "bf16-pure"},
                                                                     {precision_kind::fp8, "fp8"},
                                                                     {precision_kind::fp16_amp, "fp16-amp"},
                                                                     {precision_kind::bf16_amp, "bf16-amp"},
                                                                     {precision_kind::fp16_pure, "fp16-pure"}}};
    // Explicit spellings of the mixed recipes, and torch's name for autocast.
    static constexpr std::array<enum_name<precision_kind>, 4> aliases{{{precision_kind::bf16, "bf16-mixed"},
                                                                       {precision_kind::fp16, "fp16-mixed"},
                                                                       {precision_kind::fp16_amp, "fp16-autocast"},
                                                                       {precision_kind::bf16_amp, "bf16-autocast"}}};
};

inline constexpr auto all_precisions = enum_values<precision_kind>();

// How NVIDIA Transformer Engine scales a quantized tensor, FP8 under the fp8 recipe,
// FP4 under nvfp4 (NVIDIA Transformer Engine, docs/features/low_precision_training,
// @d0067d0d):
//   delayed (DelayedScaling, TE's default recipe): the scale comes from a history of
//     past amaxes (amax_history_len 1024, algo "max"); the cast computes the new amax
//     as it goes, so each quantization reads its tensor once;
//   current (Float8CurrentScaling): the scale is fp8_max / amax of the tensor itself,
//     computed on the fly: one read for the amax, one for the cast;
//   mxfp8 (MXFP8BlockScaling): E4M3 values with one power-of-two (E8M0) scale per 32
//     consecutive values along the GEMM's reduction dimension (OCP Microscaling Formats
//     MX v1.0), computed in the cast's own pass; Blackwell's tensor cores apply the
//     scales in the MMA (tcgen05 kind::mxf8f6f4; not on Hopper);
//   blockwise (Float8BlockScaling): E4M3 values with an fp32 scale per 1×128 tile of
//     activations and gradients and per 128×128 block of weights, as DeepSeek-V3 trains
//     (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §3.3.1); compute capability 9.0
//     and later;
//   nvfp4 (NVFP4BlockScaling, the --precision nvfp4 recipe): E2M1 values with an E4M3
//     scale per 16 consecutive values and an fp32 scale per tensor, x = x_e2m1 · s_block
//     · s_global, where s_global = 448 · 6 / amax of the whole tensor; weights in 16×16
//     blocks (2D), activations and gradients in 1×16; stochastic rounding of gradients
//     and a random Hadamard transform (16×16) of the weight gradient GEMM's operands
//     (TE docs/features/low_precision_training/nvfp4/nvfp4.rst; NVIDIA 2025, "Pretraining
//     Large Language Models with NVFP4", arXiv:2509.25149); compute capability 10.0 and
//     10.3 (TE's support matrix; Blackwell's tcgen05 kind::mxf4nvf4).
// A block-scaled tensor quantized along its rows and along its columns has different
// blocks: TE's MXFP8 and block quantizers write both copies (rowwise and columnwise
// data) in one pass wherever the tensor is read both ways, on Blackwell as on Hopper.
enum class fp8_scaling { delayed, current, mxfp8, blockwise, nvfp4 };

template <>
struct enum_names<fp8_scaling> {
    static constexpr std::array<enum_name<fp8_scaling>, 5> table{{{fp8_scaling::delayed, "delayed"},
                                                                  {fp8_scaling::current, "current"},
                                                                  {fp8_scaling::mxfp8, "mxfp8"},
                                                                  {fp8_scaling::blockwise, "blockwise"},
                                                                  {fp8_scaling::nvfp4, "nvfp4"}}};
};

constexpr bool block_scaled(fp8_scaling s) {
    return s == fp8_scaling::mxfp8 || s == fp8_scaling::blockwise || s == fp8_scaling::nvfp4;
}

// The format of the quantized values: E2M1 under nvfp4, else FP8.
constexpr dtype quantized_dtype(fp8_scaling s) { return s == fp8_scaling::nvfp4 ? dtype::fp4 : dtype::fp8; }

// Bytes of scale per quantized value: an E8M0 byte per 32 values (MXFP8), an fp32 scale
// per 128 (the 1×128 tiles of activations and gradients; ASSUMPTION: weights' 128×128
// blocks, 4/16384, counted the same, a rounding error), an E4M3 byte per 16 (NVFP4, the
// weights' 16×16 blocks too: TE keeps the 1×16 scale layout and writes each block's
// scale in all 16 rows, transformer_engine/pytorch/csrc/quantizer.cpp and
// common/cast/nvfp4/quantize_transpose_nvfp4.cuh@d0067d0d); none with one scale per
// tensor (its fp32 scale is a rounding error).
constexpr double fp8_scale_bytes_per_element(fp8_scaling s) {
    switch (s) {
        case fp8_scaling::mxfp8: return 1.0 / 32;
        case fp8_scaling::blockwise: return 4.0 / 128;
        case fp8_scaling::nvfp4: return 1.0 / 16;
        case fp8_scaling::delayed:
        case fp8_scaling::current: return 0.0;
    }
    return 0.0;
}

// Bytes per element of one quantized copy of a tensor: the value and its share of scales
// (FP8 1 B; MXFP8 1 + 1/32; NVFP4 1/2 + 1/16).
constexpr double quantized_bytes_per_element(fp8_scaling s) {
    return size_of(quantized_dtype(s)) + fp8_scale_bytes_per_element(s);
}

struct precision_recipe {
    precision_kind kind = precision_kind::fp32;
    std::string_view name = "fp32";
    dtype math = dtype::fp32;             // GEMM math mode (tensor-core dtype)
    dtype weights = dtype::fp32;          // weights as the model holds them (autocast: the fp32 parameters)
    dtype gradients = dtype::fp32;        // gradient storage (DeepSpeed/Megatron: fp32 main grads)
    bool fp32_master = false;             // separate fp32 master copy updated by the optimizer
    dtype activations = dtype::fp32;      // activations kept for backward (autocast: what the GEMMs keep)
    dtype optimizer_state = dtype::fp32;  // moments (pure 16-bit keeps them in 2 B too)
    bool loss_scaling = false;            // fp16 needs a dynamic loss scale (range, not memory)
    // torch.autocast: the parameters stay fp32 and each op casts its inputs to the
    // format its list gives it (activation_formats_of); the weights are cast to
    // `math` once per forward and those copies live until backward has used them.
    bool autocast = false;
    // fp8 (math fp8) and nvfp4 (math fp4, scaling nvfp4): how the scales are chosen, and
    // whether the GPU's FP8 GEMM needs
    // a transposed FP8 copy of each operand it reads column-wise (Hopper and Ada: the
    // FP8 GEMM is TN-only; Blackwell, compute capability 10.0 and up, reads them
    // natively). precision_on() sets the latter from the GPU; true is the Hopper case.
    fp8_scaling scaling = fp8_scaling::delayed;
    bool fp8_transposes = true;
};

// The standard recipes. Mixed precision follows Micikevicius et al. 2018 ("Mixed
// Precision Training", ICLR): 16-bit weights, activations and gradients, fp32 master
// weights and fp32 optimizer state. fp8 follows NVIDIA Transformer Engine as used by
// Megatron-LM: fp8 GEMMs, bf16 working weights and activations, fp32 master.
//
// Automatic mixed precision (fp16-amp, bf16-amp) follows PyTorch's torch.autocast as
// the Hugging Face Trainer uses it with --fp16 / --bf16 (half_precision_backend
// "cuda_amp"; a GradScaler only for fp16): the model's parameters stay fp32 and so do
// their gradients ("gradients are always kept in fp32", transformers
// docs/source/en/model_memory_anatomy.md@249ef816; GradScaler.unscale_ refuses fp16
// gradients, PyTorch torch/cuda/amp/grad_scaler.py@02f1c1a5); there is no separate
// master copy, the optimizer updates the fp32 parameters and keeps fp32 state. GEMMs
// run in 16 bits on cast copies of their inputs (the lower_precision_fp list, PyTorch
// docs/source/amp.rst@0137a5f1, aten/src/ATen/autocast_mode.cpp@008ec6b1). Activations
// are mixed: activation_formats_of.
//
// fp16-pure: a model converted with .half(), no autocast and no master copy; fp16
// gradients, and fp16 AdamW moments because torch.optim creates its state like the
// parameter (zeros_like(p), PyTorch torch/optim/adamw.py@002d2f0b). No loss scaling:
// the GradScaler raises "Attempting to unscale FP16 gradients" (PyTorch
// torch/cuda/amp/grad_scaler.py@02f1c1a5).
constexpr precision_recipe recipe(precision_kind k) {
    switch (k) {
        case precision_kind::fp32:
            return {.kind = k, .name = to_string(k)};
        case precision_kind::tf32:
            return {.kind = k, .name = to_string(k), .math = dtype::tf32};
        case precision_kind::bf16:
            return {.kind = k, .name = to_string(k), .math = dtype::bf16, .weights = dtype::bf16,
                    .gradients = dtype::bf16, .fp32_master = true, .activations = dtype::bf16};
        case precision_kind::fp16:
            return {.kind = k, .name = to_string(k), .math = dtype::fp16, .weights = dtype::fp16,
                    .gradients = dtype::fp16, .fp32_master = true, .activations = dtype::fp16,
                    .loss_scaling = true};
        case precision_kind::bf16_pure:
            return {.kind = k, .name = to_string(k), .math = dtype::bf16, .weights = dtype::bf16,
                    .gradients = dtype::bf16, .fp32_master = false, .activations = dtype::bf16,
                    .optimizer_state = dtype::bf16};
        case precision_kind::fp8:
            return {.kind = k, .name = to_string(k), .math = dtype::fp8, .weights = dtype::bf16,
                    .gradients = dtype::bf16, .fp32_master = true, .activations = dtype::bf16};
        case precision_kind::fp16_amp:
            return {.kind = k, .name = to_string(k), .math = dtype::fp16, .weights = dtype::fp32,
                    .gradients = dtype::fp32, .fp32_master = false, .activations = dtype::fp16,
                    .optimizer_state = dtype::fp32, .loss_scaling = true, .autocast = true};
        case precision_kind::bf16_amp:
            return {.kind = k, .name = to_string(k), .math = dtype::bf16, .weights = dtype::fp32,
                    .gradients = dtype::fp32, .fp32_master = false, .activations = dtype::bf16,
                    .optimizer_state = dtype::fp32, .loss_scaling = false, .autocast = true};
        case precision_kind::fp16_pure:
            return {.kind = k, .name = to_string(k), .math = dtype::fp16, .weights = dtype::fp16,
                    .gradients = dtype::fp16, .fp32_master = false, .activations = dtype::fp16,
                    .optimizer_state = dtype::fp16};
    }
    return {};
}

// Whether the recipe runs the Linear layers' GEMMs quantized (Transformer Engine's fp8
// and nvfp4 recipes): QKV, attention-out and the FFN projections, forward, dgrad and
// wgrad, in FP8 or NVFP4 (TE's NVFP4BlockScaling quantizes all three GEMMs' operands).
// The attention core stays 16-bit (TE's fp8_dpa and fp8_mha default to False), and so
// does the output head: Megatron-Core builds it as a plain ColumnParallelLinear, outside
// Transformer Engine, unless its MXFP8 output projection is asked for
// (megatron/core/models/gpt/gpt_model.py@d98e8a64, output_layer_cls).
constexpr bool quantized_linears(const precision_recipe& r) { return quantized_format(r.math); }

// The math of the GEMMs the recipe keeps out of FP8/FP4 (the attention core, the head):
// the 16-bit activation format under fp8 and nvfp4, else the recipe's math.
constexpr dtype high_precision_math(const precision_recipe& r) {
    return quantized_linears(r) ? r.activations : r.math;
}

// Whether the GPU's FP8 GEMM needs transposed FP8 copies: Hopper's (and Ada's) FP8
// GEMM is TN-only, so TE makes both X and Xᵀ (W and Wᵀ, dY and dYᵀ); Blackwell
// (compute capability 10.0 and up) reads column-wise operands natively (NVIDIA
// Transformer Engine, docs/features/low_precision_training, @d0067d0d). ASSUMPTION: a
// GPU without an NVIDIA compute capability (0) is taken as needing them.
constexpr bool fp8_needs_transposes(const gpu_spec& g) { return g.compute_capability < 100; }

// The recipe as it runs on the GPU: fp8's transposed copies where the GPU needs them.
constexpr precision_recipe precision_on(precision_recipe r, const gpu_spec& g) {
    r.fp8_transposes = fp8_needs_transposes(g);
    return r;
}

// Bytes per element of one FP8 quantization of a tensor stored in `from` bytes: it
// reads the tensor once with delayed scaling, twice with current scaling (the amax
// pass, then the cast), and writes the 1-byte FP8 copy, plus the 1-byte transposed
// copy where the GPU needs it (one fused cast-transpose kernel). NVIDIA Transformer
// Engine, docs/features/low_precision_training, @d0067d0d. E.g. a bf16 tensor on
// Hopper: delayed 2 + 1 + 1 = 4 B, current 2·2 + 1 + 1 = 6 B; Blackwell 3 B and 5 B.
//
// Block scaling (mxfp8, blockwise) reads once and writes the rowwise and the columnwise
// copy, each with its scales: a bf16 tensor 2 + 2·(1 + 1/32) = 4.06 B with MXFP8,
// 2 + 2·(1 + 4/128) = 4.06 B with 1×128 blocks.
//
// NVFP4 needs the whole tensor's amax before it casts (s_global): TE's NVFP4 quantizer
// runs an amax pass (with the Hadamard transform, the amax of the tensor and of its
// transformed transpose in one kernel), then one cast that reads the tensor once and
// writes both copies, the columnwise one through the Hadamard transform for the weight
// gradient (transformer_engine/pytorch/csrc/quantizer.cpp, NVFP4Quantizer quantize_impl,
// nvte_hadamard_transform_amax then nvte_quantize_with_hadamard_transform, @d0067d0d;
// ASSUMPTION: the fused path, taken for bf16 tensors of rows % 64 and columns % 128 on
// compute capability 10.x): a bf16 tensor 2·2 + 2·(1/2 + 1/16) = 5.13 B.
// Whether a cast needs the tensor's amax before it (current scaling's and NVFP4's
// per-tensor scale): a second read of the tensor.
constexpr bool amax_pass_before_cast(fp8_scaling s) { return s == fp8_scaling::current || s == fp8_scaling::nvfp4; }

constexpr double fp8_quantization_bytes_per_element(fp8_scaling scaling, bool transposes, double from) {
    const double reads = amax_pass_before_cast(scaling) ? 2.0 : 1.0;
    if (block_scaled(scaling)) return reads * from + 2.0 * quantized_bytes_per_element(scaling);
    return reads * from + size_of(dtype::fp8) * (transposes ? 2.0 : 1.0);
}

// Kernels of one quantization: the cast (fused with its transpose), and with current
// scaling the amax reduction before it. ASSUMPTION: one kernel each (TE launches a
// separate amax kernel for current scaling; its scale computation is folded in). NVFP4:
// the amax's zero fill, the amax pass and the cast, and for a gradient the stochastic
// rounding's seed kernel (quantizer.cpp as above; common.cpp@d0067d0d).
constexpr double fp8_quantization_launches(fp8_scaling scaling, bool gradient = false) {
    if (scaling == fp8_scaling::nvfp4) return gradient ? 4.0 : 3.0;
    return amax_pass_before_cast(scaling) ? 2.0 : 1.0;
}

// Delayed scaling's amax history: amax_history_len 1024 entries per scaled tensor
// (NVIDIA Transformer Engine, DelayedScaling defaults, docs/features/
// low_precision_training, @d0067d0d), 3 tensors per FP8 GEMM in forward (input,
// weight, output) and 2 in backward (output gradient, input gradient), fp32 each.
inline constexpr double fp8_amax_history_length = 1024;
inline constexpr double fp8_forward_scaled_tensors_per_gemm = 3;
inline constexpr double fp8_backward_scaled_tensors_per_gemm = 2;

// Bytes per FP8 weight parameter of the FP8 copies Transformer Engine keeps of the
// Linear weights for the step: 1 B, and 1 B more for the transpose where the GPU
// needs it; 0 for other recipes.
// Block-scaled: both copies (the weight is read rowwise by the forward GEMM and
// columnwise by the data gradient's), each with its scales (NVFP4: 2·(1/2 + 1/16) B).
constexpr double fp8_weight_copy_bytes_per_parameter(fp8_scaling scaling, bool transposes) {
    if (block_scaled(scaling)) return 2.0 * quantized_bytes_per_element(scaling);
    return size_of(dtype::fp8) * (transposes ? 2.0 : 1.0);
}

constexpr double fp8_weight_copy_bytes_per_parameter(const precision_recipe& r) {
    return quantized_linears(r) ? fp8_weight_copy_bytes_per_parameter(r.scaling, r.fp8_transposes) : 0.0;
}

// FP8 primary weights (framework_profile::fp8_primary_weights; Megatron-Core
// --fp8-param-gather: "Keep the compute param in fp8 (do not use any other intermediate
// dtype) and perform the param all-gather in fp8", megatron/training/arguments.py
// @d98e8a64): each Linear weight is a quantized tensor of Transformer Engine, with no
// 16-bit copy; the distributed optimizer casts its fp32 main shard into it
// (cast_master_weights_to_fp8, megatron/core/fp8_utils.py@d98e8a64) and all-gathers it,
// after which TE's post_all_gather_processing builds what the backward's GEMM reads
// (transformer_engine/pytorch/tensor/utils.py@d0067d0d): the transpose of a
// per-tensor-scaled weight where the GPU's FP8 GEMM is TN-only (Hopper), the columnwise
// copy of a 128×128-block-scaled one. An MXFP8 weight keeps both directions itself, but TE
// cannot map it into the gather's buffer (replace_raw_data), so Megatron-Core gathers it
// in bf16 through the gradient buffer and quantizes it again into the parameter
// (_post_param_sync, copy_tensors_to_quantized_params, megatron/core/distributed/
// param_and_grad_buffer.py@d98e8a64). Bytes per parameter:
//   held                per tensor 1 (the rowwise data); blockwise the rowwise blocks
//                       with their scales, 1 + 4/128; mxfp8 both directions with their
//                       scales, 2·(1 + 1/32)
//   gathered            as held; mxfp8 2 (bf16)
//   built after it      the rest of fp8_weight_copy_bytes_per_parameter, held beside it:
//                       the transpose (1 on Hopper, 0 on Blackwell), the columnwise
//                       blocks (1 + 4/128), 0 for mxfp8 (whose held data is written again)
// NVFP4 has its own switch in Megatron-Core (--fp4-param-gather), not modelled: 0.
constexpr double fp8_primary_weight_bytes_per_parameter(fp8_scaling scaling, bool transposes) {
    if (scaling == fp8_scaling::nvfp4) return 0.0;
    if (scaling == fp8_scaling::mxfp8) return fp8_weight_copy_bytes_per_parameter(scaling, transposes);
    return block_scaled(scaling) ? quantized_bytes_per_element(scaling) : size_of(dtype::fp8);
}

constexpr double fp8_primary_weight_bytes_per_parameter(const precision_recipe& r) {
    return quantized_linears(r) ? fp8_primary_weight_bytes_per_parameter(r.scaling, r.fp8_transposes) : 0.0;
}

constexpr double fp8_primary_weight_gathered_bytes(fp8_scaling scaling, bool transposes) {
    if (scaling == fp8_scaling::mxfp8) return size_of(dtype::bf16);
    return fp8_primary_weight_bytes_per_parameter(scaling, transposes);
}

constexpr double fp8_weight_bytes_built_after_gather(fp8_scaling scaling, bool transposes) {
    return fp8_weight_copy_bytes_per_parameter(scaling, transposes) -
           fp8_primary_weight_bytes_per_parameter(scaling, transposes);
}

// What the processing after the gather moves per parameter: the gathered data read and
// what is built written (an MXFP8 weight written whole, quantized again from its bf16
// gather; ASSUMPTION: one read and one write); 0 where nothing is built.
constexpr double fp8_primary_weight_rebuild_bytes(fp8_scaling scaling, bool transposes) {
    const double written = scaling == fp8_scaling::mxfp8 ? fp8_primary_weight_bytes_per_parameter(scaling, transposes)
                                                         : fp8_weight_bytes_built_after_gather(scaling, transposes);
    return written > 0 ? fp8_primary_weight_gathered_bytes(scaling, transposes) + written : 0.0;
}

// The format of each kind of activation a layer produces. Without autocast every
// activation has the recipe's one format. Under torch.autocast (PyTorch
// docs/source/amp.rst@0137a5f1, aten/src/ATen/autocast_mode.cpp@008ec6b1), applied to
// Hugging Face GPT-2 and BERT (transformers
// src/transformers/models/gpt2/modeling_gpt2.py@0010f602,
// src/transformers/models/bert/modeling_bert.py@004ad5f5):
//   - GEMMs (linear, addmm, matmul: the lower_precision_fp list) cast every input to
//     16 bits before autograd records, so what they keep for backward is 16-bit, and
//     their outputs are 16-bit;
//   - layer_norm is on the fp32 list: it reads and writes fp32;
//   - softmax is on the fp32 list (re-called with dtype=float): it writes fp32;
//   - adds of a 16-bit and an fp32 tensor run in fp32 and write fp32, so the residual
//     stream (fp32 embeddings + 16-bit branch outputs) is fp32;
//   - pow is on the fp32 list, so GPT-2's gelu_new (transformers
//     src/transformers/activations.py@00e12e7c: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·
//     pow(x, 3))))) runs in fp32 from pow on.
// Activations are not cached: each use of an fp32 activation by a GEMM casts it again.
struct activation_formats {
    dtype gemm_inputs = dtype::fp32;        // GEMM inputs and outputs, dropout outputs fed to a GEMM
    dtype residual = dtype::fp32;           // residual stream: norm inputs, layer inputs, stage sends
    dtype norm_output = dtype::fp32;        // layer-norm outputs
    dtype softmax_output = dtype::fp32;     // attention probabilities as softmax writes them
    dtype elementwise_chain = dtype::fp32;  // a Python-op chain with an fp32-list op in it (gelu_new)
    // fp8 (Transformer Engine): bytes per element a Linear GEMM keeps of its input for
    // backward, one FP8 copy (with its scales when block-scaled); 0: the input is kept
    // in gemm_inputs.
    double fp8_linear_inputs = 0;

    constexpr bool mixed() const {
        return residual != gemm_inputs || norm_output != gemm_inputs || softmax_output != gemm_inputs ||
               elementwise_chain != gemm_inputs;
    }
};

constexpr activation_formats uniform_activation_formats(dtype t) { return {t, t, t, t, t}; }

constexpr activation_formats activation_formats_of(dtype activations, bool autocast) {
    if (!autocast) return uniform_activation_formats(activations);
    return {.gemm_inputs = activations, .residual = dtype::fp32, .norm_output = dtype::fp32,
            .softmax_output = dtype::fp32, .elementwise_chain = dtype::fp32};
}

// fp8: the inputs of the Linear GEMMs are kept in FP8 (fp8_weight_copy_bytes_per_parameter's
// 1 or 2 B per element, the same count), the rest in 16 bits.
// A Linear keeps one FP8 copy of its input, on Hopper as on Blackwell: the columnwise
// one the weight gradient reads (Transformer Engine's Linear drops the rowwise data of the
// quantized input it saves: `inputmat.update_usage(rowwise_usage=False)`,
// transformer_engine/pytorch/module/linear.py; TE 1.x saved only the transposed copy,
// inputmat_t), or, for a LayerNormLinear under sequence parallelism with per-tensor
// scaling, the rowwise local shard that backward all-gathers again and transposes
// (layernorm_linear.py: "For sequence parallel in vanilla FP8, rowwise data is to gather
// the input"). Block-scaled copies carry their scales.
constexpr activation_formats activation_formats_of(const precision_recipe& r) {
    activation_formats x = activation_formats_of(r.activations, r.autocast);
    if (quantized_linears(r)) x.fp8_linear_inputs = quantized_bytes_per_element(r.scaling);
    return x;
}

// DeepSpeed and Megatron-LM accumulate gradients in fp32 ("main grads") even when
// the working weights are 16-bit: 4 B of gradient per parameter instead of 2.
constexpr precision_recipe with_fp32_gradients(precision_recipe r) {
    r.gradients = dtype::fp32;
    return r;
}

// The fp8 recipe with FP4 Linears: Transformer Engine's NVFP4BlockScaling as Megatron-Core
// runs it (--fp4-format e2m1, --fp4-recipe nvfp4, transformer_config.py@d98e8a64): the
// Linear GEMMs in NVFP4 (fp4 math, nvfp4 scaling), the rest as under fp8 (bf16
// activations and working weights, fp32 master weights). It belongs to the fp8 kind: a
// framework runs it where it runs Transformer Engine's low-precision recipes.
namespace precision_detail {
// The fp8 recipe under another name, with the scaling (and GEMM format) the name implies.
constexpr precision_recipe fp8_named(std::string_view name, fp8_scaling scaling) {
    precision_recipe r = recipe(precision_kind::fp8);
    r.name = name;
    r.math = quantized_dtype(scaling);
    r.scaling = scaling;
    return r;
}
}  // namespace precision_detail

constexpr precision_recipe nvfp4_recipe() { return precision_detail::fp8_named("nvfp4", fp8_scaling::nvfp4); }

// A recipe by name; "mxfp8" is the fp8 recipe with MXFP8 block scaling (Megatron-Core's
// --fp8-recipe mxfp8), as Blackwell recipes name it, and "nvfp4" nvfp4_recipe().
constexpr precision_recipe parse_precision(std::string_view s) {
    if (s == "mxfp8" || s == "MXFP8") return precision_detail::fp8_named("mxfp8", fp8_scaling::mxfp8);
    if (s == "nvfp4" || s == "NVFP4") return nvfp4_recipe();
    return recipe(parse_enum<precision_kind>("precision", s));
}

// Whether the recipe's scaling is not the one its name implies (fp8's delayed, mxfp8's,
// nvfp4's): a setup written as flags then needs --fp8-scaling, a table column says it.
constexpr bool scaling_beyond_name(const precision_recipe& r) {
    return quantized_linears(r) && r.scaling != parse_precision(r.name).scaling;
}

// Whether the recipe's name fixes its scaling (mxfp8, nvfp4), so that no other may be asked.
constexpr bool name_fixes_scaling(const precision_recipe& r) { return r.name == "mxfp8" || r.name == "nvfp4"; }

// Bytes per parameter of weights + gradients + master copy (no optimizer state).
constexpr double model_state_bytes_per_parameter(const precision_recipe& r) {
    return size_of(r.weights) + size_of(r.gradients) + (r.fp32_master ? size_of(dtype::fp32) : 0.0);
}

// Bytes per cast parameter of autocast's 16-bit weight copies, 0 without autocast.
// autocast casts an fp32 parameter (an fp32 leaf that requires grad, not a view) to
// 16 bits once per autocast region and caches the copy until the outermost region
// exits (PyTorch aten/src/ATen/autocast_mode.cpp@008ec6b1,
// torch/amp/autocast_mode.py@00021b13); autograd keeps the copies the GEMMs saved
// until backward has used them, so they are live at the end of forward: the model is
// held "in both 16-bit and 32-bit precision (1.5x the original model)" (transformers
// docs/source/en/perf_train_gpu_one.md@04b696ac), 4 + 2 = 6 B of weights per
// parameter (transformers docs/source/en/model_memory_anatomy.md@249ef816).
constexpr double weight_copy_bytes_per_parameter(const precision_recipe& r) {
    return r.autocast ? size_of(r.math) : 0.0;
}

namespace precision_detail {
[[noreturn]] TRAINPERF_COLD inline void unsupported(const gpu_spec& gpu, const precision_recipe& r) {
    const std::string why = "not supported by " + std::string(gpu.name) + " (no " +
                            std::string(to_string(r.math)) +
                            (r.math == dtype::fp32 ? " math units)" : " tensor cores)");
    detail::fail("precision", r.name, why);
}
}  // namespace precision_detail

// Throws "precision = bf16: not supported by v100-sxm2-32gb (no bf16 tensor cores)"
// when the GPU has no math units for the recipe's GEMM dtype.
// Block scaling needs its hardware: MXFP8 Blackwell's block-scaled MMA (compute
// capability 10.0 and later; Transformer Engine's support matrix: MXFP8 on 10.0/10.3, not
// on 9.0), the 1×128 / 128×128 recipe compute capability 9.0 and later, NVFP4 the GPU's
// FP4 tensor cores (a peak for fp4: "precision = nvfp4: not supported by h100-sxm (no fp4
// tensor cores)"), with nvfp4 scaling and no other.
namespace precision_detail {
[[noreturn]] TRAINPERF_COLD inline void format_mismatch(const precision_recipe& r) {
    detail::fail("fp8_scaling", to_string(r.scaling),
                 r.math == dtype::fp4 ? "is not NVFP4's: FP4 GEMMs take nvfp4 scaling (E4M3 scales per 16 values)"
                                      : "is FP4's: nvfp4 scaling is --precision nvfp4, not fp8");
}

// "<what> (compute capability 10.0 or later); h100-sxm has 9.0<advice>".
[[noreturn]] TRAINPERF_COLD inline void needs_blackwell(std::string_view field, std::string_view value,
                                                       std::string_view what, const gpu_spec& gpu,
                                                       std::string_view advice = "") {
    detail::fail(field, value,
                 "needs " + std::string(what) + " (compute capability 10.0 or later); " + std::string(gpu.name) +
                     " has " + std::to_string(gpu.compute_capability / 10) + "." +
                     std::to_string(gpu.compute_capability % 10) + std::string(advice));
}

constexpr void check_block_scaling(const gpu_spec& gpu, const precision_recipe& r) {
    if ((r.math == dtype::fp4) != (r.scaling == fp8_scaling::nvfp4)) format_mismatch(r);
    if (r.scaling == fp8_scaling::mxfp8 && gpu.compute_capability < 100)
        needs_blackwell("fp8_scaling", "mxfp8", "Blackwell's block-scaled tensor cores", gpu,
                        ": use --fp8-scaling blockwise or delayed");
    if (r.scaling == fp8_scaling::nvfp4 && gpu.compute_capability < 100)
        needs_blackwell("precision", "nvfp4", "Blackwell's FP4 tensor cores (Transformer Engine's support matrix)",
                        gpu);
    if (r.scaling == fp8_scaling::blockwise && gpu.compute_capability < 90)
        detail::fail("fp8_scaling", "blockwise", "needs compute capability 9.0 or later (Hopper, Blackwell)");
}
}  // namespace precision_detail

constexpr void check_supported(const gpu_spec& gpu, const precision_recipe& r) {
    if (!gpu.supports(r.math)) precision_detail::unsupported(gpu, r);
    if (quantized_linears(r) && (block_scaled(r.scaling) || r.math == dtype::fp4))
        precision_detail::check_block_scaling(gpu, r);
}

}  // namespace trainperf
