// Megatron-Core's fine-grained selective recomputation: the submodules of a layer whose
// activations backward rebuilds instead of keeping (--recompute-granularity selective
// --recompute-modules ...; NVIDIA/Megatron-LM@d98e8a64
// megatron/core/transformer/transformer_config.py recompute_modules, default
// ["core_attn"]). Two mechanisms (megatron/core/tensor_parallel/random.py):
//   - checkpointing (core_attn, mlp, moe, shared_experts): the wrapped part keeps only its
//     inputs and its whole forward runs again in backward, communication included;
//   - output discarding (layernorm, moe_act, mla_up_proj; CheckpointWithoutOutput): the
//     op's output storage is freed once its consumers have used it (their saved copies
//     share it) and the op alone runs again before backward.
// What each drops and reruns, in a layer built with Transformer Engine's spec
// (megatron/core/models/gpt/gpt_layer_specs.py: a dense layer's norms are fused into its
// QKV and FC1 Linears; an MoE layer's pre-MLP norm and a latent-attention layer's input
// norm are modules of their own):
//   core_attn       the attention kernel's own saved state (with a fused kernel its
//                   log-sum-exp; unfused, the s×s probabilities); reruns the kernel
//                   (attention.py _checkpointed_attention_forward)
//   mlp             a dense layer's MLP: FC1's input (its fused norm's output), FC1's
//                   output and FC2's input; reruns norm, FC1, activation, FC2 and, with
//                   sequence parallelism, FC1's all-gather and FC2's reduce-scatter
//                   (transformer_layer.py _run_mlp; MoE layers untouched)
//   moe             an MoE layer's MLP part whole: the router's, the dispatched tokens',
//                   the experts' and the shared experts' activations; keeps the pre-MLP
//                   norm's output; reruns it all, token dispatch and combine included
//                   (moe_layer.py)
//   moe_act         the experts' activation output (FC2's input); reruns the activation
//                   (experts.py TEGroupedMLP)
//   layernorm       the output of a norm that is a module of its own (an MoE layer's
//                   pre-MLP norm, latent attention's input norm) and the copies its
//                   consumers saved of it; reruns the norm (transformer_layer.py); a
//                   dense layer's fused norms are untouched
//   mla_up_proj     latent attention's Q, K and V (the up projections' outputs after
//                   RoPE); reruns the up projections, their norms and RoPE
//                   (multi_latent_attention.py qkv_up_proj_and_rope_apply)
//   shared_experts  the shared experts' FC1 output and FC2 input; reruns them
//                   (moe_layer.py shared_experts_compute)
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "../core/enum_names.hpp"
#include "../core/enum_set.hpp"
#include "../core/error.hpp"

namespace trainperf {

enum class recompute_module { core_attn, mlp, moe, moe_act, layernorm, mla_up_proj, shared_experts };

template <>
struct enum_names<recompute_module> {
    static constexpr std::array<enum_name<recompute_module>, 7> table{
        {{recompute_module::core_attn, "core-attn"},
         {recompute_module::mlp, "mlp"},
         {recompute_module::moe, "moe"},
         {recompute_module::moe_act, "moe-act"},
         {recompute_module::layernorm, "layernorm"},
         {recompute_module::mla_up_proj, "mla-up-proj"},
         {recompute_module::shared_experts, "shared-experts"}}};
    // Megatron-Core's own spellings.
    static constexpr std::array<enum_name<recompute_module>, 4> aliases{
        {{recompute_module::core_attn, "core_attn"},
         {recompute_module::moe_act, "moe_act"},
         {recompute_module::mla_up_proj, "mla_up_proj"},
         {recompute_module::shared_experts, "shared_experts"}}};
};

using recompute_module_set = enum_set<recompute_module>;

// Megatron-Core's default list: the attention core alone (Korthikanti et al.'s selective
// recomputation).
inline constexpr recompute_module_set default_recompute_modules{recompute_module::core_attn};

// A list of submodules, separated by commas or '+' (Megatron-Core's names or these).
inline recompute_module_set parse_recompute_modules(std::string_view text) {
    require(!text.empty(), "recompute_modules", "\"\"", "must name at least one of " + enum_name_list<recompute_module>());
    recompute_module_set set;
    while (true) {
        const std::size_t end = text.find_first_of(",+");
        set.insert(parse_enum<recompute_module>("recompute_modules", text.substr(0, end)));
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
    return set;
}

}  // namespace trainperf
