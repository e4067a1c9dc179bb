// A transformer's architecture and its parameter count, computed from the config.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "../core/attributes.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "mla.hpp"
#include "moe.hpp"

namespace trainperf {

enum class ffn_kind { gelu, swiglu };          // swiglu: gated FFN, three matrices
enum class position_kind { learned, rotary };  // learned: a max_seq × hidden table
enum class norm_kind { layernorm, rmsnorm };   // rmsnorm has no bias

template <>
struct enum_names<ffn_kind> {
    static constexpr std::array<enum_name<ffn_kind>, 2> table{{{ffn_kind::gelu, "gelu"}, {ffn_kind::swiglu, "swiglu"}}};
};
template <>
struct enum_names<position_kind> {
    static constexpr std::array<enum_name<position_kind>, 2> table{
        {{position_kind::learned, "learned"}, {position_kind::rotary, "rotary"}}};
};
template <>
struct enum_names<norm_kind> {
    static constexpr std::array<enum_name<norm_kind>, 2> table{
        {{norm_kind::layernorm, "layernorm"}, {norm_kind::rmsnorm, "rmsnorm"}}};
};

// How the model's code computes the FFN activation, by its Hugging Face name
// (config.json hidden_act / activation_function; transformers src/transformers/
// activations.py@00e12e7c). "gelu" is the exact erf GELU, one ATen op
// (nn.functional.gelu); "gelu_new" is the tanh approximation written as PyTorch ops,
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): eight elementwise kernels in eager mode;
// "gelu_pytorch_tanh" the same approximation as one ATen op. swiglu FFNs use silu.
enum class activation_kind { gelu, gelu_new, gelu_tanh, relu, silu };

template <>
struct enum_names<activation_kind> {
    static constexpr std::array<enum_name<activation_kind>, 5> table{{{activation_kind::gelu, "gelu"},
                                                                     {activation_kind::gelu_new, "gelu_new"},
                                                                     {activation_kind::gelu_tanh, "gelu_pytorch_tanh"},
                                                                     {activation_kind::relu, "relu"},
                                                                     {activation_kind::silu, "silu"}}};
};

// Which implementation of the layer an eager framework runs, as far as it changes the
// op sequence (workload/layer.hpp): the Hugging Face modeling code of BERT (three Linear
// projections, scores divided by √d, an additive padding mask), of GPT-2 (Conv1D
// projections through addmm, the scale as a tensor, the causal mask by torch.where),
// of LLaMA (RMSNorm and rotary embedding written as PyTorch ops), or generic (one
// QKV projection, scale, mask, softmax, dropout).
enum class model_code { generic, bert, gpt2, llama };

template <>
struct enum_names<model_code> {
    static constexpr std::array<enum_name<model_code>, 4> table{{{model_code::generic, "generic"},
                                                                {model_code::bert, "bert"},
                                                                {model_code::gpt2, "gpt2"},
                                                                {model_code::llama, "llama"}}};
};

// Norms of the queries and keys before the rotary embedding: none, an RMSNorm per head
// (Qwen3: q_norm and k_norm over head_dim), or over the whole projection (OLMoE: q_norm
// over heads × head_dim, k_norm over kv heads × head_dim).
enum class qk_norm_kind { none, per_head, full };

template <>
struct enum_names<qk_norm_kind> {
    static constexpr std::array<enum_name<qk_norm_kind>, 3> table{
        {{qk_norm_kind::none, "none"}, {qk_norm_kind::per_head, "per-head"}, {qk_norm_kind::full, "full"}}};
};

struct transformer_config {
    std::string_view name = "custom";
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kv_heads = 0;            // < heads for grouped-query attention; 0 means = heads
    int ffn_hidden = 0;          // inner size of the FFN (per matrix for swiglu)
    int vocab = 0;
    int max_seq = 0;             // the longest context the model takes (its position limit)
    // The sequence length of the model's main pre-training, the default for a run (a
    // model's long-context stage, if it had one, extends max_seq beyond it); 0: max_seq.
    int train_seq = 0;
    ffn_kind ffn = ffn_kind::gelu;
    position_kind positions = position_kind::learned;
    norm_kind norm = norm_kind::layernorm;
    bool tied_embeddings = true; // output projection shares the input embedding
    bool linear_biases = true;   // biases on QKV, projections and FFN matrices
    bool causal = true;          // decoder (masked) or encoder (bidirectional)
    int token_types = 0;         // BERT segment embeddings
    bool pooler = false;         // BERT pooler (hidden × hidden dense + bias)
    bool qkv_biases = true;      // with linear_biases; GPT-Neo has none on Q, K, V only
    bool dropout = true;         // trained with dropout (LLaMA is not): masks kept for backward
    // Biases on Q, K and V and on no other linear layer (Qwen2); needs linear_biases off.
    bool qkv_bias_only = false;
    // Norms in each layer: 2 (before attention and before the FFN), 1 where attention and
    // FFN run in parallel off one norm (Falcon-7B), up to 4 with extra post-norms.
    int norms_per_layer = 2;
    // Width of one attention head where it is not hidden / heads (Gemma 7B: 16 heads of
    // 256 on a hidden size of 3072); 0: hidden / heads. Q, the attention context and the
    // output projection's input are heads × head_dim wide.
    int attention_head_dim = 0;
    // The FFN activation (a gelu FFN; swiglu is silu whatever this says) and the code
    // that runs the layer in eager mode.
    activation_kind activation = activation_kind::gelu;
    model_code code = model_code::generic;
    // Mixture of experts (spec/moe.hpp; experts 0: a dense model) and multi-head latent
    // attention (spec/mla.hpp; kv_lora_rank 0: ordinary attention).
    moe_config moe{};
    mla_config mla{};
    qk_norm_kind qk_norm = qk_norm_kind::none;
    // One learned logit per head joins every softmax (gpt-oss's attention sinks:
    // heads parameters per layer).
    bool attention_sinks = false;
    // Attention over the last sliding_window keys only (0: full attention), on every layer
    // but every full_attention_every-th (gpt-oss: 128 tokens, full on every 2nd layer,
    // layer_types "sliding_attention", "full_attention", ...; 0: no full layers).
    int sliding_window = 0;
    int full_attention_every = 0;
    // Multi-token prediction modules trained beside the model (DeepSeek-V3's
    // num_nextn_predict_layers: 1), each a projection of the embedding and the hidden
    // state and one more layer, sharing the embedding and the head; not in parameter_count
    // (mtp_parameters).
    int mtp_layers = 0;

    constexpr int effective_kv_heads() const { return kv_heads == 0 ? heads : kv_heads; }
    constexpr int head_dim() const { return attention_head_dim > 0 ? attention_head_dim : hidden / heads; }
    constexpr int q_width() const { return heads * head_dim(); }  // = hidden unless attention_head_dim is set
    constexpr int kv_width() const { return effective_kv_heads() * head_dim(); }
    // The widths the scores and the context run over per head: head_dim, or latent
    // attention's nope + rope and v.
    constexpr int qk_head_dim() const { return mla.enabled() ? mla.qk_head_dim() : head_dim(); }
    constexpr int v_head_dim() const { return mla.enabled() ? mla.v_head_dim : head_dim(); }
};

// Whether the model has routed experts (mixture of experts).
constexpr bool has_moe(const transformer_config& m) { return m.moe.enabled(); }

// A LLaMA-style decoder (Touvron et al. 2023): RMSNorm, SwiGLU, rotary positions, an
// untied head, no biases, no dropout, and the Hugging Face LLaMA code's separate Q, K and
// V projections; most decoders since share it, the MoE ones with experts in the FFN.
constexpr transformer_config llama_architecture(std::string_view name, int layers, int hidden, int heads,
                                                int kv_heads, int ffn_hidden, int vocab, int max_seq) {
    return {.name = name, .layers = layers, .hidden = hidden, .heads = heads,
            .kv_heads = kv_heads, .ffn_hidden = ffn_hidden, .vocab = vocab, .max_seq = max_seq,
            .ffn = ffn_kind::swiglu, .positions = position_kind::rotary,
            .norm = norm_kind::rmsnorm, .tied_embeddings = false, .linear_biases = false,
            .causal = true, .dropout = false,  // LLaMA trains without dropout
            .activation = activation_kind::silu, .code = model_code::llama};
}

namespace model_detail {
// Whether the model uses an architecture variant: experts, latent attention, windows,
// multi-token prediction (a nonzero field; a negative one too, so that it is checked).
constexpr bool has_variants(const transformer_config& m) {
    return (m.moe.experts | m.mla.kv_lora_rank | m.mla.q_lora_rank | m.sliding_window | m.full_attention_every |
            m.mtp_layers) != 0;
}

// The variants' checks, out of a dense model's way (validate runs on every prediction).
TRAINPERF_NOINLINE constexpr void validate_variants(const transformer_config& m) {
    validate(m.moe, m.layers);
    validate(m.mla);
    require(!m.mla.enabled() || m.effective_kv_heads() == m.heads, "kv_heads", m.kv_heads,
            "must equal heads with latent attention (every head reads the one latent)");
    require(!m.mla.enabled() || !(m.linear_biases || m.qkv_bias_only), "linear_biases", "true",
            "biases on latent attention's projections are not modelled");
    require(!m.mla.enabled() || m.qk_norm == qk_norm_kind::none, "qk_norm", to_string(m.qk_norm),
            "must be none with latent attention (its latents have their own norms)");
    require(m.sliding_window >= 0 && m.sliding_window <= limits::max_sequence, "sliding_window", m.sliding_window,
            "must be between 0 (full attention) and 2^24");
    require(m.full_attention_every >= 0 && m.full_attention_every <= m.layers, "full_attention_every",
            m.full_attention_every, "must be between 0 (no full layers) and the layers");
    require(m.full_attention_every == 0 || m.sliding_window > 0, "full_attention_every", m.full_attention_every,
            "needs a sliding_window for the other layers");
    require(m.mtp_layers >= 0 && m.mtp_layers <= 16, "mtp_layers", m.mtp_layers, "must be between 0 and 16");
}
}  // namespace model_detail

// Throws trainperf::invalid_argument naming the first bad field.
constexpr void validate(const transformer_config& m) {
    require(m.layers > 0 && m.layers <= limits::max_layers, "layers", m.layers, "must be between 1 and 65536");
    require(m.hidden > 0 && m.hidden <= limits::max_width, "hidden", m.hidden, "must be between 1 and 2^22");
    require(m.heads > 0 && m.heads <= limits::max_heads, "heads", m.heads, "must be between 1 and 65536");
    require(m.attention_head_dim > 0 || m.hidden % m.heads == 0, "heads", m.heads, "must divide hidden");
    require(m.attention_head_dim >= 0 && m.attention_head_dim <= 65536, "attention_head_dim", m.attention_head_dim,
            "must be between 0 (hidden / heads) and 65536");
    require(m.kv_heads >= 0 && m.kv_heads <= m.heads, "kv_heads", m.kv_heads,
            "must be between 0 (= heads) and heads");
    require(m.heads % m.effective_kv_heads() == 0, "kv_heads", m.kv_heads,
            "must divide heads");
    require(m.ffn_hidden > 0 && m.ffn_hidden <= limits::max_width, "ffn_hidden", m.ffn_hidden,
            "must be between 1 and 2^22");
    require(m.vocab > 0 && m.vocab <= limits::max_vocab, "vocab", m.vocab, "must be between 1 and 2^24");
    require(m.max_seq >= 0 && m.max_seq <= limits::max_sequence, "max_seq", m.max_seq,
            "must be between 0 (none) and 2^24");
    require(m.train_seq >= 0 && (m.max_seq == 0 ? m.train_seq <= limits::max_sequence : m.train_seq <= m.max_seq),
            "train_seq", m.train_seq, "must be between 0 (max_seq) and max_seq");
    require(m.token_types >= 0 && m.token_types <= limits::max_token_types, "token_types", m.token_types,
            "must be between 0 and 1024");
    require(!(m.qkv_bias_only && m.linear_biases), "qkv_bias_only", m.qkv_bias_only,
            "means no biases besides Q, K, V: needs linear_biases false");
    require(m.norms_per_layer >= 1 && m.norms_per_layer <= 4, "norms_per_layer", m.norms_per_layer,
            "must be between 1 and 4");
    if (model_detail::has_variants(m)) model_detail::validate_variants(m);
}

// The sequence a run of the model uses unless told otherwise: its pre-training length
// (train_seq), else its position limit (max_seq); 0 when it has neither.
constexpr int training_length(const transformer_config& m) { return m.train_seq > 0 ? m.train_seq : m.max_seq; }

// Whether Q, K and V carry biases.
constexpr bool has_qkv_biases(const transformer_config& m) {
    return (m.linear_biases && m.qkv_biases) || m.qkv_bias_only;
}

// Parameters of one layer's attention projections (Q, K, V and output, with their
// biases; latent attention's projections and latent norms).
constexpr double attention_linear_parameters(const transformer_config& m) {
    const double h = m.hidden;
    if (m.mla.enabled()) return mla_parameters(m.mla, h, m.heads);
    const double kv = m.kv_width(), q = m.q_width();
    const double qkv = h * (q + 2 * kv) + (has_qkv_biases(m) ? q + 2 * kv : 0);
    return qkv + q * h + (m.linear_biases ? h : 0);
}

// Parameters of one FFN of inner width f (its matrices and their biases): the dense
// FFN (ffn_hidden), one routed expert, the shared experts.
constexpr double ffn_linear_parameters(const transformer_config& m, double f) {
    const double h = m.hidden;
    const bool b = m.linear_biases;
    const double matrices_in = m.ffn == ffn_kind::swiglu ? 2.0 : 1.0;
    return matrices_in * (h * f + (b ? f : 0)) + f * h + (b ? h : 0);
}

// Parameters of one layer's linear projections (Q, K, V, output, FFN matrices and
// their biases): what the layer's GEMMs read. A layer with the dense FFN.
constexpr double layer_linear_parameters(const transformer_config& m) {
    return attention_linear_parameters(m) + ffn_linear_parameters(m, m.ffn_hidden);
}

// Weight matrices of one layer's linear projections as the code runs them: Q, K and V as
// three Linears (BERT, LLaMA) or one fused projection (GPT-2's c_attn, the generic
// layer); the output projection and the FFN's matrices.
constexpr double layer_linear_matrices(const transformer_config& m, model_code code = model_code::generic) {
    const double qkv = code == model_code::bert || code == model_code::llama ? 3.0 : 1.0;
    return qkv + 1.0 + (m.ffn == ffn_kind::swiglu ? 3.0 : 2.0);
}

// Parameter tensors of one layer's linear projections as the code runs them: the
// matrices, and their biases where the model has them.
constexpr double layer_linear_tensors(const transformer_config& m, model_code code = model_code::generic) {
    const double qkv = code == model_code::bert || code == model_code::llama ? 3.0 : 1.0;
    const double matrices = layer_linear_matrices(m, code);
    double biases = has_qkv_biases(m) ? qkv : 0.0;
    if (m.linear_biases) biases += 1.0 + (m.ffn == ffn_kind::swiglu ? 3.0 : 2.0);
    return matrices + biases;
}

// Parameters of one transformer layer.
// What a layer holds beside its linear projections: its norms, the query and key norms,
// the attention sinks.
constexpr double layer_other_parameters(const transformer_config& m) {
    const double norm = m.norm == norm_kind::layernorm ? 2.0 * m.hidden : m.hidden;
    double p = m.norms_per_layer * norm;
    if (m.qk_norm == qk_norm_kind::per_head) p += 2.0 * m.head_dim();
    if (m.qk_norm == qk_norm_kind::full) p += double(m.q_width()) + m.kv_width();
    if (m.attention_sinks) p += m.heads;
    return p;
}

// Parameters of one transformer layer with the dense FFN (every layer of a dense model).
constexpr double layer_parameters(const transformer_config& m) {
    return layer_linear_parameters(m) + layer_other_parameters(m);
}

// ---- Mixture of experts ------------------------------------------------------
// One routed expert: an FFN of expert_ffn_hidden, with biases where the model's Linears
// have them (gpt-oss's gate_up_proj_bias and down_proj_bias).
constexpr double expert_parameters(const transformer_config& m) {
    return ffn_linear_parameters(m, m.moe.expert_ffn_hidden);
}

// The router of one MoE layer: a Linear h → experts (with a bias in gpt-oss), and
// DeepSeek-V3's per-expert score correction bias.
constexpr double router_parameters(const transformer_config& m) {
    const double e = m.moe.experts;
    return e * m.hidden + (m.moe.router_bias ? e : 0.0) + (m.moe.score_correction_bias ? e : 0.0);
}

// The shared experts of one MoE layer, every token's (one FFN of shared_ffn_hidden), and
// Qwen2-MoE's sigmoid gate on them, a Linear h → 1.
constexpr double shared_expert_parameters(const transformer_config& m) {
    if (m.moe.shared_ffn_hidden == 0) return 0.0;
    return ffn_linear_parameters(m, m.moe.shared_ffn_hidden) + (m.moe.shared_expert_gate ? double(m.hidden) : 0.0);
}

// One MoE layer: attention, norms, router, every routed expert and the shared ones.
constexpr double moe_layer_parameters(const transformer_config& m) {
    return attention_linear_parameters(m) + layer_other_parameters(m) + router_parameters(m) +
           double(m.moe.experts) * expert_parameters(m) + shared_expert_parameters(m);
}

// The parameters one token's pass through an MoE layer uses: the routed experts it is
// sent to (experts_per_token of them) instead of all.
constexpr double moe_layer_active_parameters(const transformer_config& m) {
    return moe_layer_parameters(m) - double(m.moe.experts - m.moe.experts_per_token) * expert_parameters(m);
}

// The dense part of an MoE layer (attention, norms and the shared experts as its FFN): the
// model with the shared experts' width as ffn_hidden, 0 where it has none (a layer
// without a dense FFN: workload/layer.hpp emits no FFN ops for it, cost/memory.hpp keeps
// no FFN activations). Megatron-Core's shared experts are a tensor-parallel MLP with the
// dense layer's collectives (megatron/core/transformer/moe/shared_experts.py@d98e8a64).
constexpr transformer_config moe_dense_part(const transformer_config& m) {
    transformer_config d = m;
    d.ffn_hidden = m.moe.shared_ffn_hidden;
    return d;
}

// The MoE layers and the dense ones.
constexpr int moe_layers(const transformer_config& m) { return moe_layer_count(m.moe, m.layers); }
constexpr int dense_layers(const transformer_config& m) { return m.layers - moe_layers(m); }

// Every layer's parameters, or (active) those one token uses.
constexpr double all_layer_parameters(const transformer_config& m, bool active = false) {
    if (!has_moe(m)) return double(m.layers) * layer_parameters(m);
    return double(dense_layers(m)) * layer_parameters(m) +
           double(moe_layers(m)) * (active ? moe_layer_active_parameters(m) : moe_layer_parameters(m));
}

// Input embedding, positions, segment types, final norm, untied head and pooler.
constexpr double embedding_parameters(const transformer_config& m) {
    const double h = m.hidden;
    double p = double(m.vocab) * h;
    if (m.positions == position_kind::learned) p += double(m.max_seq) * h;
    p += double(m.token_types) * h;
    if (m.token_types > 0) p += 2 * h;  // BERT's embedding layernorm
    return p;
}

constexpr double head_parameters(const transformer_config& m) {
    const double h = m.hidden;
    double p = m.norm == norm_kind::layernorm ? 2 * h : h;  // final norm
    if (m.token_types > 0) p = 0;                           // BERT: post-norm, none at the end
    if (!m.tied_embeddings) p += double(m.vocab) * h;
    if (m.pooler) p += h * h + h;
    return p;
}

// The whole model's parameters from its parts (a caller that has them already sums
// them here: parameter_count is this sum).
constexpr double parameters_of_parts(int layers, double layer, double embedding, double head) {
    return layers * layer + embedding + head;
}

constexpr double parameter_count(const transformer_config& m) {
    if (has_moe(m)) return all_layer_parameters(m) + embedding_parameters(m) + head_parameters(m);
    return parameters_of_parts(m.layers, layer_parameters(m), embedding_parameters(m), head_parameters(m));
}

// The parameters one token uses (a dense model's all): the routed experts it is not sent
// to left out, the embedding and the head in, as DeepSeek-V3's "37B activated" counts
// them (its README_WEIGHTS.md: 0.9B embedding and 0.9B head among the activated).
constexpr double active_parameter_count(const transformer_config& m) {
    return all_layer_parameters(m, true) + embedding_parameters(m) + head_parameters(m);
}

// The multi-token prediction modules (mtp_layers), beside parameter_count: each one more
// layer (an MoE layer in an MoE model), a projection 2h → h of the normalised embedding
// and hidden state concatenated (eh_proj), their two norms and its own final norm before
// the shared head (enorm, hnorm, shared_head.norm; DeepSeek-V3 README_WEIGHTS.md).
constexpr double mtp_parameters(const transformer_config& m) {
    const double h = m.hidden;
    const double norm = m.norm == norm_kind::layernorm ? 2.0 * h : h;
    const double layer = has_moe(m) ? moe_layer_parameters(m) : layer_parameters(m);
    return m.mtp_layers * (layer + 2.0 * h * h + 3.0 * norm);
}

}  // namespace trainperf
