// Time of one operation on one GPU: a roofline whose compute efficiency depends on
// the GEMM's shape (wave quantization of output tiles over the SMs, a small-k
// penalty), plus a fixed launch overhead. Memory-bound ops move bytes at an
// effective bandwidth. Parameters have documented defaults per architecture and
// can be replaced by ones calibrated from cuBLASLt measurements (calibration.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>

#include "dtype.hpp"
#include "error.hpp"
#include "hardware.hpp"
#include "units.hpp"

namespace trainperf {

// One (strided-batched) GEMM: batch × [m×k]·[k×n] → [m×n].
struct gemm_shape {
    double m = 0, n = 0, k = 0;
    double batch = 1;
    dtype math = dtype::bf16;     // tensor-core mode; storage is fp32 for tf32/fp32
};

constexpr flops gemm_flops(const gemm_shape& g) { return flops_of(2.0 * g.m * g.n * g.k * g.batch); }

// Each operand read once and the output written once.
constexpr bytes gemm_bytes(const gemm_shape& g) {
    return bytes_of((g.m * g.k + g.k * g.n + g.m * g.n) * g.batch * size_of(g.math));
}

constexpr void validate(const gemm_shape& g) {
    require(g.m >= 1, "gemm.m", g.m, "must be at least 1");
    require(g.n >= 1, "gemm.n", g.n, "must be at least 1");
    require(g.k >= 1, "gemm.k", g.k, "must be at least 1");
    require(g.batch >= 1, "gemm.batch", g.batch, "must be at least 1");
}

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
    require(p.tile_m >= 1 && p.tile_n >= 1, "tile_m", p.tile_m, "tiles must be at least 1");
    require(p.k_half >= 0, "k_half", p.k_half, "must not be negative");
    require(p.memory_efficiency > 0 && p.memory_efficiency <= 1, "memory_efficiency",
            p.memory_efficiency, "must be in (0, 1]");
    require(p.launch_overhead.value() >= 0, "launch_overhead_s", p.launch_overhead.value(),
            "must not be negative");
}

// Defaults per architecture, from public cuBLAS GEMM measurements (docs/kernel_model.md
// gives the sources): large bf16 GEMMs reach ~85 % of peak on A100 and ~75-80 % on
// H100/H200 (the H200 in this workplace ran 788 of 989 TFLOP/s on 8192³ bf16, KINDS.md
// 2026-10-28); copy kernels reach ~85-90 % of HBM bandwidth.
constexpr kernel_params default_kernel_params(gpu_architecture a) {
    switch (a) {
        case gpu_architecture::volta:
            return {.peak_fraction = 0.80, .tile_m = 128, .tile_n = 128, .k_half = 64,
                    .memory_efficiency = 0.85, .launch_overhead = microseconds_of(5.0)};
        case gpu_architecture::ampere:
        case gpu_architecture::ada:
            return {.peak_fraction = 0.80, .tile_m = 128, .tile_n = 256, .k_half = 64,
                    .memory_efficiency = 0.85, .launch_overhead = microseconds_of(4.0)};
        case gpu_architecture::hopper:
        case gpu_architecture::blackwell:
            return {.peak_fraction = 0.80, .tile_m = 128, .tile_n = 256, .k_half = 128,
                    .memory_efficiency = 0.88, .launch_overhead = microseconds_of(4.0)};
    }
    return {};
}

// Output tiles and how evenly they fill the SMs: the fraction of the launched tile
// work that is useful (edge padding and a partial last wave both waste it).
struct wave_quantization {
    double tiles = 0;
    double waves = 0;
    double utilization = 1;   // useful work / (waves · SMs · tile work)
};

inline wave_quantization quantize_with_tile(const gemm_shape& g, int sm_count, double tile_m, double tile_n) {
    const double tiles = std::ceil(g.m / tile_m) * std::ceil(g.n / tile_n) * g.batch;
    const double sms = std::max(1, sm_count);
    const double waves = std::ceil(tiles / sms);
    return {tiles, waves, g.m * g.n * g.batch / (waves * sms * tile_m * tile_n)};
}

// cuBLAS heuristics choose among tile shapes: a rectangular tile is modelled in both
// orientations (e.g. 128×256 and 256×128), and a dimension smaller than the tile gets
// the smallest power-of-two tile (at least 16, the MMA granularity) that covers it,
// as cuBLAS has narrower kernels for skinny problems. The best fit is taken.
namespace kernel_detail {
constexpr double covering_tile(double dim, double tile) {
    double t = 16;
    while (t < dim && t < tile) t *= 2;
    return std::min(t, tile);
}
}  // namespace kernel_detail

inline wave_quantization quantize(const gemm_shape& g, int sm_count, const kernel_params& p) {
    using kernel_detail::covering_tile;
    const auto a = quantize_with_tile(g, sm_count, covering_tile(g.m, p.tile_m), covering_tile(g.n, p.tile_n));
    const auto b = quantize_with_tile(g, sm_count, covering_tile(g.m, p.tile_n), covering_tile(g.n, p.tile_m));
    return b.utilization > a.utilization ? b : a;
}

// Compute-side time of a GEMM before the launch overhead is added.
inline seconds gemm_compute_time(const gpu_spec& gpu, const gemm_shape& g, const kernel_params& p) {
    const double k_efficiency = g.k / (g.k + p.k_half);
    const double eff = p.peak_fraction * k_efficiency * quantize(g, gpu.sm_count, p).utilization;
    return gemm_flops(g) / (gpu.peak_for(g.math) * eff);
}

inline seconds gemm_memory_time(const gpu_spec& gpu, const gemm_shape& g, const kernel_params& p) {
    return gemm_bytes(g) / (gpu.memory_bandwidth * p.memory_efficiency);
}

inline seconds gemm_time(const gpu_spec& gpu, const gemm_shape& g, const kernel_params& p) {
    validate(g);
    return p.launch_overhead + std::max(gemm_compute_time(gpu, g, p), gemm_memory_time(gpu, g, p));
}

// A memory-bound kernel (elementwise, normalisation, softmax, optimizer update).
inline seconds memory_op_time(const gpu_spec& gpu, bytes moved, const kernel_params& p) {
    require(moved.value() >= 0, "bytes", moved.value(), "must not be negative");
    return p.launch_overhead + moved / (gpu.memory_bandwidth * p.memory_efficiency);
}

}  // namespace trainperf
