// FLOPs of one training sample as JSON (`trainperf flops --json`, docs/cli.md): every
// count of workload/flops.hpp's flop_summary, in FLOPs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "../core/enum_names.hpp"
#include "../workload/flops.hpp"

namespace trainperf {

// The seed formula's and Narayanan et al.'s counts are a dense GPT layer's: null for a
// model with experts or latent attention (flop_summary::dense_formulas).
inline nlohmann::json to_json(const flop_summary& f) {
    const flop_breakdown& b = f.exact_forward_layer;
    const auto dense_only = [&f](flops x) { return f.dense_formulas ? nlohmann::json(x.value()) : nlohmann::json(); };
    return {{"model", std::string(f.model)},
            {"seq", f.seq},
            {"recompute", std::string(to_string(f.recompute))},
            {"causal_savings", f.causal_savings},
            {"parameters", f.parameters},
            {"active_parameters", f.active_parameters},
            {"mtp_parameters", f.mtp_parameters},
            {"forward_flops_per_sample", dense_only(f.forward_seed)},
            {"training_flops_per_sample", dense_only(f.training_seed)},
            {"exact_forward_flops_per_sample", f.exact_forward.value()},
            {"exact_training_flops_per_sample", f.exact_training.value()},
            {"model_flops_per_sample", f.model_flops.value()},
            {"mtp_training_flops_per_sample", f.mtp_training.value()},
            {"narayanan_full_recompute_flops_per_sample", dense_only(f.narayanan_full_recompute)},
            {"six_n_tokens_flops_per_sample", f.six_n_tokens.value()},
            {"exact_forward_per_layer",
             {{"qkv", b.qkv.value()},
              {"attention_scores", b.scores.value()},
              {"attention_context", b.context.value()},
              {"output_projection", b.out_proj.value()},
              {"ffn", b.ffn.value()},
              {"layer", b.layer().value()}}},
            {"exact_forward_logits", b.logits.value()}};
}

}  // namespace trainperf
