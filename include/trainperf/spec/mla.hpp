// Multi-head latent attention (DeepSeek-AI 2024, "DeepSeek-V2", §2.1; DeepSeek-V3 and
// Kimi K2 use it): keys and values come from one low-rank latent per token, queries from
// another, and each head's query and key have a part without rotary positions and a
// shared rotary part.
#pragma once

#include "../core/error.hpp"

namespace trainperf {

// kv_lora_rank == 0: ordinary multi-head attention. Projections, for h = hidden and
// a heads (DeepSeek-V3's modeling_deepseek.py / transformers modeling_deepseek_v3.py):
//   q_a_proj    h → q_lora_rank, its RMSNorm, q_b_proj q_lora_rank → a·(nope + rope)
//               (q_lora_rank 0: q_proj h → a·(nope + rope), DeepSeek-V2-Lite);
//   kv_a_proj_with_mqa  h → kv_lora_rank + rope (the latent and the shared rotary key),
//               its RMSNorm over kv_lora_rank, kv_b_proj kv_lora_rank → a·(nope + v);
//   o_proj      a·v → h.
// Scores run over nope + rope per head, the context over v.
struct mla_config {
    int q_lora_rank = 0;
    int kv_lora_rank = 0;
    int qk_nope_head_dim = 0;
    int qk_rope_head_dim = 0;
    int v_head_dim = 0;

    constexpr bool enabled() const { return kv_lora_rank > 0; }
    constexpr int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

constexpr void validate(const mla_config& a) {
    require(a.kv_lora_rank >= 0 && a.kv_lora_rank <= (1 << 20), "mla.kv_lora_rank", a.kv_lora_rank,
            "must be between 0 (no latent attention) and 2^20");
    if (!a.enabled()) {
        require(a.q_lora_rank == 0, "mla.q_lora_rank", a.q_lora_rank, "needs latent attention (a kv_lora_rank)");
        return;
    }
    require(a.q_lora_rank >= 0 && a.q_lora_rank <= (1 << 20), "mla.q_lora_rank", a.q_lora_rank,
            "must be between 0 (a direct query projection) and 2^20");
    require(a.qk_nope_head_dim >= 1 && a.qk_nope_head_dim <= 65536, "mla.qk_nope_head_dim", a.qk_nope_head_dim,
            "must be between 1 and 65536");
    require(a.qk_rope_head_dim >= 0 && a.qk_rope_head_dim <= 65536, "mla.qk_rope_head_dim", a.qk_rope_head_dim,
            "must be between 0 and 65536");
    require(a.v_head_dim >= 1 && a.v_head_dim <= 65536, "mla.v_head_dim", a.v_head_dim, "must be between 1 and 65536");
}

// Weights of one layer's query and key-value projections (q_a, q_b or q; kv_a, kv_b)
// with `heads` heads on a hidden size h: what its projection GEMMs read (no biases:
// DeepSeek's attention_bias is false).
constexpr double mla_projection_parameters(const mla_config& a, double h, double heads) {
    const double qk = a.qk_head_dim();
    const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * heads * qk : h * heads * qk;
    const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                      double(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
    return q + kv;
}

// The RMSNorms of the two latents (q_a_layernorm, kv_a_layernorm).
constexpr double mla_norm_parameters(const mla_config& a) { return double(a.q_lora_rank) + a.kv_lora_rank; }

// Every parameter of one layer's latent attention, the output projection a·v → h included.
constexpr double mla_parameters(const mla_config& a, double h, double heads) {
    return mla_projection_parameters(a, h, heads) + mla_norm_parameters(a) + heads * a.v_head_dim * h;
}

}  // namespace trainperf
