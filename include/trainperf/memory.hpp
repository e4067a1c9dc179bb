// Memory per GPU during training: static state (weights, gradients, master copy,
// optimizer state) split by tensor/pipeline parallelism and sharded by ZeRO;
// activations after Korthikanti et al. 2022; logits, workspace and communication
// buffers. Reports peak allocated (what torch.cuda.max_memory_allocated shows), the
// phase that peaks, and whether it fits. Derivations: docs/memory.md.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

#include "dtype.hpp"
#include "error.hpp"
#include "hardware.hpp"
#include "model.hpp"
#include "models/catalog.hpp"
#include "optimizer.hpp"
#include "parallel.hpp"
#include "precision.hpp"
#include "units.hpp"

namespace trainperf {

// What a framework adds on top of the model's own tensors. The defaults describe a
// plain PyTorch / Hugging Face run; framework profiles supply their own values.
struct memory_overheads {
    // Logits and loss: HF upcasts the logits to fp32 for the cross-entropy; besides
    // the logits themselves `loss_buffers` b·s·V buffers are live at the peak (the
    // log-softmax kept for backward and the gradient of the logits).
    bool fp32_logits = true;
    double loss_buffers = 2;
    // Dropout masks (1 B per element) are part of Korthikanti's 34·s·b·h; models
    // trained without dropout (LLaMA) keep none.
    bool dropout = true;
    // FlashAttention keeps no s × s matrices, only an fp32 log-sum-exp per row.
    bool flash_attention = false;
    // cuBLAS workspace: PyTorch defaults to 32 MiB on Hopper (":4096:8") and 8.125 MiB
    // before it (":4096:2:16:8"), CUDABlasHandlePool.cpp; the larger is the default.
    bytes workspace = mebibytes_of(32);
    // Temporary buffers of the backward pass not covered by the activation formula.
    bytes temporaries = bytes_of(0);
    // Gradient communication buckets when dp > 1 (bytes), plus a fraction of the
    // gradients duplicated into them (PyTorch DDP without gradient_as_bucket_view
    // copies every gradient into its buckets: 1.0).
    bytes gradient_buckets = bytes_of(0);
    double gradient_bucket_copy = 0.0;
    // Temporaries of the optimizer step, as a multiple of the local fp32 parameter
    // bytes (a per-tensor or foreach AdamW allocates intermediates; fused: ~0).
    double optimizer_temporaries = 0.0;
    // Caching-allocator overhead (reserved beyond allocated), a fraction of the peak.
    double fragmentation = 0.0;
    // Devices whose memory is shared with the CPU (Jetson): what the OS, the CPU side
    // of the training process and the desktop keep. An estimate, not a datasheet
    // number (Ubuntu + Python + PyTorch CPU side typically hold 1.5-3 GB).
    bytes host_reserve = gigabytes_of(2);
};

constexpr void validate(const memory_overheads& o) {
    require(o.loss_buffers >= 0, "loss_buffers", o.loss_buffers, "must not be negative");
    require(o.workspace.value() >= 0, "workspace", o.workspace.value(), "must not be negative");
    require(o.temporaries.value() >= 0, "temporaries", o.temporaries.value(),
            "must not be negative");
    require(o.gradient_buckets.value() >= 0, "gradient_buckets", o.gradient_buckets.value(),
            "must not be negative");
    require(o.gradient_bucket_copy >= 0, "gradient_bucket_copy", o.gradient_bucket_copy,
            "must not be negative");
    require(o.optimizer_temporaries >= 0, "optimizer_temporaries", o.optimizer_temporaries,
            "must not be negative");
    require(o.fragmentation >= 0 && o.fragmentation < 1, "fragmentation", o.fragmentation,
            "must be in [0, 1)");
    require(o.host_reserve.value() >= 0, "host_reserve", o.host_reserve.value(),
            "must not be negative");
}

enum class memory_phase { forward_backward, optimizer_step };

constexpr std::string_view to_string(memory_phase p) {
    return p == memory_phase::forward_backward ? "forward-backward" : "optimizer-step";
}

struct memory_breakdown {
    bytes weights = bytes_of(0);
    bytes gradients = bytes_of(0);
    bytes master_weights = bytes_of(0);
    bytes optimizer_state = bytes_of(0);
    bytes activations = bytes_of(0);      // kept for backward, all micro-batches in flight
    bytes logits = bytes_of(0);           // logits and loss buffers
    bytes workspace = bytes_of(0);
    bytes buffers = bytes_of(0);          // gradient buckets, ZeRO-3 gathered weights
    bytes temporaries = bytes_of(0);      // backward temporaries
    bytes optimizer_temporaries = bytes_of(0);
    bytes fragmentation = bytes_of(0);    // reserved beyond the allocated peak
    bytes offloaded_to_host = bytes_of(0);  // master + optimizer state moved to the CPU
    int stage = 0;                        // the pipeline stage reported (the one that peaks)

    constexpr bytes static_state() const {
        return weights + gradients + master_weights + optimizer_state;
    }
    // End of forward / start of backward: all activations and the logits are live.
    // Gradients are counted as allocated (the second and later steps without
    // zero_grad(set_to_none), DDP buckets), which errs on the safe side.
    constexpr bytes forward_backward_peak() const {
        return static_state() + activations + logits + workspace + buffers + temporaries;
    }
    constexpr bytes optimizer_step_peak() const {
        return static_state() + workspace + buffers + optimizer_temporaries;
    }
    constexpr memory_phase peak_phase() const {
        return optimizer_step_peak() > forward_backward_peak() ? memory_phase::optimizer_step
                                                                : memory_phase::forward_backward;
    }
    constexpr bytes peak_allocated() const {
        return peak_phase() == memory_phase::optimizer_step ? optimizer_step_peak()
                                                             : forward_backward_peak();
    }
    // What the GPU must hold: peak allocated plus allocator fragmentation.
    constexpr bytes total() const { return peak_allocated() + fragmentation; }
};

// The components in print order with their report names (CLI tables and JSON keys).
struct named_bytes {
    std::string_view name;
    bytes value;
};

constexpr std::array<named_bytes, 11> components(const memory_breakdown& m) {
    return {{{"weights", m.weights},
             {"gradients", m.gradients},
             {"master_weights", m.master_weights},
             {"optimizer_state", m.optimizer_state},
             {"activations", m.activations},
             {"logits", m.logits},
             {"workspace", m.workspace},
             {"buffers", m.buffers},
             {"temporaries", m.temporaries},
             {"optimizer_temporaries", m.optimizer_temporaries},
             {"fragmentation", m.fragmentation}}};
}

// ---- Static state for a bare parameter count -----------------------------------
// Bytes per parameter: weights + gradients + master + optimizer state, e.g. fp32 +
// AdamW: 4 + 4 + 8 = 16 B; bf16 mixed + AdamW: 2 + 2 + 4 + 8 = 16 B as well (only
// activations shrink); pure bf16 + AdamW: 2 + 2 + 4 = 8 B.
constexpr bytes static_state_bytes(double params, const precision_recipe& r, optimizer_kind k) {
    require(params > 0 && params < 1e16, "params", params, "must be a positive parameter count");
    return bytes_of(params * model_state_bytes_per_parameter(r)) +
           optimizer_state_bytes(k, params, r.optimizer_state);
}

// ---- Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models", §4) ---------------------------------------------------
// The paper's closed forms, bytes per layer with 16-bit activations and 1-byte
// dropout masks (t = tensor-parallel size, a = heads):
//   none, t = 1            s·b·h·(34 + 5·a·s/h)
//   TP                     s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   TP + SP                s·b·h·(34 + 5·a·s/h)/t
//   TP + selective         s·b·h·(10 + 24/t)
//   TP + SP + selective    s·b·h·34/t
//   full recompute         2·s·b·h (the layer input)
constexpr bytes korthikanti_activation_bytes_per_layer(double s, double b, double h, double a,
                                                       double t, bool sp, recompute_mode r) {
    const double sbh = s * b * h;
    if (r == recompute_mode::full) return bytes_of(2 * sbh / (sp ? t : 1.0));
    const double scores = r == recompute_mode::selective ? 0.0 : 5 * a * s / h;
    if (sp) return bytes_of(sbh * (34 + scores) / t);
    return bytes_of(sbh * (10 + 24 / t + scores / t));
}

// The same derivation term by term, generalised to GQA (kv width), any FFN width,
// SwiGLU, fp32 activations, no dropout and FlashAttention; it reduces to the closed
// forms above for a GPT layer (kv = h, f = 4h, GELU, dropout, 16-bit). Per layer:
//   not split by TP (split by SP): 2 layernorm inputs 4·sbh, QKV input 2·sbh, FFN
//     input 2·sbh (all × e, e = activation bytes / 2), dropout masks 2·sbh (1 B)
//   split by TP: Q 2·sbh, K and V 2·sb·kv each, output-projection input 2·sbh, FFN
//     GELU input and FFN-down input 2·sbf each (SwiGLU: gate, up, product 3 × 2·sbf),
//     all × e
//   attention core, split by TP: softmax output 2·as²b and its dropout output
//     2·as²b (× e) + mask as²b (1 B); without dropout only 2·as²b · e;
//     FlashAttention: an fp32 log-sum-exp, 4·asb
constexpr bytes activation_bytes_per_layer(const transformer_config& m, dtype activations,
                                           int micro_batch, int seq, int tp, bool sp,
                                           recompute_mode r, const memory_overheads& o = {}) {
    const double s = seq, b = micro_batch, h = m.hidden, a = m.heads, t = tp;
    const double f = m.ffn_hidden, kv = m.kv_width();
    const double e = size_of(activations) / 2.0;
    const double sbh = s * b * h;
    if (r == recompute_mode::full) return bytes_of(2 * e * sbh / (sp ? t : 1.0));
    const bool dropout = o.dropout && m.dropout;  // the model or the framework can turn it off
    const double masks = dropout ? 2 * sbh : 0.0;
    const double unsplit = 8 * e * sbh + masks;
    const double ffn_terms = m.ffn == ffn_kind::swiglu ? 6.0 : 4.0;
    const double split = e * s * b * (4 * h + 4 * kv + ffn_terms * f);
    double core = 0;
    if (r != recompute_mode::selective) {
        if (o.flash_attention) core = 4 * a * s * b;
        else core = dropout ? a * s * s * b * (4 * e + 1) : a * s * s * b * 2 * e;
    }
    return bytes_of((sp ? unsplit / t : unsplit) + (split + core) / t);
}

namespace memory_detail {
constexpr double ceil_div(int a, int b) { return double((a + b - 1) / b); }

constexpr void check_inputs(const transformer_config& m, const parallel_layout& p, int seq,
                            const memory_overheads& o) {
    validate(m);
    validate(p, m);
    validate(o);
    require(seq >= 1, "seq", seq, "must be at least 1");
    require(m.positions != position_kind::learned || m.max_seq == 0 || seq <= m.max_seq, "seq",
            seq, "exceeds the model's learned position table (max_seq)");
}

// One pipeline stage's memory; stage 0 holds the embedding and the most
// micro-batches in flight, the last stage the head and the logits.
constexpr memory_breakdown stage_memory(const transformer_config& m, const precision_recipe& r,
                                        optimizer_kind k, const parallel_layout& p, int seq,
                                        const memory_overheads& o, bool first, bool last) {
    memory_breakdown mb;
    mb.stage = first ? 0 : p.pp - 1;
    const double t = p.tp, dp = p.dp;
    const double s = seq, b = p.micro_batch, h = m.hidden;
    const double e = size_of(r.activations) / 2.0;
    const int stage_layers = int(ceil_div(m.layers, p.pp));

    // Parameters held by this stage, then split by TP (vocab-parallel embedding too).
    double params = stage_layers * layer_parameters(m);
    if (first) params += embedding_parameters(m);
    if (last) params += head_parameters(m);
    if (last && !first && m.tied_embeddings) params += double(m.vocab) * h;  // Megatron's copy
    const double total_params = parameter_count(m);
    const double local = params / t;
    const double share = local / total_params;  // shape-aware optimizer state, prorated

    const double zero_optimizer = p.zero >= 1 ? dp : 1.0;
    const double zero_gradients = p.zero >= 2 ? dp : 1.0;
    const double zero_weights = p.zero >= 3 ? dp : 1.0;
    mb.weights = bytes_of(local * size_of(r.weights) / zero_weights);
    mb.gradients = bytes_of(local * size_of(r.gradients) / zero_gradients);
    const bytes master = bytes_of(r.fp32_master ? local * 4.0 / zero_optimizer : 0.0);
    const bytes state = share * optimizer_state_bytes(k, m, r.optimizer_state) / zero_optimizer;
    if (p.offload == offload_mode::optimizer) {
        mb.offloaded_to_host = master + state;
    } else {
        mb.master_weights = master;
        mb.optimizer_state = state;
    }

    // Activations: micro-batches in flight on this stage (1F1B: p on the first
    // stage, 1 on the last), interleaving's extra factor on the first stage.
    const double in_flight = first ? std::min(p.pp, p.grad_accum) : 1.0;
    const double interleave =
        (first && p.interleave > 1 && p.pp > 1) ? 1.0 + double(p.pp - 1) / (p.pp * p.interleave)
                                                : 1.0;
    const bytes per_layer = activation_bytes_per_layer(m, r.activations, p.micro_batch, seq, p.tp,
                                                       p.sp, p.recompute, o);
    bytes act = double(stage_layers) * in_flight * interleave * per_layer;
    const double seq_split = p.sp ? t : 1.0;
    if (first && o.dropout && m.dropout) act += bytes_of(in_flight * s * b * h / seq_split);  // embedding mask
    if (last) act += bytes_of(4 * e * s * b * h / seq_split);  // final norm and head inputs
    if (p.recompute == recompute_mode::full)  // one layer rebuilt during its backward
        act += activation_bytes_per_layer(m, r.activations, p.micro_batch, seq, p.tp, p.sp,
                                          recompute_mode::none, o);
    mb.activations = act;

    if (last) {
        const double loss_bytes = o.fp32_logits ? 4.0 : size_of(r.activations);
        mb.logits = bytes_of(b * s * double(m.vocab) / t *
                             (size_of(r.activations) + o.loss_buffers * loss_bytes));
    }
    mb.workspace = o.workspace;
    mb.temporaries = o.temporaries;
    if (p.dp > 1) mb.buffers = o.gradient_buckets + o.gradient_bucket_copy * mb.gradients;
    if (p.zero == 3 && p.dp > 1)  // the gathered layer being used and the one prefetched
        mb.buffers += bytes_of(2 * layer_parameters(m) / t * size_of(r.weights));
    if (p.offload == offload_mode::none)
        mb.optimizer_temporaries = bytes_of(o.optimizer_temporaries * local * 4.0 / zero_optimizer);
    mb.fragmentation = o.fragmentation * mb.peak_allocated();
    return mb;
}
}  // namespace memory_detail

// Memory of the GPU that needs the most: with pp > 1 the first stage (embedding, p
// micro-batches in flight) or the last (head, logits), whichever is larger.
// layout.micro_batch is the micro-batch size b; layout.grad_accum the number of
// micro-batches per step (it bounds those in flight).
constexpr memory_breakdown memory_per_gpu(const transformer_config& m, const precision_recipe& r,
                                          optimizer_kind k, const parallel_layout& p, int seq,
                                          const memory_overheads& o = {}) {
    memory_detail::check_inputs(m, p, seq, o);
    if (p.pp == 1) return memory_detail::stage_memory(m, r, k, p, seq, o, true, true);
    const memory_breakdown first = memory_detail::stage_memory(m, r, k, p, seq, o, true, false);
    const memory_breakdown last = memory_detail::stage_memory(m, r, k, p, seq, o, false, true);
    return last.total() > first.total() ? last : first;
}

// Memory the training process may use: all of it on a discrete GPU; on devices that
// share DRAM with the CPU (Jetson) minus what the OS and the CPU side keep.
constexpr bytes usable_memory(const gpu_spec& g, const memory_overheads& o = {}) {
    return g.memory_shared_with_host ? g.memory_capacity - o.host_reserve : g.memory_capacity;
}

// Also checks that the GPU can run the recipe (bf16 on V100 throws).
constexpr bool fits(const gpu_spec& g, const transformer_config& m, const precision_recipe& r,
                    optimizer_kind k, const parallel_layout& p, int seq,
                    const memory_overheads& o = {}) {
    check_supported(g, r);
    return memory_per_gpu(m, r, k, p, seq, o).total() <= usable_memory(g, o);
}

// Tag types: static_assert(!fits(h100_sxm{}, llama2_7b{}, recipe(precision_kind::fp32), ...)).
template <hardware H, model M>
constexpr bool fits(H, M, const precision_recipe& r, optimizer_kind k, const parallel_layout& p,
                    int seq, const memory_overheads& o = {}) {
    return fits(H::spec, M::config, r, k, p, seq, o);
}

// The largest micro-batch that fits (layout.micro_batch is ignored), 0 when even a
// micro-batch of 1 does not. Memory grows with the batch, so a doubling search then
// bisection finds it.
constexpr int max_micro_batch(const gpu_spec& g, const transformer_config& m,
                              const precision_recipe& r, optimizer_kind k, parallel_layout p,
                              int seq, const memory_overheads& o = {}) {
    auto fits_batch = [&](int b) {
        p.micro_batch = b;
        return fits(g, m, r, k, p, seq, o);
    };
    if (!fits_batch(1)) return 0;
    int good = 1, bad = 2;
    constexpr int limit = 1 << 24;
    while (bad <= limit && fits_batch(bad)) {
        good = bad;
        bad *= 2;
    }
    if (bad > limit) return good;
    while (bad - good > 1) {
        const int mid = good + (bad - good) / 2;
        if (fits_batch(mid)) good = mid;
        else bad = mid;
    }
    return good;
}

template <hardware H, model M>
constexpr int max_micro_batch(H, M, const precision_recipe& r, optimizer_kind k,
                              const parallel_layout& p, int seq, const memory_overheads& o = {}) {
    return max_micro_batch(H::spec, M::config, r, k, p, seq, o);
}

}  // namespace trainperf
