// The kernel model's parameters: how close a GPU's GEMMs and memory-bound kernels
// come to the datasheet, and what a launch costs. Defaults per architecture; a
// calibration (calibration.hpp) fitted to cuBLASLt measurements replaces them.
#pragma once

#include "error.hpp"
#include "hardware.hpp"
#include "limits.hpp"
#include "units.hpp"

namespace trainperf {

// The efficiency model's parameters. time =
//   launch_overhead + max(quantized_flops / (peak · peak_fraction · k/(k + k_half)),
//                         bytes / (bandwidth · memory_efficiency))
struct kernel_params {
    double peak_fraction = 0.8;     // fraction of datasheet peak reached by large GEMMs
    double tile_m = 128;            // output tile used for wave quantization
    double tile_n = 128;
    double k_half = 64;             // k at which the main loop reaches half its steady rate
    double memory_efficiency = 0.8; // achieved fraction of datasheet memory bandwidth
    seconds launch_overhead = microseconds_of(5.0);
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
}

// Defaults per architecture. ASSUMPTION: priors, not fits. Large bf16 GEMMs are taken
// to reach 80 % of the dense datasheet peak (the one constant examined against
// Korthikanti et al. 2022 Table 5, docs/validation.md), copy kernels 85-88 % of HBM
// bandwidth, a launch 4-5 µs. A calibration fitted on the user's own cuBLASLt
// measurements replaces them (docs/calibration.md).
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
        case gpu_architecture::blackwell:
        case gpu_architecture::cdna3:  // ASSUMPTION: as Hopper; no AMD measurement behind it
            return {.peak_fraction = 0.80, .tile_m = 128, .tile_n = 256, .k_half = 128,
                    .memory_efficiency = 0.88, .launch_overhead = microseconds_of(4.0)};
    }
    return {};
}

}  // namespace trainperf
