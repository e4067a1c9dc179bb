// The GPU catalog: one tag type per GPU carrying a constexpr gpu_spec, and lookup
// by CLI name. Every figure cites its source; derived or assumed ones say so.
//
// Conventions used throughout:
// - Peak math rates are dense (the datasheets' "with sparsity" figures are 2x).
//   fp16/bf16/fp8 rates are with fp32 accumulation, the mode training uses.
// - memory_capacity is the datasheet's "NN GB" as printed (decimal GB, 1e9 B). What
//   the device really holds is what its driver reports (memory_reported, nvidia-smi
//   memory.total): the HBM/GDDR pool is built from power-of-two chips, so it is about
//   NN GiB, 7 % more than NN GB (H100 SXM: 81,559 MiB). Fit verdicts use the
//   reported figure. Where no published driver figure is known, it is an ASSUMPTION:
//   NN GiB, the chips' size (the driver keeps up to ~0.5 % of it back, as on H100).
// - Cache sizes: NVIDIA's whitepapers quote L2 in binary KB/MB (A100: "40960 KB"),
//   so they are stored as MiB.
// - Link bandwidths are per direction; datasheets quote the two-way total
//   (NVLink4 "900 GB/s" = 450 GB/s each way), link_spec::total() gives it back.
// - PCIe per direction, x16, after 128b/130b encoding: Gen3 15.75 GB/s, Gen4
//   31.5 GB/s, Gen5 63 GB/s (PCI-SIG base specs: 8/16/32 GT/s per lane).
// - Compute capability: NVIDIA, "CUDA GPUs - Compute Capability"
//   (developer.nvidia.com/cuda-gpus). The kernel model's defaults are keyed by it.
// - sustained_clock: the clock a board holds under sustained load where it differs
//   from the rated boost clock (GeForce boards boost above it); 0 elsewhere: data-
//   centre parts are rated at the clock they hold (spec/kernel_params.hpp uses it).
// - Link latency and efficiency are ASSUMPTIONS (not datasheet numbers), see
//   trainperf::links in spec/hardware.hpp and docs/catalogs.md.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "../core/catalog_lookup.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "gpu_catalog_blackwell.hpp"
#include "hardware.hpp"
#include "host.hpp"
#include "links.hpp"

namespace trainperf {

namespace hardware_detail {
constexpr flop_rate tflops(double t) { return tflops_per_second(t); }

// The host of a GeForce card's standard system: a desktop, not a server. ASSUMPTION: the
// desktop CPU of the card's generation, at its base clock (wide vector code holds no
// turbo), its DRAM sustained at 75 % as the server default's (spec/host.hpp); the
// training process may use every core. The other host figures are the defaults.
//   Ampere (RTX 3090, 3090 Ti): AMD Ryzen 9 5950X (AMD product specifications: 16 cores,
//   base clock 3.4 GHz, 2 channels of DDR4-3200: 51.2 GB/s), AVX2 (8 fp32 lanes: Zen 3
//   has no AVX-512, so DeepSpeed's CPU-Adam runs its AVX256 path).
//   Ada (RTX 4090): AMD Ryzen 9 7950X (16 cores, base 4.5 GHz, 2 channels of DDR5-5200:
//   83.2 GB/s); Zen 4 runs AVX-512 on 256-bit data paths, two halves per instruction
//   (ASSUMPTION: AVX2's throughput, 8 lanes a cycle).
inline constexpr host_spec zen3_desktop{.cores = 16, .simd_lanes = 8, .clock = megahertz(3400.0),
                                         .memory_bandwidth = gb_per_second(38.4)};  // 75 % of 51.2 GB/s
inline constexpr host_spec zen4_desktop{.cores = 16, .simd_lanes = 8, .clock = megahertz(4500.0),
                                         .memory_bandwidth = gb_per_second(62.4)};  // 75 % of 83.2 GB/s
}  // namespace hardware_detail

// ---------------------------------------------------------------------------------
// Hopper. Sources: "NVIDIA H100 Tensor Core GPU" datasheet (H100 SXM / H100 PCIe
// columns) and "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (SMs, clocks,
// L2). The datasheet tensor rates work out to 1830 MHz × SMs × 4096 FLOP/clk
// (fp16 dense), FP32 to the 1980 MHz max boost × SMs × 256 FLOP/clk.
struct h100_sxm {
    static constexpr gpu_spec spec{
        .name = "h100-sxm",
        .full_name = "NVIDIA H100 SXM5 80GB",
        .architecture = gpu_architecture::hopper,
        .compute_capability = 90,                         // compute capability 9.0
        .sm_count = 132,                                  // whitepaper: 132 SMs (SXM5)
        .boost_clock = megahertz(1980),                   // whitepaper: max boost 1980 MHz
        .l2_cache = mebibytes_of(50),                     // whitepaper: 50 MB L2
        .memory_capacity = gigabytes_of(80),              // datasheet: 80 GB HBM3
        // nvidia-smi memory.total 81,559 MiB: published nvidia-smi outputs, S. Bekman,
        // "Machine Learning Engineering Open Book", nvidia/debug.md.
        .memory_reported = mebibytes_of(81559),
        .memory_bandwidth = tb_per_second(3.35),          // datasheet: 3.35 TB/s
        .peak = {
            .fp32 = hardware_detail::tflops(67),           // datasheet: 67 TFLOPS
            .tf32 = hardware_detail::tflops(494.7),        // datasheet: 989 sparse → 494.7
            .fp16 = hardware_detail::tflops(989.4),        // datasheet: 1,979 sparse → 989.4
            .bf16 = hardware_detail::tflops(989.4),        // datasheet: 1,979 sparse → 989.4
            .fp8 = hardware_detail::tflops(1979),          // datasheet: 3,958 sparse → 1,979
            .int8 = hardware_detail::tflops(1979),         // datasheet: 3,958 TOPS sparse → 1,979
        },
        .gpu_link = links::nvlink(900),                   // datasheet: NVLink 900 GB/s (total)
        .host_link = links::pcie(links::pcie5_x16_gb_per_s),  // PCIe Gen5 x16
        .tdp_watts = 700,                                 // datasheet: up to 700 W
    };
};

struct h100_pcie {
    static constexpr gpu_spec spec{
        .name = "h100-pcie",
        .full_name = "NVIDIA H100 PCIe 80GB",
        .architecture = gpu_architecture::hopper,
        .compute_capability = 90,                         // compute capability 9.0
        .sm_count = 114,                                  // whitepaper: 114 SMs (PCIe)
        .boost_clock = megahertz(1755),                   // whitepaper: max boost 1755 MHz
        .l2_cache = mebibytes_of(50),                     // whitepaper: 50 MB L2
        .memory_capacity = gigabytes_of(80),              // datasheet: 80 GB HBM2e
        .memory_reported = gibibytes_of(80),              // ASSUMPTION: 80 GiB of chips (see the top)
        .memory_bandwidth = tb_per_second(2.0),           // datasheet: 2 TB/s
        .peak = {
            .fp32 = hardware_detail::tflops(51),           // datasheet: 51 TFLOPS
            .tf32 = hardware_detail::tflops(378),          // datasheet: 756 sparse → 378
            .fp16 = hardware_detail::tflops(756),          // datasheet: 1,513 sparse → 756
            .bf16 = hardware_detail::tflops(756),          // datasheet: 1,513 sparse → 756
            .fp8 = hardware_detail::tflops(1513),          // datasheet: 3,026 sparse → 1,513
            .int8 = hardware_detail::tflops(1513),         // datasheet: 3,026 TOPS sparse → 1,513
        },
        // datasheet: NVLink bridge 600 GB/s (total), joining pairs of cards only.
        .gpu_link = links::nvlink_bridge(600),
        .host_link = links::pcie(links::pcie5_x16_gb_per_s),  // PCIe Gen5 x16
        .tdp_watts = 350,                                 // datasheet: 300–350 W (upper end)
    };
};

// Source: "NVIDIA H200 Tensor Core GPU" datasheet (H200 SXM column); same GH100
// compute as H100 SXM (SMs, clocks, L2 from the H100 whitepaper).
struct h200_sxm {
    static constexpr gpu_spec spec{
        .name = "h200-sxm",
        .full_name = "NVIDIA H200 SXM 141GB",
        .architecture = gpu_architecture::hopper,
        .compute_capability = 90,                         // compute capability 9.0
        .sm_count = 132,                                  // GH100 as in H100 SXM5
        .boost_clock = megahertz(1980),                   // as H100 SXM5
        .l2_cache = mebibytes_of(50),                     // as H100 SXM5: 50 MB
        .memory_capacity = gigabytes_of(141),             // datasheet: 141 GB HBM3e
        // nvidia-smi memory.total 143,771 MiB: published nvidia-smi outputs, S. Bekman,
        // "Machine Learning Engineering Open Book", compute/accelerator/README.md.
        .memory_reported = mebibytes_of(143771),
        .memory_bandwidth = tb_per_second(4.8),           // datasheet: 4.8 TB/s
        .peak = h100_sxm::spec.peak,                      // datasheet: the same rates as H100 SXM5
        .gpu_link = links::nvlink(900),                   // datasheet: NVLink 900 GB/s (total)
        .host_link = links::pcie(links::pcie5_x16_gb_per_s),  // PCIe Gen5 x16
        .tdp_watts = 700,                                 // datasheet: up to 700 W
    };
};

// ---------------------------------------------------------------------------------
// Ampere data centre. Sources: "NVIDIA A100 Tensor Core GPU" datasheet (80GB and
// 40GB SXM columns) and "NVIDIA A100 Tensor Core GPU Architecture" whitepaper
// (108 SMs, 1410 MHz boost, 40960 KB L2). Datasheet fp16 312 TFLOPS =
// 108 SMs × 2048 FLOP/clk × 1410 MHz.
struct a100_sxm_80gb {
    static constexpr gpu_spec spec{
        .name = "a100-sxm-80gb",
        .full_name = "NVIDIA A100 SXM4 80GB",
        .architecture = gpu_architecture::ampere,
        .compute_capability = 80,                         // compute capability 8.0
        .sm_count = 108,                                  // whitepaper: 108 SMs
        .boost_clock = megahertz(1410),                   // whitepaper: 1410 MHz
        .l2_cache = mebibytes_of(40),                     // whitepaper: 40960 KB
        .memory_capacity = gigabytes_of(80),              // datasheet: 80 GB HBM2e
        // nvidia-smi memory.total 81,920 MiB for the A100 80GB (S. Bekman, "Machine
        // Learning Engineering Open Book", nvidia/debug.md, PCIe card); ASSUMPTION: the
        // SXM4 module carries the same five 16 GiB HBM2e stacks.
        .memory_reported = mebibytes_of(81920),
        .memory_bandwidth = gb_per_second(2039),          // datasheet: 2,039 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(19.5),         // datasheet: 19.5 TFLOPS
            .tf32 = hardware_detail::tflops(156),          // datasheet: 156 (312 sparse)
            .fp16 = hardware_detail::tflops(312),          // datasheet: 312 (624 sparse)
            .bf16 = hardware_detail::tflops(312),          // datasheet: 312 (624 sparse)
            .fp8 = {},                                    // Ampere has no fp8 tensor cores
            .int8 = hardware_detail::tflops(624),          // datasheet: 624 TOPS (1,248 sparse)
        },
        .gpu_link = links::nvlink(600),                   // datasheet: NVLink 600 GB/s (total)
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // "PCIe Gen4: 64 GB/s" both ways
        .tdp_watts = 400,                                 // datasheet: 400 W
    };
};

struct a100_sxm_40gb {
    static constexpr gpu_spec spec{
        .name = "a100-sxm-40gb",
        .full_name = "NVIDIA A100 SXM4 40GB",
        .architecture = gpu_architecture::ampere,
        .compute_capability = 80,                         // compute capability 8.0
        .sm_count = 108,                                  // whitepaper: 108 SMs
        .boost_clock = megahertz(1410),                   // whitepaper: 1410 MHz
        .l2_cache = mebibytes_of(40),                     // whitepaper: 40960 KB
        .memory_capacity = gigabytes_of(40),              // datasheet: 40 GB HBM2
        .memory_reported = gibibytes_of(40),              // ASSUMPTION: 40 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(1555),          // datasheet: 1,555 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(19.5),         // datasheet: 19.5 TFLOPS
            .tf32 = hardware_detail::tflops(156),          // datasheet: 156 (312 sparse)
            .fp16 = hardware_detail::tflops(312),          // datasheet: 312 (624 sparse)
            .bf16 = hardware_detail::tflops(312),          // datasheet: 312 (624 sparse)
            .fp8 = {},                                    // Ampere has no fp8 tensor cores
            .int8 = hardware_detail::tflops(624),          // datasheet: 624 TOPS (1,248 sparse)
        },
        .gpu_link = links::nvlink(600),                   // datasheet: NVLink 600 GB/s (total)
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // PCIe Gen4 x16
        .tdp_watts = 400,                                 // datasheet: 400 W
    };
};

// ---------------------------------------------------------------------------------
// Volta. Sources: "NVIDIA Tesla V100 GPU Accelerator" datasheet (V100 SXM2 column)
// and "NVIDIA Tesla V100 GPU Architecture" whitepaper (80 SMs, 1530 MHz boost,
// 6144 KB L2). Volta tensor cores do fp16 only: no tf32, bf16, fp8 or int8.
struct v100_sxm2_32gb {
    static constexpr gpu_spec spec{
        .name = "v100-sxm2-32gb",
        .full_name = "NVIDIA Tesla V100 SXM2 32GB",
        .architecture = gpu_architecture::volta,
        .compute_capability = 70,                         // compute capability 7.0
        .sm_count = 80,                                   // whitepaper: 80 SMs
        .boost_clock = megahertz(1530),                   // whitepaper: 1530 MHz
        .l2_cache = mebibytes_of(6),                      // whitepaper: 6144 KB
        .memory_capacity = gigabytes_of(32),              // datasheet: 32 GB HBM2
        .memory_reported = gibibytes_of(32),              // ASSUMPTION: 32 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(900),           // datasheet: 900 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(15.7),         // datasheet: 15.7 TFLOPS
            .tf32 = {},                                   // no tf32 before Ampere
            .fp16 = hardware_detail::tflops(125),          // datasheet: tensor 125 TFLOPS
            .bf16 = {},                                   // no bf16 before Ampere
            .fp8 = {},
            .int8 = {},                                   // Volta tensor cores: fp16 only
        },
        .gpu_link = links::nvlink(300),                   // datasheet: NVLink 300 GB/s (total)
        .host_link = links::pcie(links::pcie3_x16_gb_per_s),  // PCIe Gen3 x16
        .tdp_watts = 300,                                 // datasheet: 300 W
    };
};

// ---------------------------------------------------------------------------------
// GeForce Ampere (GA102). Source: "NVIDIA Ampere GA102 GPU Architecture" whitepaper
// (RTX 3090 column: 82 SMs, 1695 MHz, 6144 KB L2, TF32 35.6, FP16/BF16 with fp32
// accumulate 71 (142 with fp16 accumulate), INT8 284 TOPS, NVLink "four x4 links,
// 112.5 GB/sec total"). GeForce runs fp32-accumulate tensor math at half the
// fp16-accumulate rate; training accumulates in fp32, so that is the stored rate.
// The 3090 Ti has no whitepaper column: its rates are the GA102 per-SM rates ×
// 84 SMs × 1860 MHz (NVIDIA RTX 3090 Ti product page: 10752 CUDA cores, 1.86 GHz
// boost, 24 GB GDDR6X at 21 Gbps on 384 bits = 1008 GB/s, 450 W).
// Links: the NVLink bridge joins exactly two cards (NVIDIA NVLink bridge product page:
// "2-slot / 3-slot bridge" connecting a pair). ASSUMPTION: GeForce drivers expose no
// PCIe peer-to-peer between cards (NVIDIA's statements on its developer forums for
// GeForce RTX 30/40 series), so traffic between cards that no bridge joins goes
// through host memory.
struct rtx_3090_ti {
    static constexpr gpu_spec spec{
        .name = "rtx-3090-ti",
        .full_name = "NVIDIA GeForce RTX 3090 Ti",
        .architecture = gpu_architecture::ampere,
        .compute_capability = 86,                         // compute capability 8.6
        .sm_count = 84,                                   // product page: 10752 cores / 128
        .boost_clock = megahertz(1860),                   // product page: 1.86 GHz
        // The clock the card holds under load: 2000-2050 MHz in NVIDIA's own demo of
        // the 3090 Ti beside the 4090 (TweakTown, news 88568, 2022). The lower end is
        // taken; no figure under tensor-core load is published.
        .sustained_clock = megahertz(2000),
        .l2_cache = mebibytes_of(6),                      // GA102: 6144 KB
        .memory_capacity = gigabytes_of(24),              // product page: 24 GB GDDR6X
        .memory_reported = gibibytes_of(24),              // ASSUMPTION: 24 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(1008),          // 21 Gbps × 384 bit / 8
        .peak = {
            .fp32 = hardware_detail::tflops(40),           // 84 × 256 FLOP/clk × 1.86 GHz = 40.0
            .tf32 = hardware_detail::tflops(40),           // 84 × 256 × 1.86 GHz (GA102 TF32 rate)
            .fp16 = hardware_detail::tflops(80),           // 84 × 512 × 1.86 GHz; 160 with fp16 acc
            .bf16 = hardware_detail::tflops(80),           // as fp16 with fp32 accumulate
            .fp8 = {},                                    // Ampere has no fp8 tensor cores
            .int8 = hardware_detail::tflops(320),          // 84 × 2048 × 1.86 GHz
        },
        .gpu_link = links::nvlink_bridge(112.5),          // GA102: 112.5 GB/s total, 56.25 each way
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // PCIe Gen4 x16
        .tdp_watts = 450,                                 // product page: 450 W
        .pcie_peer_to_peer = false,                       // GeForce: see the GA102 note above
        .system = {.host = hardware_detail::zen3_desktop},
    };
};

struct rtx_3090 {
    static constexpr gpu_spec spec{
        .name = "rtx-3090",
        .full_name = "NVIDIA GeForce RTX 3090",
        .architecture = gpu_architecture::ampere,
        .compute_capability = 86,                         // compute capability 8.6
        .sm_count = 82,                                   // GA102 whitepaper: 82 SMs
        .boost_clock = megahertz(1695),                   // GA102 whitepaper: 1695 MHz
        .l2_cache = mebibytes_of(6),                      // GA102 whitepaper: 6144 KB
        .memory_capacity = gigabytes_of(24),              // GA102 whitepaper: 24 GB GDDR6X
        .memory_reported = gibibytes_of(24),              // ASSUMPTION: 24 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(936),           // GA102 whitepaper: 936 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(35.6),         // GA102 whitepaper: 35.6
            .tf32 = hardware_detail::tflops(35.6),         // GA102 whitepaper: 35.6 (71 sparse)
            .fp16 = hardware_detail::tflops(71),           // GA102 whitepaper: 71 fp32 acc (142 fp16 acc)
            .bf16 = hardware_detail::tflops(71),           // GA102 whitepaper: 71 fp32 acc
            .fp8 = {},                                    // Ampere has no fp8 tensor cores
            .int8 = hardware_detail::tflops(284),          // GA102 whitepaper: 284 TOPS
        },
        .gpu_link = links::nvlink_bridge(112.5),          // GA102 whitepaper: 112.5 GB/s total
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // PCIe Gen4 x16
        .tdp_watts = 350,                                 // GA102 whitepaper: 350 W
        .pcie_peer_to_peer = false,                       // GeForce: see the GA102 note above
        .system = {.host = hardware_detail::zen3_desktop},
    };
};

// ---------------------------------------------------------------------------------
// Jetson Orin NX 16GB. Source: "NVIDIA Jetson Orin NX Series" datasheet: Ampere GPU
// with 1024 CUDA cores and 32 tensor cores (8 SMs), 918 MHz max, 16 GB 128-bit
// LPDDR5 at 102.4 GB/s shared with the CPU, 10–25 W. NVIDIA quotes only sparse INT8
// TOPS, so the rates are DERIVED from units × clock with A100-class (GA10B) per-SM
// tensor rates (consistent with the datasheet's 100 sparse INT8 TOPS = GPU 60 + DLA 40):
//   fp32 = 1024 cores × 2 × 918 MHz           =  1.88 TFLOP/s
//   fp16 = 8 SMs × 2048 FLOP/clk × 918 MHz    = 15.04 TFLOP/s (bf16 same)
//   tf32 = fp16 / 2                           =  7.52 TFLOP/s
//   int8 = fp16 × 2                           = 30.08 TOP/s (60 sparse)
struct jetson_orin_nx_16gb {
    static constexpr gpu_spec spec{
        .name = "jetson-orin-nx-16gb",
        .full_name = "NVIDIA Jetson Orin NX 16GB",
        .architecture = gpu_architecture::ampere,
        .compute_capability = 87,                         // compute capability 8.7
        .sm_count = 8,                                    // datasheet: 1024 cores / 128
        .boost_clock = megahertz(918),                    // datasheet: 918 MHz max
        // APPROXIMATE: the Orin NX datasheet gives no L2 size; 4 MB is the figure
        // the Jetson AGX Orin technical brief gives for the Orin GPU.
        .l2_cache = mebibytes_of(4),
        .memory_capacity = gigabytes_of(16),              // datasheet: 16 GB LPDDR5
        .memory_reported = gibibytes_of(16),              // ASSUMPTION: 16 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(102.4),         // datasheet: 102.4 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(1024 * 2 * 0.918e-3),     // derived, see above
            .tf32 = hardware_detail::tflops(8 * 1024 * 0.918e-3),     // derived
            .fp16 = hardware_detail::tflops(8 * 2048 * 0.918e-3),     // derived
            .bf16 = hardware_detail::tflops(8 * 2048 * 0.918e-3),     // derived
            .fp8 = {},                                               // Ampere: no fp8
            .int8 = hardware_detail::tflops(8 * 4096 * 0.918e-3),     // derived
        },
        .gpu_link = {},                                   // a single module: no GPU↔GPU link
        // No PCIe between CPU and GPU: they share the DRAM. ASSUMPTION: an explicit
        // host→device copy reads and writes that DRAM, so it moves at half its rate.
        .host_link = {link_kind::none, gb_per_second(102.4 / 2), seconds_of(0.0), 1.0},
        .tdp_watts = 25,                                  // datasheet: 10–25 W (max mode)
        .memory_shared_with_host = true,                  // datasheet: CPU and GPU share DRAM
    };
};

// ---------------------------------------------------------------------------------
// Blackwell (b200, b300, gb200, gb300): spec/gpu_catalog_blackwell.hpp.

// ---------------------------------------------------------------------------------
// Grace Hopper and the export-compliant H20.
// GH200 source: "NVIDIA GH200 Grace Hopper Superchip" datasheet (96 GB HBM3 version):
// GPU FP32 67 TFLOPS, TF32 989 / BF16 1,979 / FP16 1,979 / FP8 3,958 TFLOPS and INT8
// 3,958 TOPS with sparsity (dense: half), 96 GB HBM3 at 4 TB/s, NVLink-C2C 900 GB/s to
// the Grace CPU, NVLink 900 GB/s to other GPUs, configurable module power 450-1000 W
// (CPU, GPU and memory together). The GPU is the GH100 of the H100 SXM5 (132 SMs,
// 1980 MHz, 50 MB L2: H100 whitepaper).
struct gh200 {
    static constexpr gpu_spec spec{
        .name = "gh200",
        .full_name = "NVIDIA GH200 Grace Hopper Superchip 96GB",
        .architecture = gpu_architecture::hopper,
        .compute_capability = 90,                         // compute capability 9.0
        .sm_count = 132,                                  // GH100 as in H100 SXM5
        .boost_clock = megahertz(1980),                   // as H100 SXM5
        .l2_cache = mebibytes_of(50),                     // as H100 SXM5: 50 MB
        .memory_capacity = gigabytes_of(96),              // datasheet: 96 GB HBM3
        .memory_reported = gibibytes_of(96),              // ASSUMPTION: 96 GiB of chips (see the top)
        .memory_bandwidth = tb_per_second(4.0),           // datasheet: 4 TB/s
        .peak = h100_sxm::spec.peak,                      // datasheet: the same rates as H100 SXM5
        .gpu_link = links::nvlink(900),                   // datasheet: NVLink 900 GB/s (total)
        // datasheet: NVLink-C2C 900 GB/s (total) between the Grace CPU and the GPU.
        .host_link = {link_kind::nvlink, gb_per_second(900.0 / 2.0), microseconds_of(links::nvlink_latency_us),
                      links::link_efficiency},
        // datasheet: 450-1000 W for the whole superchip; the upper end stands for the GPU.
        .tdp_watts = 1000,
    };
};

// H20 source: NVIDIA HGX H20 specifications as published in public reports (no public
// NVIDIA datasheet): 96 GB HBM3 at 4.0 TB/s, FP8 296 TFLOPS, BF16/FP16 148 TFLOPS,
// TF32 74 TFLOPS, FP32 44 TFLOPS, INT8 296 TOPS (dense), NVLink 900 GB/s, 400 W.
// APPROXIMATE: SM count, clock and L2 are reported figures, not NVIDIA's.
struct h20 {
    static constexpr gpu_spec spec{
        .name = "h20",
        .full_name = "NVIDIA H20 96GB",
        .architecture = gpu_architecture::hopper,
        .compute_capability = 90,                         // compute capability 9.0
        .sm_count = 78,                                   // APPROXIMATE: public reports
        .boost_clock = megahertz(1980),                   // APPROXIMATE: as H100 SXM5
        .l2_cache = mebibytes_of(60),                     // APPROXIMATE: public reports
        .memory_capacity = gigabytes_of(96),              // reports: 96 GB HBM3
        .memory_reported = gibibytes_of(96),              // ASSUMPTION: 96 GiB of chips (see the top)
        .memory_bandwidth = tb_per_second(4.0),           // reports: 4.0 TB/s
        .peak = {
            .fp32 = hardware_detail::tflops(44),           // reports: 44 TFLOPS
            .tf32 = hardware_detail::tflops(74),           // reports: 74 TFLOPS
            .fp16 = hardware_detail::tflops(148),          // reports: 148 TFLOPS
            .bf16 = hardware_detail::tflops(148),          // reports: 148 TFLOPS
            .fp8 = hardware_detail::tflops(296),           // reports: 296 TFLOPS
            .int8 = hardware_detail::tflops(296),          // reports: 296 TOPS
        },
        .gpu_link = links::nvlink(900),                   // reports: NVLink 900 GB/s (total)
        .host_link = links::pcie(links::pcie5_x16_gb_per_s),  // PCIe Gen5 x16
        .tdp_watts = 400,                                 // reports: 400 W
    };
};

// ---------------------------------------------------------------------------------
// Ada (AD102, AD104). Sources: "NVIDIA Ada GPU Architecture" whitepaper (RTX 4090
// column: 128 SMs, 2520 MHz boost, 72 MB L2, 24 GB GDDR6X at 1008 GB/s, FP32 82.6,
// TF32 82.6, FP16 and BF16 with fp32 accumulate 165.2 (330.3 with fp16 accumulate),
// FP8 with fp32 accumulate 330.3, INT8 660.6 TOPS, 450 W, no NVLink);
// "NVIDIA L40S GPU" datasheet; "NVIDIA L4 Tensor Core GPU" datasheet. The data-center
// boards run fp32-accumulate tensor math at the full rate; GeForce at half of it.
struct rtx_4090 {
    static constexpr gpu_spec spec{
        .name = "rtx-4090",
        .full_name = "NVIDIA GeForce RTX 4090",
        .architecture = gpu_architecture::ada,
        .compute_capability = 89,                         // compute capability 8.9
        .sm_count = 128,                                  // Ada whitepaper: 128 SMs
        .boost_clock = megahertz(2520),                   // Ada whitepaper: 2520 MHz
        // "often runs at over 2.7 GHz in testing" (Tom's Hardware, GeForce RTX 4090
        // specifications); taken as the clock it holds under load.
        .sustained_clock = megahertz(2700),
        .l2_cache = mebibytes_of(72),                     // Ada whitepaper: 73728 KB
        .memory_capacity = gigabytes_of(24),              // Ada whitepaper: 24 GB GDDR6X
        .memory_reported = gibibytes_of(24),              // ASSUMPTION: 24 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(1008),          // Ada whitepaper: 1008 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(82.6),         // Ada whitepaper: 82.6
            .tf32 = hardware_detail::tflops(82.6),         // Ada whitepaper: 82.6 (165.2 sparse)
            .fp16 = hardware_detail::tflops(165.2),        // Ada whitepaper: 165.2 fp32 acc (330.3 fp16 acc)
            .bf16 = hardware_detail::tflops(165.2),        // Ada whitepaper: 165.2 fp32 acc
            .fp8 = hardware_detail::tflops(330.3),         // Ada whitepaper: 330.3 fp32 acc
            .int8 = hardware_detail::tflops(660.6),        // Ada whitepaper: 660.6 TOPS
        },
        // Ada whitepaper: no NVLink on the 4090. Cards meet over PCIe, staged through host
        // memory (no peer-to-peer on GeForce, see the GA102 note above).
        .gpu_link = staged_through_host(links::pcie(links::pcie4_x16_gb_per_s)),
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // PCIe Gen4 x16
        .tdp_watts = 450,                                 // Ada whitepaper: 450 W
        .pcie_peer_to_peer = false,                       // GeForce: see the GA102 note above
        .system = {.host = hardware_detail::zen4_desktop},
    };
};

// Source: "NVIDIA L40S GPU" datasheet: FP32 91.6 TFLOPS; TF32 183 | 366, BF16/FP16
// 362.05 | 733, FP8 733 | 1,466 TFLOPS, INT8 733 | 1,466 TOPS (dense | sparse); 48 GB
// GDDR6 at 864 GB/s; 350 W; PCIe Gen4 x16; no NVLink; 18,176 CUDA cores (142 SMs).
// Boost clock DERIVED: 91.6 TFLOPS / (142 × 256 FLOP/clk) = 2520 MHz. L2 APPROXIMATE:
// the full AD102's 96 MB (Ada whitepaper).
struct l40s {
    static constexpr gpu_spec spec{
        .name = "l40s",
        .full_name = "NVIDIA L40S 48GB",
        .architecture = gpu_architecture::ada,
        .compute_capability = 89,                         // compute capability 8.9
        .sm_count = 142,                                  // datasheet: 18,176 cores / 128
        .boost_clock = megahertz(2520),                   // DERIVED, see above
        .l2_cache = mebibytes_of(96),                     // APPROXIMATE, see above
        .memory_capacity = gigabytes_of(48),              // datasheet: 48 GB GDDR6
        .memory_reported = gibibytes_of(48),              // ASSUMPTION: 48 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(864),           // datasheet: 864 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(91.6),         // datasheet: 91.6
            .tf32 = hardware_detail::tflops(183),          // datasheet: 183 (366 sparse)
            .fp16 = hardware_detail::tflops(362.05),       // datasheet: 362.05 (733 sparse)
            .bf16 = hardware_detail::tflops(362.05),       // datasheet: 362.05 (733 sparse)
            .fp8 = hardware_detail::tflops(733),           // datasheet: 733 (1,466 sparse)
            .int8 = hardware_detail::tflops(733),          // datasheet: 733 TOPS (1,466 sparse)
        },
        .gpu_link = links::pcie(links::pcie4_x16_gb_per_s),  // datasheet: no NVLink; PCIe peer-to-peer
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // datasheet: PCIe Gen4 x16
        .tdp_watts = 350,                                 // datasheet: 350 W
    };
};

// Source: "NVIDIA L4 Tensor Core GPU" datasheet: FP32 30.3 TFLOPS; TF32 120, BF16/FP16
// 242, FP8 485 TFLOPS and INT8 485 TOPS with sparsity (dense: half); 24 GB GDDR6 at
// 300 GB/s; 72 W; PCIe Gen4 x16; 7,424 CUDA cores (58 SMs). Boost DERIVED: 30.3 TFLOPS /
// (58 × 256) = 2040 MHz. L2 APPROXIMATE: AD104's 48 MB (public reports).
struct l4 {
    static constexpr gpu_spec spec{
        .name = "l4",
        .full_name = "NVIDIA L4 24GB",
        .architecture = gpu_architecture::ada,
        .compute_capability = 89,                         // compute capability 8.9
        .sm_count = 58,                                   // datasheet: 7,424 cores / 128
        .boost_clock = megahertz(2040),                   // DERIVED, see above
        .l2_cache = mebibytes_of(48),                     // APPROXIMATE, see above
        .memory_capacity = gigabytes_of(24),              // datasheet: 24 GB GDDR6
        .memory_reported = gibibytes_of(24),              // ASSUMPTION: 24 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(300),           // datasheet: 300 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(30.3),         // datasheet: 30.3
            .tf32 = hardware_detail::tflops(60),           // datasheet: 120 sparse → 60
            .fp16 = hardware_detail::tflops(121),          // datasheet: 242 sparse → 121
            .bf16 = hardware_detail::tflops(121),          // datasheet: 242 sparse → 121
            .fp8 = hardware_detail::tflops(242.5),         // datasheet: 485 sparse → 242.5
            .int8 = hardware_detail::tflops(242.5),        // datasheet: 485 TOPS sparse → 242.5
        },
        .gpu_link = links::pcie(links::pcie4_x16_gb_per_s),  // datasheet: no NVLink; PCIe peer-to-peer
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // datasheet: PCIe Gen4 x16
        .tdp_watts = 72,                                  // datasheet: 72 W
    };
};

// ---------------------------------------------------------------------------------
// Professional and data-center Ampere (GA102). Sources: "NVIDIA Ampere GA102 GPU
// Architecture" whitepaper (RTX A6000 column: 84 SMs, 1800 MHz, 6144 KB L2, FP32 38.7,
// TF32 77.4, FP16/BF16 with fp32 accumulate 154.8, INT8 309.7 TOPS), "NVIDIA RTX A6000"
// datasheet (48 GB GDDR6 at 768 GB/s, 300 W, PCIe Gen4 x16, NVLink bridge joining two
// cards at 112.5 GB/s total), "NVIDIA A10 Tensor Core GPU" datasheet (FP32 31.2, TF32
// 62.5, BF16/FP16 125, INT8 250 TOPS dense; 24 GB GDDR6 at 600 GB/s; 150 W; PCIe Gen4;
// 9,216 CUDA cores = 72 SMs at 1695 MHz). Unlike GeForce, these boards allow PCIe
// peer-to-peer between cards.
struct rtx_a6000 {
    static constexpr gpu_spec spec{
        .name = "rtx-a6000",
        .full_name = "NVIDIA RTX A6000",
        .architecture = gpu_architecture::ampere,
        .compute_capability = 86,                         // compute capability 8.6
        .sm_count = 84,                                   // GA102 whitepaper: 84 SMs
        .boost_clock = megahertz(1800),                   // GA102 whitepaper: 1800 MHz
        .l2_cache = mebibytes_of(6),                      // GA102 whitepaper: 6144 KB
        .memory_capacity = gigabytes_of(48),              // datasheet: 48 GB GDDR6
        .memory_reported = gibibytes_of(48),              // ASSUMPTION: 48 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(768),           // datasheet: 768 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(38.7),         // GA102 whitepaper: 38.7
            .tf32 = hardware_detail::tflops(77.4),         // GA102 whitepaper: 77.4 (154.8 sparse)
            .fp16 = hardware_detail::tflops(154.8),        // GA102 whitepaper: 154.8 fp32 acc
            .bf16 = hardware_detail::tflops(154.8),        // GA102 whitepaper: 154.8 fp32 acc
            .fp8 = {},                                    // Ampere has no fp8 tensor cores
            .int8 = hardware_detail::tflops(309.7),        // GA102 whitepaper: 309.7 TOPS
        },
        .gpu_link = links::nvlink_bridge(112.5),          // datasheet: NVLink bridge, 112.5 GB/s total
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // datasheet: PCIe Gen4 x16
        .tdp_watts = 300,                                 // datasheet: 300 W
    };
};

struct a10 {
    static constexpr gpu_spec spec{
        .name = "a10",
        .full_name = "NVIDIA A10 24GB",
        .architecture = gpu_architecture::ampere,
        .compute_capability = 86,                         // compute capability 8.6
        .sm_count = 72,                                   // datasheet: 9,216 cores / 128
        .boost_clock = megahertz(1695),                   // 31.2 TFLOPS / (72 × 256)
        .l2_cache = mebibytes_of(6),                      // GA102: 6144 KB
        .memory_capacity = gigabytes_of(24),              // datasheet: 24 GB GDDR6
        .memory_reported = gibibytes_of(24),              // ASSUMPTION: 24 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(600),           // datasheet: 600 GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(31.2),         // datasheet: 31.2
            .tf32 = hardware_detail::tflops(62.5),         // datasheet: 62.5 (125 sparse)
            .fp16 = hardware_detail::tflops(125),          // datasheet: 125 (250 sparse)
            .bf16 = hardware_detail::tflops(125),          // datasheet: 125 (250 sparse)
            .fp8 = {},                                    // Ampere has no fp8 tensor cores
            .int8 = hardware_detail::tflops(250),          // datasheet: 250 TOPS (500 sparse)
        },
        .gpu_link = links::pcie(links::pcie4_x16_gb_per_s),  // datasheet: no NVLink; PCIe peer-to-peer
        .host_link = links::pcie(links::pcie4_x16_gb_per_s),  // datasheet: PCIe Gen4
        .tdp_watts = 150,                                 // datasheet: 150 W
    };
};

// ---------------------------------------------------------------------------------
// Turing (TU104). Sources: "NVIDIA T4 Tensor Core GPU" datasheet (2,560 CUDA cores and
// 320 tensor cores = 40 SMs; FP32 8.1 TFLOPS; mixed precision FP16/FP32 65 TFLOPS; INT8
// 130 TOPS; 16 GB GDDR6 at 320 GB/s; 70 W; PCIe Gen3 x16) and "NVIDIA Turing GPU
// Architecture" whitepaper (TU104: 4096 KB L2). Boost DERIVED: 8.1 TFLOPS / (40 × 128)
// = 1590 MHz. Turing tensor cores do fp16 and int8: no tf32, bf16 or fp8.
struct t4 {
    static constexpr gpu_spec spec{
        .name = "t4",
        .full_name = "NVIDIA T4 16GB",
        .architecture = gpu_architecture::turing,
        .compute_capability = 75,                         // compute capability 7.5
        .sm_count = 40,                                   // datasheet: 320 tensor cores / 8
        .boost_clock = megahertz(1590),                   // DERIVED, see above
        .l2_cache = mebibytes_of(4),                      // Turing whitepaper: 4096 KB
        .memory_capacity = gigabytes_of(16),              // datasheet: 16 GB GDDR6
        .memory_reported = gibibytes_of(16),              // ASSUMPTION: 16 GiB of chips (see the top)
        .memory_bandwidth = gb_per_second(320),           // datasheet: 320+ GB/s
        .peak = {
            .fp32 = hardware_detail::tflops(8.1),          // datasheet: 8.1
            .tf32 = {},                                   // no tf32 before Ampere
            .fp16 = hardware_detail::tflops(65),           // datasheet: 65 mixed FP16/FP32
            .bf16 = {},                                   // no bf16 before Ampere
            .fp8 = {},
            .int8 = hardware_detail::tflops(130),          // datasheet: 130 TOPS
        },
        .gpu_link = links::pcie(links::pcie3_x16_gb_per_s),  // datasheet: no NVLink; PCIe peer-to-peer
        .host_link = links::pcie(links::pcie3_x16_gb_per_s),  // datasheet: PCIe Gen3 x16
        .tdp_watts = 70,                                  // datasheet: 70 W
    };
};

// ---------------------------------------------------------------------------------
// AMD CDNA 3. Source: "AMD Instinct MI300X Accelerator" data sheet: 304 compute units,
// 2100 MHz peak engine clock, 192 GB HBM3 at 5.3 TB/s, 256 MB Infinity Cache, FP32
// vector 81.7 TFLOPS, matrix TF32 653.7, FP16/BF16 1,307.4, FP8 2,614.9 TFLOPS, INT8
// 2,614.9 TOPS (dense; twice with sparsity), 7 Infinity Fabric links of 128 GB/s, PCIe
// Gen5 x16, 750 W. A model entry only: the cuBLASLt harness and calibration are NVIDIA's.
// The L2 stored is the 4 MB per XCD × 8 XCDs (CDNA 3 white paper); the Infinity Cache
// sits behind it. sm_count holds compute units.
struct mi300x {
    static constexpr gpu_spec spec{
        .name = "mi300x",
        .full_name = "AMD Instinct MI300X 192GB",
        .architecture = gpu_architecture::cdna3,          // gfx942
        .compute_capability = 0,                          // not an NVIDIA GPU (no compute capability)
        .sm_count = 304,                                  // data sheet: 304 compute units
        .boost_clock = megahertz(2100),                   // data sheet: 2100 MHz peak engine clock
        .l2_cache = mebibytes_of(32),                     // CDNA 3 white paper: 4 MB × 8 XCDs
        .memory_capacity = gigabytes_of(192),             // data sheet: 192 GB HBM3
        .memory_reported = gibibytes_of(192),             // ASSUMPTION: 192 GiB of chips (see the top)
        .memory_bandwidth = tb_per_second(5.3),           // data sheet: 5.3 TB/s
        .peak = {
            .fp32 = hardware_detail::tflops(81.7),         // data sheet: 81.7 (vector)
            .tf32 = hardware_detail::tflops(653.7),        // data sheet: 653.7 (matrix)
            .fp16 = hardware_detail::tflops(1307.4),       // data sheet: 1,307.4
            .bf16 = hardware_detail::tflops(1307.4),       // data sheet: 1,307.4
            .fp8 = hardware_detail::tflops(2614.9),        // data sheet: 2,614.9
            .int8 = hardware_detail::tflops(2614.9),       // data sheet: 2,614.9 TOPS
        },
        .gpu_link = default_link(link_kind::infinity_fabric),  // data sheet: 7 × 128 GB/s, see spec/links.hpp
        .host_link = links::pcie(links::pcie5_x16_gb_per_s),  // data sheet: PCIe Gen5 x16
        .tdp_watts = 750,                                 // data sheet: 750 W
    };
};

static_assert(hardware<h100_sxm> && hardware<h100_pcie> && hardware<h200_sxm> &&
              hardware<a100_sxm_80gb> && hardware<a100_sxm_40gb> &&
              hardware<v100_sxm2_32gb> && hardware<rtx_3090_ti> && hardware<rtx_3090> &&
              hardware<jetson_orin_nx_16gb> && hardware<b200> && hardware<b300> && hardware<gb200> &&
              hardware<gb300> && hardware<gh200> && hardware<h20> &&
              hardware<rtx_4090> && hardware<l40s> && hardware<l4> && hardware<rtx_a6000> && hardware<a10> &&
              hardware<t4> && hardware<mi300x>);

// ---------------------------------------------------------------------------------
// Lookup by CLI name.

inline constexpr std::array<gpu_spec, 22> gpu_catalog{
    h100_sxm::spec,      h100_pcie::spec,  h200_sxm::spec,
    a100_sxm_80gb::spec, a100_sxm_40gb::spec,
    v100_sxm2_32gb::spec, rtx_3090_ti::spec, rtx_3090::spec,
    jetson_orin_nx_16gb::spec, b200::spec, b300::spec, gb200::spec, gb300::spec,
    gh200::spec,         h20::spec,        rtx_4090::spec,
    l40s::spec,          l4::spec,         rtx_a6000::spec,
    a10::spec,           t4::spec,         mi300x::spec,
};

// Every entry and the system it is sold in are valid (a failed check does not compile).
static_assert([] {
    for (const gpu_spec& g : gpu_catalog) {
        validate(g);
        validate_system(g);
    }
    return true;
}());

constexpr std::array<std::string_view, gpu_catalog.size()> gpu_names() {
    std::array<std::string_view, gpu_catalog.size()> names{};
    for (std::size_t i = 0; i < gpu_catalog.size(); ++i) names[i] = gpu_catalog[i].name;
    return names;
}

// The catalog entry whose name equals `name` ignoring ASCII case; throws
// trainperf::invalid_argument listing the known names otherwise.
constexpr const gpu_spec& lookup_gpu(std::string_view name) { return find_by_name(gpu_catalog, "gpu", name); }

}  // namespace trainperf
