// A Hugging Face transformers `config.json` as a transformer_config, chosen by its
// `model_type`: llama (LLaMA 1/2/3/3.1, TinyLlama), mistral, qwen2, qwen3, gemma, gemma2,
// phi3, gpt2, gpt_neo, gpt_neox, bert, roberta, opt, falcon, and the mixtures of experts
// mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek_v2, deepseek_v3 (kimi_k2 too) and
// gpt_oss. The keys read are the ones the transformers configuration classes define
// (LlamaConfig, GPT2Config, ...); where a key is absent, the class's own default applies,
// as transformers itself would load the file, and each such default is written next to its
// key below. Keys that do not change the parameter count or the kernels (token ids,
// initialisers, rope_theta, rope_scaling, torch_dtype, router loss coefficients,
// norm_topk_prob, routed_scaling_factor, ...) are not read. Architectures the library does
// not model are refused with a message saying what is missing: experts in another
// model_type, MoE layers placed other than after dense leading ones at a fixed step
// (mlp_only_layers), biases on attention only, OPT's embedding projection or post-norm,
// ALiBi. Gemma 2's logit soft-capping and query_pre_attn_scalar change no parameter and
// no GEMM and are not read.
//
// Approximations, all without parameters: gated FFNs with GELU (Gemma) are costed as
// SwiGLU, ungated ReLU FFNs (OPT) as GELU; local or sliding-window attention (GPT-Neo,
// Mistral, Phi-3) as full attention (gpt-oss's alternating windows are kept); Qwen3's
// and OLMoE's query and key norms are counted as parameters, not as ops. OPT's learned position table has 2 rows beyond
// max_position_embeddings (an offset of its padding scheme), not counted: 2 × hidden
// parameters (0.0003 % of OPT-1.3B).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../spec/model.hpp"
#include "description_file.hpp"

namespace trainperf::io {

namespace hf_detail {

using json = nlohmann::json;
namespace dd = description_detail;

// The config's positive integer `key` (required).
inline int positive(const json& j, std::string_view key, long long max = 1LL << 26) {
    return dd::integer(j, "", key, 1, max);
}

// `key` if present and not null, else the configuration class's default `otherwise`.
inline int positive_or(const json& j, std::string_view key, int otherwise, long long max = 1LL << 26) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return otherwise;
    return dd::integer_in(*it, std::string(key), 1, max);
}

// The sizes most configs name alike (transformers' PretrainedConfig attributes): layers,
// hidden size, heads, the FFN's inner size under `ffn_key`, vocabulary and context.
inline void common_sizes(const json& j, transformer_config& m, std::string_view ffn_key) {
    m.layers = positive(j, "num_hidden_layers", 1000);
    m.hidden = positive(j, "hidden_size", 1 << 20);
    m.heads = positive(j, "num_attention_heads", 1 << 14);
    m.ffn_hidden = positive(j, ffn_key, 1 << 23);
    m.vocab = positive(j, "vocab_size", 1 << 24);
    m.max_seq = positive(j, "max_position_embeddings");
}

inline bool flag_or(const json& j, std::string_view key, bool otherwise) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return otherwise;
    require(it->is_boolean(), key, dd::shown(*it), "must be true or false");
    return it->get<bool>();
}

inline std::string text_or(const json& j, std::string_view key, std::string otherwise) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return otherwise;
    return dd::text_in(*it, std::string(key), 64);
}

// Trained with dropout: any of the configuration's dropout probabilities above 0. Absent
// keys take the class defaults, which `otherwise` gives (true where they are 0.1).
inline bool trained_with_dropout(const json& j, bool otherwise) {
    bool seen = false, any = false;
    for (const char* key : {"attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
                            "hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "activation_dropout",
                            "resid_dropout", "embed_dropout"}) {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) continue;
        const double p = dd::number_in(*it, key, 0, 1, "(a probability)");
        seen = true;
        any = any || p > 0;
    }
    return seen ? any : otherwise;
}

inline void activation_is(const json& j, std::string_view key, std::initializer_list<std::string_view> known,
                          transformer_config* m = nullptr) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return;
    const std::string a = dd::text_in(*it, std::string(key), 64);
    std::string list;
    for (std::string_view k : known) {
        if (a == k) {
            // The activation as the model's code computes it (activations.py@00e12e7c):
            // gelu_fast is, like gelu_new, the tanh form written as PyTorch ops.
            if (m != nullptr) {
                if (a == "gelu_new" || a == "gelu_fast") m->activation = activation_kind::gelu_new;
                else if (a == "gelu_pytorch_tanh") m->activation = activation_kind::gelu_tanh;
                else if (a == "relu") m->activation = activation_kind::relu;
                else if (a == "silu" || a == "swish") m->activation = activation_kind::silu;
                else m->activation = activation_kind::gelu;
            }
            return;
        }
        list += (list.empty() ? "" : ", ") + std::string(k);
    }
    detail::fail(key, "\"" + a + "\"", "activation not modelled; known: " + list);
}

// Mixture-of-experts configurations name their experts with one of these keys; experts
// are read for the model types that define them (model_from_hf_config), not in others.
inline constexpr std::string_view moe_model_types =
    "mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek_v2, deepseek_v3, kimi_k2 and gpt_oss";

inline void refuse_experts(const json& j, const std::string& type) {
    for (const char* key : {"num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"}) {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) continue;
        if (it->is_number() && it->get<double>() <= 1) continue;  // 0 or 1 expert: a dense model
        detail::fail(key, dd::shown(*it),
                     "a mixture-of-experts model (model_type \"" + type + "\"): experts are read for " +
                         std::string(moe_model_types) + " configs only");
    }
    require(type.find("moe") == std::string::npos, "model_type", "\"" + type + "\"",
            "a mixture-of-experts model type not modelled; known: " + std::string(moe_model_types));
}

// head_dim, where the config gives one: kept when it is not hidden / heads (Gemma 7B,
// Gemma 2: heads × head_dim differs from hidden_size).
inline void read_head_dim(const json& j, transformer_config& m) {
    const auto it = j.find("head_dim");
    if (it == j.end() || it->is_null()) return;
    const int d = dd::integer_in(*it, "head_dim", 1, 1 << 16);
    if (std::int64_t(d) * m.heads != m.hidden) m.attention_head_dim = d;
}

// LLaMA-like decoders: RMSNorm, gated FFN, rotary positions, no biases.
inline transformer_config llama_like(const json& j, const std::string& type, bool tied_default) {
    transformer_config m;
    m.layers = positive(j, "num_hidden_layers", 1000);
    m.hidden = positive(j, "hidden_size", 1 << 20);
    m.heads = positive(j, "num_attention_heads", 1 << 14);
    // transformers: num_key_value_heads None means num_attention_heads (no GQA).
    m.kv_heads = positive_or(j, "num_key_value_heads", m.heads, m.heads);
    m.ffn_hidden = positive(j, "intermediate_size", 1 << 23);
    m.vocab = positive(j, "vocab_size", 1 << 24);
    m.max_seq = positive(j, "max_position_embeddings");
    m.ffn = ffn_kind::swiglu;
    m.positions = position_kind::rotary;
    m.norm = norm_kind::rmsnorm;
    m.tied_embeddings = flag_or(j, "tie_word_embeddings", tied_default);
    m.linear_biases = false;
    m.dropout = trained_with_dropout(j, false);  // these classes default every dropout to 0.0
    m.activation = activation_kind::silu;
    // modeling_llama.py and its copies (RMSNorm and rotary as PyTorch ops, separate
    // q/k/v projections); Phi-3 fuses qkv_proj and gate_up_proj: generic.
    m.code = type == "phi3" ? model_code::generic : model_code::llama;
    activation_is(j, "hidden_act", {"silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new"}, &m);
    activation_is(j, "hidden_activation", {"gelu", "gelu_pytorch_tanh", "gelu_new"}, &m);
    if (type == "qwen2" || type == "qwen2_moe") {
        m.qkv_bias_only = true;  // Qwen2Attention: q/k/v_proj bias=True, o_proj and MLP none
    } else {
        require(!flag_or(j, "attention_bias", false), "attention_bias", true,
                "biases on the attention projections only are not modelled");
        require(!flag_or(j, "mlp_bias", false), "mlp_bias", true, "biases on the MLP only are not modelled");
    }
    if (type == "gemma2") m.norms_per_layer = 4;  // pre- and post-norms around attention and MLP
    read_head_dim(j, m);
    if (j.contains("rope_scaling"))  // LLaMA 3.1: changes positions, not the parameters
        require(j.at("rope_scaling").is_null() || j.at("rope_scaling").is_object(), "rope_scaling",
                dd::shown(j.at("rope_scaling")), "must be an object or null");
    return m;
}

// ---- Mixtures of experts -------------------------------------------------------
// The routed experts most configs name alike: how many (`experts_key`; a default of 0:
// required), how many a token goes to (num_experts_per_tok) and each one's width
// (`width_key`), with the configuration classes' defaults where a key is absent.
inline moe_config routed_experts(const json& j, std::string_view experts_key, int experts_default,
                                 int per_token_default, std::string_view width_key) {
    moe_config e;
    e.experts = experts_default > 0 ? positive_or(j, experts_key, experts_default, 1 << 16)
                                    : positive(j, experts_key, 1 << 16);
    e.experts_per_token = positive_or(j, "num_experts_per_tok", per_token_default, e.experts);
    e.expert_ffn_hidden = positive(j, width_key, 1 << 22);
    return e;
}

// Qwen-MoE's placement: layer i is MoE where (i + 1) % decoder_sparse_step == 0 and it is
// not in mlp_only_layers (modeling_qwen2_moe.py, modeling_qwen3_moe.py); only an empty
// list is modelled.
inline void qwen_moe_layers(const json& j, moe_config& e, int layers) {
    e.layer_frequency = positive_or(j, "decoder_sparse_step", 1, layers);  // Qwen2/3MoeConfig: 1
    const auto it = j.find("mlp_only_layers");
    if (it != j.end() && !it->is_null())
        require(it->is_array() && it->empty(), "mlp_only_layers", dd::shown(*it),
                "dense layers at chosen places are not modelled (only dense leading layers)");
}

// DeepSeek-V2/V3's layers (DeepseekV2Config, DeepseekV3Config, transformers
// configuration_deepseek_v3.py; deepseek-ai/DeepSeek-V3 inference/model.py): multi-head
// latent attention, dense first_k_dense_replace layers of intermediate_size, then MoE
// layers every moe_layer_freq of n_routed_experts of moe_intermediate_size, n_shared_experts
// of the same width, sigmoid or softmax scores (scoring_func), the selection bias of
// topk_method "noaux_tc" (e_score_correction_bias), group-limited routing.
inline transformer_config deepseek_like(const json& j, const std::string& type) {
    transformer_config m = llama_architecture(
        "", positive(j, "num_hidden_layers", 1000), positive(j, "hidden_size", 1 << 20),
        positive(j, "num_attention_heads", 1 << 14), 0, positive(j, "intermediate_size", 1 << 23),
        positive(j, "vocab_size", 1 << 24), positive(j, "max_position_embeddings"));
    m.tied_embeddings = flag_or(j, "tie_word_embeddings", false);
    m.dropout = trained_with_dropout(j, false);
    m.code = model_code::generic;
    activation_is(j, "hidden_act", {"silu", "swish"}, &m);
    require(!flag_or(j, "attention_bias", false), "attention_bias", true,
            "biases on the latent attention's projections are not modelled");
    // q_lora_rank null: a direct query projection (DeepSeek-V2-Lite).
    const auto q = j.find("q_lora_rank");
    m.mla = {.q_lora_rank = q == j.end() || q->is_null() ? 0 : dd::integer_in(*q, "q_lora_rank", 1, 1 << 20),
             .kv_lora_rank = positive(j, "kv_lora_rank", 1 << 20),
             .qk_nope_head_dim = positive(j, "qk_nope_head_dim", 1 << 16),
             .qk_rope_head_dim = positive(j, "qk_rope_head_dim", 1 << 16),
             .v_head_dim = positive(j, "v_head_dim", 1 << 16)};
    moe_config e = routed_experts(j, "n_routed_experts", 0, 8, "moe_intermediate_size");
    const auto shared = j.find("n_shared_experts");
    if (shared != j.end() && !shared->is_null()) {
        const int n = dd::integer_in(*shared, "n_shared_experts", 0, 64);
        require(double(n) * e.expert_ffn_hidden <= (1 << 22), "n_shared_experts", n,
                "times moe_intermediate_size must be at most 2^22");
        e.shared_ffn_hidden = n * e.expert_ffn_hidden;
    }
    const auto dense = j.find("first_k_dense_replace");  // DeepseekV2Config: 0
    if (dense != j.end() && !dense->is_null())
        e.dense_layers = dd::integer_in(*dense, "first_k_dense_replace", 0, m.layers - 1);
    // DeepSeek places an MoE layer where layer_idx % moe_layer_freq == 0 (modeling_deepseek.py),
    // not at spec/moe.hpp's (i + 1) % n: only 1 is modelled.
    const int frequency = positive_or(j, "moe_layer_freq", 1, m.layers);  // DeepseekV3Config: 1
    require(frequency == 1, "moe_layer_freq", frequency,
            "MoE layers every n > 1 layers are not modelled for DeepSeek's placement (only 1)");
    const std::string scoring = text_or(j, "scoring_func", type == "deepseek_v2" ? "softmax" : "sigmoid");
    require(scoring == "softmax" || scoring == "sigmoid", "scoring_func", "\"" + scoring + "\"",
            "must be softmax or sigmoid");
    e.scoring = scoring == "sigmoid" ? router_scoring::sigmoid : router_scoring::softmax;
    e.score_correction_bias = text_or(j, "topk_method", type == "deepseek_v2" ? "greedy" : "noaux_tc") == "noaux_tc";
    e.expert_groups = positive_or(j, "n_group", 1, e.experts);
    e.groups_per_token = positive_or(j, "topk_group", 1, e.expert_groups);
    m.moe = e;
    const auto mtp = j.find("num_nextn_predict_layers");
    if (mtp != j.end() && !mtp->is_null()) m.mtp_layers = dd::integer_in(*mtp, "num_nextn_predict_layers", 0, 16);
    return m;
}

// gpt-oss (GptOssConfig, transformers modeling_gpt_oss.py): biased attention projections
// with a sink logit per head, alternating sliding-window and full layers (layer_types),
// num_local_experts biased SwiGLU experts of intermediate_size behind a biased router.
inline transformer_config gpt_oss_like(const json& j) {
    transformer_config m = llama_architecture(
        "", positive_or(j, "num_hidden_layers", 36, 1000), positive_or(j, "hidden_size", 2880, 1 << 20),
        positive_or(j, "num_attention_heads", 64, 1 << 14), 0, positive_or(j, "intermediate_size", 2880, 1 << 23),
        positive_or(j, "vocab_size", 201088, 1 << 24), positive_or(j, "max_position_embeddings", 131072));
    m.kv_heads = positive_or(j, "num_key_value_heads", 8, m.heads);  // GptOssConfig defaults throughout
    m.attention_head_dim = positive_or(j, "head_dim", 64, 1 << 16);
    m.tied_embeddings = flag_or(j, "tie_word_embeddings", false);
    m.linear_biases = flag_or(j, "attention_bias", true);  // and the experts' gate_up_proj_bias, down_proj_bias
    require(m.linear_biases, "attention_bias", false, "gpt-oss without biases is not modelled");
    m.attention_sinks = true;
    m.code = model_code::generic;
    m.moe = routed_experts(j, "num_local_experts", 128, 4, "intermediate_size");
    m.moe.router_bias = true;
    m.sliding_window = positive_or(j, "sliding_window", 128, 1 << 24);
    // layer_types: "sliding_attention" except every n-th "full_attention" (absent: the
    // class's alternation, sliding from the first layer).
    m.full_attention_every = 2;
    const auto types = j.find("layer_types");
    if (types != j.end() && !types->is_null()) {
        require(types->is_array() && std::int64_t(types->size()) == m.layers, "layer_types", dd::shown(*types),
                "must name every layer's attention");
        std::vector<bool> full;
        for (const json& t : *types) {
            const std::string name = dd::text_in(t, "layer_types", 32);
            require(name == "full_attention" || name == "sliding_attention", "layer_types", "\"" + name + "\"",
                    "must be full_attention or sliding_attention");
            full.push_back(name == "full_attention");
        }
        const auto first = std::find(full.begin(), full.end(), true);
        const int every = first == full.end() ? 0 : int(first - full.begin()) + 1;
        for (std::size_t i = 0; i < full.size(); ++i)
            require(full[i] == (every > 0 && (i + 1) % std::size_t(every) == 0), "layer_types", dd::shown(*types),
                    "only every n-th layer full, the others sliding, is modelled");
        m.full_attention_every = every;
    }
    return m;
}

// A config states how many positions a model takes, not the sequence it was trained on.
// Where rope_scaling names the length before its extension
// (original_max_position_embeddings: Llama 3.1's 8192, the length of its main
// pre-training), that is it; otherwise max_position_embeddings up to
// default_training_length (ASSUMPTION: 4096, the pre-training length of the LLaMA-2
// family, Touvron et al. 2023 §2.2; a config allowing more, e.g. Mistral-7B's 32768 or
// Qwen2's 131072, says nothing of the length its weights were mostly trained at).
inline constexpr int default_training_length = 4096;

inline int training_length_of(const json& j, int max_seq) {
    if (j.contains("rope_scaling") && j.at("rope_scaling").is_object()) {
        const json& r = j.at("rope_scaling");
        if (r.contains("original_max_position_embeddings"))  // at most the extended positions
            return description_detail::integer(r, "rope_scaling", "original_max_position_embeddings", 1, max_seq);
    }
    return std::min(max_seq, default_training_length);
}

}  // namespace hf_detail

// The model a Hugging Face config.json describes, named `name`. Throws
// trainperf::invalid_argument naming the key for anything it cannot describe.
inline transformer_config model_from_hf_config(const nlohmann::json& j, std::string_view name) {
    require_nesting(j, "", max_description_depth);
    namespace dd = description_detail;
    namespace hd = hf_detail;
    dd::require_object(j, "");
    const std::string type = dd::text(j, "", "model_type", 64);
    const bool experts = type == "mixtral" || type == "qwen2_moe" || type == "qwen3_moe" || type == "olmoe" ||
                         type == "deepseek_v2" || type == "deepseek_v3" || type == "kimi_k2" || type == "gpt_oss";
    if (!experts) hd::refuse_experts(j, type);
    transformer_config m;
    if (type == "llama" || type == "mistral" || type == "qwen2" || type == "phi3") {
        m = hd::llama_like(j, type, false);  // LlamaConfig, MistralConfig, Qwen2Config, Phi3Config: untied
    } else if (type == "qwen3" || type == "qwen3_moe") {
        m = hd::llama_like(j, type, false);  // Qwen3Config, Qwen3MoeConfig: untied, attention_bias=False
        m.qk_norm = qk_norm_kind::per_head;  // q_norm, k_norm: RMSNorm(head_dim)
        if (type == "qwen3_moe") {
            // Qwen3MoeConfig: num_experts 128, num_experts_per_tok 8, moe_intermediate_size 768.
            m.moe = hd::routed_experts(j, "num_experts", 128, 8, "moe_intermediate_size");
            hd::qwen_moe_layers(j, m.moe, m.layers);
        }
    } else if (type == "qwen2_moe") {
        m = hd::llama_like(j, type, false);  // Qwen2MoeConfig: untied, q/k/v biases
        // Qwen2MoeConfig: num_experts 60, num_experts_per_tok 4, moe_intermediate_size 1408,
        // shared_expert_intermediate_size 5632 behind a sigmoid gate Linear(h, 1).
        m.moe = hd::routed_experts(j, "num_experts", 60, 4, "moe_intermediate_size");
        m.moe.shared_ffn_hidden = hd::positive_or(j, "shared_expert_intermediate_size", 5632, 1 << 22);
        m.moe.shared_expert_gate = true;
        hd::qwen_moe_layers(j, m.moe, m.layers);
    } else if (type == "mixtral") {
        m = hd::llama_like(j, type, false);  // MixtralConfig: untied
        // MixtralConfig: num_local_experts 8, num_experts_per_tok 2; each expert of intermediate_size.
        m.moe = hd::routed_experts(j, "num_local_experts", 8, 2, "intermediate_size");
    } else if (type == "olmoe") {
        m = hd::llama_like(j, type, false);  // OlmoeConfig: untied, no biases
        m.qk_norm = qk_norm_kind::full;      // q_norm over heads·head_dim, k_norm over kv_heads·head_dim
        // OlmoeConfig: num_experts 64, num_experts_per_tok 8; each expert of intermediate_size.
        m.moe = hd::routed_experts(j, "num_experts", 64, 8, "intermediate_size");
    } else if (type == "deepseek_v2" || type == "deepseek_v3" || type == "kimi_k2") {
        m = hd::deepseek_like(j, type);
    } else if (type == "gpt_oss") {
        m = hd::gpt_oss_like(j);
    } else if (type == "gemma" || type == "gemma2") {
        m = hd::llama_like(j, type, true);  // GemmaConfig, Gemma2Config: tie_word_embeddings=True
    } else if (type == "gpt2") {
        m.layers = hd::positive(j, "n_layer", 1000);
        m.hidden = hd::positive(j, "n_embd", 1 << 20);
        m.heads = hd::positive(j, "n_head", 1 << 14);
        m.ffn_hidden = hd::positive_or(j, "n_inner", 4 * m.hidden, 1 << 23);  // GPT2Config: None → 4 × n_embd
        m.vocab = hd::positive(j, "vocab_size", 1 << 24);
        m.max_seq = hd::positive(j, "n_positions");
        m.tied_embeddings = hd::flag_or(j, "tie_word_embeddings", true);
        m.dropout = hd::trained_with_dropout(j, true);  // GPT2Config: 0.1 dropouts
        m.activation = activation_kind::gelu_new;  // GPT2Config: activation_function="gelu_new"
        m.code = model_code::gpt2;
        hd::activation_is(j, "activation_function", {"gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh", "relu"},
                          &m);
    } else if (type == "gpt_neo") {
        m.layers = hd::positive(j, "num_layers", 1000);
        m.hidden = hd::positive(j, "hidden_size", 1 << 20);
        m.heads = hd::positive(j, "num_heads", 1 << 14);
        m.ffn_hidden = hd::positive_or(j, "intermediate_size", 4 * m.hidden, 1 << 23);  // None → 4 × hidden
        m.vocab = hd::positive(j, "vocab_size", 1 << 24);
        m.max_seq = hd::positive(j, "max_position_embeddings");
        m.tied_embeddings = hd::flag_or(j, "tie_word_embeddings", true);
        m.qkv_biases = false;  // GPTNeoSelfAttention: q/k/v_proj bias=False, out_proj bias=True
        m.dropout = hd::trained_with_dropout(j, false);  // GPTNeoConfig: 0.0 dropouts
        m.activation = activation_kind::gelu_new;  // GPTNeoConfig: activation_function="gelu_new"
        // GPT-Neo's attention (separate q/k/v Linears, no scaling) has no model_code of its own.
        m.code = model_code::generic;
        hd::activation_is(j, "activation_function", {"gelu_new", "gelu", "gelu_fast", "relu"}, &m);
    } else if (type == "gpt_neox") {
        hd::common_sizes(j, m, "intermediate_size");
        m.positions = position_kind::rotary;  // rotary on rotary_pct of each head: no parameters
        m.tied_embeddings = hd::flag_or(j, "tie_word_embeddings", false);
        require(hd::flag_or(j, "attention_bias", true), "attention_bias", false,
                "attention without biases but an MLP with them is not modelled");
        m.dropout = hd::trained_with_dropout(j, false);  // GPTNeoXConfig: 0.0 dropouts
        hd::activation_is(j, "hidden_act", {"gelu", "gelu_fast", "gelu_new", "gelu_pytorch_tanh", "relu"}, &m);
    } else if (type == "bert" || type == "roberta") {
        hd::common_sizes(j, m, "intermediate_size");
        m.token_types = hd::positive(j, "type_vocab_size", 1024);
        m.causal = false;
        m.pooler = true;  // BertModel / RobertaModel: add_pooling_layer=True
        m.dropout = hd::trained_with_dropout(j, true);  // BertConfig: 0.1 dropouts
        const std::string pos = hd::text_or(j, "position_embedding_type", "absolute");
        require(pos == "absolute", "position_embedding_type", "\"" + pos + "\"",
                "only absolute (learned) positions are modelled");
        m.code = model_code::bert;
        hd::activation_is(j, "hidden_act", {"gelu", "gelu_new", "relu"}, &m);
    } else if (type == "opt") {
        hd::common_sizes(j, m, "ffn_dim");
        m.tied_embeddings = hd::flag_or(j, "tie_word_embeddings", true);
        require(hd::flag_or(j, "enable_bias", true), "enable_bias", false, "OPT without biases is not modelled");
        require(hd::flag_or(j, "do_layer_norm_before", true), "do_layer_norm_before", false,
                "OPT's post-norm variant (OPT-350M) is not modelled");
        const int proj = hd::positive_or(j, "word_embed_proj_dim", m.hidden, 1 << 20);
        require(proj == m.hidden, "word_embed_proj_dim", proj,
                "differs from hidden_size: OPT's embedding projections are not modelled");
        m.dropout = hd::trained_with_dropout(j, true);  // OPTConfig: dropout=0.1
        m.activation = activation_kind::relu;  // OPTConfig: activation_function="relu"
        hd::activation_is(j, "activation_function", {"relu", "gelu"}, &m);
    } else if (type == "falcon") {
        m.layers = hd::positive(j, "num_hidden_layers", 1000);
        m.hidden = hd::positive(j, "hidden_size", 1 << 20);
        m.heads = hd::positive(j, "num_attention_heads", 1 << 14);
        m.vocab = hd::positive(j, "vocab_size", 1 << 24);
        m.ffn_hidden = hd::positive_or(j, "ffn_hidden_size", 4 * m.hidden, 1 << 23);  // FalconConfig: 4 × hidden
        m.max_seq = hd::positive_or(j, "max_position_embeddings", 2048);  // FalconConfig default 2048
        m.positions = position_kind::rotary;
        require(!hd::flag_or(j, "alibi", false), "alibi", true, "ALiBi positions are not modelled");
        const bool new_arch = hd::flag_or(j, "new_decoder_architecture", false);
        if (new_arch) {
            m.kv_heads = hd::positive_or(j, "num_kv_heads", m.heads, m.heads);
            m.norms_per_layer = 2;  // ln_attn and ln_mlp
        } else {
            m.kv_heads = hd::flag_or(j, "multi_query", true) ? 1 : m.heads;  // FalconConfig: multi_query=True
            // parallel_attn: attention and MLP both read the one input_layernorm.
            m.norms_per_layer = hd::flag_or(j, "parallel_attn", true) ? 1 : 2;
        }
        m.linear_biases = hd::flag_or(j, "bias", false);
        m.tied_embeddings = hd::flag_or(j, "tie_word_embeddings", true);
        m.dropout = hd::trained_with_dropout(j, false);  // FalconConfig: 0.0 dropouts
        hd::activation_is(j, "activation", {"gelu"}, &m);
    } else {
        detail::fail("model_type", "\"" + type + "\"",
                     "not a known architecture; known: llama, mistral, qwen2, qwen3, gemma, gemma2, phi3, gpt2, "
                     "gpt_neo, gpt_neox, bert, roberta, opt, falcon, mixtral, qwen2_moe, qwen3_moe, olmoe, "
                     "deepseek_v2, deepseek_v3, kimi_k2, gpt_oss (or write a trainperf.model.v1 file)");
    }
    // Kept only where it is shorter (else 0: max_seq, as the catalog's models have it).
    if (const int t = hd::training_length_of(j, m.max_seq); t < m.max_seq) m.train_seq = t;
    m.name = keep_text(std::string(name));
    validate(m);
    return m;
}

}  // namespace trainperf::io
