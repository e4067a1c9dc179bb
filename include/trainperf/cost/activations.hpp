// Activations a transformer layer keeps for backward, per GPU: Korthikanti et al.'s
// closed forms and the same derivation term by term (GQA, SwiGLU, FlashAttention, mixed
// formats under autocast, FP8 Linears, op-level selective checkpointing, Megatron-Core's
// recompute modules), the parameters autocast casts per forward, and a layout's layer as
// a stage holds it (layer_activations_of: an MoE layer's routed part, adapters, context
// parallelism, what recompute rebuilds). cost/memory.hpp adds them up per stage.
// Derivations: docs/memory.md §4.
#pragma once

#include <string_view>

#include "../core/dtype.hpp"
#include "../core/units.hpp"
#include "../spec/finetune.hpp"
#include "../spec/framework.hpp"
#include "../spec/model.hpp"
#include "../spec/moe_run.hpp"
#include "../spec/parallel.hpp"
#include "../spec/precision.hpp"
#include "../spec/recompute_modules.hpp"
#include "dispatcher_buffers.hpp"
#include "userbuffers.hpp"

namespace trainperf {

// ---- Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models", §4) ---------------------------------------------------
// The paper's closed forms, bytes per layer with 16-bit activations and 1-byte
// dropout masks (t = tensor-parallel size, a = heads):
//   none, t = 1            s·b·h·(34 + 5·a·s/h)
//   TP                     s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   TP + SP                s·b·h·(34 + 5·a·s/h)/t
//   TP + selective         s·b·h·(10 + 24/t)
//   TP + SP + selective    s·b·h·34/t
//   full recompute         2·s·b·h (the layer input)
constexpr bytes korthikanti_activation_bytes_per_layer(double s, double b, double h, double a,
                                                       double t, bool sp, recompute_mode r) {
    const double sbh = s * b * h;
    if (r == recompute_mode::full) return bytes_of(2 * sbh / (sp ? t : 1.0));
    const double scores = r == recompute_mode::selective ? 0.0 : 5 * a * s / h;
    if (sp) return bytes_of(sbh * (34 + scores) / t);
    return bytes_of(sbh * (10 + 24 / t + scores / t));
}

// The same derivation term by term, generalised to GQA (kv width), any FFN width,
// SwiGLU, fp32 activations, no dropout, FlashAttention and the mixed formats of
// autocast; it reduces to the closed forms above for a GPT layer (kv = h, f = 4h,
// GELU, dropout, 16-bit). With g the bytes of a GEMM input, n of the residual stream,
// p of the softmax output and u of what the GELU keeps (all equal to the recipe's
// activation bytes without autocast), per layer:
//   not split by TP (split by SP): the norm inputs n·sbh each (the residual stream;
//     2 norms in Korthikanti's layer), the QKV and FFN inputs g·sbh each, the dropout
//     masks 2·sbh (1 B)
//   split by TP: Q g·sbh, K and V g·sb·kv each, output-projection input g·sbh; FFN:
//     the GELU's u·sbf and the FFN-down input g·sbf (SwiGLU: gate, up and their product
//     3·g·sbf)
//   attention core, split by TP: softmax output p·as²b, its dropout mask as²b (1 B) and
//     the dropout output g·as²b; without dropout the softmax output, and its 16-bit
//     copy for the PV GEMM where the softmax writes another format; FlashAttention: an
//     fp32 log-sum-exp, 4·asb
//   full recompute: only the layer input, n·sbh
//
// Under autocast (activation_formats_of; Hugging Face GPT-2 and BERT, PyTorch
// autocast_mode.cpp@008ec6b1 and amp.rst@0137a5f1), tensor by tensor, fp16 or bf16
// (2 B) against fp32 (4 B):
//   norm inputs        the residual stream, fp32 (fp32 embeddings + 16-bit branch
//                      outputs add in fp32)                              n = 4
//   QKV, FFN inputs    the norm's fp32 output cast to 16 bits by the GEMM; the cast
//                      runs before autograd records, so the GEMM keeps the copy  g = 2
//   Q, K, V            the QKV GEMM's 16-bit output                      g = 2
//   softmax output     softmax is on the fp32 list (dtype=float): it keeps fp32  p = 4
//   dropout output     GPT-2 casts the probabilities back (.type(value.dtype)) before
//                      dropout; BERT drops out in fp32 and the PV matmul keeps its
//                      16-bit cast: 16-bit either way                     g = 2
//   out-proj input     merged heads of the 16-bit PV output               g = 2
//   GELU               gelu_new as Python ops: pow is on the fp32 list, so the chain
//                      from pow on runs and keeps fp32                    u = 4
//                      (one GELU kernel, erf GELU or fused, keeps its 16-bit input: 2)
//   FFN-down input     the fp32 GELU output cast to 16 bits by the GEMM   g = 2
//   masks              1 B (bool)
// GPT layer (f = 4h, kv = h), t = 1, with dropout and gelu_new:
//   (2·4 + 2·2 + 2)·sbh + (4·2 + 4·4 + 4·2)·sbh + (4 + 1 + 2)·as²b = 46·sbh + 7·as²b
// against 34·sbh + 5·as²b in 16 bits and 66·sbh + 9·as²b in fp32. gelu_new keeps
// several tensors of its chain (pow's input, tanh's output, 0.5·x and 1 + tanh) in
// every recipe; like Korthikanti's, this count keeps one for the GELU.
//
// Under fp8 (NVIDIA Transformer Engine, docs/features/low_precision_training,
// @d0067d0d) what a Linear keeps of its input for backward is one FP8 copy: l = 1 B per
// element on Hopper as on Blackwell (TE's Linear drops the rowwise data of the input it
// saves, linear.py update_usage(rowwise_usage=False); spec/precision.hpp
// activation_formats_of), plus the scales when block-scaled. The QKV and FFN inputs
// become l·sbh each, the out-projection input l·sbh, the FFN-down input l·sbf; Q, K,
// V, the softmax, the GELU input (SwiGLU's gate and up outputs) stay 16-bit. GPT
// layer, t = 1: (34 − 7)·sbh + 5·as²b = 27·sbh + 5·as²b.
// Op-level selective checkpointing (recompute_mode::op_selective; torchtitan@b0902b29
// parallelize.py) keeps, per layer, over the rank's tokens s·b:
//   the layer input (the checkpoint's)                        n·sbh (÷ t with SP)
//   the output of every other matmul, from the first (spec/parallel.hpp
//     op_selective_keeps_output), 16-bit: a column-parallel projection's part (Q q/t,
//     K and V kv/t, the fused QKV (q + 2kv)/t, gate and up f/t), a row-parallel one's
//     whole partial sum before its reduction (output projection, FFN down: h)
//   the attention kernel's output and log-sum-exp (SDPA)      g·sb·q/t + 4·a·sb/t
//   the sequence-parallel reduce-scatters' outputs            2·g·sbh/t
// The attention core's bmm outputs are not on the save list: without a fused attention
// kernel nothing of the core is kept. FP8 Linears' matmuls are not saved (they are not
// aten.mm). Dropout masks: torchtitan's models have none (not counted).
constexpr bytes op_selective_activation_bytes(const transformer_config& m, const activation_formats& x, double sb,
                                              int tp, bool sp, const framework_profile& fw) {
    const double h = m.hidden, a = m.heads, t = tp, q = m.q_width();
    const double g = size_of(x.gemm_inputs), n = size_of(x.residual);
    const model_code code = fw.runs_model_code ? m.code : model_code::generic;
    const bool fp8 = x.fp8_linear_inputs > 0;
    double kept = n * sb * h / (sp ? t : 1.0);
    for_each_layer_linear(m, code, [&](std::string_view name, double, double out, bool column) {
        if (op_selective_keeps_output(m, name, code, fp8)) kept += g * sb * (column ? out / t : out);
    });
    if (fw.flash_attention) kept += g * sb * q / t + size_of(dtype::fp32) * a * sb / t;
    if (sp && tp > 1) kept += 2 * g * sb * h / t;
    return bytes_of(kept);
}

// Selective recompute drops, per recomputed submodule (spec/recompute_modules.hpp; the
// default, core_attn, drops the attention core's term):
//   mlp (a dense layer)      the FFN input (its fused norm's output) and the FFN terms
//   moe, shared_experts      an MoE layer's shared-expert FFN terms (the norm output stays:
//     (its dense part)       the router keeps it)
//   layernorm                a norm that is a module of its own: latent attention's input
//                            norm output (the down projections' input), an MoE layer's
//                            pre-MLP norm output (the router's and shared experts' input)
//   mla_up_proj              latent attention's Q, K and V, and the latents' norm outputs
// `moe_part`: the layer is an MoE layer's dense part (spec/model.hpp moe_dense_part).
constexpr bytes activation_bytes_per_layer(const transformer_config& m, const activation_formats& x,
                                           int micro_batch, int seq, int tp, bool sp, recompute_mode r,
                                           const framework_profile& fw = pytorch_eager_profile,
                                           recompute_module_set modules = default_recompute_modules,
                                           bool moe_part = false) {
    const double s = seq, b = micro_batch, h = m.hidden, a = m.heads, t = tp;
    const double f = m.ffn_hidden, kv = m.kv_width(), q = m.q_width();
    const double g = size_of(x.gemm_inputs), n = size_of(x.residual), p = size_of(x.softmax_output);
    // What a Linear keeps of its input: the GEMM-input format, or one FP8 copy (1 B, and
    // its scales when block-scaled) under fp8 (spec/precision.hpp activation_formats_of).
    const double lin = x.fp8_linear_inputs > 0 ? x.fp8_linear_inputs : g;
    const double sbh = s * b * h;
    if (r == recompute_mode::full) return bytes_of(n * sbh / (sp ? t : 1.0));
    if (r == recompute_mode::op_selective) return op_selective_activation_bytes(m, x, s * b, tp, sp, fw);
    const bool dropout = fw.memory.dropout && m.dropout;  // the model or the framework can turn it off
    const double masks = dropout ? 2 * sbh : 0.0;
    const bool selective = r == recompute_mode::selective;
    const auto recomputes = [&](recompute_module k) { return selective && modules.contains(k); };
    // Norm inputs (norms_per_layer of them; 2 in Korthikanti's layer), QKV and FFN inputs
    // (less what a recomputed submodule drops).
    const double inputs_dropped = (recomputes(recompute_module::mlp) && !moe_part) +
                                  (recomputes(recompute_module::layernorm) && m.mla.enabled()) +
                                  (recomputes(recompute_module::layernorm) && moe_part);
    const double unsplit = (m.norms_per_layer * n + (2 - inputs_dropped) * lin) * sbh + masks;
    // A GELU written as separate ops (HF gelu_new) keeps its chain's format; one kernel
    // keeps its 16-bit input.
    const double gelu = !fw.fused_bias_gelu && fw.runs_model_code && m.activation == activation_kind::gelu_new
                            ? size_of(x.elementwise_chain)
                            : g;
    // SwiGLU: gate and up outputs (16-bit) and their product, the FFN-down input.
    const bool ffn_recomputed = moe_part ? recomputes(recompute_module::moe) ||
                                               recomputes(recompute_module::shared_experts)
                                         : recomputes(recompute_module::mlp);
    const double ffn = ffn_recomputed ? 0.0 : m.ffn == ffn_kind::swiglu ? (2 * g + lin) * f : (gelu + lin) * f;
    // Q, K, V (16-bit GEMM outputs) and the out-projection input (q wide). Latent
    // attention: Q and K of a·d_qk, V and the out-projection input of a·d_v, and beside
    // them, on every tensor-parallel rank whole (its down projections are duplicated),
    // each latent's norm input and output (query and key-value) and the rotary key.
    double latents = 0;
    double split = s * b * (g * (q + 2 * kv) + lin * q + ffn);
    if (m.mla.enabled()) {
        const double qk = a * m.mla.qk_head_dim(), v = a * m.mla.v_head_dim;
        // mla_up_proj reruns the up projections under no_grad: Q, K, V and the latents'
        // norm outputs (the up projections' inputs) go; the latents themselves stay.
        const bool up_proj = recomputes(recompute_module::mla_up_proj);
        split = s * b * ((up_proj ? 0.0 : g * (2 * qk + v)) + lin * v + ffn);
        latents = s * b * ((g + (up_proj ? 0.0 : lin)) * (double(m.mla.q_lora_rank) + m.mla.kv_lora_rank) +
                           g * m.mla.qk_rope_head_dim);
    }
    double core = 0;
    if (!recomputes(recompute_module::core_attn)) {
        if (fw.flash_attention) core = size_of(dtype::fp32) * a * s * b;  // the log-sum-exp per row
        else if (dropout) core = a * s * s * b * (p + 1 + g);
        else core = a * s * s * b * (p + (p != g ? g : 0.0));
    }
    return bytes_of((sp ? unsplit / t : unsplit) + (split + core) / t + latents);
}

// All activations in one format (every recipe but autocast).
constexpr bytes activation_bytes_per_layer(const transformer_config& m, dtype activations, int micro_batch,
                                           int seq, int tp, bool sp, recompute_mode r,
                                           const framework_profile& fw = pytorch_eager_profile) {
    return activation_bytes_per_layer(m, uniform_activation_formats(activations), micro_batch, seq, tp, sp, r, fw);
}

// Parameters autocast casts to 16 bits in one forward of a stage holding `layers`
// layers (and the head when `head`): the linear projections' weights and biases and
// the logits GEMM's V×h matrix (the tied embedding, or the untied head). Norms run on
// the fp32 list and embedding lookups on no list: their parameters are used as they are.
constexpr double autocast_cast_parameters(const transformer_config& m, double layers, bool head) {
    return layers * layer_linear_parameters(m) + (head ? double(m.vocab) * m.hidden : 0.0);
}


// ---- A layer of a layout: what cost/memory.hpp multiplies by the layers of a stage ----
namespace memory_detail {
// Activations per layer the same on every stage: what each layer keeps, and (full
// recompute) what the layer being rebuilt holds during its backward.
struct layer_activations {
    bytes kept = bytes_of(0);
    bytes rebuilt = bytes_of(0);
    // An MoE model's MoE layer, on the busiest rank (moe_layer_activation_bytes).
    bytes moe_kept = bytes_of(0);
    bytes moe_rebuilt = bytes_of(0);
    // Micro-batches in flight beyond the schedule's own: with the EP overlap and pipeline
    // stages, Megatron-Core's interleaved schedule runs one more forward chunk in its
    // warm-up (schedules.py@d98e8a64 get_pp_rank_microbatches: "we schedule one extra
    // micro-batch forward step before the 1f1b stages"), a virtual stage's worth: 1/v.
    double extra_in_flight = 0;
    // What the dispatcher allocates outside the caching allocator on a rank with MoE
    // layers (cost/dispatcher_buffers.hpp): DeepEP's buffers.
    bytes dispatcher_buffers = bytes_of(0);
    // Transformer Engine's userbuffers for the tensor-parallel overlap, on every rank
    // (cost/userbuffers.hpp), outside the caching allocator too.
    bytes userbuffers = bytes_of(0);
};

// What an MoE layer keeps for backward on the busiest rank of a sequence-parallel group,
// before context parallelism divides it: its dense part as a layer (attention, norms, the
// shared experts; spec/model.hpp moe_dense_part), and of the routed part (Megatron-Core
// moe/router.py, token_dispatcher.py, experts.py@d98e8a64; workload/moe_layer.hpp for the
// sizes), over the T = b·s/t tokens the rank routes (s/cp each with context parallelism)
// and the C = T·k·etp·load token copies its experts compute:
//   router            ASSUMPTION: its scores and probabilities in fp32, 2·4·T·E
//   fc1 input         the dispatched tokens, as a Linear keeps its input (l): l·C·h
//   fc1 output        the weighted activation's input (SwiGLU: gate and up, g): 2·g·C·w
//                     (GELU 1)
//   fc2 input         the activation's output (l): l·C·w
//   probabilities     the copies' weights, which the activation applies, in the
//                     activations' format: g·C
// w the local experts' width f_e/etp; unpermute keeps only indices. Full recompute keeps
// only the layer input. Selective recompute of the moe submodule drops the routed part
// whole, of moe_act the fc2 input (spec/recompute_modules.hpp).
constexpr bytes moe_layer_activation_bytes(const transformer_config& m, const activation_formats& x, int micro_batch,
                                           int seq, const parallel_layout& p, recompute_mode r,
                                           const framework_profile& fw, const moe_run& run,
                                           recompute_module_set modules) {
    if (r != recompute_mode::selective) modules = {};
    const bytes dense =
        activation_bytes_per_layer(moe_dense_part(m), x, micro_batch, seq, p.tp, p.sp, r, fw, modules, true);
    if (r == recompute_mode::full || modules.contains(recompute_module::moe)) return dense;
    const double g = size_of(x.gemm_inputs), lin = x.fp8_linear_inputs > 0 ? x.fp8_linear_inputs : g;
    const double f32 = size_of(dtype::fp32), h = m.hidden, k = m.moe.experts_per_token;
    const double etp = p.expert_tp(), local = double(m.moe.experts) / p.ep;
    const double routed = double(micro_batch) * seq / (p.sp ? p.tp : 1);
    const double computed = routed * k * etp * busiest_rank_load(run, local);
    const double w = m.moe.expert_ffn_hidden / etp, in = m.ffn == ffn_kind::swiglu ? 2.0 : 1.0;
    const double fc2_input = modules.contains(recompute_module::moe_act) ? 0.0 : lin * w;
    const double routed_part = 2 * f32 * routed * m.moe.experts + computed * (lin * h + in * g * w + fc2_input + g);
    return dense + bytes_of(routed_part);
}

// Fine-tuning with adapters (LoRA, QLoRA) keeps, per layer, the full-training terms and
// the output x·A (b·s·r, the GEMM-input format) of every adapted projection, which B's
// weight gradient reads. ASSUMPTION: the frozen projections' inputs are all still kept.
// A frozen GEMM's dgrad needs only its weight, so the inputs of projections without an
// adapter could be dropped, but the adapted ones need theirs (A's weight gradient reads
// x), the norms, softmax and activation keep their inputs either way, and whether
// autograd saves a frozen linear's input depends on its implementation (bitsandbytes'
// 4-bit matmul is an autograd.Function of its own); counting them errs on the safe side.
// The adapters' activations are not split by tensor parallelism (r is not sharded).
// Per layer: Σ over adapted projections of g·s·b·r.
constexpr bytes adapter_activation_bytes_per_layer(const transformer_config& m, const activation_formats& x,
                                                   int micro_batch, int seq, const finetune_spec& ft) {
    return bytes_of(size_of(x.gemm_inputs) * double(micro_batch) * seq * ft.rank * adapted_matrices_per_layer(m, ft));
}

// Context parallelism (Megatron-Core docs/user-guide/features/context_parallel.md@d98e8a64)
// partitions every activation along the sequence: a rank keeps its s/cp tokens of each
// per-token tensor, its s/cp queries' rows of the attention core (a·(s/cp)·s·b
// probabilities, or the log-sum-exp of its s/cp rows) and only its own KV chunk (the
// ring brings the others again in backward): the layer's bytes ÷ cp.
constexpr layer_activations layer_activations_of(const transformer_config& m, const precision_recipe& r,
                                                 const parallel_layout& p, int seq, const framework_profile& fw,
                                                 const finetune_spec& ft = {}, const moe_run& run = {}) {
    layer_activations a;
    const activation_formats x = activation_formats_of(r);
    const double cp = p.cp;
    if (run.a2a_overlap && p.pp > 1) a.extra_in_flight = 1.0 / p.interleave;
    a.dispatcher_buffers = dispatcher_buffer_bytes(m, run, p);
    a.userbuffers = userbuffer_bytes(m, r, p, seq, fw);
    const recompute_module_set modules = recomputed_modules(p);
    if (has_moe(m)) {
        a.moe_kept = moe_layer_activation_bytes(m, x, p.micro_batch, seq, p, p.recompute, fw, run, modules) / cp;
        if (p.recompute == recompute_mode::full)
            a.moe_rebuilt = moe_layer_activation_bytes(m, x, p.micro_batch, seq, p, recompute_mode::none, fw, run, {}) / cp;
    }
    a.kept = activation_bytes_per_layer(m, x, p.micro_batch, seq, p.tp, p.sp, p.recompute, fw, modules) / cp;
    // Recomputing a layer rebuilds what it would have kept and did not, live during its
    // backward.
    if (p.recompute == recompute_mode::full || p.recompute == recompute_mode::op_selective) {
        const bytes whole =
            activation_bytes_per_layer(m, x, p.micro_batch, seq, p.tp, p.sp, recompute_mode::none, fw) / cp;
        a.rebuilt = p.recompute == recompute_mode::full || whole < a.kept ? whole : whole - a.kept;
    }
    // Submodules beyond the attention core (whose rebuilt core is not counted, as with
    // Korthikanti's selective recompute): what they drop of one layer, live once
    // (ASSUMPTION: the submodules of one layer are rebuilt together).
    if (p.recompute == recompute_mode::selective && !(modules == default_recompute_modules)) {
        const recompute_module_set core = modules.contains(recompute_module::core_attn) ? default_recompute_modules
                                                                                        : recompute_module_set{};
        a.rebuilt = activation_bytes_per_layer(m, x, p.micro_batch, seq, p.tp, p.sp, p.recompute, fw, core) / cp -
                    a.kept;
        if (has_moe(m))
            a.moe_rebuilt =
                moe_layer_activation_bytes(m, x, p.micro_batch, seq, p, p.recompute, fw, run, core) / cp - a.moe_kept;
    }
    if (ft.freezes_base()) {
        const bytes adapters = adapter_activation_bytes_per_layer(m, x, p.micro_batch, seq, ft) / cp;
        if (p.recompute == recompute_mode::full) a.rebuilt += adapters;
        else a.kept += adapters;
    }
    return a;
}
}  // namespace memory_detail

}  // namespace trainperf
