// Optimizers and the state they keep per parameter. Adafactor and 8-bit Adam depend
// on the shapes of the parameter tensors, so the model's tensors are listed here.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "model.hpp"

namespace trainperf {

enum class optimizer_kind { sgd, sgd_momentum, adamw, adamw_fused, adafactor, lion, adam8bit };

template <>
struct enum_names<optimizer_kind> {
    static constexpr std::array<enum_name<optimizer_kind>, 7> table{{{optimizer_kind::sgd, "sgd"},
                                                                     {optimizer_kind::sgd_momentum, "sgd-momentum"},
                                                                     {optimizer_kind::adamw, "adamw"},
                                                                     {optimizer_kind::adamw_fused, "adamw-fused"},
                                                                     {optimizer_kind::adafactor, "adafactor"},
                                                                     {optimizer_kind::lion, "lion"},
                                                                     {optimizer_kind::adam8bit, "adam8bit"}}};
    // Adam keeps the same state as AdamW.
    static constexpr std::array<enum_name<optimizer_kind>, 1> aliases{{{optimizer_kind::adamw, "adam"}}};
};

inline constexpr auto all_optimizers = enum_values<optimizer_kind>();

constexpr optimizer_kind parse_optimizer(std::string_view s) { return parse_enum<optimizer_kind>("optimizer", s); }

// Fused: one multi-tensor kernel per step (apex FusedAdam, torch fused=True) instead
// of a per-tensor loop of elementwise kernels. Same state; the step engine times it.
constexpr bool is_fused(optimizer_kind k) { return k == optimizer_kind::adamw_fused; }

// One parameter tensor, `count` times (once per layer for layer tensors). cols == 0
// marks a 1-D tensor (bias, norm scale) of `rows` elements.
struct parameter_tensor {
    std::string_view name;
    double rows = 0;
    double cols = 0;
    double count = 1;

    constexpr double elements() const { return cols == 0 ? rows : rows * cols; }
    constexpr bool is_matrix() const { return cols != 0; }
    // A tensor the model does not have (no elements, e.g. positions of a max_seq of 0).
    constexpr bool empty() const { return !(elements() > 0 && count > 0); }
};

// Up to this many distinct tensors per model (a fixed size keeps it constexpr).
struct parameter_tensor_list {
    std::array<parameter_tensor, 48> items{};
    std::size_t size = 0;

    constexpr void add(parameter_tensor t) {
        if (t.empty()) return;
        require(size < items.size(), "parameter_tensors", t.name, "one tensor kind more than the list holds (48)");
        items[size++] = t;
    }
    constexpr const parameter_tensor* begin() const { return items.data(); }
    constexpr const parameter_tensor* end() const { return items.data() + size; }
    constexpr double parameters() const {
        double p = 0;
        for (const auto& t : *this) p += t.elements() * t.count;
        return p;
    }
};

// The model's parameter tensors as Hugging Face / Megatron lay them out: separate
// Q, K, V projections (GPT-2's fused c_attn has the same elements; Adafactor's
// factored state differs by 2·hidden per layer), latent attention's projections, each
// routed expert's matrices. Sums to parameter_count(m).
// `visit` sees each tensor in this order, empty ones too (a learned position table of
// max_seq 0); parameter_tensors lists those the model has, and model_state_of sums over
// them without building the list.
namespace optimizer_detail {
// The matrices (and biases) of `count` FFNs of inner width f: gate (SwiGLU), up, down.
template <class Visit>
constexpr void visit_ffn(const transformer_config& m, Visit& visit, double f, double count, bool biases,
                         const char* gate, const char* up, const char* down, const char* up_bias,
                         const char* down_bias) {
    const double h = m.hidden;
    const bool swiglu = m.ffn == ffn_kind::swiglu;
    if (count == 0) return;
    if (swiglu) visit({gate, f, h, count});
    visit({up, f, h, count});
    visit({down, h, f, count});
    if (biases) {
        visit({up_bias, f, 0, count * (swiglu ? 2 : 1)});
        visit({down_bias, h, 0, count});
    }
}

// Latent attention's tensors (spec/mla.hpp) over n layers.
template <class Visit>
constexpr void visit_latent_attention(const transformer_config& m, Visit& visit, double n) {
    const mla_config& a = m.mla;
    const double h = m.hidden, heads = m.heads;
    if (a.q_lora_rank > 0) {
        visit({"q_a_proj", double(a.q_lora_rank), h, n});
        visit({"q_b_proj", heads * a.qk_head_dim(), double(a.q_lora_rank), n});
        visit({"q_a_layernorm", double(a.q_lora_rank), 0, n});
    } else {
        visit({"q_proj", heads * a.qk_head_dim(), h, n});
    }
    visit({"kv_a_proj_with_mqa", double(a.kv_lora_rank) + a.qk_rope_head_dim, h, n});
    visit({"kv_b_proj", heads * (a.qk_nope_head_dim + a.v_head_dim), double(a.kv_lora_rank), n});
    visit({"kv_a_layernorm", double(a.kv_lora_rank), 0, n});
    visit({"o_proj", h, heads * a.v_head_dim, n});
}

// An MoE model's experts, routers and shared experts over its MoE layers: each routed
// expert's matrices as tensors of their own (as Mixtral's, Qwen-MoE's and DeepSeek's
// checkpoints hold them).
template <class Visit>
constexpr void visit_experts(const transformer_config& m, Visit& visit) {
    const moe_config& e = m.moe;
    const double layers = moe_layers(m), h = m.hidden;
    visit_ffn(m, visit, e.expert_ffn_hidden, layers * e.experts, m.linear_biases, "expert_gate_proj",
              "expert_up_proj", "expert_down_proj", "expert_up_bias", "expert_down_bias");
    visit({"router", double(e.experts), h, layers});
    if (e.router_bias) visit({"router_bias", double(e.experts), 0, layers});
    if (e.score_correction_bias) visit({"score_correction_bias", double(e.experts), 0, layers});
    if (e.shared_ffn_hidden > 0)
        visit_ffn(m, visit, e.shared_ffn_hidden, layers, m.linear_biases, "shared_gate_proj", "shared_up_proj",
                  "shared_down_proj", "shared_up_bias", "shared_down_bias");
    if (e.shared_expert_gate) visit({"shared_expert_gate", 1, h, layers});
}
}  // namespace optimizer_detail

template <class Visit>
constexpr Visit for_each_parameter_tensor(const transformer_config& m, Visit visit) {
    const double h = m.hidden, f = m.ffn_hidden, kv = m.kv_width(), n = m.layers, q = m.q_width();
    const bool b = m.linear_biases;
    const double norm_vectors = m.norm == norm_kind::layernorm ? 2 : 1;  // scale (+ bias)
    if (m.mla.enabled()) {
        optimizer_detail::visit_latent_attention(m, visit, n);
    } else {
        visit({"q_proj", q, h, n});
        visit({"k_proj", kv, h, n});
        visit({"v_proj", kv, h, n});
        visit({"o_proj", h, q, n});
    }
    // The dense FFN in every layer of a dense model, in the dense layers of an MoE one.
    const double dense = has_moe(m) ? double(dense_layers(m)) : n;
    optimizer_detail::visit_ffn(m, visit, f, dense, b, "gate_proj", "up_proj", "down_proj", "up_bias", "down_bias");
    if (has_moe(m)) optimizer_detail::visit_experts(m, visit);
    if (has_qkv_biases(m)) {
        visit({"q_bias", q, 0, n});
        visit({"kv_bias", kv, 0, 2 * n});
    }
    if (b) visit({"o_bias", h, 0, n});
    visit({"layer_norms", h, 0, m.norms_per_layer * norm_vectors * n});
    if (m.qk_norm == qk_norm_kind::per_head) visit({"qk_norms", double(m.head_dim()), 0, 2 * n});
    if (m.qk_norm == qk_norm_kind::full) {
        visit({"q_norm", q, 0, n});
        visit({"k_norm", kv, 0, n});
    }
    if (m.attention_sinks) visit({"sinks", double(m.heads), 0, n});
    visit({"token_embedding", double(m.vocab), h, 1});
    if (m.positions == position_kind::learned) visit({"position_embedding", double(m.max_seq), h, 1});
    if (m.token_types > 0) {
        visit({"token_type_embedding", double(m.token_types), h, 1});
        visit({"embedding_norm", h, 0, 2});  // BERT: layernorm scale and bias
    } else {
        visit({"final_norm", h, 0, norm_vectors});
    }
    if (!m.tied_embeddings) visit({"lm_head", double(m.vocab), h, 1});
    if (m.pooler) {
        visit({"pooler", h, h, 1});
        visit({"pooler_bias", h, 0, 1});
    }
    return visit;
}

constexpr parameter_tensor_list parameter_tensors(const transformer_config& m) {
    parameter_tensor_list l;
    for_each_parameter_tensor(m, [&l](const parameter_tensor& t) { l.add(t); });
    return l;
}

namespace optimizer_detail {
// bitsandbytes 8-bit optimizers: block-wise quantization with one fp32 absmax per
// block of 2048 elements (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
// Quantization", ICLR, §2), and tensors under min_8bit_size = 4096 elements keep
// 32-bit state (bitsandbytes Optimizer8bit default).
inline constexpr double adam8bit_block = 2048;
inline constexpr double adam8bit_min_elements = 4096;

constexpr double ceil_div(double a, double b) {
    const auto q = static_cast<long long>(a / b);
    return static_cast<double>(q) * b < a ? double(q + 1) : double(q);
}

constexpr double adam8bit_state_of(double elements) {
    const double fp32 = size_of(dtype::fp32);
    if (elements < adam8bit_min_elements) return 2.0 * elements * fp32;    // m, v in fp32
    return 2.0 * (elements + fp32 * ceil_div(elements, adam8bit_block));  // 1 B + fp32 absmax
}

// Newton iteration: constant-evaluable, unlike std::cbrt.
constexpr double cube_root(double x) {
    if (x <= 0) return 0;
    double r = x > 1 ? x / 3 : 1;
    for (int i = 0; i < 200; ++i) {
        const double next = r - (r * r * r - x) / (3 * r * r);
        if (next == r) break;
        r = next;
    }
    return r;
}

// The state of one of the tensor's `count` copies, `s` bytes per state value.
template <optimizer_kind K>
constexpr double tensor_state(const parameter_tensor& t, double s) {
    if constexpr (K == optimizer_kind::sgd) return 0;
    else if constexpr (K == optimizer_kind::sgd_momentum || K == optimizer_kind::lion) return t.elements() * s;
    else if constexpr (K == optimizer_kind::adamw || K == optimizer_kind::adamw_fused) return 2 * t.elements() * s;
    else if constexpr (K == optimizer_kind::adafactor) return (t.is_matrix() ? t.rows + t.cols : t.rows) * s;
    else return adam8bit_state_of(t.elements());
}

// f(kind) with the kind as a constant (std::integral_constant): a pass over the tensors
// is compiled once per kind instead of switching at every tensor. A value outside the
// enum keeps no state, as sgd.
template <class F>
constexpr auto with_kind(optimizer_kind k, F&& f) {
    using kind = optimizer_kind;
    switch (k) {
        case kind::sgd: break;
        case kind::sgd_momentum: return f(std::integral_constant<kind, kind::sgd_momentum>{});
        case kind::adamw: return f(std::integral_constant<kind, kind::adamw>{});
        case kind::adamw_fused: return f(std::integral_constant<kind, kind::adamw_fused>{});
        case kind::adafactor: return f(std::integral_constant<kind, kind::adafactor>{});
        case kind::lion: return f(std::integral_constant<kind, kind::lion>{});
        case kind::adam8bit: return f(std::integral_constant<kind, kind::adam8bit>{});
    }
    return f(std::integral_constant<kind, kind::sgd>{});
}
}  // namespace optimizer_detail

// Optimizer state of a whole model, from its tensor shapes. `state` is the dtype of
// the moments (fp32 normally; bf16 in pure-bf16 training); 8-bit Adam ignores it.
//   sgd: none; sgd-momentum: 1 buffer; adamw(-fused): m and v; lion: 1 momentum
//   (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms");
//   adafactor: factored second moment (Shazeer & Stern 2018): rows + cols values per
//   matrix, the full vector for 1-D tensors, and no first moment (beta1 = None, the
//   Hugging Face transformers.Adafactor default).
constexpr bytes optimizer_state_bytes(optimizer_kind k, const parameter_tensor_list& tensors,
                                      dtype state = dtype::fp32) {
    const double s = size_of(state);
    return optimizer_detail::with_kind(k, [&](auto kind) {
        double total = 0;
        for (const auto& t : tensors) total += optimizer_detail::tensor_state<kind()>(t, s) * t.count;
        return bytes_of(total);
    });
}

constexpr bytes optimizer_state_bytes(optimizer_kind k, const transformer_config& m,
                                      dtype state = dtype::fp32) {
    validate(m);
    return optimizer_state_bytes(k, parameter_tensors(m), state);
}

// The same for a bare parameter count (`--params 7e9`). Adafactor and 8-bit Adam
// need shapes, so they are approximated: 8-bit Adam as one large tensor
// (2 B + 2·4 B per 2048 elements); Adafactor as square hidden × hidden matrices,
// rows + cols = 2·hidden values per hidden² parameters, with hidden estimated from
// params ≈ 12·layers·hidden² and the usual aspect ratio hidden ≈ 128·layers
// (llama2-7b 4096/32, gpt3-175b 12288/96): hidden = cbrt(128·params/12).
constexpr bytes optimizer_state_bytes(optimizer_kind k, double params, dtype state = dtype::fp32) {
    require(params > 0 && params < 1e16, "params", params, "must be a positive parameter count");
    const double s = size_of(state);
    switch (k) {
        case optimizer_kind::sgd: return bytes_of(0);
        case optimizer_kind::sgd_momentum:
        case optimizer_kind::lion: return bytes_of(params * s);
        case optimizer_kind::adamw:
        case optimizer_kind::adamw_fused: return bytes_of(2 * params * s);
        case optimizer_kind::adafactor: {
            const double hidden = optimizer_detail::cube_root(128.0 * params / 12.0);
            return bytes_of(params * (2.0 / hidden) * s);
        }
        case optimizer_kind::adam8bit:
            return bytes_of(2.0 * (params + size_of(dtype::fp32) * params / optimizer_detail::adam8bit_block));
    }
    return bytes_of(0);
}

// What the model's optimizer holds whatever the layout: computed once per model,
// optimizer and state dtype (the planner reuses it for every layout it prices).
struct model_state {
    double parameters = 0;
    double layer_parameters = 0;           // one transformer layer (with the dense FFN)
    // An MoE model's MoE layer: what is not a routed expert (attention, norms, router,
    // shared experts), its routed experts together, and those of the whole model.
    double moe_layer_parameters = 0;
    double expert_layer_parameters = 0;
    double expert_parameters = 0;
    double embedding_parameters = 0;
    double head_parameters = 0;
    double tensors = 0;                    // parameter tensors, layers counted
    double largest_tensor = 0;             // elements of the largest parameter tensor
    bytes optimizer_state = bytes_of(0);   // the whole model's optimizer state (of what trains)
    // What the optimizer updates: every parameter, or only the adapters when the base is
    // frozen (spec/finetune.hpp; spec/setup.hpp model_state_of sets them).
    double trainable_parameters = 0;
    double trainable_tensors = 0;
};

namespace optimizer_detail {
// What model_state_of sums over the tensors: their count, the largest, and the
// optimizer state, added in the tensors' order as optimizer_state_bytes adds the list.
struct tensor_sums {
    double s = 0;  // bytes per state value
    double tensors = 0, largest = 0, state = 0;
};

template <optimizer_kind K>
struct tensor_sums_of : tensor_sums {
    constexpr void operator()(const parameter_tensor& t) {
        if (t.empty()) return;
        tensors += t.count;
        if (t.elements() > largest) largest = t.elements();
        state += tensor_state<K>(t, s) * t.count;
    }
};

// model_state_of for a model already validated: one pass over its tensors, summed in
// their order as optimizer_state_bytes sums the list.
constexpr model_state model_state_of(optimizer_kind k, const transformer_config& m, dtype state) {
    model_state r;
    r.layer_parameters = layer_parameters(m);
    r.embedding_parameters = embedding_parameters(m);
    r.head_parameters = head_parameters(m);
    r.parameters = parameters_of_parts(m.layers, r.layer_parameters, r.embedding_parameters, r.head_parameters);
    if (has_moe(m)) {
        r.expert_layer_parameters = double(m.moe.experts) * expert_parameters(m);
        r.moe_layer_parameters = moe_layer_parameters(m) - r.expert_layer_parameters;
        r.expert_parameters = moe_layers(m) * r.expert_layer_parameters;
        r.parameters = parameter_count(m);
    }
    const tensor_sums sum = with_kind(k, [&](auto kind) -> tensor_sums {
        return for_each_parameter_tensor(m, tensor_sums_of<kind()>{{size_of(state)}});
    });
    r.tensors = sum.tensors;
    r.largest_tensor = sum.largest;
    r.optimizer_state = bytes_of(sum.state);
    r.trainable_parameters = r.parameters;
    r.trainable_tensors = r.tensors;
    return r;
}
}  // namespace optimizer_detail

constexpr model_state model_state_of(optimizer_kind k, const transformer_config& m, dtype state = dtype::fp32) {
    validate(m);
    return optimizer_detail::model_state_of(k, m, state);
}

}  // namespace trainperf
