// The model catalog: one tag type per published transformer carrying a constexpr
// transformer_config, the `model` concept for such tags, and lookup by CLI name.
// Every config cites where it comes from (Hugging Face config.json or the paper).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <string_view>

#include "../core/catalog_lookup.hpp"
#include "../core/error.hpp"
#include "model.hpp"
#include "model_catalog_moe.hpp"

namespace trainperf {

// A compile-time model description: a tag type carrying a constexpr transformer_config.
template <class T>
concept model = requires {
    { T::config } -> std::convertible_to<transformer_config>;
};

constexpr const transformer_config& config_of(const transformer_config& m) { return m; }
template <model M>
constexpr const transformer_config& config_of(M) { return M::config; }

// ---------------------------------------------------------------------------------
// BERT (Devlin et al. 2019). Source: Hugging Face bert-base-uncased / bert-large-uncased
// config.json: vocab 30522, max_position_embeddings 512, type_vocab_size 2, GELU,
// post-layernorm, pooler. Encoders: bidirectional attention.
struct bert_base {
    static constexpr transformer_config config{
        .name = "bert-base", .layers = 12, .hidden = 768, .heads = 12, .kv_heads = 0,
        .ffn_hidden = 3072, .vocab = 30522, .max_seq = 512,
        .ffn = ffn_kind::gelu, .positions = position_kind::learned, .norm = norm_kind::layernorm,
        .tied_embeddings = true, .linear_biases = true, .causal = false,
        .token_types = 2, .pooler = true, .activation = activation_kind::gelu, .code = model_code::bert};
};
struct bert_large {
    static constexpr transformer_config config{
        .name = "bert-large", .layers = 24, .hidden = 1024, .heads = 16, .kv_heads = 0,
        .ffn_hidden = 4096, .vocab = 30522, .max_seq = 512,
        .ffn = ffn_kind::gelu, .positions = position_kind::learned, .norm = norm_kind::layernorm,
        .tied_embeddings = true, .linear_biases = true, .causal = false,
        .token_types = 2, .pooler = true, .activation = activation_kind::gelu, .code = model_code::bert};
};

// ---------------------------------------------------------------------------------
// GPT-2 (Radford et al. 2019). Source: Hugging Face gpt2, gpt2-medium, gpt2-large,
// gpt2-xl config.json: n_positions 1024, vocab 50257, n_inner = 4 × n_embd, tied
// LM head, biases everywhere.
namespace model_detail {
constexpr transformer_config gpt2_like(std::string_view name, int layers, int hidden, int heads) {
    return {.name = name, .layers = layers, .hidden = hidden, .heads = heads, .kv_heads = 0,
            .ffn_hidden = 4 * hidden, .vocab = 50257, .max_seq = 1024,
            .ffn = ffn_kind::gelu, .positions = position_kind::learned,
            .norm = norm_kind::layernorm, .tied_embeddings = true, .linear_biases = true,
            .causal = true, .activation = activation_kind::gelu_new, .code = model_code::gpt2};
}
}  // namespace model_detail

struct gpt2 {
    static constexpr transformer_config config = model_detail::gpt2_like("gpt2", 12, 768, 12);
};
using gpt2_small = gpt2;
struct gpt2_medium {
    static constexpr transformer_config config =
        model_detail::gpt2_like("gpt2-medium", 24, 1024, 16);
};
struct gpt2_large {
    static constexpr transformer_config config =
        model_detail::gpt2_like("gpt2-large", 36, 1280, 20);
};
struct gpt2_xl {
    static constexpr transformer_config config = model_detail::gpt2_like("gpt2-xl", 48, 1600, 25);
};

// ---------------------------------------------------------------------------------
// GPT-Neo (EleutherAI). Source: Hugging Face EleutherAI/gpt-neo-1.3B and
// gpt-neo-2.7B config.json: max_position_embeddings 2048, vocab 50257, intermediate
// 4 × hidden, tied LM head. Its q/k/v projections have no bias (out_proj and the
// MLP do); activation_function "gelu_new". Its attention code (separate q/k/v Linears,
// no scaling, torch.where mask) has no model_code of its own: generic. Alternate layers use local (windowed) attention, which changes FLOPs of
// the score GEMMs at long context but not the parameter count; modelled as global.
struct gpt_neo_1_3b {
    static constexpr transformer_config config{
        .name = "gpt-neo-1.3b", .layers = 24, .hidden = 2048, .heads = 16, .kv_heads = 0,
        .ffn_hidden = 8192, .vocab = 50257, .max_seq = 2048,
        .ffn = ffn_kind::gelu, .positions = position_kind::learned, .norm = norm_kind::layernorm,
        .tied_embeddings = true, .linear_biases = true, .causal = true,
        .token_types = 0, .pooler = false, .qkv_biases = false,
        .activation = activation_kind::gelu_new, .code = model_code::generic};
};
struct gpt_neo_2_7b {
    static constexpr transformer_config config{
        .name = "gpt-neo-2.7b", .layers = 32, .hidden = 2560, .heads = 20, .kv_heads = 0,
        .ffn_hidden = 10240, .vocab = 50257, .max_seq = 2048,
        .ffn = ffn_kind::gelu, .positions = position_kind::learned, .norm = norm_kind::layernorm,
        .tied_embeddings = true, .linear_biases = true, .causal = true,
        .token_types = 0, .pooler = false, .qkv_biases = false,
        .activation = activation_kind::gelu_new, .code = model_code::generic};
};

// ---------------------------------------------------------------------------------
// LLaMA 2 (Touvron et al. 2023) and Llama 3 / 3.1 (Meta 2024). Source: Hugging Face
// meta-llama/* config.json (hidden_size, intermediate_size, num_attention_heads,
// num_key_value_heads, num_hidden_layers, vocab_size, max_position_embeddings).
// RMSNorm, SwiGLU, rotary positions, untied LM head, no biases, no dropout.
namespace model_detail {
constexpr transformer_config llama_like(std::string_view name, int layers, int hidden, int heads,
                                        int kv_heads, int ffn_hidden, int vocab, int max_seq) {
    return llama_architecture(name, layers, hidden, heads, kv_heads, ffn_hidden, vocab, max_seq);
}
}  // namespace model_detail

struct llama2_7b {
    static constexpr transformer_config config =
        model_detail::llama_like("llama2-7b", 32, 4096, 32, 0, 11008, 32000, 4096);
};
struct llama2_13b {
    static constexpr transformer_config config =
        model_detail::llama_like("llama2-13b", 40, 5120, 40, 0, 13824, 32000, 4096);
};
struct llama2_70b {  // grouped-query attention: 8 KV heads
    static constexpr transformer_config config =
        model_detail::llama_like("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096);
};
struct llama3_8b {
    static constexpr transformer_config config =
        model_detail::llama_like("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192);
};
struct llama3_70b {
    static constexpr transformer_config config =
        model_detail::llama_like("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192);
};
// Positions up to 131 072 (config.json), but pre-trained on 8 192-token sequences; the
// context was extended to 128K tokens only in a final long-context stage (Dubey et al.
// 2024, "The Llama 3 Herd of Models", §3.4.1–3.4.2): a run's default is 8 192.
struct llama3_1_405b {
    static constexpr transformer_config config = [] {
        transformer_config c =
            model_detail::llama_like("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 131072);
        c.train_seq = 8192;
        return c;
    }();
};

// ---------------------------------------------------------------------------------
// GPT-3 175B. Source: Brown et al. 2020, "Language Models are Few-Shot Learners",
// Table 2.1: n_layers 96, d_model 12288, n_heads 96, n_ctx 2048; GPT-2 BPE vocab 50257
// and GPT-2 architecture (FFN 4 × d_model, learned positions, tied embeddings).
struct gpt3_175b {
    static constexpr transformer_config config{
        .name = "gpt3-175b", .layers = 96, .hidden = 12288, .heads = 96, .kv_heads = 0,
        .ffn_hidden = 49152, .vocab = 50257, .max_seq = 2048,
        .ffn = ffn_kind::gelu, .positions = position_kind::learned, .norm = norm_kind::layernorm,
        .tied_embeddings = true, .linear_biases = true, .causal = true};
};

// ---------------------------------------------------------------------------------
// Megatron-LM GPT configs. Source: Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", Table 3 (heads, hidden, layers), with
// the paper's vocabulary 51200 and sequence 2048; the 530B and 1T shapes are also in
// Narayanan et al. 2021 (SC'21), Table 1. Megatron GPT: FFN 4 × hidden, GELU,
// layernorm, biases, learned positions, output layer tied to the input embedding.
namespace model_detail {
constexpr transformer_config megatron_like(std::string_view name, int layers, int hidden,
                                           int heads) {
    return {.name = name, .layers = layers, .hidden = hidden, .heads = heads, .kv_heads = 0,
            .ffn_hidden = 4 * hidden, .vocab = 51200, .max_seq = 2048,
            .ffn = ffn_kind::gelu, .positions = position_kind::learned,
            .norm = norm_kind::layernorm, .tied_embeddings = true, .linear_biases = true,
            .causal = true};
}
}  // namespace model_detail

struct megatron_22b {
    static constexpr transformer_config config =
        model_detail::megatron_like("megatron-22b", 48, 6144, 64);
};
struct turing_530b {  // Megatron-Turing NLG 530B shape
    static constexpr transformer_config config =
        model_detail::megatron_like("turing-530b", 105, 20480, 128);
};
struct megatron_1t {
    static constexpr transformer_config config =
        model_detail::megatron_like("megatron-1t", 128, 25600, 160);
};

// ---------------------------------------------------------------------------------
// Lookup by CLI name.

inline constexpr std::array<transformer_config, 26> model_catalog{
    bert_base::config,    bert_large::config,   gpt2::config,         gpt2_medium::config,
    gpt2_large::config,   gpt2_xl::config,      gpt_neo_1_3b::config, gpt_neo_2_7b::config,
    llama2_7b::config,    llama2_13b::config,   llama2_70b::config,   llama3_8b::config,
    llama3_70b::config,   llama3_1_405b::config, gpt3_175b::config,   megatron_22b::config,
    turing_530b::config,  megatron_1t::config,
    // Mixture of experts (spec/model_catalog_moe.hpp).
    mixtral_8x7b::config, mixtral_8x22b::config, deepseek_v3::config, kimi_k2::config,
    qwen3_235b_a22b::config, qwen3_30b_a3b::config, gpt_oss_120b::config, gpt_oss_20b::config,
};

constexpr std::array<std::string_view, model_catalog.size()> model_names() {
    std::array<std::string_view, model_catalog.size()> names{};
    for (std::size_t i = 0; i < model_catalog.size(); ++i) names[i] = model_catalog[i].name;
    return names;
}

// The catalog entry whose name equals `name` ignoring ASCII case; throws
// trainperf::invalid_argument listing the known names otherwise.
constexpr const transformer_config& lookup_model(std::string_view name) {
    return find_by_name(model_catalog, "model", name);
}

}  // namespace trainperf
