// A model as a JSON description (schema "trainperf.model.v1"): every field of
// transformer_config, the format `trainperf models --json NAME` prints and
// `--model-file` reads (which also takes a Hugging Face config.json, hf_config.hpp).
//
//   {"schema": "trainperf.model.v1", "name": "tinyllama-1.1b", "layers": 22,
//    "hidden": 2048, "heads": 32, "kv_heads": 4, "ffn_hidden": 5632, "vocab": 32000,
//    "max_seq": 2048, "ffn": "swiglu", "positions": "rotary", "norm": "rmsnorm",
//    "tied_embeddings": false, "linear_biases": false, "qkv_biases": true,
//    "qkv_bias_only": false, "norms_per_layer": 2, "attention_head_dim": 0,
//    "causal": true, "token_types": 0, "pooler": false, "dropout": false,
//    "activation": "silu", "code": "llama"}
//
// Every field is required (kv_heads 0 means as many as heads, attention_head_dim 0
// hidden / heads, as in transformer_config) but activation and code (later additions;
// absent: gelu and generic) and the mixture-of-experts and attention variants (absent:
// a dense model with ordinary attention):
//
//   "moe": {"experts": 256, "experts_per_token": 8, "expert_ffn_hidden": 2048,
//           "shared_ffn_hidden": 2048, "shared_expert_gate": false, "dense_layers": 3,
//           "layer_frequency": 1, "scoring": "sigmoid", "router_bias": false,
//           "score_correction_bias": true, "expert_groups": 8, "groups_per_token": 4}
//           (or null), "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512,
//           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128} (or null),
//   "qk_norm": "none" | "per-head" | "full", "attention_sinks": false,
//   "sliding_window": 0, "full_attention_every": 0, "mtp_layers": 0;
//
// unknown fields, wrong types and values out of range are errors naming the field.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../spec/model.hpp"
#include "../workload/flops.hpp"
#include "description_file.hpp"

namespace trainperf::io {

inline constexpr std::string_view model_schema = "trainperf.model.v1";

// Figures computed from a model's fields ("derived", io/description_file.hpp check_derived):
// its parameters, the sequence it trains at by default (spec/model.hpp training_length:
// train_seq, else max_seq; 0 when neither is known) and PaLM's model FLOPs per token
// trained at it (workload/flops.hpp; null without a length).
inline nlohmann::json model_derived(const transformer_config& m) {
    const int length = training_length(m);
    return {{"parameters", static_cast<long long>(parameter_count(m))},
            {"active_parameters", static_cast<long long>(active_parameter_count(m))},
            {"mtp_parameters", static_cast<long long>(mtp_parameters(m))},
            {"training_length", length},
            {"model_flops_per_token",
             length > 0 ? nlohmann::json(palm_training_flops_per_sample(m, length).value() / length)
                        : nlohmann::json(nullptr)}};
}

inline nlohmann::json moe_to_json(const moe_config& e) {
    if (!e.enabled()) return nullptr;
    return {{"experts", e.experts},
            {"experts_per_token", e.experts_per_token},
            {"expert_ffn_hidden", e.expert_ffn_hidden},
            {"shared_ffn_hidden", e.shared_ffn_hidden},
            {"shared_expert_gate", e.shared_expert_gate},
            {"dense_layers", e.dense_layers},
            {"layer_frequency", e.layer_frequency},
            {"scoring", std::string(to_string(e.scoring))},
            {"router_bias", e.router_bias},
            {"score_correction_bias", e.score_correction_bias},
            {"expert_groups", e.expert_groups},
            {"groups_per_token", e.groups_per_token}};
}

inline nlohmann::json mla_to_json(const mla_config& a) {
    if (!a.enabled()) return nullptr;
    return {{"q_lora_rank", a.q_lora_rank},
            {"kv_lora_rank", a.kv_lora_rank},
            {"qk_nope_head_dim", a.qk_nope_head_dim},
            {"qk_rope_head_dim", a.qk_rope_head_dim},
            {"v_head_dim", a.v_head_dim}};
}

inline nlohmann::json model_to_json(const transformer_config& m) {
    return {{"schema", std::string(model_schema)},
            {"name", std::string(m.name)},
            {"layers", m.layers},
            {"hidden", m.hidden},
            {"heads", m.heads},
            {"kv_heads", m.kv_heads},
            {"ffn_hidden", m.ffn_hidden},
            {"vocab", m.vocab},
            {"max_seq", m.max_seq},
            {"train_seq", m.train_seq},
            {"ffn", std::string(to_string(m.ffn))},
            {"positions", std::string(to_string(m.positions))},
            {"norm", std::string(to_string(m.norm))},
            {"tied_embeddings", m.tied_embeddings},
            {"linear_biases", m.linear_biases},
            {"qkv_biases", m.qkv_biases},
            {"qkv_bias_only", m.qkv_bias_only},
            {"norms_per_layer", m.norms_per_layer},
            {"attention_head_dim", m.attention_head_dim},
            {"causal", m.causal},
            {"token_types", m.token_types},
            {"pooler", m.pooler},
            {"dropout", m.dropout},
            {"activation", std::string(to_string(m.activation))},
            {"code", std::string(to_string(m.code))},
            {"moe", moe_to_json(m.moe)},
            {"mla", mla_to_json(m.mla)},
            {"qk_norm", std::string(to_string(m.qk_norm))},
            {"attention_sinks", m.attention_sinks},
            {"sliding_window", m.sliding_window},
            {"full_attention_every", m.full_attention_every},
            {"mtp_layers", m.mtp_layers},
            {"derived", model_derived(m)}};
}

// Upper bounds far above any published model (a typo or a unit slip lands beyond them).
namespace model_ranges {
inline constexpr long long max_layers = 1000, max_hidden = 1 << 20, max_heads = 1 << 14;
inline constexpr long long max_vocab = 1 << 24, max_seq = 1 << 26, max_token_types = 1024;
}  // namespace model_ranges

namespace model_json_detail {
namespace dd = description_detail;

inline moe_config moe_from_json(const nlohmann::json& e) {
    const std::string_view c = "moe";
    dd::require_object(e, c);
    dd::only_keys(e, c,
                  {"experts", "experts_per_token", "expert_ffn_hidden", "shared_ffn_hidden", "shared_expert_gate",
                   "dense_layers", "layer_frequency", "scoring", "router_bias", "score_correction_bias",
                   "expert_groups", "groups_per_token"});
    return {.experts = dd::integer(e, c, "experts", 2, 1 << 16),
            .experts_per_token = dd::integer(e, c, "experts_per_token", 1, 1 << 16),
            .expert_ffn_hidden = dd::integer(e, c, "expert_ffn_hidden", 1, 1 << 22),
            .shared_ffn_hidden = dd::integer(e, c, "shared_ffn_hidden", 0, 1 << 22),
            .shared_expert_gate = dd::boolean(e, c, "shared_expert_gate"),
            .dense_layers = dd::integer(e, c, "dense_layers", 0, model_ranges::max_layers),
            .layer_frequency = dd::integer(e, c, "layer_frequency", 1, model_ranges::max_layers),
            .scoring = dd::enum_value<router_scoring>(e, c, "scoring"),
            .router_bias = dd::boolean(e, c, "router_bias"),
            .score_correction_bias = dd::boolean(e, c, "score_correction_bias"),
            .expert_groups = dd::integer(e, c, "expert_groups", 1, 1 << 16),
            .groups_per_token = dd::integer(e, c, "groups_per_token", 1, 1 << 16)};
}

inline mla_config mla_from_json(const nlohmann::json& a) {
    const std::string_view c = "mla";
    dd::require_object(a, c);
    dd::only_keys(a, c, {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
    return {.q_lora_rank = dd::integer(a, c, "q_lora_rank", 0, 1 << 20),
            .kv_lora_rank = dd::integer(a, c, "kv_lora_rank", 1, 1 << 20),
            .qk_nope_head_dim = dd::integer(a, c, "qk_nope_head_dim", 1, 1 << 16),
            .qk_rope_head_dim = dd::integer(a, c, "qk_rope_head_dim", 0, 1 << 16),
            .v_head_dim = dd::integer(a, c, "v_head_dim", 1, 1 << 16)};
}
}  // namespace model_json_detail

inline transformer_config model_from_json(const nlohmann::json& j) {
    require_nesting(j, "", max_description_depth);
    namespace dd = description_detail;
    namespace r = model_ranges;
    dd::only_keys(j, "",
                  {"schema", "name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "max_seq", "train_seq", "ffn",
                   "positions", "norm", "tied_embeddings", "linear_biases", "qkv_biases", "qkv_bias_only",
                   "norms_per_layer", "attention_head_dim", "causal", "token_types", "pooler", "dropout",
                   "activation", "code", "moe", "mla", "qk_norm", "attention_sinks", "sliding_window",
                   "full_attention_every", "mtp_layers", "derived"});
    dd::schema(j, model_schema);
    transformer_config m;
    m.name = keep_text(dd::name_text(j, "", "name"));
    m.layers = dd::integer(j, "", "layers", 1, r::max_layers);
    m.hidden = dd::integer(j, "", "hidden", 1, r::max_hidden);
    m.heads = dd::integer(j, "", "heads", 1, r::max_heads);
    m.kv_heads = dd::integer(j, "", "kv_heads", 0, m.heads);
    m.ffn_hidden = dd::integer(j, "", "ffn_hidden", 1, 8 * r::max_hidden);
    m.vocab = dd::integer(j, "", "vocab", 1, r::max_vocab);
    m.max_seq = dd::integer(j, "", "max_seq", 0, r::max_seq);
    if (j.contains("train_seq")) m.train_seq = dd::integer(j, "", "train_seq", 0, r::max_seq);
    m.ffn = dd::enum_value<ffn_kind>(j, "", "ffn");
    m.positions = dd::enum_value<position_kind>(j, "", "positions");
    m.norm = dd::enum_value<norm_kind>(j, "", "norm");
    m.tied_embeddings = dd::boolean(j, "", "tied_embeddings");
    m.linear_biases = dd::boolean(j, "", "linear_biases");
    m.qkv_biases = dd::boolean(j, "", "qkv_biases");
    m.qkv_bias_only = dd::boolean(j, "", "qkv_bias_only");
    m.norms_per_layer = dd::integer(j, "", "norms_per_layer", 1, 4);
    m.attention_head_dim = dd::integer(j, "", "attention_head_dim", 0, 1 << 16);
    m.causal = dd::boolean(j, "", "causal");
    m.token_types = dd::integer(j, "", "token_types", 0, r::max_token_types);
    m.pooler = dd::boolean(j, "", "pooler");
    m.dropout = dd::boolean(j, "", "dropout");
    if (j.contains("activation")) m.activation = dd::enum_value<activation_kind>(j, "", "activation");
    if (j.contains("code")) m.code = dd::enum_value<model_code>(j, "", "code");
    // Later additions, optional: a dense model with ordinary attention where absent.
    namespace mj = model_json_detail;
    if (j.contains("moe") && !j.at("moe").is_null()) m.moe = mj::moe_from_json(dd::field(j, "", "moe"));
    if (j.contains("mla") && !j.at("mla").is_null()) m.mla = mj::mla_from_json(dd::field(j, "", "mla"));
    if (j.contains("qk_norm")) m.qk_norm = dd::enum_value<qk_norm_kind>(j, "", "qk_norm");
    if (j.contains("attention_sinks")) m.attention_sinks = dd::boolean(j, "", "attention_sinks");
    if (j.contains("sliding_window")) m.sliding_window = dd::integer(j, "", "sliding_window", 0, r::max_seq);
    if (j.contains("full_attention_every"))
        m.full_attention_every = dd::integer(j, "", "full_attention_every", 0, r::max_layers);
    if (j.contains("mtp_layers")) m.mtp_layers = dd::integer(j, "", "mtp_layers", 0, 16);
    require(m.positions != position_kind::learned || m.max_seq > 0, "max_seq", m.max_seq,
            "must be positive with learned positions (it is the position table's size)");
    validate(m);
    dd::check_derived(j, model_derived(m));
    return m;
}

}  // namespace trainperf::io
