// One layer's work on one rank, as ops: its forward GEMMs (m, n, k, batch, dtype) and
// their dgrad and wgrad, its memory-bound ops (bytes moved, launches) under a framework
// profile and their elementwise backward, the fused attention kernel where the
// framework has one, and the host calls of the model's own (Hugging Face) code. Shapes
// are per rank; nothing here prices an op (cost/kernel_model.hpp does).
#pragma once

#include <string_view>
#include <vector>

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
#include "ops.hpp"
#include "placement.hpp"

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
    // The projections' weights are frozen in 16 bits (LoRA, QLoRA; spec/finetune.hpp):
    // autocast has nothing to cast for them.
    bool frozen_16bit_weights = false;
    // fp8 and nvfp4 (Transformer Engine, spec/precision.hpp quantized_linears): the Linear
    // layers' GEMMs run in FP8 or FP4 (quantized_dtype(scaling)) on quantized inputs;
    // `math` is then the 16-bit math of the attention core. How the scales are chosen,
    // and whether the GPU needs transposed FP8 copies.
    bool quantized_linears = false;
    fp8_scaling scaling = fp8_scaling::delayed;
    bool fp8_transposes = true;
    // The quantized Linear weights made once a step, not in every forward (a weight
    // cache, framework_profile::fp8_weight_cache): the step's ops make them
    // (workload/fp8.hpp make_fp8_weights_op), the layer's do not.
    bool weights_once_a_step = false;
};

// The context of the setup's layers, run by its framework on its GPU.
constexpr layer_context layer_context_of(const training_setup& s) {
    const precision_recipe r = precision_on(s.precision, s.cluster.gpu);
    return {.micro_batch = s.layout.micro_batch, .seq = sequence_length(s), .tp = s.layout.tp, .cp = s.layout.cp,
            .sp = s.layout.sp,
            .math = high_precision_math(r), .activations = r.activations, .autocast = r.autocast,
            .code = code_run(s.model, s.framework),
            .frozen_16bit_weights = s.finetune.freezes_base() && frozen_weight_bytes(r) < size_of(dtype::fp32),
            .quantized_linears = quantized_linears(r), .scaling = r.scaling, .fp8_transposes = r.fp8_transposes,
            .weights_once_a_step = s.framework.fp8_weight_cache};
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

// K (or V) width per token on one of tp ranks: grouped-query attention's kv heads shard
// over tp, or each rank keeps one (replicated) where there are fewer than tp.
constexpr double kv_width_per_rank(const transformer_config& m, int tp) {
    return m.effective_kv_heads() >= tp ? m.kv_width() / tp : m.head_dim();
}

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

// The forward GEMMs of one layer on one tensor-parallel rank. A model whose ffn_hidden is
// 0 stands for the dense part of an MoE layer without shared experts (spec/model.hpp
// moe_dense_part): no FFN GEMMs.
// At most 9 forward GEMMs: Q, K and V apart, the attention core's two, the output
// projection, SwiGLU's gate, up and down.
using layer_gemm_list = op_list<gemm_op, 10>;  // latent attention: 4 projections
using layer_backward_gemm_list = op_list<gemm_op, 20>;
using layer_memory_list = op_list<memory_op, 48>;

inline layer_gemm_list layer_forward_gemms(const transformer_config& m, const layer_context& c) {
    validate(c, m);
    const double tokens = rank_tokens(c);
    const attention_core_extent core = attention_core_shape(m, c);
    const double h = m.hidden, t = c.tp, d = m.head_dim(), q = m.q_width();
    const double kv_per_rank = kv_width_per_rank(m, c.tp);
    const double attention_batch = double(c.micro_batch) * m.heads / t;
    const double f = m.ffn_hidden / t;
    const dtype x = c.math;                                   // the attention core
    const dtype lin = c.quantized_linears ? quantized_dtype(c.scaling) : c.math;  // the Linear layers
    layer_gemm_list ops;
    const auto attention = layer_block::attention;
    const auto mlp = layer_block::mlp;
    const auto forward = op_phase::forward;
    const auto other = op_region::other;
    if (m.mla.enabled()) {
        // Latent attention as Megatron-Core's MLASelfAttention runs it
        // (megatron/core/transformer/multi_latent_attention.py@d98e8a64): the down
        // projections duplicated on every tensor-parallel rank over all its tokens, the up
        // projections and the output split by heads.
        const mla_config& a = m.mla;
        const double heads = m.heads / t, qk = a.qk_head_dim(), v = a.v_head_dim;
        if (a.q_lora_rank > 0) {
            ops.push_back({"q_down", {tokens, double(a.q_lora_rank), h, 1, lin}, forward, other, attention});
            ops.push_back({"q_up", {tokens, heads * qk, double(a.q_lora_rank), 1, lin}, forward, other, attention});
        } else {
            ops.push_back({"q", {tokens, heads * qk, h, 1, lin}, forward, other, attention});
        }
        ops.push_back({"kv_down", {tokens, double(a.kv_lora_rank) + a.qk_rope_head_dim, h, 1, lin}, forward, other,
                       attention});
        ops.push_back({"kv_up", {tokens, heads * (a.qk_nope_head_dim + v), double(a.kv_lora_rank), 1, lin}, forward,
                       other, attention});
        ops.push_back({"attention_scores", {core.queries, core.keys, qk, attention_batch, x}, forward,
                       op_region::attention_core, attention});
        ops.push_back({"attention_context", {core.queries, v, core.keys, attention_batch, x}, forward,
                       op_region::attention_core, attention});
        ops.push_back({"attention_out", {tokens, h, heads * v, 1, lin}, forward, other, attention});
    } else {
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
    }
    if (m.ffn_hidden == 0) return ops;  // an MoE layer without shared experts (workload/moe_layer.hpp)
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

// Sliding-window layers (gpt-oss), where the sequence exceeds the window: the fused
// kernel computes a band of `window` keys for each query (FlashAttention's window_size;
// ASSUMPTION: the first queries' shorter bands cost as much). The layers' mean is priced
// for every layer: a full layer's causal half of s keys and a sliding layer's w, averaged
// over the layers, as non-causal keys per query (ASSUMPTION: the kernel's efficiency at
// the mean band is its efficiency at each). 0 where the window covers the sequence.
constexpr double windowed_keys_per_query(const transformer_config& m, int seq) {
    if (m.sliding_window == 0 || seq <= m.sliding_window) return 0;
    const double full = m.full_attention_every > 0 ? double(m.layers / m.full_attention_every) : 0.0;
    const double full_keys = m.causal ? seq / 2.0 : double(seq);
    return (full * full_keys + (m.layers - full) * m.sliding_window) / m.layers;
}

constexpr fused_attention_ops attention_core_ops(const transformer_config& m, const layer_context& c,
                                                 const framework_profile& fw) {
    // With context parallelism this rank's s/cp queries meet all s keys (the ring's
    // chunks one after the other); load-balanced causal work is 1/cp of the core.
    const attention_core_extent core = attention_core_shape(m, c);
    const double band = windowed_keys_per_query(m, c.seq);  // cp is 1 with windows (spec/setup.hpp)
    const attention_op forward{.name = "flash_attention", .batch = double(c.micro_batch) * m.heads / c.tp,
                               .seq_q = core.queries, .seq_kv = band > 0 ? band : core.keys,
                               // Latent attention's scores run over d_qk and its context over
                               // d_v: their mean (ASSUMPTION: the kernel's rate is its rate at
                               // the mean; the FLOPs are exact).
                               .head_dim = (m.qk_head_dim() + m.v_head_dim()) / 2.0,
                               .causal = m.causal && band == 0, .math = quantized_format(c.math) ? dtype::bf16 : c.math,
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
    const double kv_tp = tokens * kv_width_per_rank(m, c.tp);  // K (or V) elements on this rank
    const double query_key = hidden_tp + kv_tp;
    // Rotary positions as their own pass (latent attention applies them in its own
    // assembly, below).
    const bool rotary = m.positions == position_kind::rotary && !m.mla.enabled();
    // The framework's own layer copies the query when it regroups it: grouped-query
    // attention with two or more kv groups on the rank (below).
    const bool regrouped = m.effective_kv_heads() < m.heads && m.effective_kv_heads() > c.tp;
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
    if (fw.compiled) {
        // torch.compile (Inductor) fuses each chain of elementwise ops and reductions
        // between two extern calls (GEMMs, the attention kernel, collectives) into one
        // generated kernel that reads the chain's inputs once and writes what leaves it
        // once, intermediates in registers (fp32 where the eager code upcasts; autocast's
        // casts of activations fold into the kernel that feeds the GEMM). Per layer:
        //   norm before attention   reads the stream, writes the GEMM input  res + a
        //   RoPE on q and k         reads and writes each                     2a
        //   repeat_kv (GQA)         reads K and V, writes them per head       (2kv + 2q)·a
        //   attention core (no fused attention kernel): scale, mask, softmax (and
        //     dropout) in one kernel, 16-bit probabilities                   2a (+1 B mask)
        //   add + norm before FFN   reads branch and stream, writes stream and
        //                           GEMM input                                2a + 2res
        //   SwiGLU silu·mul         reads gate and up, writes the product     3a
        //     (GELU: reads and writes, 2a)
        //   add after FFN           reads branch and stream, writes stream    a + 2res
        // ASSUMPTION: dropout, where the model has it, is fused into the add that follows
        // it (its 1-byte mask written); each chain is one kernel (Inductor may split a
        // chain it cannot tile as one, and fuses horizontally across q and k).
        sink(op("compiled_norm", hidden * (res + a)));
        // The query and key norms (where the model has them) join RoPE's chain; a chain of
        // RoPE alone is a rotation, whose backward moves what its forward does.
        if (rotary || m.qk_norm != qk_norm_kind::none) {
            memory_op chain = op("compiled_rotary", 2 * query_key * a);
            if (m.qk_norm == qk_norm_kind::none) chain.backward = op_backward::mirrored;
            sink(chain);
        }
        if (code == model_code::llama && rotary && m.effective_kv_heads() < m.heads)
            sink(op("compiled_repeat_kv", 2 * (kv_tp + hidden_tp) * a));
        if (!fw.flash_attention)
            sink(op("compiled_softmax", scores * (2 * a + (m.dropout ? mask : 0.0)), op_region::attention_core));
        const double dropped = m.dropout ? hidden * mask : 0.0;
        if (m.norms_per_layer > 1) {
            sink(op("compiled_add_norm", hidden * (2 * a + 2 * res) + dropped));
        } else {
            sink(op("compiled_add_attention", hidden * (a + 2 * res) + dropped));
        }
        block = layer_block::mlp;
        for (int k = 2; k < m.norms_per_layer; ++k) sink(op("compiled_norm", hidden * (res + a)));
        if (m.ffn_hidden > 0)
            sink(op(m.ffn == ffn_kind::swiglu ? "compiled_swiglu" : "compiled_gelu",
                    (m.ffn == ffn_kind::swiglu ? 3.0 : 2.0) * ffn * a));
        sink(op("compiled_add_ffn", hidden * (a + 2 * res) + dropped));
        return;
    }
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
    if (m.mla.enabled()) {
        // Latent attention's own passes (Megatron-Core's MLASelfAttention): the RMSNorms of
        // the query and key-value latents, over every token of the rank (read and write),
        // and the queries and keys assembled from their no-RoPE parts and the rotary part
        // (RoPE applied, the shared rotary key repeated over the heads): ASSUMPTION one
        // read and one write of Q and K, 2 kernels.
        const double latents = double(m.mla.q_lora_rank) + m.mla.kv_lora_rank;
        sink(op("mla_latent_norms", 2 * tokens * latents * a, op_region::other, 2));
        sink(op("mla_rope_assemble", 2 * 2 * tokens * m.heads / c.tp * m.mla.qk_head_dim() * a, op_region::other, 2));
    }
    const double qkv_inputs = c.code == model_code::bert || c.code == model_code::llama ? 3.0 : 1.0;
    if (normed != a) sink(cast("autocast_cast_qkv_input", qkv_inputs * hidden, normed, a, op_region::other, qkv_inputs));
    // Q, K and V into the head layout: matmul copies each permuted operand (3 copies).
    if (fw.head_layout_copies) sink(op("split_heads_copy", 2 * 3 * hidden_tp * a, op_region::other, 3));
    // The framework's own layer splits the QKV GEMM's output into q, k and v as views
    // (Megatron-Core's SplitAlongDim, transformer_engine/pytorch/utils.py@d0067d0d, and
    // get_query_key_value_tensors, megatron/core/transformer/attention.py@d98e8a64;
    // Megatron-LM 2022's split_tensor_along_last_dim, megatron/mpu/utils.py@28ba253f).
    // With grouped-query attention and two or more kv groups on the rank, a group's query
    // heads are not contiguous there: reshaping them to one head each copies the query
    // (its gradient reshapes back as a view; with one group per rank it is a view).
    // Transformer Engine's fused attention recognises q, k and v as views of one buffer
    // (get_qkv_layout, transformer_engine/pytorch/attention/dot_product_attention/
    // utils.py@d0067d0d); where RoPE or a query-key norm has replaced q and k it does not,
    // and copies what is still a view (v) into a contiguous tensor, and with context
    // parallelism it makes every view contiguous (FusedAttention, backends.py@d0067d0d);
    // those copies' gradients pass through. In backward the split copies the q, k and v
    // gradients into the QKV output's (torch.cat) unless they lie in one buffer in its
    // layout: ASSUMPTION, only where the fused kernel returns them together, which it
    // does when nothing came between the split and it (no RoPE, query-key norm or
    // regrouping) and without context parallelism (its ring returns dq apart);
    // Megatron-LM 2022's unfused core hands them back apart.
    if (!fw.runs_model_code && !m.mla.enabled()) {
        const bool replaced = rotary || m.qk_norm != qk_norm_kind::none;  // q and k new tensors
        if (regrouped) {
            memory_op regroup = op("query_regroup_copy", 2 * hidden_tp * a);
            regroup.backward = op_backward::none;
            sink(regroup);
        }
        if (fw.flash_attention && (replaced || c.cp > 1)) {
            const double views = kv_tp + (replaced ? 0.0 : kv_tp + (regrouped ? 0.0 : hidden_tp));
            memory_op copy = op("attention_input_copy", 2 * views * a);
            copy.backward = op_backward::none;
            sink(copy);
        }
        if (!fw.flash_attention || replaced || regrouped || c.cp > 1) {
            memory_op concat = op("qkv_gradient_concat", 2 * (hidden_tp + 2 * kv_tp) * a);
            concat.backward = op_backward::only;
            sink(concat);
        }
    }
    // The queries' and keys' own passes before the core (q + k elements of this rank).
    // Their norms (Qwen3's per head, OLMoE's over the projection): the model's RMSNorm code
    // as the layer's own norm (above), or in the framework's own layer a Transformer Engine
    // norm kernel per tensor (Megatron-Core's q_layernorm and k_layernorm, TENorm:
    // megatron/core/transformer/attention.py@d98e8a64), reading and writing each element
    // (the per-row rsigma left out), after the copy TE's RMSNorm makes of a strided input
    // (input_.contiguous(), transformer_engine/pytorch/ops/basic/rmsnorm.py@d0067d0d): the
    // key is a view into the QKV GEMM's output (SplitAlongDim), and so is the query
    // unless grouped-query attention's reshape copied it already. The copy's gradient
    // passes through as a view.
    if (m.qk_norm != qk_norm_kind::none && !m.mla.enabled()) {
        if (fw.runs_model_code) {
            sink(op("qk_rmsnorm", query_key * (28 + 4 * a), op_region::other, 16));
        } else {
            memory_op copy = op("qk_norm_input_copy", 2 * (kv_tp + (regrouped ? 0.0 : hidden_tp)) * a,
                                op_region::other, regrouped ? 1 : 2);
            copy.backward = op_backward::none;
            sink(copy);
            sink(op("qk_norm", query_key * 2 * a, op_region::other, 2));
        }
    }
    if (rotary) {
        if (fw.runs_model_code) {
            // The model's code (Hugging Face apply_rotary_pos_emb): rotate_half (neg, cat),
            // × cos, × sin, +: 5 kernels over each tensor, ~10 element accesses (10·a bytes)
            // per element; the cos/sin tables are small.
            sink(op("rotary", 10 * query_key * a, op_region::other, 10));
        } else if (fw.fused_rope) {
            // Transformer Engine's fused RoPE (FusedRoPEFunc, transformer_engine/pytorch/
            // attention/rope.py@d0067d0d): one kernel per tensor reads it and writes the
            // rotated copy; backward rotates the gradient back the same way.
            memory_op rope = op("rotary", 2 * query_key * a, op_region::other, 2);
            rope.backward = op_backward::mirrored;
            sink(rope);
        } else {
            // Megatron-Core's unfused RoPE (_apply_rotary_pos_emb_bshd, megatron/core/models/
            // common/embeddings/rope_utils.py@d98e8a64): rotate_half (neg over half, cat),
            // × cos, × sin, +, and the cat with the unrotated part (a copy even when that is
            // empty): 12 element accesses (12·a bytes) per element over 6 kernels per
            // tensor, and 6 small ones on the frequencies (cos, sin, × mscale, .to, each
            // twice). ASSUMPTION: Megatron-LM 2022 (the megatron profile) has no rotary
            // code; a rotary model under it runs these ops.
            sink(op("rotary", 12 * query_key * a, op_region::other, 24));
        }
        // repeat_kv (the LLaMA code): grouped K and V expanded to every head (a copy
        // each); Megatron's attention takes the groups as they are.
        if (code == model_code::llama && m.effective_kv_heads() < m.heads)
            sink(op("repeat_kv", 2 * 2 * hidden_tp * a, op_region::other, 2));
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
    if (normed != a && m.ffn_hidden > 0)
        sink(cast("autocast_cast_ffn_input", ffn_inputs * hidden, normed, a, op_region::other, ffn_inputs));
    if (m.ffn_hidden == 0) {
        // An MoE layer without shared experts: its FFN is the routed experts'
        // (workload/moe_layer.hpp).
    } else if (m.ffn == ffn_kind::swiglu) {
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
    const double ratio = f.backward == op_backward::none ? 0.0
                         : f.cast || f.backward == op_backward::mirrored || f.backward == op_backward::only
                             ? 1.0
                             : fw.backward_traffic_ratio;
    return {f.name, ratio * f.moved, op_phase::backward, f.region, ratio > 0 ? f.launches : 0.0,
            f.block, f.cast, f.backward};
}

inline layer_memory_list backward_of(const layer_memory_list& forward, const framework_profile& fw) {
    layer_memory_list ops;
    for (const auto& f : forward) ops.push_back(backward_of(f, fw));
    return ops;
}

}  // namespace trainperf
