// Mixture of experts: the routed and shared experts of a transformer's MoE layers, which
// layers have them, and how the router picks each token's experts.
#pragma once

#include <array>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"

namespace trainperf {

// How the router turns its logits into expert scores: softmax over the experts (Mixtral,
// Qwen-MoE, OLMoE; gpt-oss applies it to the top k only), or a sigmoid per expert
// (DeepSeek-V3, Kimi K2: "sigmoid" scoring_func).
enum class router_scoring { softmax, sigmoid };

template <>
struct enum_names<router_scoring> {
    static constexpr std::array<enum_name<router_scoring>, 2> table{
        {{router_scoring::softmax, "softmax"}, {router_scoring::sigmoid, "sigmoid"}}};
};

// The MoE part of a model; experts == 0 is a dense model. Each expert is an FFN of the
// model's kind (SwiGLU for every MoE model here) of expert_ffn_hidden. A layer i (from 0)
// is an MoE layer when i >= dense_layers and (i + 1) % layer_frequency == 0 (Qwen-MoE's
// decoder_sparse_step; DeepSeek's first_k_dense_replace and moe_layer_freq 1); the others
// have the model's dense FFN of ffn_hidden.
struct moe_config {
    int experts = 0;               // routed experts per MoE layer (n_routed_experts, num_experts, num_local_experts)
    int experts_per_token = 0;     // top-k (num_experts_per_tok)
    int expert_ffn_hidden = 0;     // one routed expert's inner width (moe_intermediate_size)
    int shared_ffn_hidden = 0;     // the shared experts' inner width together, 0: none (DeepSeek: n_shared × width)
    bool shared_expert_gate = false;  // a sigmoid gate Linear(h, 1) on the shared expert (Qwen2-MoE)
    int dense_layers = 0;          // the first layers with a dense FFN (first_k_dense_replace)
    int layer_frequency = 1;       // every n-th layer after them is MoE (decoder_sparse_step, moe_layer_freq)
    router_scoring scoring = router_scoring::softmax;
    bool router_bias = false;      // the router Linear has a bias (gpt-oss)
    bool score_correction_bias = false;  // a per-expert bias added for selection only (DeepSeek-V3's
                                         // e_score_correction_bias: auxiliary-loss-free balancing)
    int expert_groups = 1;         // group-limited routing: the experts in n_group groups,
    int groups_per_token = 1;      // of which topk_group are searched (no parameters)

    constexpr bool enabled() const { return experts > 0; }
};

// Whether layer i (from 0) of `layers` is an MoE layer.
constexpr bool is_moe_layer(const moe_config& e, int i) {
    return e.enabled() && i >= e.dense_layers && (i + 1) % e.layer_frequency == 0;
}

// The MoE layers of a model of `layers`: the multiples of layer_frequency in
// (dense_layers, layers] (none for a frequency below 1, which validate refuses).
constexpr int moe_layer_count(const moe_config& e, int layers) {
    if (!e.enabled() || e.layer_frequency < 1) return 0;
    return layers / e.layer_frequency - e.dense_layers / e.layer_frequency;
}

// The MoE layers among the first n layers (0 ≤ n ≤ the model's layers), and among the n
// layers from layer `first` on: what a pipeline stage holding them runs.
constexpr int moe_layers_before(const moe_config& e, int n) {
    if (!e.enabled() || e.layer_frequency < 1 || n <= e.dense_layers) return 0;
    return n / e.layer_frequency - e.dense_layers / e.layer_frequency;
}
constexpr int moe_layers_in(const moe_config& e, int first, int n) {
    return moe_layers_before(e, first + n) - moe_layers_before(e, first);
}

// Throws trainperf::invalid_argument naming the field ("moe.experts", ...) of a model of
// `layers`.
constexpr void validate(const moe_config& e, int layers) {
    if (!e.enabled()) {
        require(e.experts == 0, "moe.experts", e.experts, "must be 0 (dense) or at least 2");
        return;
    }
    require(e.experts >= 2 && e.experts <= 65536, "moe.experts", e.experts, "must be between 2 and 65536");
    require(e.experts_per_token >= 1 && e.experts_per_token <= e.experts, "moe.experts_per_token",
            e.experts_per_token, "must be between 1 and the experts");
    require(e.expert_ffn_hidden >= 1 && e.expert_ffn_hidden <= (1 << 22), "moe.expert_ffn_hidden",
            e.expert_ffn_hidden, "must be between 1 and 2^22");
    require(e.shared_ffn_hidden >= 0 && e.shared_ffn_hidden <= (1 << 22), "moe.shared_ffn_hidden",
            e.shared_ffn_hidden, "must be between 0 (none) and 2^22");
    require(!e.shared_expert_gate || e.shared_ffn_hidden > 0, "moe.shared_expert_gate", "true",
            "needs a shared expert");
    require(e.dense_layers >= 0 && e.dense_layers < layers, "moe.dense_layers", e.dense_layers,
            "must be between 0 and the layers less one");
    require(e.layer_frequency >= 1 && e.layer_frequency <= layers, "moe.layer_frequency", e.layer_frequency,
            "must be between 1 and the layers");
    require(moe_layer_count(e, layers) >= 1, "moe.layer_frequency", e.layer_frequency,
            "leaves no MoE layer after the dense ones");
    require(e.expert_groups >= 1 && e.experts % e.expert_groups == 0, "moe.expert_groups", e.expert_groups,
            "must divide the experts");
    require(e.groups_per_token >= 1 && e.groups_per_token <= e.expert_groups, "moe.groups_per_token",
            e.groups_per_token, "must be between 1 and expert_groups");
    require(double(e.experts_per_token) <= double(e.groups_per_token) * e.experts / e.expert_groups,
            "moe.groups_per_token", e.groups_per_token,
            "must hold experts_per_token experts (groups_per_token x experts / expert_groups)");
}

}  // namespace trainperf
