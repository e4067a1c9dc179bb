// FLOP counts of training a transformer: the seed formula used for reported
// TFLOP/s (comparable with published benchmarks), Narayanan et al.'s closed form, and
// exact per-op GEMM counts (GQA, SwiGLU, untied heads, causal attention) used for
// the step-time model and MFU/HFU.
#pragma once

#include <string_view>

#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/finetune.hpp"
#include "../spec/model.hpp"
#include "../spec/parallel.hpp"

namespace trainperf {

namespace flops_detail {
constexpr void check_seq(const transformer_config& m, int seq) {
    validate(m);
    require(seq >= 1, "seq", seq, "must be at least 1");
}
}  // namespace flops_detail

// ---- Seed formula (docs/memory.md §FLOPs) ------------------------------------
// Per sample of s tokens, n layers, hidden h, vocab v:
//   attention = 4·h·s² + 8·s·h²   (QKV + output projection 8·s·h², scores + context 4·h·s²)
//   ffn       = 16·s·h²           (two h × 4h matrices)
//   embed     = 2·s·h·v           (the logits GEMM)
//   forward   = n·(attention + ffn) + embed
// Training is 3 × forward (backward = 2 × forward); full recompute repeats the
// forward: 4 × forward. Selective recompute (Korthikanti et al. 2022) repeats only
// the attention core: 3 × forward + n·4·h·s².
constexpr flops seed_attention_flops(const transformer_config& m, int seq) {
    flops_detail::check_seq(m, seq);
    const double h = m.hidden, s = seq;
    return flops_of(4 * h * s * s + 8 * s * h * h);
}

constexpr flops seed_ffn_flops(const transformer_config& m, int seq) {
    flops_detail::check_seq(m, seq);
    const double h = m.hidden, s = seq;
    return flops_of(16 * s * h * h);
}

constexpr flops seed_embedding_flops(const transformer_config& m, int seq) {
    flops_detail::check_seq(m, seq);
    return flops_of(2.0 * seq * m.hidden * double(m.vocab));
}

constexpr flops forward_flops_per_sample(const transformer_config& m, int seq) {
    return double(m.layers) * (seed_attention_flops(m, seq) + seed_ffn_flops(m, seq)) +
           seed_embedding_flops(m, seq);
}

constexpr flops training_flops_per_sample(const transformer_config& m, int seq,
                                          recompute_mode r = recompute_mode::none) {
    const flops forward = forward_flops_per_sample(m, seq);
    switch (r) {
        case recompute_mode::none: return 3.0 * forward;
        case recompute_mode::selective: {
            const double h = m.hidden, s = seq;
            return 3.0 * forward + flops_of(double(m.layers) * 4 * h * s * s);
        }
        case recompute_mode::full: return 4.0 * forward;
        case recompute_mode::op_selective: {
            // The seed's GPT layer (fused QKV, GELU FFN): the output projection (2·s·h²) and
            // the FFN's down matrix (8·s·h²) are the matmuls recomputed.
            const double h = m.hidden, s = seq;
            return 3.0 * forward + flops_of(double(m.layers) * 10 * s * h * h);
        }
    }
    return 3.0 * forward;
}

// Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM", SC'21, eq. 3): FLOPs of one batch of B sequences with
// full recompute, F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)). It equals the seed
// formula's 4 × forward except that the logits GEMM is counted 3×, not 4×.
constexpr flops narayanan_training_flops(const transformer_config& m, double batch, int seq) {
    flops_detail::check_seq(m, seq);
    require(batch > 0, "batch", batch, "must be positive");
    const double s = seq, l = m.layers, h = m.hidden, v = m.vocab;
    return flops_of(96 * batch * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)));
}

// ---- Exact per-op GEMM counts ------------------------------------------------
struct flop_options {
    // Dense kernels (cuBLAS strided-batched GEMMs, as HF eager attention uses) compute
    // the full s × s score matrix and mask it afterwards, so causal models cost the
    // same as bidirectional ones. With causal_savings a kernel that skips masked
    // blocks (FlashAttention) is assumed: s·(s+1)/2 of s² score entries.
    bool causal_savings = false;
};

// Forward GEMM FLOPs of one layer (per sample) and of the output layer. Where the
// layers differ (dense and MoE FFNs, sliding-window and full attention) it is their
// mean, so that layers × layer() is every layer's.
struct flop_breakdown {
    flops qkv = flops_of(0);          // 2·s·h·(q + 2·kv_width), q = heads·head_dim (= h); latent
                                      // attention: 2·s·(its query and key-value projection weights)
    flops scores = flops_of(0);       // Q·Kᵀ: 2·s·keys·heads·qk_head_dim (keys: s, or the window)
    flops context = flops_of(0);      // P·V:  2·s·keys·heads·v_head_dim
    flops out_proj = flops_of(0);     // 2·s·heads·v_head_dim·h
    flops ffn = flops_of(0);          // 2·s·h·f per matrix: 2 (GELU) or 3 (SwiGLU) matrices; an MoE
                                      // layer: the router, experts_per_token experts and the shared ones
    flops logits = flops_of(0);       // 2·s·h·V, once per model (tied or untied: same)

    constexpr flops attention_core() const { return scores + context; }
    constexpr flops layer() const { return qkv + scores + context + out_proj + ffn; }
};

namespace flops_detail {
// The forward FLOPs of one layer's linear projections that op-level selective
// checkpointing recomputes (spec/parallel.hpp op_selective_keeps_output), as the model's
// code calls them; the attention kernel's output is saved.
constexpr flops op_selective_recomputed(const transformer_config& m, const flop_breakdown& b) {
    const double two_s = b.out_proj.value() / (double(m.q_width()) * m.hidden);  // 2·s
    double total = 0;
    for_each_layer_linear(m, m.code, [&](std::string_view name, double in, double out, bool) {
        if (!op_selective_keeps_output(m, name, m.code)) total += two_s * in * out;
    });
    return flops_of(total);
}

// The keys each query meets on average over the layers: s on a full-attention layer (or,
// with causal savings, (s + 1)/2), the window on a sliding one (ASSUMPTION: a band
// kernel computes the window's keys for every query, the first ones too), or where the
// sequence fits in the window, as a full layer.
constexpr double mean_keys(const transformer_config& m, double s, double causal) {
    if (m.sliding_window == 0) return s * causal;
    const double full = m.full_attention_every > 0 ? double(m.layers / m.full_attention_every) : 0.0;
    const double window = s <= m.sliding_window ? s * causal : double(m.sliding_window);
    return (full * s * causal + (m.layers - full) * window) / m.layers;
}

// The forward FLOPs per token of one MoE layer's FFN part: the router GEMM, the routed
// experts a token goes to and the shared ones (and the shared expert's gate).
constexpr double moe_ffn_flops_per_token(const transformer_config& m) {
    const double h = m.hidden, matrices = m.ffn == ffn_kind::swiglu ? 3 : 2;
    const double shared = m.moe.shared_ffn_hidden;
    return 2 * h * m.moe.experts + m.moe.experts_per_token * matrices * 2 * h * m.moe.expert_ffn_hidden +
           matrices * 2 * h * shared + (m.moe.shared_expert_gate ? 2 * h : 0.0);
}

// exact_forward_breakdown for a model and sequence already checked (check_seq).
constexpr flop_breakdown forward_breakdown(const transformer_config& m, int seq, const flop_options& o = {}) {
    const double h = m.hidden, s = seq, f = m.ffn_hidden, kv = m.kv_width(), q = m.q_width();
    const double causal = (o.causal_savings && m.causal) ? (s + 1) / (2 * s) : 1.0;
    const double ffn_matrices = m.ffn == ffn_kind::swiglu ? 3 : 2;
    const double keys = mean_keys(m, s, causal);
    const double heads = m.heads, v = m.v_head_dim();
    const double projections = m.mla.enabled() ? mla_projection_parameters(m.mla, h, heads) : h * (q + 2 * kv);
    double ffn = ffn_matrices * 2 * s * h * f;
    if (has_moe(m))
        ffn = (double(dense_layers(m)) * ffn + double(moe_layers(m)) * s * moe_ffn_flops_per_token(m)) / m.layers;
    return {.qkv = flops_of(2 * s * projections),
            .scores = flops_of(2 * s * keys * heads * m.qk_head_dim()),
            .context = flops_of(2 * s * keys * heads * v),
            .out_proj = flops_of(2 * s * heads * v * h),
            .ffn = flops_of(ffn),
            .logits = flops_of(2 * s * h * double(m.vocab))};
}
}  // namespace flops_detail

constexpr flop_breakdown exact_forward_breakdown(const transformer_config& m, int seq,
                                                 const flop_options& o = {}) {
    flops_detail::check_seq(m, seq);
    return flops_detail::forward_breakdown(m, seq, o);
}

constexpr flops exact_forward_flops_per_sample(const transformer_config& m, int seq,
                                               const flop_options& o = {}) {
    const flop_breakdown b = exact_forward_breakdown(m, seq, o);
    return double(m.layers) * b.layer() + b.logits;
}

// Backward = dgrad + wgrad = 2 × forward GEMM FLOPs. Recompute repeats the forward
// of what it recomputes: every layer (full; the logits are not recomputed, as in
// Megatron-LM) or the attention core (selective).
constexpr flops exact_training_flops_per_sample(const transformer_config& m, int seq,
                                                recompute_mode r = recompute_mode::none,
                                                const flop_options& o = {}) {
    const flop_breakdown b = exact_forward_breakdown(m, seq, o);
    const flops forward = double(m.layers) * b.layer() + b.logits;
    flops repeated = flops_of(0);
    if (r == recompute_mode::full) repeated = double(m.layers) * b.layer();
    if (r == recompute_mode::selective) repeated = double(m.layers) * b.attention_core();
    if (r == recompute_mode::op_selective) repeated = double(m.layers) * flops_detail::op_selective_recomputed(m, b);
    return 3.0 * forward + repeated;
}

// Model FLOPs (for MFU) exclude recompute; hardware FLOPs (for HFU) include it.
constexpr flops model_flops_per_sample(const transformer_config& m, int seq,
                                       const flop_options& o = {}) {
    return exact_training_flops_per_sample(m, seq, recompute_mode::none, o);
}

// ---- MFU by its standard definition ---------------------------------------------
// PaLM (Chowdhery et al. 2022, "PaLM: Scaling Language Modeling with Pathways",
// appendix B): a token costs 6·N + 12·L·H·Q·T model FLOPs in training, N the
// parameters, L layers, H heads of size Q (H·Q = hidden, or wider where the model sets
// its head size), T the sequence length; no
// recomputation counted. N here is the parameters that take part in a matmul: every
// layer's and the output projection over the vocabulary (tied or not); lookups
// (token, position, segment embeddings) do no matmul. It holds for any FFN width,
// GQA, SwiGLU or untied head, since N is counted from the model's shapes.
// A mixture of experts counts the parameters a token uses (active_parameter_count's
// layers), and the attention term each layer's keys (a sliding-window layer's window)
// and its widths, 6·T·H·(qk_head_dim + v_head_dim) per layer and token (12·H·Q·T where
// both are Q).
constexpr double matmul_parameters(const transformer_config& m) {
    if (has_moe(m)) return all_layer_parameters(m, true) + double(m.vocab) * m.hidden;
    return double(m.layers) * layer_parameters(m) + double(m.vocab) * m.hidden;
}

namespace flops_detail {
// The two below for a model and sequence already checked (check_seq): a prediction
// checks its setup once.
constexpr flops palm_training_flops_per_sample(const transformer_config& m, int seq) {
    const double t = seq;
    const double attention = 6.0 * m.layers * double(m.heads) * (m.qk_head_dim() + m.v_head_dim()) *
                             mean_keys(m, t, 1.0);
    return flops_of(t * (6.0 * matmul_parameters(m) + attention));
}

constexpr flops recompute_flops_per_sample(const transformer_config& m, int seq, recompute_mode r) {
    const flop_breakdown b = forward_breakdown(m, seq);
    if (r == recompute_mode::full) return double(m.layers) * b.layer();
    if (r == recompute_mode::selective) return double(m.layers) * b.attention_core();
    if (r == recompute_mode::op_selective) return double(m.layers) * op_selective_recomputed(m, b);
    return flops_of(0);
}

// Selective recompute of named submodules (spec/recompute_modules.hpp) repeats the
// forward FLOPs of what it reruns: the attention core (core_attn), a dense layer's FFN
// (mlp), an MoE layer's router, experts and shared experts (moe) or its shared experts
// alone (shared_experts), latent attention's up projections (mla_up_proj); the norms and
// activations (layernorm, moe_act) do no matmul.
constexpr flops module_recompute_flops_per_sample(const transformer_config& m, int seq,
                                                  const recompute_module_set& modules) {
    const flop_breakdown b = forward_breakdown(m, seq);
    const double s = seq, h = m.hidden, matrices = m.ffn == ffn_kind::swiglu ? 3 : 2;
    double total = 0;
    if (modules.contains(recompute_module::core_attn)) total += double(m.layers) * b.attention_core().value();
    if (modules.contains(recompute_module::mlp))
        total += double(dense_layers(m)) * matrices * 2 * s * h * double(m.ffn_hidden);
    if (modules.contains(recompute_module::moe)) total += double(moe_layers(m)) * s * moe_ffn_flops_per_token(m);
    else if (modules.contains(recompute_module::shared_experts))
        total += double(moe_layers(m)) * matrices * 2 * s * h * double(m.moe.shared_ffn_hidden);
    if (modules.contains(recompute_module::mla_up_proj) && m.mla.enabled()) {
        const mla_config& a = m.mla;
        const double heads = m.heads;
        // Without a query latent the query projection h → heads·d_qk runs again instead.
        const double up = (a.q_lora_rank > 0 ? double(a.q_lora_rank) : h) * heads * a.qk_head_dim() +
                          double(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
        total += double(m.layers) * 2 * s * up;
    }
    return flops_of(total);
}
}  // namespace flops_detail

constexpr flops palm_training_flops_per_sample(const transformer_config& m, int seq) {
    flops_detail::check_seq(m, seq);
    return flops_detail::palm_training_flops_per_sample(m, seq);
}

// The multi-token prediction modules' training FLOPs per sample (DeepSeek-AI 2024,
// "DeepSeek-V3 Technical Report", §2.2: each module projects the normalised hidden state
// and the next token's embedding, 2h → h, runs one more layer and the shared output
// head): per module and token 2·2h·h + one layer (attention and, in an MoE model, an MoE
// layer's FFN) + 2·h·V, three times for training. Beside model_flops_per_sample, which
// counts the main model only (as parameter_count does).
constexpr flops mtp_training_flops_per_sample(const transformer_config& m, int seq,
                                              const flop_options& o = {}) {
    flops_detail::check_seq(m, seq);
    if (m.mtp_layers == 0) return flops_of(0);
    const flop_breakdown b = flops_detail::forward_breakdown(m, seq, o);
    const double s = seq, h = m.hidden;
    // A dense model's breakdown is its one layer; an MoE model's module has an MoE layer.
    const flops ffn = has_moe(m) ? flops_of(s * flops_detail::moe_ffn_flops_per_token(m)) : b.ffn;
    const flops per_module = b.qkv + b.scores + b.context + b.out_proj + ffn + flops_of(2 * s * 2 * h * h) + b.logits;
    return 3.0 * m.mtp_layers * per_module;
}

// What recomputation adds on top (the forward of what it repeats, exact per-op
// count): hardware FLOPs = model FLOPs + this, so HFU ≥ MFU always.
constexpr flops recompute_flops_per_sample(const transformer_config& m, int seq, recompute_mode r) {
    flops_detail::check_seq(m, seq);
    return flops_detail::recompute_flops_per_sample(m, seq, r);
}

// FLOPs that run per sample when fine-tuning with adapters (LoRA, QLoRA), on PaLM's
// count: its 6·N per token is 2·N forward, 2·N input gradients and 2·N weight gradients
// (N = matmul_parameters); the frozen weights' gradients do not run, so 2·N per token
// less, and each adapter parameter adds its own forward, dgrad and wgrad, 6 per token
// (two GEMMs of r·d_in and r·d_out multiply-adds per token each pass), plus its forward
// again with full recompute. ASSUMPTION: every frozen dgrad runs, the first layer's too
// (gradient checkpointing in PEFT makes the embeddings' output require grad).
// MFU keeps PaLM's model FLOPs (6·N, the weight gradients that do not run included),
// so under fine-tuning it can exceed HFU.
namespace flops_detail {
// For a model and sequence already checked (check_seq), as the two above.
constexpr flops finetune_hardware_flops_per_sample(const transformer_config& m, int seq, const finetune_spec& f,
                                                   recompute_mode r) {
    const flops full = flops_detail::palm_training_flops_per_sample(m, seq) +
                       flops_detail::recompute_flops_per_sample(m, seq, r);
    if (!f.freezes_base()) return full;
    const double t = seq;
    const double adapters = adapter_parameters(m, f);
    const double recomputed = r == recompute_mode::full ? 2.0 * adapters : 0.0;
    return full - flops_of(t * 2.0 * matmul_parameters(m)) + flops_of(t * (6.0 * adapters + recomputed));
}
}  // namespace flops_detail

constexpr flops finetune_hardware_flops_per_sample(const transformer_config& m, int seq, const finetune_spec& f,
                                                   recompute_mode r) {
    flops_detail::check_seq(m, seq);
    return flops_detail::finetune_hardware_flops_per_sample(m, seq, f, r);
}

// Every count of one training sample side by side (`trainperf flops`): the seed formula
// reported TFLOP/s use, the exact GEMM count, PaLM's model FLOPs, Narayanan et al.'s
// closed form (full recompute), 6·parameters·tokens (a mixture of experts: the active
// parameters), and the exact forward per layer (the mean layer where layers differ).
struct flop_summary {
    std::string_view model;
    int seq = 0;
    recompute_mode recompute = recompute_mode::none;
    bool causal_savings = false;
    double parameters = 0;
    double active_parameters = 0;  // those one token uses (= parameters for a dense model)
    double mtp_parameters = 0;     // multi-token prediction modules, beside `parameters`
    // Whether the seed formula and Narayanan et al.'s (a dense GPT layer's) apply: not with
    // experts or latent attention.
    bool dense_formulas = true;
    flops forward_seed = flops_of(0), training_seed = flops_of(0);
    flops exact_forward = flops_of(0), exact_training = flops_of(0);
    flops model_flops = flops_of(0);                 // model_flops_per_sample: what MFU counts
    flops mtp_training = flops_of(0);                // mtp_training_flops_per_sample, beside the others
    flops narayanan_full_recompute = flops_of(0);
    flops six_n_tokens = flops_of(0);
    flop_breakdown exact_forward_layer{};           // one layer's forward GEMMs, and the logits
};

constexpr flop_summary flop_summary_of(const transformer_config& m, int seq, recompute_mode r,
                                       const flop_options& o = {}) {
    flops_detail::check_seq(m, seq);
    // Op-level checkpointing keeps every other matmul's output of the dense layer's code.
    require(r != recompute_mode::op_selective || (!has_moe(m) && !m.mla.enabled()), "recompute", "op-selective",
            "not modelled for mixture-of-experts or latent-attention layers");
    const double params = parameter_count(m);
    const double active = active_parameter_count(m);
    return {.model = m.name,
            .seq = seq,
            .recompute = r,
            .causal_savings = o.causal_savings,
            .parameters = params,
            .active_parameters = active,
            .mtp_parameters = mtp_parameters(m),
            .dense_formulas = !has_moe(m) && !m.mla.enabled(),
            .forward_seed = forward_flops_per_sample(m, seq),
            .training_seed = training_flops_per_sample(m, seq, r),
            .exact_forward = exact_forward_flops_per_sample(m, seq, o),
            .exact_training = exact_training_flops_per_sample(m, seq, r, o),
            .model_flops = model_flops_per_sample(m, seq, o),
            .mtp_training = mtp_training_flops_per_sample(m, seq, o),
            .narayanan_full_recompute = narayanan_training_flops(m, 1, seq),
            .six_n_tokens = flops_of(6.0 * active * seq),
            .exact_forward_layer = exact_forward_breakdown(m, seq, o)};
}

}  // namespace trainperf
