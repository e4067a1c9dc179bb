// Software profiles as data: which elementwise ops a framework fuses, how its
// optimizer runs, whether gradient sync overlaps backward, and the memory it holds
// beyond the model's own state. A user can define a profile of their own.
#pragma once

#include <array>
#include <string_view>

#include "catalog_lookup.hpp"
#include "error.hpp"
#include "units.hpp"

namespace trainperf {

// The numeric constants below (traffic ratios, kernel counts, overlap share, per-step
// overhead, fragmentation) are ASSUMPTIONS, not measurements: only the megatron profile
// has been checked against published times (docs/validation.md); the others are
// priors that a measurement of the framework should replace.
struct framework_profile {
    std::string_view name = "custom";

    // --- which elementwise kernels exist (workload.hpp turns these into ops) ---
    bool fused_softmax = false;       // scale + mask + softmax in one kernel (Megatron)
    bool fused_bias_gelu = false;     // bias + GELU in one kernel (Megatron)
    bool fused_bias_dropout_add = false;  // bias + dropout + residual add in one kernel
    bool flash_attention = false;     // attention core in one kernel, no s² tensor in memory
    int gelu_kernels = 1;             // kernels of an unfused GELU (HF gelu_new is written in Python ops)
    bool head_layout_copies = false;  // split/merge-heads permute + contiguous copies (HF eager)
    double backward_traffic_ratio = 1.5;  // bytes of an elementwise backward / its forward
                                          // (reads output grad and saved input, writes input grad)

    // --- optimizer ---
    bool fused_optimizer = false;     // one multi-tensor kernel over all parameters
    double unfused_optimizer_passes = 2.5;  // extra traffic of a per-op optimizer loop vs fused
    int unfused_kernels_per_tensor = 8;     // Adam as separate mul_/add_/addcmul_/sqrt/div kernels

    // --- communication and schedule ---
    bool overlap_data_parallel_sync = false;  // bucketed all-reduce during backward (DDP)
    double overlappable_backward_fraction = 0.0;  // share of backward time that can hide sync
    bool fp32_gradient_accumulation = false;  // Megatron/DeepSpeed keep a fp32 main_grad
    seconds per_step_overhead = seconds_of(0.0);  // host-side work per optimizer step

    // --- memory held beyond model state and activations (peak allocated; the
    // fields mirror memory.hpp's memory_overheads, which step.hpp fills from them) ---
    bool fp32_logits = false;         // logits upcast to fp32 for the loss
    double loss_buffers = 2.0;        // b·s·V buffers besides the logits live at the peak
    bytes workspace = mebibytes_of(32.0);  // cuBLAS workspace and persistent buffers
    bytes gradient_buckets = bytes_of(0.0);  // communication buckets when dp > 1
    double gradient_bucket_copy = 0.0;       // share of gradients copied into them
    double optimizer_temporaries = 0.0;      // × local fp32 parameter bytes during the step
    double fragmentation = 0.0;       // caching-allocator slack as a fraction of the peak
};

// HF Transformers Trainer on PyTorch eager: unfused elementwise ops, attention
// probabilities materialised over s², per-tensor optimizer unless adamw-fused, DDP
// overlaps the all-reduce with backward in 25 MB buckets.
inline constexpr framework_profile pytorch_eager_profile{
    .name = "pytorch-eager",
    .fused_softmax = false,
    .fused_bias_gelu = false,
    .fused_bias_dropout_add = false,
    .flash_attention = false,
    // HF's NewGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) as PyTorch
    // ops: pow, mul, add, mul, tanh, add, mul, mul.
    .gelu_kernels = 8,
    .head_layout_copies = true,
    .fused_optimizer = false,
    .overlap_data_parallel_sync = true,
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = false,
    .per_step_overhead = milliseconds_of(2.0),
    // HF's loss upcasts the logits to fp32; the log-softmax and the logits' gradient
    // are live at the peak besides them.
    .fp32_logits = true,
    .loss_buffers = 2.0,
    // PyTorch's cuBLAS workspace (32 MiB on Hopper, CUDABlasHandlePool.cpp).
    .workspace = mebibytes_of(32.0),
    // DDP: 25 MB buckets (bucket_cap_mb) holding a copy of every gradient, since the
    // Trainer leaves gradient_as_bucket_view off.
    .gradient_buckets = megabytes_of(25.0),
    .gradient_bucket_copy = 1.0,
    .optimizer_temporaries = 0.0,  // the per-tensor loop allocates one tensor at a time
    .fragmentation = 0.05,
};

// Megatron-LM (2022): fused bias-GELU, bias-dropout-add, scaled masked softmax and
// layernorm, fused Adam (Apex), fp32 main grads, data-parallel all-reduce after
// backward (not overlapped).
inline constexpr framework_profile megatron_profile{
    .name = "megatron",
    .fused_softmax = true,
    .fused_bias_gelu = true,
    .fused_bias_dropout_add = true,
    .flash_attention = false,
    .gelu_kernels = 1,
    .head_layout_copies = false,
    .fused_optimizer = true,
    .overlap_data_parallel_sync = false,
    .overlappable_backward_fraction = 0.0,
    .fp32_gradient_accumulation = true,
    .per_step_overhead = milliseconds_of(5.0),
    .fp32_logits = true,       // vocab-parallel cross entropy works in fp32
    .loss_buffers = 1.0,       // it overwrites the logits with the softmax in place
    .workspace = mebibytes_of(32.0),
    .gradient_buckets = bytes_of(0.0),  // grads live in one contiguous fp32 buffer
    .gradient_bucket_copy = 0.0,
    .optimizer_temporaries = 0.0,
    .fragmentation = 0.05,
};

// HF model code under the DeepSpeed engine: ZeRO stages, optimizer offload to the
// CPU, fused Adam on the GPU, communication overlapped with backward.
inline constexpr framework_profile deepspeed_profile{
    .name = "deepspeed",
    .fused_softmax = false,
    .fused_bias_gelu = false,
    .fused_bias_dropout_add = false,
    .flash_attention = false,
    .gelu_kernels = 8,
    .head_layout_copies = true,
    .fused_optimizer = true,
    .overlap_data_parallel_sync = true,
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = true,
    .per_step_overhead = milliseconds_of(5.0),
    .fp32_logits = true,
    .loss_buffers = 2.0,
    .workspace = mebibytes_of(32.0),
    // ZeRO's reduce bucket (reduce_bucket_size = 5e8 elements, fp16 by default).
    .gradient_buckets = bytes_of(5e8 * 2.0),
    .gradient_bucket_copy = 0.0,
    .optimizer_temporaries = 0.0,
    .fragmentation = 0.08,
};

inline constexpr std::array framework_profiles{pytorch_eager_profile, megatron_profile,
                                               deepspeed_profile};

constexpr const framework_profile& lookup_framework(std::string_view name) {
    return find_by_name(framework_profiles, "framework", name);
}

}  // namespace trainperf
