// Fine-tuning: which parameters train. Full training updates every parameter. LoRA
// (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models", arXiv
// 2106.09685, §4.1) freezes the base weights and trains, beside each targeted projection
// W (d_in×d_out), a pair A (d_in×r) and B (r×d_out) whose product is added to W's
// output. QLoRA (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs",
// arXiv 2305.14314, §2-3) also stores the frozen projections in 4-bit NormalFloat (NF4)
// with double quantization. Specs only: cost/memory.hpp, workload/layer.hpp and workload/flops.hpp price it.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "model.hpp"
#include "optimizer.hpp"
#include "precision.hpp"

namespace trainperf {

enum class finetune_mode { full, lora, qlora };

template <>
struct enum_names<finetune_mode> {
    static constexpr std::array<enum_name<finetune_mode>, 3> table{
        {{finetune_mode::full, "full"}, {finetune_mode::lora, "lora"}, {finetune_mode::qlora, "qlora"}}};
};

// The projections of a layer an adapter can target, as LLaMA's code names them
// (q_proj ... down_proj). A model without a gate (GELU FFN) has up (h→f) and down (f→h)
// only; a target it does not have adapts nothing.
enum class lora_target : unsigned { q = 1, k = 2, v = 4, o = 8, gate = 16, up = 32, down = 64 };

template <>
struct enum_names<lora_target> {
    static constexpr std::array<enum_name<lora_target>, 7> table{
        {{lora_target::q, "q"}, {lora_target::k, "k"}, {lora_target::v, "v"}, {lora_target::o, "o"},
         {lora_target::gate, "gate"}, {lora_target::up, "up"}, {lora_target::down, "down"}}};
    static constexpr std::array<enum_name<lora_target>, 7> aliases{
        {{lora_target::q, "q_proj"}, {lora_target::k, "k_proj"}, {lora_target::v, "v_proj"},
         {lora_target::o, "o_proj"}, {lora_target::gate, "gate_proj"}, {lora_target::up, "up_proj"},
         {lora_target::down, "down_proj"}}};
};

// Targets as a bit set of lora_target values.
inline constexpr unsigned lora_all_linear = 127;  // every projection ("all-linear")
// Q and V: Hu et al. 2021 §7.1 (Table 5: adapting W_q and W_v gives the best result for
// a given budget). ASSUMPTION: Hugging Face PEFT's default target modules for LLaMA
// are q_proj and v_proj likewise (not checked against a pinned PEFT commit).
inline constexpr unsigned lora_default_targets =
    static_cast<unsigned>(lora_target::q) | static_cast<unsigned>(lora_target::v);

struct finetune_spec {
    finetune_mode mode = finetune_mode::full;
    int rank = 16;                              // r; alpha scales the update and costs nothing
    unsigned targets = lora_default_targets;    // bit set of lora_target; ignored with mode full
    // Adapter dropout is not described: it is off (nn.Identity) or one elementwise pass
    // on b·s·d_in per target, ignored for cost.

    constexpr bool freezes_base() const { return mode != finetune_mode::full; }
    constexpr bool quantized() const { return mode == finetune_mode::qlora; }
    constexpr bool adapts(lora_target t) const { return (targets & static_cast<unsigned>(t)) != 0; }
};

constexpr void validate(const finetune_spec& f) {
    require(f.mode == finetune_mode::full || f.mode == finetune_mode::lora || f.mode == finetune_mode::qlora,
            "finetune", int(f.mode), "must be full, lora or qlora");
    require(f.rank >= 1 && f.rank <= 65536, "lora_rank", f.rank, "must be between 1 and 65536");
    require(f.targets != 0 && (f.targets & ~lora_all_linear) == 0, "lora_targets", f.targets,
            "must name at least one of q, k, v, o, gate, up, down");
}

// "q,v", "q_proj,v_proj", "all-linear" (PEFT's spelling for every linear layer but
// the output head) into a bit set; an unknown or empty name throws naming the field.
inline unsigned parse_lora_targets(std::string_view text) {
    if (iequals(text, "all-linear")) return lora_all_linear;
    require(!text.empty(), "lora_targets", "\"\"", "must name at least one of q, k, v, o, gate, up, down, or all-linear");
    unsigned set = 0;
    while (true) {
        const std::size_t comma = text.find(',');
        const std::string_view word = text.substr(0, comma);
        set |= static_cast<unsigned>(parse_enum<lora_target>("lora_targets", word));
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return set;
}

// The text parse_lora_targets reads back: "all-linear", or the names joined by commas.
inline std::string lora_targets_text(unsigned targets) {
    if (targets == lora_all_linear) return "all-linear";
    std::string t;
    for (const auto& e : enum_names<lora_target>::table) {
        if (!(targets & static_cast<unsigned>(e.value))) continue;
        if (!t.empty()) t += ',';
        t += e.name;
    }
    return t;
}

// One projection of a layer: d_in → d_out (whole, before tensor parallelism), and
// whether tensor parallelism splits its output (column-parallel: Q, K, V, gate, up) or
// its input (row-parallel: output projection, down).
struct lora_matrix {
    lora_target target = lora_target::q;
    std::string_view a_name, b_name;  // the adapter's two GEMMs
    double d_in = 0, d_out = 0;
    bool column_parallel = true;
    bool present = true;              // the model has it (no gate without SwiGLU)
};

constexpr std::array<lora_matrix, 7> lora_matrices(const transformer_config& m) {
    const double h = m.hidden, q = m.q_width(), kv = m.kv_width(), f = m.ffn_hidden;
    const bool gate = m.ffn == ffn_kind::swiglu;
    return {{{lora_target::q, "lora_a_q", "lora_b_q", h, q, true, true},
             {lora_target::k, "lora_a_k", "lora_b_k", h, kv, true, true},
             {lora_target::v, "lora_a_v", "lora_b_v", h, kv, true, true},
             {lora_target::o, "lora_a_o", "lora_b_o", q, h, false, true},
             {lora_target::gate, "lora_a_gate", "lora_b_gate", h, f, true, gate},
             {lora_target::up, "lora_a_up", "lora_b_up", h, f, true, true},
             {lora_target::down, "lora_a_down", "lora_b_down", f, h, false, true}}};
}

// Adapted projections of one layer (each has an A and a B tensor).
constexpr double adapted_matrices_per_layer(const transformer_config& m, const finetune_spec& f) {
    if (!f.freezes_base()) return 0;
    double n = 0;
    for (const auto& x : lora_matrices(m))
        if (x.present && f.adapts(x.target)) n += 1;
    return n;
}

// Trainable adapter parameters of one layer: r·(d_in + d_out) per adapted projection
// (A is d_in×r, B is r×d_out; Hu et al. 2021 §4.1).
constexpr double adapter_parameters_per_layer(const transformer_config& m, const finetune_spec& f) {
    if (!f.freezes_base()) return 0;
    double p = 0;
    for (const auto& x : lora_matrices(m))
        if (x.present && f.adapts(x.target)) p += double(f.rank) * (x.d_in + x.d_out);
    return p;
}

// The elements the adapters add to the projections' outputs per token (Σ d_out).
constexpr double adapted_output_width(const transformer_config& m, const finetune_spec& f) {
    if (!f.freezes_base()) return 0;
    double w = 0;
    for (const auto& x : lora_matrices(m))
        if (x.present && f.adapts(x.target)) w += x.d_out;
    return w;
}

constexpr double adapter_parameters(const transformer_config& m, const finetune_spec& f) {
    return m.layers * adapter_parameters_per_layer(m, f);
}

// The weight matrices of one layer's projections (no biases): what QLoRA quantizes.
constexpr double layer_projection_matrix_parameters(const transformer_config& m) {
    const double h = m.hidden, q = m.q_width(), kv = m.kv_width(), f = m.ffn_hidden;
    const double ffn = (m.ffn == ffn_kind::swiglu ? 3.0 : 2.0) * h * f;
    if (m.mla.enabled())  // latent attention's down and up projections and its output
        return mla_projection_parameters(m.mla, h, m.heads) + double(m.heads) * m.mla.v_head_dim * h + ffn;
    return h * (q + 2 * kv) + q * h + ffn;
}

// The projection matrices' parameters of all the model's layers: the dense layers', and
// of the MoE layers their dense part's (attention, shared experts; spec/model.hpp
// moe_dense_part), not the routed experts'.
constexpr double model_projection_matrix_parameters(const transformer_config& m) {
    const double moe = moe_layers(m);
    return (m.layers - moe) * layer_projection_matrix_parameters(m) +
           (moe > 0 ? moe * layer_projection_matrix_parameters(moe_dense_part(m)) : 0.0);
}

constexpr double layer_projection_matrices(const transformer_config& m) {
    return 4.0 + (m.ffn == ffn_kind::swiglu ? 3.0 : 2.0);
}

// Elements of the largest projection matrix of a layer (the output projection q·h or
// an FFN matrix h·f; Q is h·q as large as the output projection).
constexpr double largest_projection(const transformer_config& m) {
    const double h = m.hidden, q = m.q_width(), f = m.ffn_hidden;
    const double attention = q * h;
    const double ffn = h * f;
    return attention > ffn ? attention : ffn;
}

// Bytes per parameter of QLoRA's frozen projections (Dettmers et al. 2023 §2-3):
// 4-bit NF4 values; block-wise quantization with blocksize 64 keeps one absmax per
// block, and double quantization stores those constants in 8 bits with one fp32
// constant per 256 of them: 8/64 + 32/(64·256) = 0.126953125 bit per parameter (the
// paper: "0.127 bits" instead of 32/64 = 0.5). (4 + 0.126953125)/8 = 0.515869140625 B.
inline constexpr double nf4_bits = 4.0;
inline constexpr double nf4_blocksize = 64.0;
inline constexpr double nf4_second_level_blocksize = 256.0;
inline constexpr double qlora_bytes_per_parameter =
    (nf4_bits + 8.0 / nf4_blocksize + 32.0 / (nf4_blocksize * nf4_second_level_blocksize)) / 8.0;

// Bytes per parameter of a frozen 16-bit base weight: the recipe's weights, except
// under autocast, whose fp32 parameters would be cast per forward. ASSUMPTION: LoRA
// and QLoRA recipes load the base model in 16 bits (torch_dtype bf16/fp16) and keep
// it so, whatever the precision flag, since a frozen weight needs no fp32 copy to be
// updated; an fp32 recipe keeps fp32 weights.
constexpr double frozen_weight_bytes(const precision_recipe& r) {
    const double w = size_of(r.weights), a = size_of(r.activations);
    return r.autocast && a < w ? a : w;
}

// Adapters train in fp32 with fp32 gradients and fp32 optimizer state, also when the
// base is 16-bit. ASSUMPTION: Hugging Face PEFT keeps adapter weights in fp32 over a
// 16-bit base (get_peft_model's autocast_adapter_dtype; not pinned to a commit here).
// Under autocast the 16-bit copies it makes of them per forward are counted.
inline constexpr dtype adapter_dtype = dtype::fp32;

// The adapters' optimizer state from their shapes, as optimizer_state_bytes counts a
// model's tensors: A (d_in×r) and B (r×d_out) per adapted projection per layer, fp32
// state (Adafactor factors each matrix: rows + cols values; 8-bit Adam keeps 32-bit
// state under 4096 elements).
constexpr bytes adapter_optimizer_state_bytes(optimizer_kind k, const transformer_config& m,
                                              const finetune_spec& f) {
    const double s = size_of(adapter_dtype);
    double total = 0;
    const auto tensor = [&](double rows, double cols) {
        const double n = rows * cols;
        switch (k) {
            case optimizer_kind::sgd: return 0.0;
            case optimizer_kind::sgd_momentum:
            case optimizer_kind::lion: return n * s;
            case optimizer_kind::adamw:
            case optimizer_kind::adamw_fused: return 2 * n * s;
            case optimizer_kind::adafactor: return (rows + cols) * s;
            case optimizer_kind::adam8bit: return optimizer_detail::adam8bit_state_of(n);
        }
        return 0.0;
    };
    for (const auto& x : lora_matrices(m))
        if (f.freezes_base() && x.present && f.adapts(x.target))
            total += tensor(x.d_in, f.rank) + tensor(f.rank, x.d_out);
    return bytes_of(m.layers * total);
}

}  // namespace trainperf
