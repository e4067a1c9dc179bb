// The model catalog's mixture-of-experts entries (spec/model_catalog.hpp holds the catalog
// and its conventions): Mixtral, DeepSeek-V3, Kimi K2, Qwen3-MoE and gpt-oss, each from
// its published configuration, with the total and active parameter counts it gives.
#pragma once

#include "model.hpp"

namespace trainperf {

// ---------------------------------------------------------------------------------
// Mixtral (Jiang et al. 2024, "Mixtral of Experts", arXiv:2401.04088, Table 1: dim 4096,
// n_layers 32, head_dim 128, hidden_dim 14336, n_heads 32, n_kv_heads 8, context_len
// 32768, vocab_size 32000, num_experts 8, top_k_experts 2): every layer's FFN is 8
// SwiGLU experts, 2 per token, after a softmax router without bias; "47B parameters ...
// 13B active" (abstract; 46,702,792,704 in all, 12,879,925,248 active).
struct mixtral_8x7b {
    static constexpr transformer_config config = [] {
        transformer_config c = llama_architecture("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768);
        c.moe = {.experts = 8, .experts_per_token = 2, .expert_ffn_hidden = 14336};
        return c;
    }();
};
// Mixtral 8x22B (Mistral AI, "Cheaper, Better, Faster, Stronger", 2024: 141B parameters,
// 39B active; the Hugging Face config of its conversion mistral-community/
// Mixtral-8x22B-v0.1: hidden_size 6144, num_hidden_layers 56, num_attention_heads 48,
// num_key_value_heads 8, intermediate_size 16384, max_position_embeddings 65536,
// num_local_experts 8, num_experts_per_tok 2). ASSUMPTION: vocab_size 32768, the v3
// tokenizer of the Instruct release's configs (the conversion has 32000: 9.4M parameters
// fewer); 140.6B parameters, 39.2B active.
struct mixtral_8x22b {
    static constexpr transformer_config config = [] {
        transformer_config c = llama_architecture("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 65536);
        c.moe = {.experts = 8, .experts_per_token = 2, .expert_ffn_hidden = 16384};
        return c;
    }();
};

// ---------------------------------------------------------------------------------
// DeepSeek-V3 (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §2.1 and §4.2;
// deepseek-ai/DeepSeek-V3@9b4e9788 inference/configs/config_671B.json and
// README_WEIGHTS.md): 61 layers of hidden 7168, 128 heads of multi-head latent attention
// (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128), the first 3 layers
// dense (inter_dim 18432), the others 256 routed experts of 2048, 8 per token, and one
// shared expert; sigmoid scores with a correction bias for selection (auxiliary-loss-free
// balancing), 8 groups of which 4 are searched; vocabulary 129280, untied head; one
// multi-token prediction module. "671B total parameters with 37B activated for each token"
// (report, abstract); README_WEIGHTS.md: 671B main model and 14B of MTP module. Positions
// to 163840 (its YaRN extension), pre-trained on 4K sequences (report §4.3: 4K, then
// extended to 32K and 128K).
struct deepseek_v3 {
    static constexpr transformer_config config = [] {
        transformer_config c = llama_architecture("deepseek-v3", 61, 7168, 128, 0, 18432, 129280, 163840);
        c.train_seq = 4096;
        c.mla = {.q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope_head_dim = 128, .qk_rope_head_dim = 64,
                 .v_head_dim = 128};
        c.moe = {.experts = 256, .experts_per_token = 8, .expert_ffn_hidden = 2048, .shared_ffn_hidden = 2048,
                 .dense_layers = 3, .scoring = router_scoring::sigmoid, .score_correction_bias = true,
                 .expert_groups = 8, .groups_per_token = 4};
        c.mtp_layers = 1;
        c.code = model_code::generic;
        return c;
    }();
};
// Kimi K2 (MoonshotAI/Kimi-K2@c6157be8 README.md, model summary: 1T total and 32B
// activated parameters, 61 layers of which 1 dense, attention hidden 7168, MoE hidden 2048
// per expert, 64 attention heads, 384 experts, 8 per token, 1 shared, vocabulary 160K,
// MLA, SwiGLU): DeepSeek-V3's architecture (its config names DeepseekV3ForCausalLM) with
// the same latent ranks; vocab_size 163840, one expert group, no multi-token prediction
// module. ASSUMPTION: positions 131072 and pre-training on 4096-token sequences, from
// the released config's rope_scaling (original_max_position_embeddings 4096).
struct kimi_k2 {
    static constexpr transformer_config config = [] {
        transformer_config c = llama_architecture("kimi-k2", 61, 7168, 64, 0, 18432, 163840, 131072);
        c.train_seq = 4096;
        c.mla = deepseek_v3::config.mla;
        c.moe = {.experts = 384, .experts_per_token = 8, .expert_ffn_hidden = 2048, .shared_ffn_hidden = 2048,
                 .dense_layers = 1, .scoring = router_scoring::sigmoid, .score_correction_bias = true};
        c.code = model_code::generic;
        return c;
    }();
};

// ---------------------------------------------------------------------------------
// Qwen3-MoE (Qwen Team 2025, "Qwen3 Technical Report", §2, Table 2: 235B-A22B 94 layers,
// 64 query and 4 key-value heads, 128 experts, 8 per token; 30B-A3B 48 layers, 32 and 4
// heads, 128 and 8; no shared experts, QK-Norm, no QKV bias; Hugging Face configs of
// Qwen/Qwen3-235B-A22B and Qwen/Qwen3-30B-A3B: hidden_size 4096 / 2048, head_dim 128,
// moe_intermediate_size 1536 / 768, vocab_size 151936, untied, max_position_embeddings
// 40960). Every layer is MoE (decoder_sparse_step 1, no mlp_only_layers); intermediate_size
// (12288 / 6144) is the unused dense width. Pre-trained on 4096-token sequences (report
// §3.2: the general and reasoning stages; 32768 in the long-context stage). Totals:
// 235,093,634,560 and 30,532,122,624 parameters (the released bf16 checkpoints' index,
// total_size / 2 bytes), 22.2B and 3.3B active.
namespace moe_detail {
constexpr transformer_config qwen3_moe(std::string_view name, int layers, int hidden, int heads, int dense_ffn,
                                       int expert_ffn) {
    transformer_config c = llama_architecture(name, layers, hidden, heads, 4, dense_ffn, 151936, 40960);
    c.train_seq = 4096;
    c.attention_head_dim = 128;
    c.qk_norm = qk_norm_kind::per_head;
    c.moe = {.experts = 128, .experts_per_token = 8, .expert_ffn_hidden = expert_ffn};
    return c;
}
}  // namespace moe_detail

struct qwen3_235b_a22b {
    static constexpr transformer_config config = moe_detail::qwen3_moe("qwen3-235b-a22b", 94, 4096, 64, 12288, 1536);
};
struct qwen3_30b_a3b {
    static constexpr transformer_config config = moe_detail::qwen3_moe("qwen3-30b-a3b", 48, 2048, 32, 6144, 768);
};

// ---------------------------------------------------------------------------------
// gpt-oss (OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card", arXiv:2508.10925;
// openai/gpt-oss@7b583341 gpt_oss/torch/model.py ModelConfig; transformers
// modeling_gpt_oss.py): 36 / 24 layers of hidden 2880, 64 query heads and 8 key-value
// heads of 64, biases on Q, K, V and the output, one learned sink logit per head,
// attention over 128 tokens on every other layer from the first (full on the others),
// 128 / 32 experts of 2880 with biases, 4 per token, a router with a bias (softmax over
// the top 4), SwiGLU (clamped), vocabulary 201088, untied. Positions to 131072 by YaRN
// from 4096 (rope_scaling original_max_position_embeddings). 116.8B and 20.9B parameters
// (model card; 116,829,156,672 and 20,914,757,184 here), 5.1B and 3.6B active without the
// input embedding (5.71B and 4.19B with it, as active_parameter_count counts).
namespace moe_detail {
constexpr transformer_config gpt_oss(std::string_view name, int layers, int experts) {
    transformer_config c = llama_architecture(name, layers, 2880, 64, 8, 2880, 201088, 131072);
    c.train_seq = 4096;
    c.attention_head_dim = 64;
    c.linear_biases = true;
    c.attention_sinks = true;
    c.sliding_window = 128;
    c.full_attention_every = 2;
    c.moe = {.experts = experts, .experts_per_token = 4, .expert_ffn_hidden = 2880, .router_bias = true};
    c.code = model_code::generic;
    return c;
}
}  // namespace moe_detail

struct gpt_oss_120b {
    static constexpr transformer_config config = moe_detail::gpt_oss("gpt-oss-120b", 36, 128);
};
struct gpt_oss_20b {
    static constexpr transformer_config config = moe_detail::gpt_oss("gpt-oss-20b", 24, 32);
};

}  // namespace trainperf
