// The workload: a training step as a list of operations. One layer's forward is GEMMs
// (m, n, k, batch, dtype) and memory-bound ops (bytes moved, FLOPs); backward adds a
// dgrad and a wgrad GEMM per GEMM and an elementwise backward per memory-bound op;
// recompute repeats forward ops. micro_batch_workload() gives the complete op list of
// the busiest pipeline stage for one micro-batch (layers, embedding, head and loss,
// tensor-parallel collectives, pipeline sends, recompute); step_workload() the ops
// that run once per step (data-parallel synchronisation per ZeRO stage, tied
// embeddings, the optimizer sweep or its offload). Shapes are per rank. Nothing here
// prices an op: kernel_model.hpp and comm.hpp do, step.hpp schedules them.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "dtype.hpp"
#include "enum_names.hpp"
#include "error.hpp"
#include "finetune.hpp"
#include "framework.hpp"
#include "model.hpp"
#include "ops.hpp"
#include "optimizer.hpp"
#include "parallel.hpp"
#include "placement.hpp"
#include "precision.hpp"
#include "setup.hpp"
#include "units.hpp"

namespace trainperf {

// The code a framework runs for the model's layers: the model's own (Hugging Face)
// implementation op by op, or the framework's own layer.
constexpr model_code code_run(const transformer_config& m, const framework_profile& fw) {
    return fw.runs_model_code ? m.code : model_code::generic;
}

// What one layer's workload depends on besides the model.
struct layer_context {
    int micro_batch = 1;
    int seq = 1;
    int tp = 1;
    int cp = 1;                    // context parallel: this rank holds s/cp of the sequence
    bool sp = false;               // sequence parallel: norms and dropouts on s/t tokens
    dtype math = dtype::bf16;      // GEMM math
    dtype activations = dtype::bf16;  // what GEMMs read and write (autocast: the 16-bit format)
    bool autocast = false;         // torch.autocast: fp32 weights cast per forward, mixed activations
    // The code that runs the layer (code_run): BERT and LLaMA project Q, K and V with
    // three GEMMs, the others with one.
    model_code code = model_code::generic;
    // An additive padding mask is applied to the scores (BERT's attention_mask; a
    // training batch of padded sequences has one, a bare layer call has none).
    bool padding_mask = true;
    // The projections' weights are frozen in 16 bits (LoRA, QLoRA; finetune.hpp):
    // autocast has nothing to cast for them.
    bool frozen_16bit_weights = false;
    // fp8 (Transformer Engine, precision.hpp fp8_linears): the Linear layers' GEMMs run
    // in FP8 on quantized inputs; `math` is then the 16-bit math of the attention core.
    // How the scales are chosen, and whether the GPU needs transposed FP8 copies.
    bool fp8_linears = false;
    fp8_scaling scaling = fp8_scaling::delayed;
    bool fp8_transposes = true;
};

// The context of the setup's layers, run by its framework on its GPU.
constexpr layer_context layer_context_of(const training_setup& s) {
    const precision_recipe r = precision_on(s.precision, s.cluster.gpu);
    return {.micro_batch = s.layout.micro_batch, .seq = sequence_length(s), .tp = s.layout.tp, .cp = s.layout.cp,
            .sp = s.layout.sp,
            .math = high_precision_math(r), .activations = r.activations, .autocast = r.autocast,
            .code = code_run(s.model, s.framework),
            .frozen_16bit_weights = s.finetune.freezes_base() && frozen_weight_bytes(r) < size_of(dtype::fp32),
            .fp8_linears = fp8_linears(r), .scaling = r.scaling, .fp8_transposes = r.fp8_transposes};
}

constexpr void validate(const layer_context& c, const transformer_config& m) {
    require(c.micro_batch >= 1, "batch", c.micro_batch, "must be at least 1");
    require(c.seq >= 1, "seq", c.seq, "must be at least 1");
    require(c.tp >= 1, "tp", c.tp, "must be at least 1");
    require(m.heads % c.tp == 0, "tp", c.tp, "must divide the number of attention heads");
    require(c.cp >= 1, "cp", c.cp, "must be at least 1");
    require_cp_splits_sequence(c.seq, c.cp);
}

// Tokens of the micro-batch on this rank: every per-token op (GEMMs' m, norms,
// dropouts, residual adds, tensor-parallel collectives, pipeline sends) runs on
// b·s/cp of them with context parallelism.
constexpr double rank_tokens(const layer_context& c) { return double(c.micro_batch) * c.seq / c.cp; }

// The attention core of one rank: its queries against the keys they attend to, and
// the share of the layer's attention-core work (causal or not) it does.
// Context parallelism (Megatron-Core docs/user-guide/features/context_parallel.md@d98e8a64;
// TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/
// context_parallel.py@d0067d0d; Liu et al. 2023, Ring Attention, arXiv:2310.01889):
// each rank keeps its s/cp queries and meets all s keys as the KV chunks pass around
// the ring; with causal load balancing (2·cp chunks, rank r holds r and 2cp−1−r) every
// non-diagonal ring step costs half a full (s/cp)² block, so each rank does 1/cp of
// the causal core, and 1/cp of a non-causal one. Without cp: s queries, s keys, all.
struct attention_core_extent {
    double queries = 1;   // q length on this rank
    double keys = 1;      // kv length its queries meet
    double share = 1;     // this rank's share of the layer's attention-core work
};

constexpr attention_core_extent attention_core_shape(const transformer_config&, const layer_context& c) {
    return {double(c.seq) / c.cp, double(c.seq), 1.0 / c.cp};
}

// The forward GEMMs of one layer on one tensor-parallel rank.
// At most 9 forward GEMMs: Q, K and V apart, the attention core's two, the output
// projection, SwiGLU's gate, up and down.
using layer_gemm_list = op_list<gemm_op, 9>;
using layer_backward_gemm_list = op_list<gemm_op, 18>;
using layer_memory_list = op_list<memory_op, 48>;

inline layer_gemm_list layer_forward_gemms(const transformer_config& m, const layer_context& c) {
    validate(c, m);
    const double tokens = rank_tokens(c);
    const attention_core_extent core = attention_core_shape(m, c);
    const double h = m.hidden, t = c.tp, d = m.head_dim(), q = m.q_width();
    // Grouped-query attention: kv heads shard over tp, or are replicated when fewer.
    const double kv = m.kv_width();
    const double kv_per_rank = m.effective_kv_heads() >= c.tp ? kv / t : d;
    const double attention_batch = double(c.micro_batch) * m.heads / t;
    const double f = m.ffn_hidden / t;
    const dtype x = c.math;                                   // the attention core
    const dtype lin = c.fp8_linears ? dtype::fp8 : c.math;    // the Linear layers
    layer_gemm_list ops;
    const auto attention = layer_block::attention;
    const auto mlp = layer_block::mlp;
    const auto forward = op_phase::forward;
    const auto other = op_region::other;
    if (c.code == model_code::bert || c.code == model_code::llama) {
        ops.push_back({"q", {tokens, q / t, h, 1, lin}, forward, other, attention});
        ops.push_back({"k", {tokens, kv_per_rank, h, 1, lin}, forward, other, attention});
        ops.push_back({"v", {tokens, kv_per_rank, h, 1, lin}, forward, other, attention});
    } else {
        ops.push_back({"qkv", {tokens, q / t + 2 * kv_per_rank, h, 1, lin}, forward, other, attention});
    }
    ops.push_back({"attention_scores", {core.queries, core.keys, d, attention_batch, x}, forward,
                   op_region::attention_core, attention});
    ops.push_back({"attention_context", {core.queries, d, core.keys, attention_batch, x}, forward,
                   op_region::attention_core, attention});
    ops.push_back({"attention_out", {tokens, h, q / t, 1, lin}, forward, other, attention});
    if (m.ffn == ffn_kind::swiglu) {
        ops.push_back({"ffn_gate", {tokens, f, h, 1, lin}, forward, other, mlp});
        ops.push_back({"ffn_up", {tokens, f, h, 1, lin}, forward, other, mlp});
    } else {
        ops.push_back({"ffn_up", {tokens, f, h, 1, lin}, forward, other, mlp});
    }
    ops.push_back({"ffn_down", {tokens, h, f, 1, lin}, forward, other, mlp});
    return ops;
}

// The dgrad and wgrad GEMM of every forward GEMM, in order, to sink(const gemm_op&)
// (backward_gemms_of collects them). The attention core has no weights: both of its
// backward GEMMs are input gradients.
template <class Sink>
constexpr void for_each_backward_gemm(const layer_gemm_list& forward, Sink&& sink) {
    for (const auto& g : forward) {
        sink(gemm_op{g.name, dgrad_of(g.shape), op_phase::backward_data, g.region, g.block});
        sink(gemm_op{g.name, wgrad_of(g.shape),
                     g.region == op_region::attention_core ? op_phase::backward_data : op_phase::backward_weight,
                     g.region, g.block});
    }
}

inline layer_backward_gemm_list backward_gemms_of(const layer_gemm_list& forward) {
    layer_backward_gemm_list ops;
    for_each_backward_gemm(forward, [&ops](const gemm_op& g) { ops.push_back(g); });
    return ops;
}

// Forward, dgrad and wgrad GEMMs of one layer (the list the cuBLASLt harness runs).
inline std::vector<gemm_op> layer_gemms(const transformer_config& m, int micro_batch, int seq,
                                        int tp, dtype math) {
    const auto forward = layer_forward_gemms(
        m, {.micro_batch = micro_batch, .seq = seq, .tp = tp, .math = math, .activations = math});
    const auto backward = backward_gemms_of(forward);
    std::vector<gemm_op> ops(forward.begin(), forward.end());
    ops.insert(ops.end(), backward.begin(), backward.end());
    return ops;
}

// The attention core as one fused kernel, forward and backward, when the framework
// has one (framework_profile::flash_attention): b·a/t problems of s queries against s
// keys of head size d, causal for decoders. It replaces the two attention-core GEMMs
// and the memory-bound ops between them. It stays in 16 bits under an FP8 recipe
// (Transformer Engine's fp8_dpa is off by default).
struct fused_attention_ops {
    attention_op forward{}, backward{};
};

constexpr fused_attention_ops attention_core_ops(const transformer_config& m, const layer_context& c,
                                                 const framework_profile& fw) {
    // With context parallelism this rank's s/cp queries meet all s keys (the ring's
    // chunks one after the other); load-balanced causal work is 1/cp of the core.
    const attention_core_extent core = attention_core_shape(m, c);
    const attention_op forward{.name = "flash_attention", .batch = double(c.micro_batch) * m.heads / c.tp,
                               .seq_q = core.queries, .seq_kv = core.keys, .head_dim = double(m.head_dim()),
                               .causal = m.causal, .math = c.math == dtype::fp8 ? dtype::bf16 : c.math,
                               .phase = op_phase::forward,
                               .kernel = fw.flash_kernel, .block = layer_block::attention};
    attention_op backward = forward;
    backward.phase = op_phase::backward;
    return {forward, backward};
}

// Whether a GEMM of the layer runs as such: with a fused attention kernel the
// attention-core GEMMs are inside it.
constexpr bool runs_as_gemm(const gemm_op& g, const framework_profile& fw) {
    return !(fw.flash_attention && g.region == op_region::attention_core);
}


// The memory-bound forward ops of one layer under a framework profile. Sizes are
// per rank: hidden-sized tensors shrink by tp only with sequence parallelism. Each op
// moves what it reads plus what it writes, in the format of each tensor
// (activation_formats_of): without autocast all of one format. An op that stands for
// several kernels (a norm or an activation written as PyTorch ops) carries their
// launches and their summed traffic.
//
// Under autocast (PyTorch docs/source/amp.rst@0137a5f1,
// aten/src/ATen/autocast_mode.cpp@008ec6b1; Hugging Face GPT-2, transformers
// src/transformers/models/gpt2/modeling_gpt2.py@0010f602 and
// src/transformers/activations.py@00e12e7c) the layer also runs casts, each reading
// one format and writing the other:
//   - the weights: each fp32 linear weight and bias is cast to 16 bits once per
//     forward (the weight-cast cache lives until the autocast region exits), 4 + 2 B
//     per parameter; backward casts each 16-bit weight gradient back into the fp32
//     .grad, the same bytes (the cast's backward);
//   - the activations at each fp32 → 16-bit boundary, re-cast at every use (only
//     parameters are cached): the first norm's output into the QKV GEMM(s) (BERT's and
//     LLaMA's three projections each cast it), the second norm's output into the FFN
//     GEMM(s) (SwiGLU's gate and up each cast it), the fp32 softmax output (GPT-2's
//     .type(value.dtype)), gelu_new's input into pow (fp32 list) and its fp32 output
//     into the FFN-down GEMM; 4 + 2 B per element.
// and the ops on the fp32 list or fed by an fp32 tensor move fp32: layernorm reads and
// writes fp32, softmax reads 16 bits and writes fp32, the residual adds read the
// 16-bit branch and the fp32 stream and write fp32, gelu_new from pow on is fp32.
// Emits them one by one to sink(const memory_op&); layer_forward_memory_ops collects.
template <class Sink>
constexpr void for_each_layer_forward_memory_op(const transformer_config& m, const layer_context& c,
                                                const framework_profile& fw, Sink&& sink) {
    const activation_formats x = activation_formats_of(c.activations, c.autocast);
    const double a = size_of(x.gemm_inputs);        // GEMM inputs and outputs
    const double res = size_of(x.residual);         // the residual stream
    const double normed = size_of(x.norm_output);
    const double probs = size_of(x.softmax_output);
    const double chain = size_of(x.elementwise_chain);
    const double f32 = size_of(dtype::fp32);
    const double mask = 1.0;  // dropout masks are one byte per element
    const double tokens = rank_tokens(c);
    const double hidden = tokens * m.hidden / (c.sp ? c.tp : 1);     // norms, dropout, residual
    const double hidden_tp = tokens * m.q_width() / c.tp;            // attention, inside the TP region
    const double kv_tp = tokens * m.kv_width() / c.tp;
    const double ffn = tokens * m.ffn_hidden / c.tp;
    const attention_core_extent core_extent = attention_core_shape(m, c);
    const double scores = double(c.micro_batch) * (m.heads / c.tp) * core_extent.queries * core_extent.keys;
    const model_code code = c.code;  // the context's, as for the GEMMs (code_run sets it)
    layer_block block = layer_block::attention;  // the MLP block starts at its norm
    const auto op = [&block](std::string_view name, double moved, op_region region = op_region::other,
                             double launches = 1) {
        return memory_op{name, bytes_of(moved), op_phase::forward, region, launches, block};
    };
    // `elements` converted from one format to the other, over `launches` kernels.
    const auto cast = [&block](std::string_view name, double elements, double from, double to,
                               op_region region = op_region::other, double launches = 1) {
        return memory_op{name, bytes_of(elements * (from + to)), op_phase::forward, region, launches, block, true};
    };
    if (c.autocast && !c.frozen_16bit_weights)
        sink(cast("autocast_weight_cast", layer_linear_parameters(m) / c.tp, f32, a, op_region::other,
                  layer_linear_tensors(m, c.code)));
    const auto norm = [&] {
        if (m.norm == norm_kind::layernorm) {
            sink(op("layernorm", hidden * (res + normed)));
        } else if (code == model_code::llama) {
            // Hugging Face LlamaRMSNorm (modeling_llama.py): to(fp32) a+4, pow(2) 8,
            // mean 4, + eps and rsqrt on one value per token, × rsqrt 8, to(dtype) 4+a,
            // weight × 2a: 28 + 4a bytes per element over 8 kernels.
            sink(op("rmsnorm", hidden * (28 + 4 * a), op_region::other, 8));
        } else {
            sink(op("rmsnorm", hidden * (res + normed)));
        }
    };
    norm();
    const double qkv_inputs = c.code == model_code::bert || c.code == model_code::llama ? 3.0 : 1.0;
    if (normed != a) sink(cast("autocast_cast_qkv_input", qkv_inputs * hidden, normed, a, op_region::other, qkv_inputs));
    // Q, K and V into the head layout: matmul copies each permuted operand (3 copies).
    if (fw.head_layout_copies) sink(op("split_heads_copy", 2 * 3 * hidden_tp * a, op_region::other, 3));
    if (code == model_code::llama && m.positions == position_kind::rotary) {
        // apply_rotary_pos_emb on q and k: neg and cat (rotate_half), × cos, × sin, +:
        // 5 kernels over each, ~10 element accesses (10·a bytes) per element; the cos/sin
        // tables are small.
        sink(op("rotary", 10 * (hidden_tp + kv_tp) * a, op_region::other, 10));
        // repeat_kv: grouped K and V expanded to every head (a copy each).
        if (m.effective_kv_heads() < m.heads) sink(op("repeat_kv", 2 * 2 * hidden_tp * a, op_region::other, 2));
    }
    if (!fw.flash_attention) {
        const auto core = op_region::attention_core;
        if (fw.fused_softmax) {
            sink(op("scale_mask_softmax", scores * (a + probs), core));
        } else {
            switch (code) {
                case model_code::bert:
                    // modeling_bert.py: scores / √d, + the padding mask, softmax, dropout.
                    sink(op("scale", 2 * scores * a, core));
                    if (c.padding_mask) sink(op("attention_mask", 2 * scores * a, core));
                    sink(op("softmax", scores * (a + probs), core));
                    break;
                case model_code::gpt2:
                    // modeling_gpt2.py _attn: the scale as a tensor (torch.full, a fill),
                    // the division, mask_value built on the CPU and copied to the GPU
                    // (a 2-byte copy), torch.where with the causal mask, softmax.
                    sink(op("scale_fill", 0, core));
                    sink(op("scale", 2 * scores * a, core));
                    sink(op("mask_value_copy", 0, core));
                    sink(op("causal_mask_where", 2 * scores * a, core));
                    sink(op("softmax", scores * (a + probs), core));
                    break;
                case model_code::llama:
                    // modeling_llama.py eager attention: / √d, + a 4-D causal mask,
                    // softmax in fp32 (reads 16-bit, writes fp32), back to 16-bit.
                    sink(op("scale", 2 * scores * a, core));
                    sink(op("attention_mask", 2 * scores * a + scores / (m.heads / c.tp) * a, core));
                    sink(op("softmax", scores * (a + f32), core));
                    sink(op("softmax_cast", scores * (f32 + a), core));
                    break;
                case model_code::generic:
                    sink(op("scale", 2 * scores * a, core));
                    // Causal mask (decoders) or padding mask (encoders): one more pass either way.
                    sink(op("attention_mask", 2 * scores * a + scores * mask, core));
                    sink(op("softmax", scores * (a + probs), core));
                    break;
            }
        }
        // The fp32 probabilities cast back (LLaMA's code casts them itself, above).
        if (probs != a && !fw.fused_softmax && code != model_code::llama)
            sink(cast("autocast_cast_probabilities", scores, probs, a, core));
        if (m.dropout) sink(op("attention_dropout", 2 * scores * a + scores * mask, core));
    }  // else: one fused kernel (attention_core_ops), its traffic in its own op
    if (fw.head_layout_copies) sink(op("merge_heads_copy", 2 * hidden_tp * a));
    // The branch output (a GEMM's) added to the residual stream: reads both, writes the stream.
    const double add = hidden * (a + 2 * res);
    const auto residual_block = [&](std::string_view fused_name, std::string_view dropout_name,
                                    std::string_view add_name) {
        if (!m.dropout) {
            sink(op(add_name, add));
        } else if (fw.fused_bias_dropout_add) {
            sink(op(fused_name, add + hidden * mask));
        } else {
            sink(op(dropout_name, 2 * hidden * a + hidden * mask));
            sink(op(add_name, add));
        }
    };
    residual_block("bias_dropout_add_attention", "dropout_attention", "residual_add_attention");
    // The second norm (before the FFN); one norm feeding attention and FFN in parallel
    // (Falcon-7B) has none, and extra post-norms (norms_per_layer 3-4) are passes like it.
    block = layer_block::mlp;
    for (int k = 1; k < m.norms_per_layer; ++k) norm();
    const double ffn_inputs = m.ffn == ffn_kind::swiglu ? 2.0 : 1.0;  // GEMMs reading the norm's output
    if (normed != a)
        sink(cast("autocast_cast_ffn_input", ffn_inputs * hidden, normed, a, op_region::other, ffn_inputs));
    if (m.ffn == ffn_kind::swiglu) {
        // silu(gate) · up: one fused kernel, or silu then multiply.
        if (fw.fused_bias_gelu) {
            sink(op("swiglu", 3 * ffn * a));
        } else {
            sink(op("silu", 2 * ffn * a));
            sink(op("gate_multiply", 3 * ffn * a));
        }
    } else if (fw.fused_bias_gelu) {
        sink(op("bias_gelu", 2 * ffn * a));
    } else if (fw.runs_model_code && m.activation == activation_kind::gelu_new) {
        // NewGELUActivation as PyTorch ops (activations.py), in evaluation order: 0.5·x
        // 2a; pow 2c, × 0.044715 2c, x + a + 2c, × √(2/π) 2c, tanh 2c, 1 + 2c; the product
        // a + 2c: 4a + 14c per element over 8 kernels, c the chain's format (a, or fp32
        // under autocast, where pow is on the fp32 list: its input is cast in and the
        // result cast out for the FFN-down GEMM).
        sink(op("gelu_new", ffn * (4 * a + 14 * chain), op_region::other, 8));
        if (chain != a) {
            sink(cast("autocast_cast_gelu_input", ffn, a, chain));
            sink(cast("autocast_cast_ffn_down_input", ffn, chain, a));
        }
    } else {
        sink(op("gelu", 2 * ffn * a));
    }
    residual_block("bias_dropout_add_ffn", "dropout_ffn", "residual_add_ffn");
}

// What the host calls per layer forward besides the kernels' own ops (host_call),
// counted in the Hugging Face modeling code (transformers 4.2x-4.3x) of each family,
// per block of the layer:
// - bert (modeling_bert.py@004ad5f5): attention block 10 module calls
//   (BertAttention, BertSelfAttention, query, key, value, dropout, BertSelfOutput,
//   dense, dropout, LayerNorm) and 9 views (view + permute of q, k, v; k.transpose;
//   permute and view of the context); MLP block 7 calls (BertIntermediate, dense, the
//   activation, BertOutput, dense, dropout, LayerNorm); BertLayer itself 1;
// - gpt2 (modeling_gpt2.py@0010f602): attention block 6 calls (ln_1, attn, c_attn,
//   attn_dropout, c_proj, resid_dropout) and 17 views (two in each Conv1D, split, view
//   + permute of q, k, v, k.transpose, two slices of the causal-mask buffer, permute
//   and view of the context, the CPU-side torch.full of mask_value); MLP block 6 calls
//   (ln_2, mlp, c_fc, act, c_proj, dropout) and 4 views (the two Conv1D); GPT2Block 1;
// - llama (modeling_llama.py): attention block 7 calls (input_layernorm, self_attn,
//   q/k/v/o projections, rotary embedding) and 17 views (view + transpose of q, k, v;
//   cos/sin slicing and unsqueeze; rotate_half slices; k transpose; transpose and
//   reshape of the output); MLP block 6 calls (post_attention_layernorm, mlp,
//   gate/up/down projections, act); the decoder layer 1;
// - generic: ASSUMPTION: a compact layer (Megatron-style): 4 calls and 7 views in
//   attention, 4 and 3 in the MLP, 2 for the layer.
struct host_calls {
    double views = 0;
    double modules = 0;
};

struct layer_host_calls {
    host_calls attention{}, mlp{}, layer{};
    constexpr host_calls total() const {
        return {attention.views + mlp.views + layer.views, attention.modules + mlp.modules + layer.modules};
    }
};

constexpr layer_host_calls host_calls_per_layer(model_code code) {
    switch (code) {
        case model_code::bert: return {{9, 10}, {0, 7}, {0, 1}};
        case model_code::gpt2: return {{17, 6}, {4, 6}, {0, 1}};
        case model_code::llama: return {{17, 7}, {0, 6}, {0, 1}};
        case model_code::generic: break;
    }
    return {{7, 4}, {3, 4}, {0, 2}};
}

// Parameter tensors of one layer (each has an AccumulateGrad node in backward): its
// projections' as the code runs them, and the norms'.
constexpr double layer_parameter_tensors(const transformer_config& m, model_code code) {
    return layer_linear_tensors(m, code) + m.norms_per_layer * (m.norm == norm_kind::layernorm ? 2.0 : 1.0);
}

inline layer_memory_list layer_forward_memory_ops(const transformer_config& m, const layer_context& c,
                                                  const framework_profile& fw) {
    validate(c, m);
    layer_memory_list ops;
    for_each_layer_forward_memory_op(m, c, fw, [&ops](const memory_op& op) { ops.push_back(op); });
    return ops;
}

// The elementwise backward of a forward memory op, and of each op of a list.
constexpr memory_op backward_of(const memory_op& f, const framework_profile& fw) {
    return {f.name, (f.cast ? 1.0 : fw.backward_traffic_ratio) * f.moved, op_phase::backward, f.region, f.launches,
            f.block, f.cast};
}

inline layer_memory_list backward_of(const layer_memory_list& forward, const framework_profile& fw) {
    layer_memory_list ops;
    for (const auto& f : forward) ops.push_back(backward_of(f, fw));
    return ops;
}

// ---- FP8 quantization (NVIDIA Transformer Engine) -------------------------------------

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

// The FP8 casts of one layer's Linear GEMMs (NVIDIA Transformer Engine,
// docs/features/low_precision_training, @d0067d0d), memory-bound ops of
// fp8_quantization_bytes_per_element each (read the 16-bit tensor once, twice with
// current scaling; write the FP8 copy and on Hopper its transpose). Per Linear of
// forward GEMM X[m×k]·W[k×n]:
//   forward: X quantized to E4M3 (m·k elements), and W (k·n, the bf16 weight on this
//     rank) once per forward of every micro-batch (ASSUMPTION: no FP8 weight cache
//     across micro-batches; TE can keep one with is_first_microbatch, which would make
//     it once per step);
//   backward: the output gradient dY quantized to E5M2 (m·n) for the dgrad (dY·Wᵀ,
//     with the Wᵀ copy made in forward) and the wgrad (Xᵀ·dY, with the saved Xᵀ).
// A Linear whose input another already quantized shares its cast (Megatron's fused
// gate and up: one Linear). Summed per block: input, weight and output-gradient casts
// of the attention block, then of the MLP block; launches count the casts.
inline fp8_quantization_list layer_fp8_quantization_ops(const transformer_config& m, const layer_context& c) {
    fp8_quantization_list ops;
    if (!c.fp8_linears) return ops;
    const auto gemms = layer_forward_gemms(m, c);  // validates the context
    // Activations and the working weights are 16-bit (bf16 under the fp8 recipe).
    const double per = fp8_quantization_bytes_per_element(c.scaling, c.fp8_transposes, size_of(c.activations));
    const double launches = fp8_quantization_launches(c.scaling);
    struct casts {
        double inputs = 0, weights = 0, gradients = 0, modules = 0, input_casts = 0;
    };
    std::array<casts, 2> block{};  // attention, MLP
    std::string_view previous;
    for (const auto& g : gemms) {
        if (g.shape.math != dtype::fp8) continue;
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
    for (std::size_t i = 0; i < block.size(); ++i) {
        const casts& b = block[i];
        const layer_block where = i == 0 ? layer_block::attention : layer_block::mlp;
        const auto cast = [&](std::string_view name, double elements, op_phase phase, double count) {
            ops.push_back({name, bytes_of(elements * per), phase, op_region::other, count * launches, where, true});
        };
        cast("fp8_quantize_input", b.inputs, op_phase::forward, b.input_casts);
        cast("fp8_quantize_weight", b.weights, op_phase::forward, b.modules);
        cast("fp8_quantize_output_gradient", b.gradients, op_phase::backward, b.modules);
    }
    return ops;
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

// ---- One micro-batch on the busiest pipeline stage -----------------------------------

// Which part of a micro-batch's time an op adds to.
// context_parallel: the KV ring of context parallelism, which overlaps the attention
// core of its pass (step.hpp).
enum class step_part { forward, backward, tensor_parallel, pipeline, context_parallel };

template <>
struct enum_names<step_part> {
    static constexpr std::array<enum_name<step_part>, 5> table{
        {{step_part::forward, "forward"}, {step_part::backward, "backward"},
         {step_part::tensor_parallel, "tensor-parallel"}, {step_part::pipeline, "pipeline"},
         {step_part::context_parallel, "context-parallel"}}};
};

// An op of the stage: `count` times per micro-batch, and `recomputed` more times when
// backward rebuilds what was not kept (recompute repeats forward ops).
template <class Op>
struct stage_op {
    Op op{};
    double count = 1;
    double recomputed = 0;
    step_part part = step_part::forward;
};

struct stage_workload {
    op_list<stage_op<gemm_op>, 80> gemms;     // 30 for a full layer and head; adapters add 6 per target
    op_list<stage_op<memory_op>, 112> memory;
    op_list<stage_op<collective_op>, 6> collectives;
    op_list<stage_op<host_op>, 16> host;  // for_each_layer_host_op: at most 14
    op_list<stage_op<attention_op>, 2> attention;  // the fused attention kernel, forward and backward
};

// Transformer layers on the busiest stage.
constexpr int stage_layers(const training_setup& s) { return layers_per_stage(s.model, s.layout.pp); }

// The setup's layout placed on its cluster (placement.hpp place): which ranks share a
// node, for every group. The overloads below that take `groups` expect this value; a
// prediction computes it once and passes it on.
constexpr layout_groups groups_of(const training_setup& s) {
    return place(s.layout, s.cluster.gpus_per_node, s.cluster.order);
}

// The pipeline sends of one micro-batch: activations forward and gradients backward at
// each stage boundary, once per virtual stage; Megatron's scatter-gather splits each
// send over the tp ranks.
constexpr stage_op<collective_op> pipeline_sends(const training_setup& s, const layout_groups& groups) {
    const auto& l = s.layout;
    const double tokens = double(l.micro_batch) * sequence_length(s) / l.cp;  // this rank's s/cp
    // The residual stream (fp32 under autocast).
    const double residual = size_of(activation_formats_of(s.precision).residual);
    const bytes message = bytes_of(tokens * s.model.hidden * residual / l.tp);
    return {{"pipeline_send", collective::p2p, message, stage_pair(groups)}, 2.0 * l.interleave, 0,
            step_part::pipeline};
}

// Context parallelism's KV ring, p2p type (Megatron-Core
// docs/user-guide/features/context_parallel.md@d98e8a64, cp_comm_type "p2p", the
// default; TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/
// context_parallel.py@d0067d0d, AttnFuncWithCPAndKVP2P; Liu et al. 2023, Ring
// Attention, arXiv:2310.01889): forward runs cp steps, each sending the K and V chunk in
// hand to the next rank while attending to it, cp − 1 sends of 2·b·(s/cp)·kv/t elements
// in the activation format (kv = kv heads × d, so GQA shrinks it; fewer kv heads than
// t leave one replicated head per rank); backward passes KV around the ring again and
// the dKV chunks with it (TE sends dKV to the next rank at each step: a reduce-scatter
// in ring form), 2·(cp − 1) sends of the same size. Recomputing the attention core
// (selective or full recompute) runs the forward ring again. On the cp group's link.
// `layers` layers; the two ops are tagged with their pass (forward, backward).
template <class Sink>
constexpr void for_each_kv_ring_op(const training_setup& s, const layout_groups& groups, double layers,
                                   double recomputed, Sink&& sink) {
    const auto& l = s.layout;
    const auto& m = s.model;
    if (l.cp == 1) return;
    const double tokens = double(l.micro_batch) * sequence_length(s) / l.cp;
    const double kv_per_rank = m.effective_kv_heads() >= l.tp ? m.kv_width() / l.tp : m.head_dim();
    const double a = size_of(activation_formats_of(s.precision).gemm_inputs);
    const bytes chunk = bytes_of(2 * tokens * kv_per_rank * a);
    const double sends = l.cp - 1.0;
    sink(stage_op<collective_op>{{"context_parallel_kv_send", collective::p2p, chunk, groups.context,
                                  op_phase::forward},
                                 sends * layers, sends * recomputed, step_part::context_parallel});
    sink(stage_op<collective_op>{{"context_parallel_kv_dkv_send", collective::p2p, chunk, groups.context,
                                  op_phase::backward},
                                 2 * sends * layers, 0, step_part::context_parallel});
}

// The adapters' ops of one layer (LoRA, QLoRA), `layers` times per micro-batch and
// `recomputed` more with full recompute; returns the forward kernel launches. Per
// adapted projection W (d_in → d_out), after Hu et al. 2021 §4.1, h = W·x + B·A·x:
//   forward: x·A (tokens × r over d_in) and (xA)·B (tokens × d_out over r), then the
//     scaling (α/r) multiply and the add into W's output: 2a + 3a = 5a bytes per output
//     element over 2 kernels, a the GEMM format;
//   backward: the dgrad and the wgrad of both GEMMs (A's and B's weight gradients, and
//     the input gradients the layer below needs), the elementwise backward of the add.
// Tensor parallelism splits B's output for a column-parallel projection and A's input
// for a row-parallel one (ASSUMPTION: as the projection itself is split; r is whole).
// Under autocast the fp32 adapter weights are cast to 16 bits once per forward (and
// their gradients cast back), 4 + 2 B per parameter.
// QLoRA: before each GEMM that uses a 4-bit weight, bitsandbytes dequantizes it to 16
// bits, a memory-bound kernel reading qlora_bytes_per_parameter (NF4 values and their
// constants) and writing the 16-bit weight, once per projection, in forward and again
// in backward for the dgrad (ASSUMPTION: bitsandbytes' 4-bit matmul, MatMul4Bit,
// dequantizes then runs a 16-bit matmul, in forward and for the input gradient in
// backward, and keeps no dequantized copy between them; full recompute dequantizes
// again with the forward it repeats).
template <class Sink>
constexpr double for_each_adapter_op(const training_setup& s, const layer_context& ctx, double layers,
                                     double recomputed, Sink&& sink) {
    const auto& m = s.model;
    const finetune_spec& ft = s.finetune;
    const double tokens = rank_tokens(ctx);
    const double t = ctx.tp, r = ft.rank;
    const double a = size_of(activation_formats_of(ctx.activations, ctx.autocast).gemm_inputs);
    double launches = 0, outputs = 0;
    for (const auto& x : lora_matrices(m)) {
        if (!x.present || !ft.adapts(x.target)) continue;
        const double d_in = x.column_parallel ? x.d_in : x.d_in / t;
        const double d_out = x.column_parallel ? x.d_out / t : x.d_out;
        const layer_block block =
            x.target == lora_target::gate || x.target == lora_target::up || x.target == lora_target::down
                ? layer_block::mlp
                : layer_block::attention;
        const gemm_op down{x.a_name, {tokens, r, d_in, 1, ctx.math}, op_phase::forward, op_region::other, block};
        const gemm_op up{x.b_name, {tokens, d_out, r, 1, ctx.math}, op_phase::forward, op_region::other, block};
        for (const gemm_op& g : {down, up}) {
            sink(stage_op<gemm_op>{g, layers, recomputed, step_part::forward});
            sink(stage_op<gemm_op>{{g.name, dgrad_of(g.shape), op_phase::backward_data, g.region, block}, layers, 0,
                                   step_part::backward});
            sink(stage_op<gemm_op>{{g.name, wgrad_of(g.shape), op_phase::backward_weight, g.region, block}, layers, 0,
                                   step_part::backward});
        }
        launches += 2;
        outputs += tokens * d_out;
    }
    const double adapted = adapted_matrices_per_layer(m, ft);
    const auto both = [&](const memory_op& f) {
        launches += f.launches;
        sink(stage_op<memory_op>{f, layers, recomputed, step_part::forward});
        sink(stage_op<memory_op>{backward_of(f, s.framework), layers, 0, step_part::backward});
    };
    both({"lora_scale_add", bytes_of(5 * a * outputs), op_phase::forward, op_region::other, 2 * adapted,
          layer_block::other});
    if (ctx.autocast)
        both({"autocast_lora_weight_cast", bytes_of(adapter_parameters_per_layer(m, ft) / t * (size_of(dtype::fp32) + a)),
              op_phase::forward, op_region::other, 2 * adapted, layer_block::other, true});
    if (ft.quantized()) {
        const double matrices = layer_projection_matrices(m);
        const bytes moved = bytes_of(layer_projection_matrix_parameters(m) / t *
                                     (qlora_bytes_per_parameter + frozen_weight_bytes(s.precision)));
        const memory_op forward{"dequantize_4bit", moved, op_phase::forward, op_region::other, matrices,
                                layer_block::other, true};
        launches += matrices;
        sink(stage_op<memory_op>{forward, layers, recomputed, step_part::forward});
        sink(stage_op<memory_op>{{"dequantize_4bit", moved, op_phase::backward, op_region::other, matrices,
                                  layer_block::other, true},
                                 layers, 0, step_part::backward});
    }
    return launches;
}

// What the host calls for one layer besides the kernels' launches (which step.hpp
// charges per launch), to sink(const stage_op<host_op>&), `layers` times:
//   - views and module calls in forward (again when recomputed), from the model's code
//     (host_calls_per_layer) or the framework's own layer (framework_profile::layer_host);
//   - in backward one autograd node per recorded op and view, and one AccumulateGrad per
//     parameter tensor;
//   - the framework's own layer: its Python Functions (apply in forward, a Python
//     backward each), scripted calls, RNG tracker forks, Transformer Engine modules'
//     bookkeeping, the data-parallel wrapper's hook per parameter;
//   - each tensor-parallel collective called from Python (forward: 2 all-reduces, or 2
//     all-gathers and 2 reduce-scatters with sequence parallelism; backward: 2, or 4
//     all-gathers and 2 reduce-scatters; Megatron-LM megatron/mpu/layers.py and
//     mappings.py@28ba253f);
//   - a full-recompute checkpoint's Function, state saves and restores (framework.hpp
//     checkpoint_rng_calls).
// With CUDA graphs (framework_profile::cuda_graphs) all of that is captured: each pass of
// a layer is one replay Function, the copy of its static inputs and the graph's launch
// (Megatron-Core cuda_graphs.py@d98e8a64 _CudagraphReplayNode); step.hpp then charges no
// launch of the layer's kernels. ASSUMPTION: the layer's autograd nodes and gradient
// hooks go with them (the replay node stands for the layer's graph in backward).
template <class Sink>
constexpr void for_each_layer_host_op(const training_setup& s, double layers, double forward_launches,
                                      Sink&& sink) {
    const auto& m = s.model;
    const auto& l = s.layout;
    const auto& fw = s.framework;
    const auto host = [&](std::string_view name, host_call call, double count, double recomputed, step_part part) {
        if (count > 0)
            sink(stage_op<host_op>{{name, call, count,
                                    part == step_part::forward ? op_phase::forward : op_phase::backward},
                                   layers, recomputed, part});
    };
    const auto fwd = step_part::forward;
    const auto bwd = step_part::backward;
    if (fw.cuda_graphs) {
        host("layer_graph_replay", host_call::function, 1, 0, fwd);
        host("layer_graph_launch", host_call::graph_launch, 2, 0, fwd);
        host("layer_graph_replay", host_call::function_backward, 1, 0, bwd);
        host("layer_graph_launch", host_call::graph_launch, 2, 0, bwd);
        return;
    }
    const bool full = l.recompute == recompute_mode::full;
    const double again = full ? 1.0 : 0.0;  // forward calls repeated per layer when recomputed
    const model_code code = code_run(m, fw);
    const finetune_spec& ft = s.finetune;
    const bool frozen = ft.freezes_base();
    const bool own = !fw.runs_model_code && fw.layer_host.described();
    const layer_host_inventory& inv = fw.layer_host;
    const host_calls calls = own ? host_calls{inv.views, inv.modules} : host_calls_per_layer(code).total();
    host("layer_views", host_call::view, calls.views, again * layers, fwd);
    // Fine-tuning: PEFT's LoRA layer calls its base layer, the adapter dropout, A and B
    // (ASSUMPTION: 3 module calls per adapted projection besides the base's own); only
    // the adapters' A and B have an AccumulateGrad node.
    const double adapted = adapted_matrices_per_layer(m, ft);
    const double parameter_tensors = frozen ? 2 * adapted : layer_parameter_tensors(m, code);
    host("layer_modules", host_call::module, calls.modules + 3 * adapted, again * layers, fwd);
    host("layer_autograd_nodes", host_call::backward_node, forward_launches + calls.views + parameter_tensors, 0,
         bwd);
    if (own) {
        const double functions =
            inv.functions + (m.positions == position_kind::rotary ? inv.rotary_functions : 0.0);
        host("layer_functions", host_call::function, functions + inv.scripted_calls, again * layers, fwd);
        host("layer_functions", host_call::function_backward, functions, 0, bwd);
        host("layer_rng_forks", host_call::rng_state, 4 * inv.rng_forks, again * layers, fwd);
        host("layer_library_modules", host_call::library_module, inv.library_modules, again * layers, fwd);
        host("layer_library_modules", host_call::library_module_backward, inv.library_modules, 0, bwd);
        if (inv.gradient_hooks) host("layer_gradient_hooks", host_call::gradient_hook, parameter_tensors, 0, bwd);
    }
    // With tensor-parallel overlap Transformer Engine's userbuffers move the data from C++:
    // no Python collective (ASSUMPTION: their set-up is in the TE modules' bookkeeping).
    if (l.tp > 1 && !overlaps_tensor_parallel(s)) {
        host("tensor_parallel_calls", host_call::collective, l.sp ? 4 : 2, again * layers, fwd);
        host("tensor_parallel_calls", host_call::collective, l.sp ? 6 : 2, 0, bwd);
    }
    if (full) {
        host("checkpoint", host_call::function, 1, 0, fwd);
        host("checkpoint", host_call::function_backward, 2, 0, bwd);
        host("checkpoint_rng_states", host_call::rng_state, checkpoint_rng_calls_forward, 0, fwd);
        host("checkpoint_rng_states", host_call::rng_state, checkpoint_rng_calls_backward, 0, bwd);
    }
}

// A pipeline stage: its layers, and whether it embeds (the first) or holds the head and
// loss (the last); with pp = 1 the one stage does both.
struct stage_shape {
    double layers = 1;
    bool embedding = true;
    bool head = true;
};

// Which part of a stage an op belongs to, for a sink that wants to know: each of its
// layers, the head and loss, the embedding, or the stage as a whole (pipeline sends, FP8
// amax bookkeeping's launches). A sink with a member section(stage_section) is told
// before the ops of each part.
enum class stage_section { layer, head, embedding, stage };

template <>
struct enum_names<stage_section> {
    static constexpr std::array<enum_name<stage_section>, 4> table{
        {{stage_section::layer, "layer"}, {stage_section::head, "head"}, {stage_section::embedding, "embedding"},
         {stage_section::stage, "stage"}}};
};

template <class Sink>
constexpr void enter_section(Sink& sink, stage_section part) {
    if constexpr (requires { sink.section(part); }) sink.section(part);
}

// The ops of one micro-batch on a stage of the given shape. Tensor parallelism: 2
// all-reduces of the b·s·h activations per layer forward and 2 in backward (Megatron's
// f/g operators); with sequence parallelism each becomes a reduce-scatter plus an
// all-gather of the same volume, and the scattered input of each column-parallel GEMM
// is all-gathered again in backward for its weight gradient: 2 more all-gathers per
// layer (Korthikanti et al. 2022, §4.2.2). Full recompute repeats the forward's
// collectives.
//
// The ops go to sink(const stage_op<gemm_op>&), sink(const stage_op<memory_op>&) and
// sink(const stage_op<collective_op>&) one by one; micro_batch_workload collects them.
// `groups` must be groups_of(s), passed where the caller has it already.
template <class Sink>
constexpr void for_each_stage_op(const training_setup& s, const stage_shape& shape, const layout_groups& groups,
                                 Sink&& sink) {
    const auto& m = s.model;
    const auto& l = s.layout;
    const auto& fw = s.framework;
    const finetune_spec& ft = s.finetune;
    const bool frozen = ft.freezes_base();
    const layer_context ctx = layer_context_of(s);
    const double layers = shape.layers;
    enter_section(sink, stage_section::layer);
    // Full recompute repeats every forward op, selective the attention core's.
    const double recomputed_core =
        l.recompute == recompute_mode::selective || l.recompute == recompute_mode::full ? layers : 0.0;
    const double recomputed_other = l.recompute == recompute_mode::full ? layers : 0.0;
    const auto recomputed = [&](op_region region) {
        return region == op_region::attention_core ? recomputed_core : recomputed_other;
    };

    const auto forward_gemms = layer_forward_gemms(m, ctx);
    double forward_launches = 0;
    for (const auto& g : forward_gemms)
        if (runs_as_gemm(g, fw)) {
            sink(stage_op<gemm_op>{g, layers, recomputed(g.region), step_part::forward});
            forward_launches += 1;
        }
    // A frozen weight needs no weight gradient: its wgrad GEMM does not run; its dgrad
    // still does, to carry the gradient to the adapters below (Hu et al. 2021 §4.2).
    for_each_backward_gemm(forward_gemms, [&](const gemm_op& g) {
        if (runs_as_gemm(g, fw) && !(frozen && g.phase == op_phase::backward_weight))
            sink(stage_op<gemm_op>{g, layers, 0, step_part::backward});
    });
    if (fw.flash_attention) {
        // Its backward recomputes the scores itself; recompute of the core (selective,
        // full) runs the forward kernel again.
        const fused_attention_ops core = attention_core_ops(m, ctx, fw);
        sink(stage_op<attention_op>{core.forward, layers, recomputed(op_region::attention_core), step_part::forward});
        sink(stage_op<attention_op>{core.backward, layers, 0, step_part::backward});
        forward_launches += 1;
    }
    for_each_layer_forward_memory_op(m, ctx, fw, [&](const memory_op& op) {
        forward_launches += op.launches;
        sink(stage_op<memory_op>{op, layers, recomputed(op.region), step_part::forward});
        sink(stage_op<memory_op>{backward_of(op, fw), layers, 0, step_part::backward});
    });
    if (frozen) forward_launches += for_each_adapter_op(s, ctx, layers, recomputed(op_region::other), sink);
    // FP8 (Transformer Engine): the Linear GEMMs' casts, repeated with the forward they
    // belong to; they run inside the Linear's autograd function (no node of their own).
    // (Without fp8 the list is empty; the test only spares building it.)
    if (ctx.fp8_linears)
        for (const memory_op& q : layer_fp8_quantization_ops(m, ctx)) {
            const bool forward = q.phase == op_phase::forward;
            sink(stage_op<memory_op>{q, layers, forward ? recomputed(q.region) : 0.0,
                                     forward ? step_part::forward : step_part::backward});
        }
    // Delayed scaling's amax-history update: its bytes grow with the stage's modules,
    // its launch is the stage's (below).
    const bool amax_history = ctx.fp8_linears && ctx.scaling == fp8_scaling::delayed;
    if (amax_history) {
        const double modules = fp8_linear_modules_per_layer(m, ctx.code);
        for (op_phase phase : {op_phase::forward, op_phase::backward}) {
            memory_op bytes_part = fp8_amax_update(modules, phase);
            bytes_part.launches = 0;
            sink(stage_op<memory_op>{bytes_part, layers, 0,
                                     phase == op_phase::forward ? step_part::forward : step_part::backward});
        }
    }
    for_each_layer_host_op(s, layers, forward_launches, sink);

    // Tensor parallelism's collectives and the KV ring of context parallelism, per layer.
    const double tokens = rank_tokens(ctx);
    const double a = size_of(s.precision.activations);
    if (l.tp > 1) {
        const bytes activation = bytes_of(tokens * m.hidden * a);
        const double full = l.recompute == recompute_mode::full ? 2.0 * layers : 0.0;
        const auto tensor_parallel = [&](std::string_view name, collective kind, double count) {
            sink(stage_op<collective_op>{{name, kind, activation, groups.tensor}, count * layers, full,
                                         step_part::tensor_parallel});
        };
        if (l.sp) {
            tensor_parallel("sequence_parallel_all_gather", collective::all_gather, 6);
            tensor_parallel("sequence_parallel_reduce_scatter", collective::reduce_scatter, 4);
        } else {
            tensor_parallel("tensor_parallel_all_reduce", collective::all_reduce, 4);
        }
    }
    for_each_kv_ring_op(s, groups, layers, recomputed(op_region::attention_core), sink);

    // The stage's own: pipeline sends, the amax update's launch.
    enter_section(sink, stage_section::stage);
    if (l.pp > 1) sink(pipeline_sends(s, groups));
    if (amax_history) {
        for (op_phase phase : {op_phase::forward, op_phase::backward}) {
            memory_op launch_part = fp8_amax_update(0, phase);
            sink(stage_op<memory_op>{launch_part, 1, 0,
                                     phase == op_phase::forward ? step_part::forward : step_part::backward});
        }
    }

    // Head and loss: the logits GEMM over the vocabulary (split by tp) and the loss's
    // upcast/softmax/cross-entropy, a few passes over b·s·V/t, forward and backward
    // (b·s/cp tokens per rank with context parallelism).
    if (shape.head) {
        enter_section(sink, stage_section::head);
        // The head stays 16-bit under fp8 (precision.hpp fp8_linears).
        const gemm_shape logits{tokens, double(m.vocab) / l.tp, double(m.hidden), 1,
                                high_precision_math(s.precision)};
        sink(stage_op<gemm_op>{{"logits", logits, op_phase::forward}, 1, 0, step_part::forward});
        sink(stage_op<gemm_op>{{"logits", dgrad_of(logits), op_phase::backward_data}, 1, 0, step_part::backward});
        if (!frozen)  // the output head is frozen too when fine-tuning with adapters
            sink(stage_op<gemm_op>{{"logits", wgrad_of(logits), op_phase::backward_weight}, 1, 0,
                                   step_part::backward});
        const double loss_element = fw.memory.fp32_logits ? size_of(dtype::fp32) : a;
        // ASSUMPTION: 4 passes (upcast write, softmax read and write, cross-entropy read).
        constexpr double loss_passes = 4.0;
        const bytes loss_traffic = bytes_of(tokens * double(m.vocab) / l.tp * loss_element * loss_passes);
        sink(stage_op<memory_op>{{"loss", loss_traffic, op_phase::forward}, 1, 0, step_part::forward});
        sink(stage_op<memory_op>{{"loss", loss_traffic, op_phase::backward}, 1, 0, step_part::backward});
        if (s.precision.autocast) {
            // The logits GEMM's V×h weight cast to 16 bits once per forward (and its
            // gradient cast back into the fp32 .grad), and the final norm's fp32 output cast
            // into it; each cast reads 4 B and writes 2 B per element.
            const auto cast = [&](std::string_view name, double elements) {
                const memory_op forward{name, bytes_of(elements * (size_of(dtype::fp32) + a)), op_phase::forward,
                                        op_region::other, 1, layer_block::other, true};
                sink(stage_op<memory_op>{forward, 1, 0, step_part::forward});
                sink(stage_op<memory_op>{backward_of(forward, fw), 1, 0, step_part::backward});
            };
            if (!ctx.frozen_16bit_weights) cast("autocast_weight_cast_head", double(m.vocab) / l.tp * m.hidden);
            cast("autocast_cast_head_input", tokens * m.hidden);
        }
    }
    if (shape.embedding) {
        enter_section(sink, stage_section::embedding);
        // Embedding lookup (and positions) forward, its scatter-add backward. ASSUMPTION:
        // 3 passes over b·s·h (read the rows, read the positions, write the sum), in the
        // residual stream's format (fp32 under autocast: embedding is on no autocast list).
        const bytes embedding =
            bytes_of(3.0 * tokens * m.hidden * size_of(activation_formats_of(s.precision).residual));
        sink(stage_op<memory_op>{{"embedding", embedding, op_phase::forward}, 1, 0,
                                 step_part::forward});
        sink(stage_op<memory_op>{{"embedding", embedding, op_phase::backward}, 1, 0,
                                 step_part::backward});
    }

}

template <class Sink>
constexpr void for_each_stage_op(const training_setup& s, const stage_shape& shape, Sink&& sink) {
    for_each_stage_op(s, shape, groups_of(s), sink);
}

// The stage a micro_batch_workload lists: the last (head and loss), the one whose
// micro-batch takes longest in an even split; with pp = 1 the only stage also embeds.
constexpr stage_shape last_stage_shape(const training_setup& s) {
    return {double(pipeline_split_of(s.model, s.layout).last), s.layout.pp == 1, true};
}

template <class Sink>
constexpr void for_each_stage_op(const training_setup& s, Sink&& sink) {
    for_each_stage_op(s, last_stage_shape(s), sink);
}

inline stage_workload micro_batch_workload(const training_setup& s) {
    stage_workload w;
    struct collect {
        stage_workload& w;
        void operator()(const stage_op<gemm_op>& op) { w.gemms.push_back(op); }
        void operator()(const stage_op<memory_op>& op) { w.memory.push_back(op); }
        void operator()(const stage_op<collective_op>& op) { w.collectives.push_back(op); }
        void operator()(const stage_op<host_op>& op) { w.host.push_back(op); }
        void operator()(const stage_op<attention_op>& op) { w.attention.push_back(op); }
    };
    for_each_stage_op(s, collect{w});
    return w;
}

// ---- Once per step ---------------------------------------------------------------------

// Parameters updated by one GPU, after tp·pp model splitting (before ZeRO): all it
// holds, or only its adapters when the base is frozen.
constexpr double parameters_per_gpu(const training_setup& s, const model_state& model) {
    return model.trainable_parameters / (double(s.layout.tp) * s.layout.pp);
}

// When a per-step collective runs relative to the micro-batches and the optimizer.
enum class sync_point {
    every_forward,       // during every micro-batch's forward (ZeRO-3's prefetched gathers)
    every_micro_batch,   // during every micro-batch's backward
    end_of_backward,     // once, may overlap the last micro-batch's backward
    after_optimizer,     // once, after the update: exposed
    end_of_step,         // once, outside any overlap: exposed
};

template <>
struct enum_names<sync_point> {
    static constexpr std::array<enum_name<sync_point>, 5> table{
        {{sync_point::every_forward, "every-forward"},
         {sync_point::every_micro_batch, "every-micro-batch"},
         {sync_point::end_of_backward, "end-of-backward"},
         {sync_point::after_optimizer, "after-optimizer"}, {sync_point::end_of_step, "end-of-step"}}};
};

struct sync_op {
    collective_op op{};
    sync_point when = sync_point::end_of_step;
    double count = 1;
    // One of the per-unit collectives of ZeRO-3 (FSDP): the first of a pass cannot be
    // prefetched behind compute.
    bool per_unit = false;
};

// When an offloaded gradient copy runs in a step of m micro-batches (the micro-batch
// whose backward issues it).
enum class offload_point {
    all_but_last_micro_batch,   // m − 1 times: before the accumulation boundary
    all_but_first_micro_batch,  // m − 1 times: after the first micro-batch
    last_micro_batch,           // once: the accumulation boundary
};

template <>
struct enum_names<offload_point> {
    static constexpr std::array<enum_name<offload_point>, 3> table{
        {{offload_point::all_but_last_micro_batch, "all-but-last-micro-batch"},
         {offload_point::all_but_first_micro_batch, "all-but-first-micro-batch"},
         {offload_point::last_micro_batch, "last-micro-batch"}}};
};

struct offload_transfer {
    host_transfer_op op{};
    offload_point when = offload_point::last_micro_batch;
};

// The optimizer step of one GPU: a memory-bound sweep over its shard of parameters,
// gradients and state on the GPU (fused into a few multi-tensor kernels, or a loop
// of elementwise kernels per tensor). Offloaded (ZeRO-Offload): gradient copies to the
// host during backward, the step on the host's CPU, the updated weights copied back.
struct optimizer_work {
    bool offloaded = false;
    memory_op update{};                            // on the GPU (not offloaded)
    op_list<offload_transfer, 3> gradient_copies;  // during backward, by micro-batch
    // The share of a micro-batch's gradient traffic (its reductions and copies) in the
    // bucket that fills last: it is sent after that micro-batch's backward has ended.
    double last_bucket_share = 0;
    op_list<host_compute_op, 3> host_step;         // on the CPU, one after the other
    host_transfer_op weights_up{};                 // then, the updated weights to the GPU
};

struct step_ops {
    op_list<sync_op, 6> sync;
    optimizer_work optimizer{};
};

// Bytes the update touches per parameter: it reads the gradient, reads and writes the
// fp32 master (or the weights themselves) and every state tensor; around it the
// gradient-norm clip reads every gradient, mixed precision copies the master back into
// the 16-bit weights, and a persistent fp32 gradient buffer (Megatron main_grad) is
// zeroed for the next step. Under autocast the optimizer updates the fp32 parameters
// themselves (no master, no copy back: the next forward casts them again), and with
// fp16 the GradScaler's unscale_ reads and writes every gradient once, checking for
// infs as it goes (torch._amp_foreach_non_finite_check_and_unscale_, PyTorch
// torch/cuda/amp/grad_scaler.py@02f1c1a5).
// Fine-tuning with adapters: the update sweeps only them, fp32 weights and gradients
// with no master and no copy back: 4 (gradient) + 2·4 (weights) + 2·state, the clip's
// read of the gradient 4, and fp16-amp's unscale 2·4.
constexpr double optimizer_bytes_per_parameter(const training_setup& s, const model_state& model) {
    const double state = model.optimizer_state.value() / model.trainable_parameters;
    if (s.finetune.freezes_base()) {
        const double fp32 = size_of(adapter_dtype);
        const double unscale = s.precision.autocast && s.precision.loss_scaling ? 2 * fp32 : 0.0;
        return fp32 + 2 * fp32 + 2 * state + fp32 + unscale;
    }
    const precision_recipe stored = stored_precision(s);
    const double grad = size_of(stored.gradients);
    const double weights = size_of(s.precision.weights);
    const double master = size_of(dtype::fp32);
    const double update = grad + 2 * (s.precision.fp32_master ? master : weights) + 2 * state;
    const double around = grad + (s.precision.fp32_master ? master + weights : 0.0) +
                          (s.framework.fp32_gradient_accumulation ? grad : 0.0);
    const double unscale = s.precision.autocast && s.precision.loss_scaling ? 2 * grad : 0.0;
    return update + around + unscale;
}

// SIMD instructions per register of values in DeepSpeed's CPU-Adam loop, counted from
// Step_AVX (DeepSpeed csrc/includes/cpu_adam.h@v0.9.5): m·β1 (multiply) + g·(1−β1)
// (FMA); v·β2 (multiply), g·g (multiply) + ·(1−β2) (FMA); √v (square root), ·c2 + ε
// (FMA); m / denominator (divide); AdamW's decay p + p·(−lr·wd) (FMA); p + step·update
// (FMA): 10. ASSUMPTION: other optimizers, offloaded, cost the same (DeepSpeed has CPU
// kernels for Adam, Adagrad and Lion; SGD and Lion do less per value).
inline constexpr double cpu_adam_simd_instructions = 10;

// Where ZeRO-Offload's last gradient bucket ends: `local` gradient elements fill
// buckets of deepspeed_reduce_bucket_elements in the order backward produces them; the
// last, partly filled, is reduced and copied after backward (DeepSpeed's
// overlapping_partition_gradients_reduce_epilogue). Its share of the gradients.
constexpr double last_bucket_share(double local) {
    constexpr double bucket = deepspeed_reduce_bucket_elements;
    if (!(local > bucket)) return 1.0;
    const double whole = static_cast<double>(static_cast<long long>(local / bucket));
    const double last = local - whole * bucket;
    return (last > 0 ? last : bucket) / local;
}

// DeepSpeed ZeRO-Offload: ZeRO stage 1/2 with offload_optimizer device cpu (Ren et al.
// 2021, "ZeRO-Offload: Democratizing Billion-Scale Model Training", USENIX ATC '21;
// DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py@v0.12.6), per GPU, for the
// `partition` of its parameters it updates (÷dp with ZeRO ≥ 1).
//
// Backward (copy_grads_in_partition; offload forces contiguous gradients): each bucket
// of gradients is reduced, then this GPU's part of it is copied to the host.
//   ZeRO ≥ 2, every micro-batch: before the accumulation boundary the 16-bit partition
//   goes to a host buffer (D2H, 2 B/param); from the second micro-batch on, the
//   accumulated partition comes back (H2D, 2 B/param) and the new gradients are added to
//   it on the GPU (async_accumulate_grad_in_cpu_via_gpu); at the boundary the partition
//   is cast to fp32 on the GPU and copied into the host's fp32 gradient buffer (4 B/param).
//   ZeRO 0/1: gradients accumulate on the GPU (param.grad) and are reduced at the
//   boundary only, then copied once in fp32.
//   ASSUMPTION: the host buffers are pinned (offload_optimizer.pin_memory true;
//   DeepSpeed's default is false, deepspeed/runtime/zero/offload_config.py@v0.12.6).
//   ZeRO-3 with offload (ZeRO-Infinity's stage3.py) is given the same copies.
// Step, on the CPU, one pass after the other (step()): the fp32 gradients unscaled and
// clipped in place (the global norm was summed from per-tensor norms computed on the
// GPU at the boundary); CPU-Adam over the fp32 master weights, m and v (reads g, m, v, p,
// writes p, m, v: 28 B/param for AdamW); the fp32 partition cast to the 16-bit weights'
// dtype, bit16_partition.copy_(fp32_partition), which PyTorch does on the CPU into a
// pageable temporary (read 4, write 2 B/param) before copying it to the GPU (since the
// fused CPU-Adam-and-copy path was disabled in v0.9.0, commit 4b6d7c159, #3097).
// Then the 16-bit partition goes up (H2D) from that pageable memory: not overlapped.
constexpr optimizer_work offloaded_optimizer_workload(const training_setup& s, const model_state& model) {
    const auto& l = s.layout;
    const double local = parameters_per_gpu(s, model);
    const double partition = local / (l.zero >= 1 ? l.shard_size() : 1.0);
    const double weights = size_of(s.precision.weights);  // the GPU's parameters and buckets
    const double fp32 = size_of(dtype::fp32);
    const double state = model.optimizer_state.value() / model.parameters;  // bytes per parameter
    const auto copy = [](std::string_view name, double size, transfer_direction d, bool pageable) {
        return host_transfer_op{name, bytes_of(size), d, pageable};
    };
    optimizer_work w;
    w.offloaded = true;
    if (l.zero >= 2) {
        w.gradient_copies.push_back({copy("gradient_to_host", partition * weights, transfer_direction::to_host, false),
                                     offload_point::all_but_last_micro_batch});
        w.gradient_copies.push_back({copy("accumulated_gradient_to_device", partition * weights,
                                          transfer_direction::to_device, false),
                                     offload_point::all_but_first_micro_batch});
    }
    w.gradient_copies.push_back({copy("fp32_gradient_to_host", partition * fp32, transfer_direction::to_host, false),
                                 offload_point::last_micro_batch});
    w.last_bucket_share = last_bucket_share(local);
    w.host_step.push_back({"unscale_and_clip_gradients", partition, 1, bytes_of(partition * 2 * fp32)});
    w.host_step.push_back({"cpu_adam", partition, cpu_adam_simd_instructions,
                           bytes_of(partition * (fp32 + 2 * fp32 + 2 * state))});
    const bool cast = s.precision.weights != dtype::fp32;
    // ASSUMPTION: one conversion instruction per register (vcvtps2ph; bf16 likewise).
    if (cast) w.host_step.push_back({"fp32_to_16bit_weights", partition, 1, bytes_of(partition * (fp32 + weights))});
    // fp32 weights are copied straight from the (pinned) fp32 partition.
    w.weights_up = copy("weights_to_device", partition * weights, transfer_direction::to_device, cast);
    return w;
}

constexpr optimizer_work optimizer_workload(const training_setup& s, const model_state& model) {
    const auto& l = s.layout;
    const auto& fw = s.framework;
    if (l.offload == offload_mode::optimizer) return offloaded_optimizer_workload(s, model);
    const double shard = l.zero >= 1 ? l.shard_size() : 1.0;  // ZeRO shards over dp × cp (or its shard group)
    const double params = parameters_per_gpu(s, model) / shard;
    const double moved = params * optimizer_bytes_per_parameter(s, model);
    if (fw.fused_optimizer || is_fused(s.optimizer)) {
        // Multi-tensor apply: a handful of launches, one pass over everything.
        return {.update = {"optimizer_update", bytes_of(moved), op_phase::backward, op_region::other, 1}};
    }
    const double tensors = model.trainable_tensors / (double(l.tp) * l.pp);
    return {.update = {"optimizer_update", bytes_of(moved * fw.unfused_optimizer_passes), op_phase::backward,
                       op_region::other, tensors * fw.unfused_kernels_per_tensor}};
}

// Data-parallel synchronisation of one GPU's shard. ZeRO 0 keeps whole gradients and
// all-reduces them once per step; ZeRO-1 reduce-scatters them instead and all-gathers
// the updated weights after its shard's update. ZeRO-2 keeps only its gradient shard,
// so it reduce-scatters after every micro-batch; ZeRO-3 also gathers the weights for
// every micro-batch's forward and backward (Rajbhandari et al. 2020, §5 and §7: 1.5×
// the all-reduce volume per pass). Tied embeddings split over the first and the last
// pipeline stage have their gradients all-reduced between those two stages (Megatron).
// `model` must be model_state_of(s) and `groups` groups_of(s): a prediction computes
// each once.
constexpr step_ops step_workload(const training_setup& s, const model_state& model, const layout_groups& groups) {
    const auto& l = s.layout;
    step_ops w{.optimizer = optimizer_workload(s, model)};
    const double params = parameters_per_gpu(s, model);
    // Fine-tuning with adapters synchronises only their fp32 gradients (and gathers
    // their fp32 weights with ZeRO ≥ 1): params is theirs.
    const bool frozen = s.finetune.freezes_base();
    const bytes gradients =
        bytes_of(params * (frozen ? size_of(adapter_dtype) : size_of(stored_precision(s).gradients)));
    const bytes weights = bytes_of(params * (frozen ? size_of(adapter_dtype) : size_of(s.precision.weights)));
    // The cp ranks of a replica hold the same weights: gradients reduce, and ZeRO
    // shards, over the data-parallel group with cp (Megatron-Core reduces over
    // get_data_parallel_group(with_context_parallel=True)).
    // Hybrid sharding (layout.shard_group): ZeRO's collectives run over the shard group,
    // and each reduced gradient shard is all-reduced over its replicas, in the same pass
    // (PyTorch FSDP HYBRID_SHARD: reduce-scatter inside the shard group, then
    // all-reduce across, torch/distributed/fsdp/_runtime_utils.py _reduce_grad).
    if (l.dp_cp() > 1) {
        const auto op = [&](std::string_view name, collective kind, bytes size) {
            return collective_op{name, kind, size, groups.shard};
        };
        const int replicas = l.zero >= 1 ? l.shard_replicas() : 1;
        const auto across_replicas = [&](bytes shard_gradients, sync_point when, double count = 1,
                                         bool per_unit = false) {
            if (replicas > 1)
                w.sync.push_back({{"gradient_all_reduce_across_shards", collective::all_reduce, shard_gradients,
                                   groups.replica},
                                  when, count, per_unit});
        };
        const double shards = l.shard_size();
        const collective_op reduce = op("gradient_reduce_scatter", collective::reduce_scatter, gradients);
        const collective_op gather = op("weight_all_gather", collective::all_gather, weights);
        switch (l.zero) {
            case 0:
                w.sync.push_back({{"gradient_all_reduce", collective::all_reduce, gradients, groups.data_context},
                                  sync_point::end_of_backward});
                break;
            case 1:
                w.sync.push_back({reduce, sync_point::end_of_backward});
                across_replicas(gradients / shards, sync_point::end_of_backward);
                w.sync.push_back({gather, sync_point::after_optimizer});
                break;
            case 2:
                w.sync.push_back({reduce, sync_point::every_micro_batch});
                across_replicas(gradients / shards, sync_point::every_micro_batch);
                w.sync.push_back({gather, sync_point::after_optimizer});
                break;
            default: {
                // ZeRO-3 (FSDP, DeepSpeed stage 3) works unit by unit: FSDP wraps each
                // transformer block ("a good heuristic for LLMs", PyTorch
                // docs/source/notes/fsdp.rst@16d83c2f) and the root holds the embedding
                // and the head; DeepSpeed fetches each submodule's parameters ahead of
                // its use. Per unit: an all-gather before its forward, again before its
                // backward unless the framework keeps the unit gathered from its forward
                // to its backward (reshard_after_forward off), and a reduce-scatter of its
                // gradients after it. Each is a collective of its own over the whole
                // data-parallel group (or the shard group), so the latency of the ring
                // is paid per unit.
                // ASSUMPTION: the stage's parameters split evenly over its layers + 1
                // units. A frozen base sharded by ZeRO-3 is gathered all the same, in
                // its 16 bits.
                const double units = stage_layers(s) + 1.0;
                const bytes gathered =
                    frozen ? bytes_of(model.parameters / (double(l.tp) * l.pp) * frozen_weight_bytes(s.precision))
                           : weights;
                const collective_op unit_gather = op("weight_all_gather", collective::all_gather, gathered / units);
                const collective_op unit_reduce =
                    op("gradient_reduce_scatter", collective::reduce_scatter, gradients / units);
                w.sync.push_back({unit_gather, sync_point::every_forward, units, true});
                if (s.framework.reshard_after_forward)
                    w.sync.push_back({unit_gather, sync_point::every_micro_batch, units, true});
                w.sync.push_back({unit_reduce, sync_point::every_micro_batch, units, true});
                across_replicas(gradients / (shards * units), sync_point::every_micro_batch, units, true);
                break;
            }
        }
    }
    if (l.pp > 1 && s.model.tied_embeddings && !frozen) {
        const bytes embedding = bytes_of(double(s.model.vocab) * s.model.hidden / l.tp *
                                         size_of(stored_precision(s).gradients));
        w.sync.push_back({{"tied_embedding_all_reduce", collective::all_reduce, embedding, stage_pair(groups)},
                          sync_point::end_of_step});
    }
    return w;
}

inline optimizer_work optimizer_workload(const training_setup& s) { return optimizer_workload(s, model_state_of(s)); }
constexpr step_ops step_workload(const training_setup& s, const model_state& model) {
    return step_workload(s, model, groups_of(s));
}

inline step_ops step_workload(const training_setup& s) { return step_workload(s, model_state_of(s)); }

}  // namespace trainperf
