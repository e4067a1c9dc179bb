// The kernel model's parameters: how close a GPU's GEMMs and memory-bound kernels
// come to the datasheet, and what a launch costs. Defaults per architecture; a
// calibration (calibrate/calibration.hpp) fitted to cuBLASLt measurements replaces them.
#pragma once

#include <array>
#include <string_view>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "hardware.hpp"

namespace trainperf {

// The efficiency model's parameters. time =
//   launch_overhead + max(quantized_flops / (peak · clock ratio · fraction · k/(k + k_half)),
//                         bytes / (bandwidth · memory_efficiency))
// where peak is the datasheet's rate at the boost clock, the clock ratio scales it to
// the clock the board holds under load (gpu_spec::sustained_clock) and fraction is
// peak_fraction for tensor-core math and cuda_core_fraction for fp32 on CUDA cores.
struct kernel_params {
    double peak_fraction = 0.8;     // fraction of the peak at the clock under load reached by large tensor-core GEMMs
    double tile_m = 128;            // output tile used for wave quantization
    double tile_n = 128;
    double k_half = 64;             // k at which the main loop reaches half its steady rate
    double memory_efficiency = 0.8; // achieved fraction of datasheet memory bandwidth
    seconds launch_overhead = microseconds_of(5.0);
    double cuda_core_fraction = 0.9; // the same for fp32 GEMMs on CUDA cores (SGEMM)
    // cuBLAS's heuristics also pick smaller tiles (each halving of a tile side down to
    // 32) and split-K for problems that leave SMs idle; a tile of half the area keeps
    // this fraction of the larger one's rate (less operand reuse). 0: the configured
    // tile only (the calibration's fixed-tile model, docs/calibration.md).
    double small_tile_efficiency = 0.0;
    // The same as peak_fraction for fp8 GEMMs (their own kernels: Hopper's FP8 WGMMA,
    // Blackwell's tcgen05 kind::f8f6f4); 0: peak_fraction.
    double fp8_peak_fraction = 0.0;
    // The same for NVFP4 GEMMs (Blackwell's tcgen05 kind::mxf4nvf4, block scales applied
    // in the MMA); 0: fp8's.
    double fp4_peak_fraction = 0.0;

    constexpr double fraction_for_fp8() const { return fp8_peak_fraction > 0 ? fp8_peak_fraction : peak_fraction; }
    constexpr double fraction_for_fp4() const { return fp4_peak_fraction > 0 ? fp4_peak_fraction : fraction_for_fp8(); }
};

constexpr void validate(const kernel_params& p) {
    require(p.peak_fraction > 0 && p.peak_fraction <= 1, "peak_fraction", p.peak_fraction,
            "must be in (0, 1]");
    require(p.peak_fraction >= 1e-3, "peak_fraction", p.peak_fraction, "must be at least 0.001");
    require(p.tile_m >= 1 && p.tile_m <= 4096, "tile_m", p.tile_m, "must be between 1 and 4096");
    require(p.tile_n >= 1 && p.tile_n <= 4096, "tile_n", p.tile_n, "must be between 1 and 4096");
    require(p.k_half >= 0 && p.k_half <= 1e6, "k_half", p.k_half, "must be between 0 and 10^6");
    require(p.memory_efficiency >= 1e-3 && p.memory_efficiency <= 1, "memory_efficiency",
            p.memory_efficiency, "must be in [0.001, 1]");
    require_in(p.launch_overhead.value(), limits::kernel_launch, "launch_overhead_s");
    require(p.cuda_core_fraction >= 1e-3 && p.cuda_core_fraction <= 1, "cuda_core_fraction", p.cuda_core_fraction,
            "must be in [0.001, 1]");
    require(p.small_tile_efficiency >= 0 && p.small_tile_efficiency <= 1, "small_tile_efficiency",
            p.small_tile_efficiency, "must be in [0, 1] (0: the configured tile only)");
    require(p.fp8_peak_fraction == 0 || (p.fp8_peak_fraction >= 1e-3 && p.fp8_peak_fraction <= 1), "fp8_peak_fraction",
            p.fp8_peak_fraction, "must be 0 (peak_fraction) or in [0.001, 1]");
    require(p.fp4_peak_fraction == 0 || (p.fp4_peak_fraction >= 1e-3 && p.fp4_peak_fraction <= 1), "fp4_peak_fraction",
            p.fp4_peak_fraction, "must be 0 (fp8's) or in [0.001, 1]");
}

// Defaults per architecture. ASSUMPTION: priors, not fits. Large bf16 GEMMs are taken
// to reach 80 % of the dense datasheet peak (the one constant examined against
// Korthikanti et al. 2022 Table 5, docs/validation.md), copy kernels 85-88 % of HBM
// bandwidth, 4-5 µs of GPU time per kernel beyond its work (launch latency and ramp;
// the host's own issue time is priced apart, cost/stage_pricer.hpp). The V100 fit below measures
// 0.71 µs there: the prior errs on the slow side for small kernels. A calibration fitted on the user's own cuBLASLt
// measurements replaces them (docs/calibration.md).
//
// Hopper and Blackwell's GEMM fractions are the Maximum Achievable Matmul FLOPS measured
// with mamf-finder (the best shape of a brute-force search, 100 iterations each; S. Bekman,
// "Machine Learning Engineering Open Book", compute/accelerator/README.md), over the dense
// datasheet peak: H100 SXM bf16 794.5 / 989 = 80.3 %, fp8 1402.6 / 1979 = 70.9 %; H200 SXM
// fp8 1453.4 / 1979 = 73.4 % (Hopper: bf16 0.80, fp8 their mean 0.72); B200 bf16 1745.0 /
// 2250 = 77.6 %, fp8 3432.5 / 4500 = 76.3 %; GB200 1822.0 / 2500 = 72.9 %, 3615.6 / 5000 =
// 72.3 %; B300 1769.0 / 2250 = 78.6 %, 3353.3 / 4500 = 74.5 % (Blackwell: the means, bf16
// 0.76 and fp8 0.74). NVFP4 on Blackwell: 0.72, BF16's 0.76 times the ratio of the two
// formats' fractions in one run of torch._scaled_mm on a B200 at 8192³ (NVFP4 5.37 of 9
// PFLOP/s, 59.7 %; BF16 1.42 of 2.25, 63.1 %: 0.946; pytorch/ao PR #2427,
// benchmarks/float8/bench_matmul.py --recipe nvfp4; ASSUMPTION: the ratio at one shape
// holds at the best shapes, which mamf-finder's search finds, and on Blackwell Ultra
// (B300, GB300), whose FP4 peak is 6x, not 4x, its BF16 one: unmeasured). Blackwell's tile: its 2-SM MMA (tcgen05, cta_group::2) computes a
// 256 × 256 output tile on a pair of SMs, 128 × 256 per SM as on Hopper (NVIDIA/cutlass
// SM100 2-CTA kernels: MmaTileShape 256×256 over a 2×1 cluster, its unit tests'
// "tensorop_2cta ... 256x256x64_2x1x1").
constexpr kernel_params default_kernel_params(gpu_architecture a) {
    switch (a) {
        case gpu_architecture::volta:
        case gpu_architecture::turing:  // ASSUMPTION: as Volta (same tensor-core generation of tiles)
            return {.peak_fraction = 0.80, .tile_m = 128, .tile_n = 128, .k_half = 64,
                    .memory_efficiency = 0.85, .launch_overhead = microseconds_of(5.0)};
        case gpu_architecture::ampere:
        case gpu_architecture::ada:
            return {.peak_fraction = 0.80, .tile_m = 128, .tile_n = 256, .k_half = 64,
                    .memory_efficiency = 0.85, .launch_overhead = microseconds_of(4.0)};
        case gpu_architecture::hopper:
        case gpu_architecture::cdna3:  // ASSUMPTION: as Hopper; no AMD measurement behind it
            return {.peak_fraction = 0.80, .tile_m = 128, .tile_n = 256, .k_half = 128,
                    .memory_efficiency = 0.88, .launch_overhead = microseconds_of(4.0), .fp8_peak_fraction = 0.72};
        case gpu_architecture::blackwell:  // ASSUMPTION: k_half, memory and launch as Hopper
            return {.peak_fraction = 0.76, .tile_m = 128, .tile_n = 256, .k_half = 128,
                    .memory_efficiency = 0.88, .launch_overhead = microseconds_of(4.0), .fp8_peak_fraction = 0.74,
                    .fp4_peak_fraction = 0.72};
    }
    return {};
}

// Parameters fitted on published measurements of one board of a compute capability,
// with where they come from (docs/validation.md, "Single GPU, PyTorch eager"). The
// numbers are those of the data files tests/data/kernel_fits/*.json, which the
// validation program (examples/validate_microbench.cpp --fit) writes and a test
// re-derives from the measurements, so the two cannot drift apart.
struct fitted_kernel_params {
    int compute_capability = 0;
    // The catalog board the measurements stand for. ASSUMPTION: the sm_70 rows were
    // measured on a Tesla V100-SXM2-16GB; its SMs, clocks and HBM2 bandwidth are the
    // 32 GB board's, which the catalog holds.
    std::string_view board;
    double peak_fraction = 0;
    double cuda_core_fraction = 0;  // 0: not fitted (the board ran fp32 on tensor cores)
    double memory_efficiency = 0;
    double launch_overhead_us = 0;  // the GPU's per-kernel overhead between queued kernels
};

// Fits on the matmul and elementwise rows of the transformers micro-benchmarks
// (mli/transformers-benchmarks micro_bench.ipynb, PyTorch 1.13, CUDA 11.7;
// tests/data/transformers_microbench.csv): the n = 8192 GEMMs (the GPU's time, not
// the host's) and the two largest elementwise sizes (docs/validation.md).
inline constexpr std::array<fitted_kernel_params, 2> fitted_kernel_defaults{{
    {70, "v100-sxm2-32gb", 0.777, 0.941, 0.885, 0.71},
    {86, "rtx-3090-ti", 0.994, 0, 0.950, 4.0},
}};

// ASSUMPTION: small_tile_efficiency 0.9, i.e. a 64×128 tile runs at 90 % of a 128×128
// tile's rate per SM and a 64×64 at 81 %: smaller CUTLASS/cuBLAS tiles reuse each
// loaded operand fewer times. What the fits above measured is with it on.
inline constexpr double default_small_tile_efficiency = 0.9;

// The compute capability whose fit a GPU takes. sm_87 (Jetson Orin) and sm_89 (Ada)
// have no fit of their own. ASSUMPTION: sm_89 GeForce and workstation boards behave as
// sm_86 ones (the same half-rate fp32-accumulate tensor math on GeForce); sm_87 as sm_86.
constexpr int fitted_compute_capability(const gpu_spec& gpu) {
    const int cc = gpu.compute_capability;
    return cc == 87 || cc == 89 ? 86 : cc;
}

// A fit laid over parameters: what it measured replaces them (a CUDA-core fraction
// only where one was fitted).
constexpr kernel_params with_fit(kernel_params p, const fitted_kernel_params& f) {
    p.peak_fraction = f.peak_fraction;
    if (f.cuda_core_fraction > 0) p.cuda_core_fraction = f.cuda_core_fraction;
    p.memory_efficiency = f.memory_efficiency;
    p.launch_overhead = microseconds_of(f.launch_overhead_us);
    return p;
}

// Defaults keyed by compute capability (CUTLASS keys its kernels the same way): the
// architecture's prior, with what a fit on a board of the same compute capability
// measured where one exists.
constexpr kernel_params default_kernel_params(const gpu_spec& gpu) {
    kernel_params p = default_kernel_params(gpu.architecture);
    p.small_tile_efficiency = default_small_tile_efficiency;
    for (const auto& f : fitted_kernel_defaults)
        if (f.compute_capability == fitted_compute_capability(gpu)) p = with_fit(p, f);
    return p;
}

// Every default is valid, with or without a fit (a failed check does not compile), so
// a setup that gives no parameters of its own has none to check (spec/setup.hpp validate).
static_assert([] {
    for (const gpu_architecture a : enum_values<gpu_architecture>()) {
        validate(default_kernel_params(gpu_spec{.architecture = a}));
        for (const auto& f : fitted_kernel_defaults)
            validate(default_kernel_params(gpu_spec{.architecture = a, .compute_capability = f.compute_capability}));
    }
    return true;
}());

}  // namespace trainperf
