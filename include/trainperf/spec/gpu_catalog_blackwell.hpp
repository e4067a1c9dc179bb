// The GPU catalog's Blackwell entries (spec/gpu_catalog.hpp holds the catalog and its
// conventions, which apply here): B200 and B300 of HGX servers, and GB200 and GB300, a GPU
// of an NVL72 rack, with the systems each is sold in and the Grace tray as host.
#pragma once

#include "../core/units.hpp"
#include "hardware.hpp"
#include "host.hpp"
#include "links.hpp"

namespace trainperf {

// ---------------------------------------------------------------------------------
// Blackwell. Source: "NVIDIA HGX B200" datasheet figures per GPU (the 8-GPU totals
// divided by 8): FP8 72 PFLOPS sparse → 4.5 dense, FP16/BF16 36 → 2.25, TF32 18
// sparse → 1.125 dense (NVIDIA's per-GPU tables round it to 2.2 sparse; 1.1 dense is
// stored), INT8 72 POPS sparse → 4.5, FP4 144 PFLOPS sparse → 9 dense (per-GPU table:
// 18 PFLOPS sparse); 1,440 GB HBM3e → 180 GB per GPU;
// 64 TB/s → 8 TB/s per GPU; NVLink5 1.8 TB/s per GPU; up to 1000 W per GPU.
// SM count, clock and L2 are not in NVIDIA's datasheet: APPROXIMATE, from public
// reports (148 SMs, ~1965 MHz boost, 126 MB L2). FP32 is not quoted either and is
// DERIVED: 148 SMs × 256 FLOP/clk × 1965 MHz ≈ 74.4 TFLOP/s.
struct b200 {
    static constexpr gpu_spec spec{
        .name = "b200",
        .full_name = "NVIDIA B200 (HGX B200, 180GB)",
        .architecture = gpu_architecture::blackwell,
        .compute_capability = 100,                        // compute capability 10.0
        .sm_count = 148,                                  // APPROXIMATE: public reports
        .boost_clock = megahertz(1965),                   // APPROXIMATE: public reports
        .l2_cache = mebibytes_of(126),                    // APPROXIMATE: public reports
        .memory_capacity = gigabytes_of(180),             // HGX B200: 1,440 GB / 8
        // nvidia-smi memory.total 183,359 MiB: published nvidia-smi outputs, S. Bekman,
        // "Machine Learning Engineering Open Book", compute/accelerator/README.md.
        .memory_reported = mebibytes_of(183359),
        .memory_bandwidth = tb_per_second(8),             // HGX B200: 64 TB/s / 8
        .peak = {
            .fp32 = tflops_per_second(148 * 256 * 1.965e-3),  // DERIVED, see above
            .tf32 = tflops_per_second(1100),         // HGX B200: 2.2 PFLOPS sparse per GPU
            .fp16 = tflops_per_second(2250),         // HGX B200: 4.5 PFLOPS sparse per GPU
            .bf16 = tflops_per_second(2250),         // HGX B200: 4.5 PFLOPS sparse per GPU
            .fp8 = tflops_per_second(4500),          // HGX B200: 9 PFLOPS sparse per GPU
            .int8 = tflops_per_second(4500),         // HGX B200: 9 POPS sparse per GPU
            .fp4 = tflops_per_second(9000),          // HGX B200: FP4 18 PFLOPS sparse per GPU
        },
        .gpu_link = links::nvlink(1800),                  // HGX B200: NVLink5 1.8 TB/s (total)
        .host_link = links::pcie(links::pcie5_x16_gb_per_s),  // PCIe Gen5 x16
        .tdp_watts = 1000,                                // HGX B200: up to 1000 W per GPU
    };
};

// Blackwell Ultra in an HGX B300 (8 GPUs per server). Sources: NVIDIA HGX platform
// page, HGX B300 column (8-GPU totals: FP4 144 | 108 PFLOPS sparse | dense, FP8/FP6 72,
// FP16/BF16 36, TF32 18 PFLOPS with sparsity, "Dense is ½ sparse"; FP32 600 TFLOPS;
// 2.1 TB HBM3E; NVLink 1.8 TB/s per GPU) and the NVIDIA Blackwell Ultra datasheet (Oct.
// 2025), HGX B300 column (270 GB HBM3E | 7.7 TB/s; INT8 307 TOPS sparse; FP32 75 TFLOPS;
// up to 1,100 W). FP4 (NVFP4) dense: 108 / 8 = 13.5 PFLOPS per GPU (the datasheet's
// column says 14; sparse FP4 is only 4/3 of dense on Blackwell Ultra). SMs, clock and L2 are not published per SKU ("Blackwell Ultra GPUs
// contain up to 160 SMs ... Available SM count and HBM capacity varies by SKU", NVIDIA
// Technical Blog, "Inside NVIDIA Blackwell Ultra", 2025): APPROXIMATE as noted.
struct b300 {
    static constexpr gpu_spec spec{
        .name = "b300",
        .full_name = "NVIDIA B300 SXM6 AC (HGX B300, 270GB)",
        .architecture = gpu_architecture::blackwell,
        .compute_capability = 103,                        // compute capability 10.3 (sm_103)
        .sm_count = 148,                                  // APPROXIMATE: device queries in public reports
        .boost_clock = megahertz(1965),                   // ASSUMPTION: as B200 (not published)
        .l2_cache = mebibytes_of(126),                    // ASSUMPTION: as B200 (not published)
        .memory_capacity = gigabytes_of(270),             // datasheet: 270 GB HBM3E
        // nvidia-smi memory.total 275,040 MiB ("NVIDIA B300 SXM6 AC", driver 580.95.05) as
        // printed in public nvidia-smi logs; no NVIDIA document states it.
        .memory_reported = mebibytes_of(275040),
        .memory_bandwidth = tb_per_second(7.7),           // datasheet: 7.7 TB/s (HGX B300)
        .peak = {
            .fp32 = tflops_per_second(75),           // datasheet: 75 TFLOPS
            .tf32 = tflops_per_second(1125),         // HGX: 18 PFLOPS sparse / 8 → 1.125 dense
            .fp16 = tflops_per_second(2250),         // HGX: 36 PFLOPS sparse / 8 → 2.25 dense
            .bf16 = tflops_per_second(2250),         // HGX: 36 PFLOPS sparse / 8 → 2.25 dense
            .fp8 = tflops_per_second(4500),          // HGX: 72 PFLOPS sparse / 8 → 4.5 dense
            .int8 = tflops_per_second(153.5),        // datasheet: 307 TOPS sparse → 153.5 (INT8 cut)
            .fp4 = tflops_per_second(13500),         // HGX: FP4 108 PFLOPS dense / 8 → 13.5
        },
        .gpu_link = links::nvlink(1800),                  // HGX: NVLink5 1.8 TB/s per GPU (total)
        // The GPU has PCIe Gen6 x16 ("Inside NVIDIA Blackwell Ultra"); the host CPUs of HGX
        // B300 servers (DGX B300: Intel Xeon 6776P) have Gen5, which the link runs at.
        .host_link = links::pcie(links::pcie5_x16_gb_per_s),
        .tdp_watts = 1100,                                // datasheet: up to 1,100 W
        // NVIDIA HGX AI Factory reference architecture: HGX B300 servers with ConnectX-8
        // SuperNICs, "800 Gb/s bandwidth per GPU".
        .system = {.gpus_per_node = 8, .adapter_gbit_per_s = 800},
    };
};

// ---------------------------------------------------------------------------------
// A GPU of a GB200 / GB300 NVL72 rack: 18 compute trays of 2 superchips (a Grace CPU and
// two GPUs each), 4 GPUs per tray, all 72 GPUs in one NVLink domain through the rack's
// NVLink switches (130 TB/s); racks join over one network adapter per GPU. NVIDIA
// "GB200 NVL72" and "GB300 NVL72" product pages (rack totals: divided by 72 here), the
// NVIDIA Blackwell datasheet (GB200 column) and Blackwell Ultra datasheet (GB300 column).
//
// The tray's host is its two Grace CPUs: 72 Arm Neoverse V2 cores each with 4×128-bit
// SVE2 units, up to 480 GB LPDDR5X at up to 512 GB/s each (GB200 NVL72 page; NVIDIA
// Technical Blog, "Inside the NVIDIA Rubin Platform", 2026, Grace column); GB300 NVL72
// racks quote 14 TB/s of CPU memory bandwidth, 389 GB/s per Grace. Each Grace joins its
// two GPUs over NVLink-C2C, 900 GB/s both ways together (same sources).
namespace blackwell_detail {
// The host of a compute tray: two Grace CPUs. ASSUMPTIONS: DeepSpeed's CPU-Adam has
// AVX intrinsics only, so on Arm its loop vectorises to the 128-bit units' 4 fp32
// lanes; 3.1 GHz held (the base clock in public system descriptions; no NVIDIA
// datasheet figure); 75 % of the DRAM peak sustained, as host_spec's default assumes.
constexpr host_spec grace_tray(double dram_gb_per_s_per_cpu) {
    return {.cores = 2 * 72, .simd_lanes = 4, .clock = megahertz(3100),
            .memory_bandwidth = gb_per_second(0.75 * 2 * dram_gb_per_s_per_cpu)};
}
// A GPU's host link: its Grace's NVLink-C2C, 900 GB/s total shared by the Grace's two
// GPUs. ASSUMPTION: an even split, 225 GB/s each way per GPU.
constexpr link_spec grace_c2c_per_gpu() {
    return {link_kind::nvlink, gb_per_second(900.0 / 2.0 / 2.0), microseconds_of(links::nvlink_latency_us),
            links::link_efficiency};
}
}  // namespace blackwell_detail

// GB200: rack FP8/FP6 720, FP16/BF16 360, TF32 180 PFLOPS with sparsity ("Dense is
// one-half sparse"), FP32 5,760 TFLOPS, NVFP4 1,440 | 720 PFLOPS sparse | dense (10 per
// GPU dense), 13.4 TB HBM3E at 576 TB/s (186 GB, 8 TB/s per GPU); up to 1,200 W per GPU
// (Blackwell datasheet, GB200 column; NVIDIA DPS "Device Specifications").
struct gb200 {
    static constexpr gpu_spec spec{
        .name = "gb200",
        .full_name = "NVIDIA GB200 (NVL72, 186GB)",
        .architecture = gpu_architecture::blackwell,
        .compute_capability = 100,                        // compute capability 10.0
        .sm_count = 148,                                  // APPROXIMATE: as B200 (public reports)
        // S. Bekman, "Machine Learning Engineering Open Book", compute/accelerator: GB200
        // device-reported maximum SM clock 2062 MHz.
        .boost_clock = megahertz(2062),
        .l2_cache = mebibytes_of(126),                    // APPROXIMATE: as B200 (public reports)
        .memory_capacity = gigabytes_of(186),             // datasheet: 186 GB HBM3E
        // nvidia-smi memory.total 189,471 MiB ("NVIDIA GB200") as printed in public
        // nvidia-smi logs; no NVIDIA document states it.
        .memory_reported = mebibytes_of(189471),
        .memory_bandwidth = tb_per_second(8),             // rack 576 TB/s / 72
        .peak = {
            .fp32 = tflops_per_second(80),           // rack 5,760 TFLOPS / 72
            .tf32 = tflops_per_second(1250),         // rack 180 PFLOPS sparse / 72 → 1.25 dense
            .fp16 = tflops_per_second(2500),         // rack 360 PFLOPS sparse / 72 → 2.5 dense
            .bf16 = tflops_per_second(2500),         // rack 360 PFLOPS sparse / 72 → 2.5 dense
            .fp8 = tflops_per_second(5000),          // rack 720 PFLOPS sparse / 72 → 5 dense
            .int8 = tflops_per_second(5000),         // rack 720 POPS sparse / 72 → 5 dense
            .fp4 = tflops_per_second(10000),         // rack NVFP4 720 PFLOPS dense / 72 → 10
        },
        .gpu_link = links::nvlink(1800),                  // NVLink5 1.8 TB/s per GPU (total)
        .host_link = blackwell_detail::grace_c2c_per_gpu(),
        .tdp_watts = 1200,                                // datasheet: up to 1,200 W
        // ASSUMPTION: one ConnectX-7 at 400 Gb/s per GPU (4 per tray), as public system
        // descriptions of GB200 NVL72 trays list; NVIDIA's pages do not say.
        .system = {.gpus_per_node = 4, .nvlink_domain = 72, .adapter_gbit_per_s = 400,
                   .host = blackwell_detail::grace_tray(512)},
    };
};

// GB300: rack FP4 1,440 | 1,080 PFLOPS sparse | dense ("without sparsity"; 15 per GPU
// dense), FP8/FP6 720, FP16/BF16 360, TF32 180 PFLOPS with sparsity, FP32 6 PFLOPS,
// INT8 24 POPS; 279 GB HBM3E at 8 TB/s per GPU, up to 1,400 W (Blackwell Ultra
// datasheet, GB300 column). One ConnectX-8 SuperNIC at 800 Gb/s per GPU ("18 trays, each
// with 4 x single-port NVIDIA ConnectX-8 NICs", NVIDIA NVL72 AI Factory enterprise
// reference architecture).
struct gb300 {
    static constexpr gpu_spec spec{
        .name = "gb300",
        .full_name = "NVIDIA GB300 (NVL72, 279GB)",
        .architecture = gpu_architecture::blackwell,
        .compute_capability = 103,                        // compute capability 10.3 (sm_103)
        // DERIVED: its 15 PFLOPS dense NVFP4 is the 160-SM Blackwell Ultra's ("160 SMs ...
        // 15 PetaFLOPS dense NVFP4", "Inside NVIDIA Blackwell Ultra").
        .sm_count = 160,
        .boost_clock = megahertz(2062),                   // ASSUMPTION: as GB200 (not published)
        .l2_cache = mebibytes_of(126),                    // ASSUMPTION: as B200 (not published)
        .memory_capacity = gigabytes_of(279),             // datasheet: 279 GB HBM3E
        // nvidia-smi memory.total 284,208 MiB ("NVIDIA GB300") as printed in public
        // nvidia-smi logs; no NVIDIA document states it.
        .memory_reported = mebibytes_of(284208),
        .memory_bandwidth = tb_per_second(8),             // datasheet: 8 TB/s
        .peak = {
            .fp32 = tflops_per_second(80),           // datasheet: 80 TFLOPS
            .tf32 = tflops_per_second(1250),         // rack 180 PFLOPS sparse / 72 → 1.25 dense
            .fp16 = tflops_per_second(2500),         // rack 360 PFLOPS sparse / 72 → 2.5 dense
            .bf16 = tflops_per_second(2500),         // rack 360 PFLOPS sparse / 72 → 2.5 dense
            .fp8 = tflops_per_second(5000),          // rack 720 PFLOPS sparse / 72 → 5 dense
            .int8 = tflops_per_second(165),          // datasheet: 330 TOPS sparse → 165 (INT8 cut)
            .fp4 = tflops_per_second(15000),         // rack FP4 1,080 PFLOPS dense / 72 → 15
        },
        .gpu_link = links::nvlink(1800),                  // NVLink5 1.8 TB/s per GPU (total)
        .host_link = blackwell_detail::grace_c2c_per_gpu(),
        .tdp_watts = 1400,                                // datasheet: up to 1,400 W
        .system = {.gpus_per_node = 4, .nvlink_domain = 72, .adapter_gbit_per_s = 800,
                   .host = blackwell_detail::grace_tray(14000.0 / 36)},  // 14 TB/s / 36 Grace
    };
};

}  // namespace trainperf
