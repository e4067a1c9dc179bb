// The host of a node as an offloaded optimizer sees it: the CPU cores the training
// process may use, the width of their SIMD units, their sustained clock, the DRAM
// bandwidth, and how fast a copy between a GPU and pageable (not page-locked) host
// memory goes. All GPUs of a node share one host: each gets its share (share_per_gpu).
// Spec-level: cost/step_prices.hpp prices the CPU's work and cost/comm.hpp the copies with these figures.
#pragma once

#include <string_view>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"

namespace trainperf {

// Per node. The defaults describe a common single-socket x86 server; every one is an
// ASSUMPTION (the host is rarely on a GPU's datasheet): describe your own host in the
// system file (io/system_json.hpp, docs/extending.md).
struct host_spec {
    // CPU cores the training process can use on the node (all its ranks together).
    // ASSUMPTION: a 32-core server CPU.
    int cores = 32;
    // fp32 values in one SIMD register of the CPU-Adam kernel: 16 with AVX-512, 8 with
    // AVX2 (256-bit), 4 with SSE/NEON. DeepSpeed's CPU-Adam is written with AVX512 and
    // AVX256 intrinsics and picks the widest the CPU has (DeepSpeed
    // csrc/includes/cpu_adam.h and simd.h@v0.9.5). ASSUMPTION: a CPU with AVX-512.
    int simd_lanes = 16;
    // Sustained all-core clock with the vector units busy. ASSUMPTION: 2.0 GHz, below a
    // server CPU's nominal turbo, as wide-vector code runs at a lower clock.
    hertz clock = megahertz(2000.0);
    // Sustained DRAM bandwidth of the node. ASSUMPTION: 8 channels of DDR4-3200
    // (3200 MT/s × 8 B = 25.6 GB/s each, 204.8 GB/s together) of which ~75 % is sustained.
    byte_rate memory_bandwidth = gb_per_second(150.0);
    // A copy between a GPU and pageable host memory, as a fraction of the host link's
    // achievable rate for page-locked (pinned) memory ("Higher bandwidth is possible
    // between the host and the device when using page-locked (or 'pinned') memory",
    // NVIDIA, "How to Optimize Data Transfers in CUDA C/C++"). DERIVED: DeepSpeed's
    // commit "fix pagable h2d memcpy" (#5301, first in v0.14.1) replaced the copy of the
    // 16-bit weights from pageable memory (2 B per parameter) by a pinned copy of the
    // fp32 weights (4 B per parameter) and reports "Speedup h2d memcpy by 6x on single
    // GPU": per byte the pageable copy ran at 2 / (6 × 4) = 1/12 of the pinned rate on
    // the system measured. That figure includes the fp32 → 16-bit cast the old copy did
    // on the CPU, which this model also charges on its own, so it errs on the slow side.
    double pageable_copy_efficiency = 1.0 / 12.0;
    // The host's time for one bare eager PyTorch op: the Python call, the dispatcher and
    // the CUDA launch of `y = x * 1.2` on a small CUDA tensor without autograd (the
    // elementwise rows of a micro-benchmark at small n measure it). The unit of a
    // framework's host costs in eager mode (spec/framework.hpp). ASSUMPTION: 5 µs, "about
    // 5 µs per op" without autograd in PyTorch issue #41383.
    seconds eager_op_time = microseconds_of(5.0);
};

// ASSUMPTION: SIMD instructions a core retires per cycle in the CPU-Adam loop, on
// average. Server cores have two vector FMA pipes, but the update's square root and
// division occupy the divider for several cycles per vector, and every vector is also
// loaded and stored four to seven times; one instruction per cycle is the order that
// leaves.
inline constexpr double host_simd_instructions_per_cycle = 1.0;

// A host a user described: every figure in its physical range (core/limits.hpp).
constexpr void validate(const host_spec& h) {
    require(h.cores >= 1 && h.cores <= limits::max_host_cores, "host.cores", h.cores,
            "must be between 1 and 65536");
    require(h.simd_lanes >= 1 && h.simd_lanes <= limits::max_simd_lanes, "host.simd_lanes", h.simd_lanes,
            "must be between 1 and 64 fp32 lanes (AVX-512: 16, AVX2: 8)");
    require_in(h.clock.value(), limits::clock, "host.clock_hz");
    require_in(h.memory_bandwidth.value(), limits::memory_bandwidth, "host.memory_bandwidth_bytes_per_second");
    require_in(h.pageable_copy_efficiency, limits::link_efficiency, "host.pageable_copy_efficiency");
    require(h.eager_op_time.value() >= 1e-7 && h.eager_op_time.value() <= 1e-2, "host.eager_op_time_s",
            h.eager_op_time.value(), "must be between 0.1 µs and 10 ms");
}

// What one GPU's optimizer gets of its node's host when the `gpus_on_node` GPUs of the
// node run their offloaded steps at the same time (synchronous data parallelism): an
// equal share of the cores and of the DRAM bandwidth. ASSUMPTION: an even split, as
// when each local rank is bound to its own cores (DeepSpeed's launcher option
// --bind_cores_to_rank; DeepSpeed PR #7474 measured 3084 → 2383 ms per step with it,
// Qwen2.5-3B on 2 A100 and a 128-core host).
struct host_share {
    double cores = 1;                 // may be fractional: cores time-shared
    int simd_lanes = 16;
    hertz clock = megahertz(2000.0);
    byte_rate memory_bandwidth = gb_per_second(150.0);

    // SIMD instructions per second of the share.
    constexpr double simd_instructions_per_second() const {
        return cores * clock.value() * host_simd_instructions_per_cycle;
    }
};

constexpr host_share share_per_gpu(const host_spec& h, int gpus_on_node) {
    validate(h);
    require(gpus_on_node >= 1 && gpus_on_node <= limits::max_gpus_per_node, "gpus_on_node", gpus_on_node,
            "must be between 1 and 4096");
    return {double(h.cores) / gpus_on_node, h.simd_lanes, h.clock, h.memory_bandwidth / double(gpus_on_node)};
}

}  // namespace trainperf
