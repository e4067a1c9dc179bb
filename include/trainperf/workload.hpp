// A training step as a list of operations. One layer's forward is GEMMs (m, n, k,
// batch, dtype) and memory-bound ops (bytes moved, FLOPs); backward adds a dgrad and
// a wgrad GEMM per GEMM and an elementwise backward per memory-bound op; recompute
// repeats forward ops. Shapes are per tensor-parallel rank.
#pragma once

#include <string_view>
#include <vector>

#include "dtype.hpp"
#include "error.hpp"
#include "framework.hpp"
#include "kernel_model.hpp"
#include "model.hpp"
#include "parallel.hpp"
#include "units.hpp"

namespace trainperf {

enum class op_phase { forward, backward_data, backward_weight, backward };

constexpr std::string_view to_string(op_phase p) {
    switch (p) {
        case op_phase::forward: return "forward";
        case op_phase::backward_data: return "dgrad";
        case op_phase::backward_weight: return "wgrad";
        case op_phase::backward: return "backward";
    }
    return "?";
}

// Where an op sits in the layer; selective recompute repeats the attention core.
enum class op_region { attention_core, other };

struct gemm_op {
    std::string_view name;
    gemm_shape shape;
    op_phase phase = op_phase::forward;
    op_region region = op_region::other;
};

struct memory_op {
    std::string_view name;
    bytes moved = bytes_of(0.0);   // read + written
    flops work = flops_of(0.0);
    op_phase phase = op_phase::forward;
    op_region region = op_region::other;
};

// What one layer's workload depends on besides the model.
struct layer_context {
    int micro_batch = 1;
    int seq = 1;
    int tp = 1;
    bool sp = false;               // sequence parallel: norms and dropouts on s/t tokens
    dtype math = dtype::bf16;      // GEMM math
    dtype activations = dtype::bf16;
};

constexpr void validate(const layer_context& c, const transformer_config& m) {
    require(c.micro_batch >= 1, "batch", c.micro_batch, "must be at least 1");
    require(c.seq >= 1, "seq", c.seq, "must be at least 1");
    require(c.tp >= 1, "tp", c.tp, "must be at least 1");
    require(m.heads % c.tp == 0, "tp", c.tp, "must divide the number of attention heads");
}

// dgrad and wgrad of C[m×n] = A[m×k]·B[k×n]: dA = dC·Bᵀ is m×k over n; dB = Aᵀ·dC is k×n over m.
constexpr gemm_shape dgrad_of(const gemm_shape& g) { return {g.m, g.k, g.n, g.batch, g.math}; }
constexpr gemm_shape wgrad_of(const gemm_shape& g) { return {g.k, g.n, g.m, g.batch, g.math}; }

// The forward GEMMs of one layer on one tensor-parallel rank.
inline std::vector<gemm_op> layer_forward_gemms(const transformer_config& m, const layer_context& c) {
    validate(c, m);
    const double tokens = double(c.micro_batch) * c.seq;
    const double h = m.hidden, t = c.tp, d = m.head_dim(), s = c.seq;
    // Grouped-query attention: kv heads shard over tp, or are replicated when fewer.
    const double kv = m.kv_width();
    const double kv_per_rank = m.effective_kv_heads() >= c.tp ? kv / t : d;
    const double attention_batch = double(c.micro_batch) * m.heads / t;
    const double f = m.ffn_hidden / t;
    const dtype x = c.math;
    std::vector<gemm_op> ops{
        {"qkv", {tokens, h / t + 2 * kv_per_rank, h, 1, x}},
        {"attention_scores", {s, s, d, attention_batch, x}, op_phase::forward, op_region::attention_core},
        {"attention_context", {s, d, s, attention_batch, x}, op_phase::forward, op_region::attention_core},
        {"attention_out", {tokens, h, h / t, 1, x}},
    };
    if (m.ffn == ffn_kind::swiglu) {
        ops.push_back({"ffn_gate", {tokens, f, h, 1, x}});
        ops.push_back({"ffn_up", {tokens, f, h, 1, x}});
    } else {
        ops.push_back({"ffn_up", {tokens, f, h, 1, x}});
    }
    ops.push_back({"ffn_down", {tokens, h, f, 1, x}});
    return ops;
}

// The dgrad and wgrad GEMM of every forward GEMM. The attention core has no
// weights: both of its backward GEMMs are input gradients.
inline std::vector<gemm_op> backward_gemms_of(const std::vector<gemm_op>& forward) {
    std::vector<gemm_op> ops;
    ops.reserve(2 * forward.size());
    for (const auto& g : forward) {
        ops.push_back({g.name, dgrad_of(g.shape), op_phase::backward_data, g.region});
        ops.push_back({g.name, wgrad_of(g.shape),
                       g.region == op_region::attention_core ? op_phase::backward_data
                                                             : op_phase::backward_weight,
                       g.region});
    }
    return ops;
}

// Forward, dgrad and wgrad GEMMs of one layer (the list the cuBLASLt harness runs).
inline std::vector<gemm_op> layer_gemms(const transformer_config& m, int micro_batch, int seq,
                                        int tp, dtype math) {
    std::vector<gemm_op> ops = layer_forward_gemms(
        m, {.micro_batch = micro_batch, .seq = seq, .tp = tp, .math = math, .activations = math});
    const auto backward = backward_gemms_of(ops);
    ops.insert(ops.end(), backward.begin(), backward.end());
    return ops;
}

// The memory-bound forward ops of one layer under a framework profile. Sizes are
// per rank: hidden-sized tensors shrink by tp only with sequence parallelism.
inline std::vector<memory_op> layer_forward_memory_ops(const transformer_config& m,
                                                       const layer_context& c,
                                                       const framework_profile& fw) {
    validate(c, m);
    const double a = size_of(c.activations);
    const double mask = 1.0;  // dropout masks are one byte per element
    const double tokens = double(c.micro_batch) * c.seq;
    const double hidden = tokens * m.hidden / (c.sp ? c.tp : 1);     // norms, dropout, residual
    const double hidden_tp = tokens * m.hidden / c.tp;               // inside the TP region
    const double ffn = tokens * m.ffn_hidden / c.tp;
    const double scores = double(c.micro_batch) * (m.heads / c.tp) * double(c.seq) * c.seq;
    const auto op = [](std::string_view name, double moved, double work,
                       op_region region = op_region::other) {
        return memory_op{name, bytes_of(moved), flops_of(work), op_phase::forward, region};
    };
    std::vector<memory_op> ops;
    const std::string_view norm = m.norm == norm_kind::layernorm ? "layernorm" : "rmsnorm";
    ops.push_back(op(norm, 2 * hidden * a, 8 * hidden));
    if (fw.head_layout_copies) ops.push_back(op("split_heads_copy", 2 * 3 * hidden_tp * a, 0));
    if (!fw.flash_attention) {
        const auto core = op_region::attention_core;
        if (fw.fused_softmax) {
            ops.push_back(op("scale_mask_softmax", 2 * scores * a, 6 * scores, core));
        } else {
            ops.push_back(op("scale", 2 * scores * a, scores, core));
            // Causal mask (decoders) or padding mask (encoders): one more pass either way.
            ops.push_back(op("attention_mask", 2 * scores * a + scores * mask, scores, core));
            ops.push_back(op("softmax", 2 * scores * a, 5 * scores, core));
        }
        if (m.dropout) ops.push_back(op("attention_dropout", 2 * scores * a + scores * mask, scores, core));
    } else {
        // One fused kernel reads q, k, v and writes the context; GEMM FLOPs stay in the GEMMs.
        ops.push_back(op("flash_attention_io", 4 * hidden_tp * a, 0, op_region::attention_core));
    }
    if (fw.head_layout_copies) ops.push_back(op("merge_heads_copy", 2 * hidden_tp * a, 0));
    const auto residual_block = [&](std::string_view fused_name, std::string_view dropout_name,
                                    std::string_view add_name) {
        if (!m.dropout) {
            ops.push_back(op(add_name, 3 * hidden * a, hidden));
        } else if (fw.fused_bias_dropout_add) {
            ops.push_back(op(fused_name, 3 * hidden * a + hidden * mask, 3 * hidden));
        } else {
            ops.push_back(op(dropout_name, 2 * hidden * a + hidden * mask, hidden));
            ops.push_back(op(add_name, 3 * hidden * a, hidden));
        }
    };
    residual_block("bias_dropout_add_attention", "dropout_attention", "residual_add_attention");
    ops.push_back(op(norm, 2 * hidden * a, 8 * hidden));
    if (m.ffn == ffn_kind::swiglu) {
        // silu(gate) · up: one fused kernel, or silu then multiply.
        if (fw.fused_bias_gelu) {
            ops.push_back(op("swiglu", 3 * ffn * a, 6 * ffn));
        } else {
            ops.push_back(op("silu", 2 * ffn * a, 5 * ffn));
            ops.push_back(op("gate_multiply", 3 * ffn * a, ffn));
        }
    } else if (fw.fused_bias_gelu) {
        ops.push_back(op("bias_gelu", 2 * ffn * a, 10 * ffn));
    } else {
        for (int k = 0; k < fw.gelu_kernels; ++k) ops.push_back(op("gelu_part", 2 * ffn * a, 2 * ffn));
    }
    residual_block("bias_dropout_add_ffn", "dropout_ffn", "residual_add_ffn");
    return ops;
}

// The elementwise backward of each forward memory op.
inline std::vector<memory_op> backward_of(const std::vector<memory_op>& forward,
                                          const framework_profile& fw) {
    std::vector<memory_op> ops;
    ops.reserve(forward.size());
    for (const auto& f : forward)
        ops.push_back({f.name, fw.backward_traffic_ratio * f.moved, 2.0 * f.work,
                       op_phase::backward, f.region});
    return ops;
}

}  // namespace trainperf
