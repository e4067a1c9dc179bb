// Systems whose NVLink spans nodes (GB200/GB300 NVL72 racks), the Blackwell catalog
// entries and the systems they are sold in, and tensor parallelism across domains
// (spec/hardware.hpp, spec/system.hpp, workload/placement.hpp, cost/comm.hpp).
#include <catch2/catch.hpp>

#include <trainperf/cost/comm.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/io/gpu_json.hpp>
#include <trainperf/io/system_json.hpp>
#include <trainperf/spec/framework.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/system.hpp>
#include <trainperf/workload/stage.hpp>

#include "cli_runner.hpp"

using namespace trainperf;

// An NVL72 rack by default, with no flag: trays of 4, one domain of 72.
static_assert(build_cluster({.gpu = gb200::spec, .gpus = 144}).gpus_per_node == 4);
static_assert(gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 144})) == 72);
static_assert(gpus_per_domain(build_cluster({.gpu = h100_sxm::spec, .gpus = 16})) == 8);

TEST_CASE("Blackwell catalog: per-GPU dense peaks from the rack and board totals, the systems sold", "[domain]") {
    // GB200 NVL72: rack BF16 360 PFLOPS sparse → 360 / 72 / 2 = 2.5 PFLOPS dense per GPU.
    CHECK(lookup_gpu("gb200").peak_for(dtype::bf16).value() == Approx(360e15 / 72 / 2));
    CHECK(lookup_gpu("gb200").peak_for(dtype::fp8).value() == Approx(720e15 / 72 / 2));
    CHECK(lookup_gpu("gb200").device_memory().value() == Approx(189471.0 * 1024 * 1024));
    // HGX B300: board FP8 72 PFLOPS sparse → 72 / 8 / 2 = 4.5 per GPU; INT8 cut to 307 / 2 TOPS.
    CHECK(lookup_gpu("b300").peak_for(dtype::fp8).value() == Approx(72e15 / 8 / 2));
    CHECK(lookup_gpu("b300").peak_for(dtype::int8).value() == Approx(307e12 / 2));
    CHECK(lookup_gpu("gb300").compute_capability == 103);
    CHECK(lookup_gpu("gb300").device_memory() > lookup_gpu("b300").device_memory());

    // The adapters: ConnectX-8 800 Gb/s (100 GB/s each way) with B300 and GB300, 400 Gb/s with GB200.
    CHECK(default_inter_node_link(b300::spec).per_direction.value() == Approx(100e9));
    CHECK(default_inter_node_link(gb300::spec).per_direction.value() == Approx(100e9));
    CHECK(default_inter_node_link(gb200::spec).per_direction.value() == Approx(50e9));
    CHECK(default_inter_node_link(b200::spec).per_direction.value() == Approx(50e9));

    // A tray's host: two Grace CPUs, 144 cores, each GPU a quarter of them.
    const cluster_spec rack = build_cluster({.gpu = gb200::spec, .gpus = 72});
    CHECK(rack.host.cores == 144);
    CHECK(share_per_gpu(rack.host, rack.gpus_per_node).cores == Approx(36));
    // The host link is the Grace's NVLink-C2C, 900 GB/s both ways shared by two GPUs.
    CHECK(gb200::spec.host_link.kind == link_kind::nvlink);
    CHECK(gb200::spec.host_link.per_direction.value() == Approx(900e9 / 4));
    // HGX B300 stays an 8-GPU server whose domain is the node.
    CHECK(build_cluster({.gpu = b300::spec, .gpus = 64}).gpus_per_node == 8);
    CHECK(gpus_per_domain(build_cluster({.gpu = b300::spec, .gpus = 64})) == 8);
}

TEST_CASE("build_cluster: the domain is the system's unless asked, whole nodes of NVLink only", "[domain]") {
    // A job smaller than the rack still has the rack's domain.
    CHECK(gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 8})) == 72);
    // Another node size that divides 72 keeps the rack; one that does not keeps the node.
    CHECK(gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 144, .gpus_per_node = 8})) == 72);
    CHECK(gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 140, .gpus_per_node = 7})) == 7);
    // Asked for: 64 of a rack's 72 GPUs (16 trays), or the node alone.
    CHECK(gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 128, .nvlink_domain = 64})) == 64);
    CHECK(gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 128, .nvlink_domain = 0})) == 4);
    // On PCIe the domain stays the node, and asking for more is refused by name.
    CHECK(gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 16, .link = "pcie"})) == 4);
    CHECK_THROWS_WITH(build_cluster({.gpu = gb200::spec, .gpus = 16, .nvlink_domain = 16, .link = "pcie"}),
                      Catch::Contains("nvlink_domain = 16: spans nodes only over NVLink"));
    CHECK_THROWS_WITH(build_cluster({.gpu = gb200::spec, .gpus = 144, .nvlink_domain = 70}),
                      Catch::Contains("nvlink_domain = 70: must be a multiple of gpus_per_node (4)"));
    // Less than a node is not a domain of whole nodes (an NVLink bridge is a link kind).
    CHECK_THROWS_WITH(build_cluster({.gpu = h100_sxm::spec, .gpus = 16, .nvlink_domain = 2}),
                      Catch::Contains("nvlink_domain = 2: must be a multiple of gpus_per_node (8)"));
    // An H100 server joined to others over NVLink (an NVLink Switch system of 32).
    CHECK(gpus_per_domain(build_cluster({.gpu = h100_sxm::spec, .gpus = 64, .nvlink_domain = 32})) == 32);
}

TEST_CASE("Groups are placed on NVLink domains: a rack holds what 18 nodes would split", "[domain]") {
    const parallel_layout l{.dp = 36, .tp = 4};
    // dp 36 at stride 4: 18 per 72-GPU domain → 2 domains; on 4-GPU nodes, one per node.
    const layout_groups rack = place(l, gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 144})));
    CHECK(rack.data.size == 36);
    CHECK(rack.data.per_node == 18);
    CHECK(rack.data.nodes() == 2);
    const layout_groups trays =
        place(l, gpus_per_domain(build_cluster({.gpu = gb200::spec, .gpus = 144, .nvlink_domain = 0})));
    CHECK(trays.data.per_node == 1);
    // contiguous_group and the count of domains: 144 GPUs are 2 racks; 128 GPUs fill one
    // rack and part of a second.
    const cluster_spec two_racks = build_cluster({.gpu = gb200::spec, .gpus = 144});
    CHECK(contiguous_group(two_racks, 144).per_node == 72);
    CHECK(domain_count(two_racks, 144) == 2);
    CHECK(domain_count(two_racks, 128) == 2);
    CHECK(domain_count(two_racks, 72) == 1);
}

TEST_CASE("A collective across trays of one rack runs on NVLink; across racks it crosses the network",
          "[domain]") {
    const cluster_spec rack = build_cluster({.gpu = gb200::spec, .gpus = 144});
    cluster_spec trays = rack;
    trays.nvlink_domain = 0;  // the same trays if NVLink stopped at each
    const bytes size = megabytes_of(64);
    // 16 ranks over 4 trays: inside the rack, as fast as NVLink between any 16 GPUs.
    const seconds in_rack = estimate_collective(collective::all_reduce, size, 16, rack).time;
    const seconds over_net = estimate_collective(collective::all_reduce, size, 16, trays).time;
    CHECK(estimate_collective(collective::all_reduce, size, 16, rack).nodes == 1);
    CHECK(estimate_collective(collective::all_reduce, size, 16, trays).nodes == 4);
    CHECK(in_rack < over_net);
    // 144 ranks span the two racks: slower than 72 inside one.
    const collective_estimate two = estimate_collective(collective::all_reduce, size, 144, rack);
    CHECK(two.nodes == 2);
    CHECK(two.time > estimate_collective(collective::all_reduce, size, 72, rack).time);
}

namespace {
training_setup tensor_parallel_run(const gpu_spec& gpu, int gpus, int tp, int domain) {
    training_setup s;
    s.model = llama3_70b::config;
    s.framework = megatron_core_profile;
    s.cluster = build_cluster({.gpu = gpu, .gpus = gpus, .nvlink_domain = domain});
    s.seq = 4096;
    s.layout = {.dp = gpus / (tp * 4), .tp = tp, .pp = 4, .sp = true, .zero = 1, .grad_accum = 8,
                .recompute = recompute_mode::selective};
    return s;
}
}  // namespace

TEST_CASE("Tensor parallelism across nodes is priced on the links it crosses, not refused", "[domain]") {
    // tp 8 on GB200: two trays, one rack. NVLink all the way (and overlapped).
    const training_setup rack = tensor_parallel_run(gb200::spec, 64, 8, -1);
    CHECK(tensor_parallel_domains(rack) == 1);
    CHECK(overlaps_tensor_parallel(rack));
    // The same trays without the rack's NVLink: tp 8 spans two nodes over the network, its
    // collectives exposed (Transformer Engine's userbuffers do not reach across it).
    const training_setup split = tensor_parallel_run(gb200::spec, 64, 8, 0);
    CHECK(tensor_parallel_domains(split) == 2);
    CHECK_FALSE(overlaps_tensor_parallel(split));
    const step_report fast = predict(rack), slow = predict(split);
    CHECK(slow.step_time > fast.step_time);
    CHECK(slow.time.communication > fast.time.communication);
    // tp 16 over two 8-GPU A100 nodes, refused before, runs.
    training_setup a100 = tensor_parallel_run(a100_sxm_80gb::spec, 64, 16, -1);
    a100.model = gpt3_175b::config;
    a100.seq = 2048;
    CHECK(tensor_parallel_domains(a100) == 2);
    CHECK_NOTHROW(validate(a100));
    CHECK(predict(a100).step_time.value() > 0);
}

TEST_CASE("Description files carry the NVLink domain and the GPU's standard system", "[domain][io]") {
    // A GPU file round-trips its system; one written before systems were described loads
    // with 8-GPU nodes and the default host.
    const gpu_spec back = io::gpu_from_json(io::gpu_to_json(gb300::spec));
    CHECK(back.system.gpus_per_node == 4);
    CHECK(back.system.nvlink_domain == 72);
    CHECK(back.system.adapter_gbit_per_s == 800);
    REQUIRE(back.system.host.has_value());
    CHECK(back.system.host->cores == gb300::spec.system.host->cores);
    CHECK(back.system.host->memory_bandwidth.value() == Approx(gb300::spec.system.host->memory_bandwidth.value()));
    auto old = io::gpu_to_json(h100_sxm::spec);
    old.erase("system");
    CHECK(io::gpu_from_json(old).system.gpus_per_node == 0);
    auto bad = io::gpu_to_json(gb200::spec);
    bad["system"]["nvlink_domain"] = 70;
    CHECK_THROWS_WITH(io::gpu_from_json(bad), Catch::Contains("gpu.system.nvlink_domain = 70"));

    // A system file: an NVL72 rack as trays of 4 in domains of 72.
    system_description rack{.name = "nvl72", .gpus_per_node = 4, .intra_node_kind = link_kind::nvlink,
                            .inter_node = infiniband_adapter(400), .nvlink_domain = 72};
    const system_description read = io::system_from_json(io::system_to_json(rack));
    CHECK(read.nvlink_domain == 72);
    CHECK(gpus_per_domain(build_cluster(gb200::spec, read, 144)) == 72);
    auto j = io::system_to_json(rack);
    j["nvlink_domain"] = 6;
    CHECK_THROWS_WITH(io::system_from_json(j), Catch::Contains("nvlink_domain = 6: must be a multiple"));
    j.erase("nvlink_domain");  // files written before domains: the node
    CHECK(io::system_from_json(j).nvlink_domain == 0);
}

TEST_CASE("CLI: --nvlink-domain, the rack by default, tensor parallelism across domains said", "[domain][cli]") {
    using trainperf_test::run_cli;
    const auto comm = run_cli("comm --collective all-reduce --bytes 64MB --gpus 144 --gpu gb200");
    CHECK(comm.exit_code == 0);
    CHECK_THAT(comm.out, Catch::Contains("NVLink domains:      2 x 72 GPUs"));
    const auto bad = run_cli("predict --gpu gb200 --model llama3-8b --gpus 16 --nvlink-domain 6");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("nvlink_domain = 6"));
    const auto across = run_cli(
        "predict --gpu a100-sxm-80gb --model gpt3-175b --framework megatron --gpus 128 --tp 16 --pp 8 --sp "
        "--grad-accum 16 --recompute full");
    CHECK(across.exit_code == 0);
    CHECK_THAT(across.out, Catch::Contains("tensor parallelism (tp 16) spans 2 NVLink domains of 8 GPUs"));
    const auto sweep = run_cli(
        "sweep --gpu gb200 --model llama3-8b --framework megatron-core --gpus 16 --tp 8 --sp --vary nvlink-domain=0,72 "
        "--csv");
    CHECK(sweep.exit_code == 0);
    CHECK_THAT(sweep.out, Catch::Contains("nvlink_domain"));
}
