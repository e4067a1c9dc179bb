// Fused attention kernels (FlashAttention and its kin): which one runs on a GPU and
// how close it comes to the GPU's 16-bit tensor peak. The attention core
// softmax(Q·Kᵀ/√d)·V runs as one kernel that tiles the keys, keeps a running softmax
// and never writes the s × s scores to memory; its backward recomputes the scores per
// tile from the saved log-sum-exp (Dao 2023, "FlashAttention-2: Faster Attention with
// Better Parallelism and Work Partitioning", arXiv:2307.08691; Shah et al. 2024,
// "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision",
// arXiv:2407.08608).
//
// The efficiency model, per kernel and architecture (attention_time, cost/kernel_model.hpp):
//   rate = peak · clock ratio · efficiency(phase) · d/(d + head_dim_half) · g(s_kv) · occupancy
//   g = s/(s + seq_half)                       without a mask
//   g = s/(s + block + 2·seq_half)             causal
// A thread block owns `block` queries and loops over the keys: a fixed cost per block
// (loading Q, the softmax rescaling, writing O) against work that grows with the keys
// gives s/(s + seq_half); the head size is the inner dimension of both tile GEMMs, as
// k is for a GEMM (d/(d + head_dim_half)). Under a causal mask block i visits i + 1
// key blocks, the diagonal one half masked: n(n+1)/2 blocks for the n²/2 that count,
// and each block's fixed cost is spread over half as much work on average; both give
// s/(s + block + 2·seq_half). Occupancy: batch·heads·⌈s_q/block⌉ thread blocks in waves
// over the SMs, one per SM (FlashAttention-2 parallelises over batch, heads and query
// blocks; the figures below were taken with 16k tokens per batch, where occupancy is 1).
//
// FLOPs follow the FlashAttention benchmarks' convention
// (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py@0251105a):
// forward 4·batch·heads·s_q·s_kv·d, halved under a causal mask; backward 2.5 × forward
// (it recomputes Q·Kᵀ and runs four more products).
#pragma once

#include <array>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"

namespace trainperf {

// The fused attention implementations.
//   flash2: FlashAttention-2 (PyTorch's scaled_dot_product_attention flash backend,
//           the flash-attn package; cuDNN's fused attention implements the same
//           algorithm, NVIDIA cuDNN frontend docs "Attention", 9.x); compute
//           capability 8.0 and above;
//   flash3: a Hopper-native kernel (FlashAttention-3, or cuDNN's fused attention that
//           Transformer Engine selects on Hopper): warp-specialised TMA loads and
//           WGMMA, softmax overlapped with the GEMMs; compute capability 9.0 and
//           above, elsewhere the same software runs flash2;
//   memory_efficient: the kernels before FlashAttention-2 on older GPUs (PyTorch's
//           memory-efficient SDPA backend from xFormers, FlashAttention-1), compute
//           capability below 8.0;
//   flash4: a Blackwell-native kernel (tcgen05 MMA with the accumulators in tensor
//           memory): cuDNN's fused attention, which Transformer Engine prefers on Hopper
//           and later ("Disabling FlashAttention to give FusedAttention preference on
//           Hopper+ for performance reasons", transformer_engine/pytorch/attention/
//           dot_product_attention/utils.py), or FlashAttention-4. FlashAttention-3 does
//           not run on Blackwell ("FlashAttention-3 is currently not supported on NVIDIA's
//           Blackwell generation GPUs", NVIDIA/cudnn-frontend benchmark/
//           sdpa_benchmark_training/README.md): software that prefers flash3 or flash4
//           runs this one at compute capability 10.0 and above.
enum class attention_kernel { flash2, flash3, memory_efficient, flash4 };

template <>
struct enum_names<attention_kernel> {
    static constexpr std::array<enum_name<attention_kernel>, 4> table{
        {{attention_kernel::flash2, "flash2"},
         {attention_kernel::flash3, "flash3"},
         {attention_kernel::memory_efficient, "memory-efficient"},
         {attention_kernel::flash4, "flash4"}}};
};

// The kernel that runs when software that prefers `wanted` runs on a GPU of this
// compute capability (major·10 + minor).
constexpr attention_kernel attention_kernel_on(attention_kernel wanted, int compute_capability) {
    if (compute_capability < 80) return attention_kernel::memory_efficient;
    if (wanted == attention_kernel::flash2 || wanted == attention_kernel::memory_efficient)
        return attention_kernel::flash2;
    if (compute_capability >= 100) return attention_kernel::flash4;  // flash3 or flash4 wanted
    return compute_capability >= 90 ? attention_kernel::flash3 : attention_kernel::flash2;
}

struct attention_kernel_params {
    double forward_efficiency = 0.8;   // of the 16-bit peak, d and s large
    double backward_efficiency = 0.7;
    double head_dim_half = 19;         // d at which the rate is half its asymptote
    double seq_half = 196;             // keys at which a block's fixed cost equals its work
    double block = 128;                // queries per thread block (and keys per tile)
};

constexpr void validate(const attention_kernel_params& p) {
    require(p.forward_efficiency > 0 && p.forward_efficiency <= 1, "attention.forward_efficiency",
            p.forward_efficiency, "must be in (0, 1]");
    require(p.backward_efficiency > 0 && p.backward_efficiency <= 1, "attention.backward_efficiency",
            p.backward_efficiency, "must be in (0, 1]");
    require(p.head_dim_half >= 0 && p.head_dim_half <= 1e4, "attention.head_dim_half", p.head_dim_half,
            "must be between 0 and 10^4");
    require(p.seq_half >= 0 && p.seq_half <= 1e7, "attention.seq_half", p.seq_half, "must be between 0 and 10^7");
    require(p.block >= 1 && p.block <= 4096, "attention.block", p.block, "must be between 1 and 4096");
}

// The published kernels' efficiency. FITTED to the FlashAttention README's benchmark
// figures (Dao-AILab/flash-attention@0251105a: assets/flash2_a100_fwd_bwd_benchmark.png,
// flash2_h100_fwd_bwd_benchmark.png, flash3_fp16_fwd.png; fp16, hidden 2048, head
// size 64/128 (256 for FlashAttention-3), 16k tokens per batch, sequence 512-16k,
// causal and not) with the model above: the data and the fit's residuals are in
// tests/data/flash_attention_benchmarks.csv and docs/validation.md. Block 128 is the
// kernels' query tile (flash-attn csrc/flash_attn/src/flash_fwd_launch_template.h).
//   flash2, A100 (fwd+bwd): efficiency 0.7386, head_dim_half 19, seq_half 196
//     (mean error 1.6 %, max 3.7 % over 22 points; 1.7 % / 3.4 % as the engine prices
//     them, launch and memory included). The README gives forward+backward
//     only on A100; forward and backward are split with the H100's ratio below
//     (ASSUMPTION: the same on both): forward 0.841, backward 0.704.
//   flash2, H100: forward 0.444 (forward figure, shape parameters as on A100), and
//     backward 0.372 from the forward+backward figure (3.5/0.3898 = 1/0.444 + 2.5/e_b).
//     FlashAttention-2 does not use Hopper's WGMMA: "only 35% utilization on H100"
//     (Shah et al. 2024, abstract).
//   flash3, H100: forward 0.944, head_dim_half 53, seq_half 308 (mean 4.7 %, max 15 %
//     over 35 points, worst at 512 tokens causal). No backward figure is published in
//     the README: ASSUMPTION backward/forward as FlashAttention-2's on H100 (0.8375):
//     0.790.
//   memory_efficient: ASSUMPTION half of flash2's Ampere efficiency (FlashAttention-1
//     reaches 41-63 % of FlashAttention-2's rate at 16k on A100 in the same figure).
// Blackwell: FITTED to NVIDIA's cuDNN frontend SDPA training benchmark (BF16, head size
// 128, 2k-32k tokens, causal and not, 64 query heads; NVIDIA/cudnn-frontend@60e572b7 and
// @bb37575d; tests/data/blackwell_attention_benchmarks.csv, docs/validation.md). All
// figures are at head size 128, so head_dim_half is FlashAttention-2's 19 (ASSUMPTION).
//   flash4, compute capability 10.0 (GB200, cuDNN 9.22): forward 0.816, backward 0.653,
//     seq_half 532 (mean 3.9 %, max 11 % over 20 points each way);
//   flash4, 10.3 (GB300, cuDNN 9.22): forward 0.951, backward 0.711, seq_half 456 (mean
//     3.3 %, max 10 %);
//   flash2, 10.0 and above (B200, the flash-attn package's FlashAttention-2, 4k-128k tokens,
//     causal): forward 0.231, backward 0.183, seq_half 548 (mean 1.0 %, max 2.1 %): the
//     Ampere-era kernel reaches a fifth of Blackwell's peak.
constexpr attention_kernel_params attention_kernel_defaults(attention_kernel k, int compute_capability) {
    constexpr attention_kernel_params flash2_ampere{.forward_efficiency = 0.841, .backward_efficiency = 0.704,
                                                    .head_dim_half = 19, .seq_half = 196, .block = 128};
    attention_kernel_params p = flash2_ampere;
    switch (attention_kernel_on(k, compute_capability)) {
        case attention_kernel::flash4:
            if (compute_capability >= 103)
                return {.forward_efficiency = 0.951, .backward_efficiency = 0.711, .head_dim_half = 19,
                        .seq_half = 456, .block = 128};
            return {.forward_efficiency = 0.816, .backward_efficiency = 0.653, .head_dim_half = 19, .seq_half = 532,
                    .block = 128};
        case attention_kernel::flash3:
            return {.forward_efficiency = 0.944, .backward_efficiency = 0.790, .head_dim_half = 53,
                    .seq_half = 308, .block = 128};
        case attention_kernel::flash2:
            if (compute_capability >= 100) {
                p.forward_efficiency = 0.231;
                p.backward_efficiency = 0.183;
                p.seq_half = 548;
            } else if (compute_capability >= 90) {
                p.forward_efficiency = 0.444;
                p.backward_efficiency = 0.372;
            }
            return p;
        case attention_kernel::memory_efficient:
            p.forward_efficiency *= 0.5;
            p.backward_efficiency *= 0.5;
            return p;
    }
    return p;
}

// The sequence factor g of the model above: the share of a thread block's time spent
// on work that counts, as the keys it loops over grow.
constexpr double attention_sequence_factor(const attention_kernel_params& p, double seq_kv, bool causal) {
    return causal ? seq_kv / (seq_kv + p.block + 2 * p.seq_half) : seq_kv / (seq_kv + p.seq_half);
}

}  // namespace trainperf
