#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/system.hpp>

#include <catch2/catch.hpp>

#include <iterator>
#include <set>
#include <string>

using namespace trainperf;

// Every tag is a `hardware` and usable at compile time.
static_assert(hardware<h100_sxm> && hardware<h100_pcie> && hardware<h200_sxm> &&
              hardware<a100_sxm_80gb> && hardware<a100_sxm_40gb> && hardware<v100_sxm2_32gb> &&
              hardware<rtx_3090_ti> && hardware<rtx_3090> && hardware<jetson_orin_nx_16gb> &&
              hardware<b200> && hardware<rtx_4090> && hardware<rtx_a6000> && hardware<l40s> &&
              hardware<l4> && hardware<a10> && hardware<t4> && hardware<gh200> && hardware<h20> &&
              hardware<mi300x>);
static_assert(!hardware<int> && !hardware<gpu_spec>);
static_assert(h100_sxm::spec.sm_count == 132);
static_assert(lookup_gpu("H100-SXM").sm_count == 132);               // lookup in constexpr
static_assert(&lookup_gpu("rtx-3090-ti") == &gpu_catalog[6]);
static_assert(h100_sxm::spec.peak_for(dtype::bf16) == tflops_per_second(989.4));
static_assert(!v100_sxm2_32gb::spec.supports(dtype::bf16));
static_assert(gpu_names().size() == gpu_catalog.size());

TEST_CASE("datasheet values (docs/catalogs.md)", "[hardware][catalog]") {
    const gpu_spec& h = h100_sxm::spec;
    CHECK(h.name == "h100-sxm");
    CHECK(h.architecture == gpu_architecture::hopper);
    CHECK(h.sm_count == 132);
    CHECK(h.boost_clock.value() == 1.98e9);
    CHECK(h.memory_capacity.value() == 80e9);
    CHECK(h.memory_bandwidth.value() == Approx(3.35e12));
    CHECK(h.peak_for(dtype::fp32).value() == Approx(67e12));
    CHECK(h.peak_for(dtype::tf32).value() == Approx(494.7e12));
    CHECK(h.peak_for(dtype::bf16).value() == Approx(989.4e12));
    CHECK(h.peak_for(dtype::fp16).value() == Approx(989.4e12));
    CHECK(h.peak_for(dtype::fp8).value() == Approx(1979e12));
    CHECK(h.tdp_watts == 700);
    CHECK(h.host_link.kind == link_kind::pcie);
    CHECK(h.host_link.per_direction.value() == Approx(63e9));

    CHECK(h100_pcie::spec.sm_count == 114);
    CHECK(h100_pcie::spec.peak_for(dtype::bf16).value() == Approx(756e12));
    CHECK(h100_pcie::spec.memory_bandwidth.value() == Approx(2.0e12));
    CHECK(h100_pcie::spec.gpu_link.kind == link_kind::nvlink_bridge);

    CHECK(h200_sxm::spec.memory_capacity.value() == 141e9);
    // What the drivers report (nvidia-smi memory.total), used for fit verdicts.
    CHECK(h.memory_reported.value() == 81559.0 * 1048576);
    CHECK(h200_sxm::spec.memory_reported.value() == 143771.0 * 1048576);
    CHECK(a100_sxm_80gb::spec.memory_reported.value() == 81920.0 * 1048576);
    CHECK(b200::spec.memory_reported.value() == 183359.0 * 1048576);
    for (const gpu_spec& g : gpu_catalog) {
        INFO(g.name);
        // Chips come in powers of two: the device holds more than the datasheet's decimal GB.
        CHECK(g.memory_reported > g.memory_capacity);
        CHECK(g.device_memory() == g.memory_reported);
    }
    CHECK(h200_sxm::spec.memory_bandwidth.value() == Approx(4.8e12));

    CHECK(a100_sxm_80gb::spec.memory_bandwidth.value() == Approx(2039e9));
    CHECK(a100_sxm_40gb::spec.memory_bandwidth.value() == Approx(1555e9));
    CHECK(a100_sxm_80gb::spec.peak_for(dtype::tf32).value() == Approx(156e12));
    CHECK(a100_sxm_80gb::spec.peak_for(dtype::int8).value() == Approx(624e12));
    CHECK_FALSE(a100_sxm_80gb::spec.supports(dtype::fp8));
    CHECK(a100_sxm_40gb::spec.l2_cache.value() == 40.0 * 1048576);

    CHECK(v100_sxm2_32gb::spec.peak_for(dtype::fp16).value() == Approx(125e12));
    CHECK(v100_sxm2_32gb::spec.peak_for(dtype::fp32).value() == Approx(15.7e12));
    CHECK(v100_sxm2_32gb::spec.host_link.per_direction.value() == Approx(15.75e9));

    // GeForce: fp32-accumulate tensor rate, not the fp16-accumulate 160.
    CHECK(rtx_3090_ti::spec.peak_for(dtype::fp16).value() == Approx(80e12));
    CHECK(rtx_3090_ti::spec.peak_for(dtype::bf16).value() == Approx(80e12));
    CHECK(rtx_3090_ti::spec.memory_bandwidth.value() == Approx(1008e9));
    CHECK(rtx_3090::spec.peak_for(dtype::bf16).value() == Approx(71e12));
    CHECK(rtx_3090::spec.memory_bandwidth.value() == Approx(936e9));
    CHECK(rtx_3090::spec.host_link.per_direction.value() == Approx(31.5e9));

    const gpu_spec& j = jetson_orin_nx_16gb::spec;
    CHECK(j.memory_shared_with_host);
    CHECK(j.gpu_link.kind == link_kind::none);
    CHECK(j.sm_count == 8);
    CHECK(j.memory_bandwidth.value() == Approx(102.4e9));
    CHECK(j.peak_for(dtype::fp32).value() == Approx(1.88e12).epsilon(0.001));   // 1024 × 2 × 918 MHz
    CHECK(j.peak_for(dtype::fp16).value() == Approx(15.04e12).epsilon(0.001));  // 8 × 2048 × 918 MHz

    CHECK(b200::spec.memory_capacity.value() == 180e9);
    CHECK(b200::spec.peak_for(dtype::fp8).value() == Approx(4500e12));
    CHECK(b200::spec.gpu_link.total().value() == Approx(1800e9));
}

// Every GPU of docs/catalogs.md, typed in from the datasheets, so a
// changed catalog number fails here. TFLOP/s dense; 0 = no such unit; memory in GB
// (1e9 B); link = datasheet GPU-GPU total (both directions); host = PCIe x16 per
// direction after 128b/130b (Gen3 15.75, Gen4 31.5, Gen5 63).
TEST_CASE("every GPU matches its datasheet", "[hardware][catalog]") {
    struct row {
        const char* name;
        int sms;
        double fp32, tf32, fp16, bf16, fp8, memory_gb, bandwidth_gb_s, link_total_gb_s,
            host_gb_s, tdp;
    };
    const row rows[] = {
        {"h100-sxm", 132, 67, 494.7, 989.4, 989.4, 1979, 80, 3350, 900, 63, 700},
        {"h100-pcie", 114, 51, 378, 756, 756, 1513, 80, 2000, 600, 63, 350},
        {"h200-sxm", 132, 67, 494.7, 989.4, 989.4, 1979, 141, 4800, 900, 63, 700},
        {"a100-sxm-80gb", 108, 19.5, 156, 312, 312, 0, 80, 2039, 600, 31.5, 400},
        {"a100-sxm-40gb", 108, 19.5, 156, 312, 312, 0, 40, 1555, 600, 31.5, 400},
        {"v100-sxm2-32gb", 80, 15.7, 0, 125, 0, 0, 32, 900, 300, 15.75, 300},
        {"rtx-3090-ti", 84, 40, 40, 80, 80, 0, 24, 1008, 112.5, 31.5, 450},
        {"rtx-3090", 82, 35.6, 35.6, 71, 71, 0, 24, 936, 112.5, 31.5, 350},
        // Jetson: derived rates (≈1.9 / ≈7.5 / ≈15 in the table), no GPU link, 25 W max.
        {"jetson-orin-nx-16gb", 8, 1.88, 7.52, 15.04, 15.04, 0, 16, 102.4, 0, 51.2, 25},
        // B200: FP32 not in the table (derived 74.4 in the catalog).
        {"b200", 148, 74.4, 1100, 2250, 2250, 4500, 180, 8000, 1800, 63, 1000},
        // B300 (HGX board totals ÷ 8), GB200 and GB300 (NVL72 rack totals ÷ 72); the
        // Grace's NVLink-C2C, 900 GB/s total, shared by its two GPUs: 225 each way.
        {"b300", 148, 75, 1125, 2250, 2250, 4500, 270, 7700, 1800, 63, 1100},
        {"gb200", 148, 80, 1250, 2500, 2500, 5000, 186, 8000, 1800, 225, 1200},
        {"gb300", 160, 80, 1250, 2500, 2500, 5000, 279, 8000, 1800, 225, 1400},
        // GH200: the H100 SXM5's rates; NVLink-C2C 900 GB/s total to the Grace CPU.
        {"gh200", 132, 67, 494.7, 989.4, 989.4, 1979, 96, 4000, 900, 450, 1000},
        {"h20", 78, 44, 74, 148, 148, 296, 96, 4000, 900, 63, 400},
        // GeForce: fp32-accumulate rates (half the fp16-accumulate ones), no NVLink: PCIe
        // Gen4 staged through host memory (half of 31.5 each way).
        {"rtx-4090", 128, 82.6, 82.6, 165.2, 165.2, 330.3, 24, 1008, 31.5, 31.5, 450},
        // PCIe boards without NVLink: peer-to-peer over PCIe (Gen4: 63 GB/s total).
        {"l40s", 142, 91.6, 183, 362.05, 362.05, 733, 48, 864, 63, 31.5, 350},
        {"l4", 58, 30.3, 60, 121, 121, 242.5, 24, 300, 63, 31.5, 72},
        {"rtx-a6000", 84, 38.7, 77.4, 154.8, 154.8, 0, 48, 768, 112.5, 31.5, 300},
        {"a10", 72, 31.2, 62.5, 125, 125, 0, 24, 600, 63, 31.5, 150},
        {"t4", 40, 8.1, 0, 65, 0, 0, 16, 320, 31.5, 15.75, 70},
        // MI300X: 7 Infinity Fabric links × 128 GB/s = 896 GB/s aggregate.
        {"mi300x", 304, 81.7, 653.7, 1307.4, 1307.4, 2614.9, 192, 5300, 896, 63, 750},
    };
    REQUIRE(std::size(rows) == gpu_catalog.size());
    const auto rate = [](const gpu_spec& g, dtype t) {
        return g.supports(t) ? g.peak_for(t).value() / 1e12 : 0.0;
    };
    for (const row& r : rows) {
        INFO(r.name);
        const gpu_spec& g = lookup_gpu(r.name);
        CHECK(g.sm_count == r.sms);
        CHECK(rate(g, dtype::fp32) == Approx(r.fp32).epsilon(0.002));
        CHECK(rate(g, dtype::tf32) == Approx(r.tf32).epsilon(0.002));
        CHECK(rate(g, dtype::fp16) == Approx(r.fp16).epsilon(0.002));
        CHECK(rate(g, dtype::bf16) == Approx(r.bf16).epsilon(0.002));
        CHECK(rate(g, dtype::fp8) == Approx(r.fp8).epsilon(0.002));
        CHECK(g.memory_capacity.value() == Approx(r.memory_gb * 1e9));
        CHECK(g.memory_bandwidth.value() == Approx(r.bandwidth_gb_s * 1e9));
        CHECK(g.gpu_link.total().value() == Approx(r.link_total_gb_s * 1e9));
        CHECK(g.gpu_link.per_direction.value() == Approx(r.link_total_gb_s / 2 * 1e9));
        CHECK(g.host_link.per_direction.value() == Approx(r.host_gb_s * 1e9));
        CHECK(g.tdp_watts == r.tdp);
    }
}

TEST_CASE("link bandwidth: per direction is half the quoted total", "[hardware][catalog]") {
    // NVLink4: 900 GB/s total = 450 GB/s each way.
    CHECK(h100_sxm::spec.gpu_link.kind == link_kind::nvlink);
    CHECK(h100_sxm::spec.gpu_link.per_direction.value() == Approx(450e9));
    CHECK(h100_sxm::spec.gpu_link.total().value() == Approx(900e9));
    CHECK(a100_sxm_80gb::spec.gpu_link.per_direction.value() == Approx(300e9));
    CHECK(v100_sxm2_32gb::spec.gpu_link.per_direction.value() == Approx(150e9));
    CHECK(h100_pcie::spec.gpu_link.per_direction.value() == Approx(300e9));
    // GA102 bridge: 112.5 GB/s total, 56.25 each way.
    CHECK(rtx_3090_ti::spec.gpu_link.per_direction.value() == Approx(56.25e9));
    CHECK(rtx_3090::spec.gpu_link.total().value() == Approx(112.5e9));
    for (const gpu_spec& g : gpu_catalog) {
        INFO(g.name);
        CHECK(g.gpu_link.efficiency > 0.0);
        CHECK(g.gpu_link.efficiency <= 1.0);
        CHECK(g.host_link.per_direction.value() > 0.0);
    }
}

TEST_CASE("every catalog entry is complete", "[hardware][catalog]") {
    std::set<std::string> names;
    for (const gpu_spec& g : gpu_catalog) {
        INFO(g.name);
        names.insert(std::string(g.name));
        CHECK(g.sm_count > 0);
        CHECK(g.boost_clock.value() > 0);
        CHECK(g.l2_cache.value() > 0);
        CHECK(g.memory_capacity.value() > 0);
        CHECK(g.memory_bandwidth.value() > 0);
        CHECK(g.supports(dtype::fp32));
        CHECK(g.supports(dtype::fp16));
        CHECK(g.tdp_watts > 0);
        // Tensor-core fp16 is always faster than CUDA-core fp32.
        CHECK(g.peak_for(dtype::fp16) > g.peak_for(dtype::fp32));
    }
    CHECK(names.size() == gpu_catalog.size());
}

TEST_CASE("bf16 on V100 is an error that names the dtype", "[hardware][catalog]") {
    CHECK_THROWS_AS(v100_sxm2_32gb::spec.peak_for(dtype::bf16), trainperf::invalid_argument);
    CHECK_THROWS_WITH(v100_sxm2_32gb::spec.peak_for(dtype::bf16), Catch::Contains("bf16"));
    CHECK_THROWS_WITH(v100_sxm2_32gb::spec.peak_for(dtype::tf32), Catch::Contains("tf32"));
    CHECK_THROWS_AS(lookup_gpu("v100-sxm2-32gb").peak_for(dtype::fp8), trainperf::invalid_argument);
}

TEST_CASE("workstation and consumer boards carry their real interconnect", "[hardware][catalog]") {
    // No NVLink on the L40S, L4, A10, T4: cards meet over PCIe peer to peer.
    for (const gpu_spec* g : {&l40s::spec, &l4::spec, &a10::spec, &t4::spec}) {
        INFO(g->name);
        CHECK(g->gpu_link.kind == link_kind::pcie);
        CHECK(g->gpu_link.per_direction == g->host_link.per_direction);
        CHECK(g->host_link.kind == link_kind::pcie);
        CHECK(g->pcie_peer_to_peer);
    }
    // None on the 4090 either, and GeForce has no PCIe peer-to-peer: staged through host.
    CHECK(rtx_4090::spec.gpu_link.kind == link_kind::pcie_no_p2p);
    CHECK_FALSE(rtx_4090::spec.pcie_peer_to_peer);
    CHECK(resolve_link(rtx_4090::spec, link_kind::pcie).per_direction == rtx_4090::spec.gpu_link.per_direction);
    CHECK(l40s::spec.pcie_peer_to_peer);
    CHECK(rtx_a6000::spec.pcie_peer_to_peer);
    CHECK(rtx_a6000::spec.gpu_link.kind == link_kind::nvlink_bridge);
    // PCIe generations: T4 Gen3, Ada and Ampere boards Gen4, Hopper and MI300X Gen5.
    CHECK(t4::spec.host_link.per_direction.value() == Approx(links::pcie3_x16_gb_per_s * 1e9));
    CHECK(rtx_4090::spec.host_link.per_direction.value() == Approx(links::pcie4_x16_gb_per_s * 1e9));
    CHECK(mi300x::spec.host_link.per_direction.value() == Approx(links::pcie5_x16_gb_per_s * 1e9));
    CHECK(mi300x::spec.gpu_link.kind == link_kind::infinity_fabric);
    CHECK(gh200::spec.host_link.kind == link_kind::nvlink);
    CHECK(t4::spec.architecture == gpu_architecture::turing);
    CHECK(mi300x::spec.architecture == gpu_architecture::cdna3);
}

TEST_CASE("bf16 on T4 is an error that names the dtype", "[hardware][catalog]") {
    CHECK_FALSE(t4::spec.supports(dtype::bf16));
    CHECK_THROWS_WITH(t4::spec.peak_for(dtype::bf16), Catch::Contains("dtype = bf16: not supported"));
    CHECK(t4::spec.supports(dtype::fp16));
}

TEST_CASE("lookup by name", "[hardware][catalog]") {
    CHECK(&lookup_gpu("h100-sxm") == &gpu_catalog[0]);
    CHECK(lookup_gpu("RTX-3090-Ti").name == "rtx-3090-ti");
    CHECK(lookup_gpu("Jetson-Orin-NX-16GB").memory_shared_with_host);
    for (std::string_view n : gpu_names()) CHECK(lookup_gpu(n).name == n);
    const auto names = gpu_names();
    CHECK(names[0] == "h100-sxm");
    CHECK(names[9] == "b200");
}

TEST_CASE("an unknown GPU name lists the known ones", "[hardware][catalog]") {
    CHECK_THROWS_AS(lookup_gpu("foo"), trainperf::invalid_argument);
    CHECK_THROWS_WITH(lookup_gpu("foo"),
                      Catch::StartsWith("gpu = \"foo\": unknown; known: h100-sxm, h100-pcie, "));
    CHECK_THROWS_WITH(lookup_gpu("foo"), Catch::Contains("jetson-orin-nx-16gb, b200"));
    // A name that begins or is part of known ones is answered with them first.
    CHECK_THROWS_WITH(lookup_gpu("h100"),
                      Catch::StartsWith("gpu = \"h100\": unknown; did you mean h100-sxm or h100-pcie? known: "));
    CHECK_THROWS_WITH(lookup_gpu("4090"), Catch::StartsWith("gpu = \"4090\": unknown; did you mean rtx-4090? known: "));
    CHECK_THROWS_WITH(lookup_gpu("A100"),
                      Catch::Contains("did you mean a100-sxm-80gb or a100-sxm-40gb? known: "));
    CHECK_THROWS_AS(lookup_gpu(""), trainperf::invalid_argument);
    CHECK_THROWS_AS(lookup_gpu("h100-sxm "), trainperf::invalid_argument);
}
