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
// absent: gelu and generic);
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
            {"training_length", length},
            {"model_flops_per_token",
             length > 0 ? nlohmann::json(palm_training_flops_per_sample(m, length).value() / length)
                        : nlohmann::json(nullptr)}};
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
            {"derived", model_derived(m)}};
}

// Upper bounds far above any published model (a typo or a unit slip lands beyond them).
namespace model_ranges {
inline constexpr long long max_layers = 1000, max_hidden = 1 << 20, max_heads = 1 << 14;
inline constexpr long long max_vocab = 1 << 24, max_seq = 1 << 26, max_token_types = 1024;
}  // namespace model_ranges

inline transformer_config model_from_json(const nlohmann::json& j) {
    require_nesting(j, "", max_description_depth);
    namespace dd = description_detail;
    namespace r = model_ranges;
    dd::only_keys(j, "",
                  {"schema", "name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "max_seq", "train_seq", "ffn",
                   "positions", "norm", "tied_embeddings", "linear_biases", "qkv_biases", "qkv_bias_only",
                   "norms_per_layer", "attention_head_dim", "causal", "token_types", "pooler", "dropout",
                   "activation", "code", "derived"});
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
    require(m.positions != position_kind::learned || m.max_seq > 0, "max_seq", m.max_seq,
            "must be positive with learned positions (it is the position table's size)");
    validate(m);
    dd::check_derived(j, model_derived(m));
    return m;
}

}  // namespace trainperf::io
