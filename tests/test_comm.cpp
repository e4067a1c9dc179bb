#include <trainperf/cost/comm.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/workload/placement.hpp>

#include <catch2/catch.hpp>

#include <limits>

using namespace trainperf;

namespace {
// A link with round numbers so the hand computations below are easy to follow.
constexpr link_spec test_link{.kind = link_kind::nvlink,
                              .per_direction = gb_per_second(100.0),
                              .latency = microseconds_of(5.0),
                              .efficiency = 0.5};

constexpr cluster_spec two_level(int gpus_per_node) {
    return {.gpu = {}, .gpus_per_node = gpus_per_node,
            .intra_node = default_link(link_kind::nvlink),
            .inter_node = default_link(link_kind::infiniband)};
}
}  // namespace

// The cost model works in constant expressions.
static_assert(ring_all_reduce_time(bytes_of(1e9), 1, link_spec{}).value() == 0.0);
static_assert(ring_all_reduce_time(bytes_of(1e9), 4, test_link).value() > 0.0);
static_assert(default_link(link_kind::nvlink).total() == gb_per_second(900.0));

TEST_CASE("ring all-reduce matches a hand computation", "[comm]") {
    // 4 GPUs, 1 GB: 2·(4−1) = 6 steps of 5 µs = 30 µs; each GPU moves 2·3/4·1 GB =
    // 1.5 GB at 0.5 × 100 GB/s = 50 GB/s → 30 ms. Total 30.03 ms.
    const seconds t = all_reduce_time(gigabytes_of(1.0), 4, test_link);
    CHECK(t.value() == Approx(0.03003).epsilon(1e-12));

    // 8 GPUs over the default NVLink (450 GB/s each way, 0.8, 3 µs), 1.4 GB:
    // 14 × 3 µs + 2·7/8·1.4e9 B / 360e9 B/s = 42 µs + 6.805556 ms.
    const seconds nv = all_reduce_time(gigabytes_of(1.4), 8, default_link(link_kind::nvlink));
    CHECK(nv.value() == Approx(42e-6 + 2.45e9 / 360e9).epsilon(1e-12));
}

TEST_CASE("reduce-scatter and all-gather each cost half a ring all-reduce", "[comm]") {
    // 4 GPUs, 1 GB: 3 steps × 5 µs + 3/4 GB / 50 GB/s = 15 µs + 15 ms.
    CHECK(reduce_scatter_time(gigabytes_of(1.0), 4, test_link).value() ==
          Approx(0.015015).epsilon(1e-12));
    CHECK(all_gather_time(gigabytes_of(1.0), 4, test_link).value() ==
          Approx(0.015015).epsilon(1e-12));
    for (int n : {2, 3, 8, 64}) {
        const auto size = gigabytes_of(0.3);
        CHECK((reduce_scatter_time(size, n, test_link) + all_gather_time(size, n, test_link))
                  .value() == Approx(all_reduce_time(size, n, test_link).value()));
    }
}

TEST_CASE("tree all-reduce takes 2·log2(N) latency steps and twice the buffer", "[comm]") {
    const auto tree = collective_algorithm::tree;
    // 8 GPUs, 0 bytes: 6 steps vs the ring's 14.
    CHECK(all_reduce_time(bytes_of(0), 8, test_link, tree).value() == Approx(6 * 5e-6));
    CHECK(all_reduce_time(bytes_of(0), 8, test_link).value() == Approx(14 * 5e-6));
    // Not a power of two: ⌈log2 5⌉ = 3.
    CHECK(all_reduce_time(bytes_of(0), 5, test_link, tree).value() == Approx(6 * 5e-6));
    // Volume: 2·size against the ring's 2·(N−1)/N·size.
    const auto size = gigabytes_of(2.0);
    CHECK(all_reduce_time(size, 64, test_link, tree).value() == Approx(12 * 5e-6 + 2 * 2e9 / 50e9));
    // auto takes the faster: the tree for a small buffer on many GPUs, the ring for a large one.
    const auto pick = collective_algorithm::automatic;
    CHECK(all_reduce_time(megabytes_of(1), 64, test_link, pick) == all_reduce_time(megabytes_of(1), 64, test_link, tree));
    CHECK(all_reduce_time(size, 64, test_link, pick) == all_reduce_time(size, 64, test_link));
}

TEST_CASE("point-to-point is one latency plus the transfer", "[comm]") {
    CHECK(p2p_time(megabytes_of(100), test_link).value() == Approx(5e-6 + 1e8 / 50e9));
    CHECK(collective_time(collective::p2p, megabytes_of(100), 2, test_link).value() ==
          Approx(5e-6 + 1e8 / 50e9));
}

TEST_CASE("one GPU communicates nothing", "[comm]") {
    const link_spec none{};
    CHECK(all_reduce_time(gigabytes_of(1), 1, none).value() == 0.0);
    CHECK(all_reduce_time(gigabytes_of(1), 1, none, collective_algorithm::tree).value() == 0.0);
    CHECK(reduce_scatter_time(gigabytes_of(1), 1, none).value() == 0.0);
    CHECK(all_gather_time(gigabytes_of(1), 1, none).value() == 0.0);
    CHECK(data_parallel_all_reduce_time(gigabytes_of(1), 1, cluster_spec{}).value() == 0.0);
}

TEST_CASE("hierarchical all-reduce beats a flat ring across 2 nodes of 8 GPUs", "[comm]") {
    const cluster_spec c = two_level(8);
    const auto size = gigabytes_of(1.0);
    // In the node: NVLink at 0.8 × 450 = 360 GB/s, 3 µs; across: IB at 0.9 × 25 =
    // 22.5 GB/s, 10 µs.
    // reduce-scatter: 7 × 3 µs + 7/8 GB / 360 GB/s; all-gather the same;
    // across nodes: ring of 2 over 1/8 GB: 2 × 10 µs + 2·1/2·0.125 GB / 22.5 GB/s.
    const double rs = 7 * 3e-6 + 0.875e9 / 360e9;
    const double inter = 2 * 10e-6 + 0.125e9 / 22.5e9;
    const seconds hier = hierarchical_all_reduce_time(size, c, 16);
    CHECK(hier.value() == Approx(2 * rs + inter).epsilon(1e-12));
    CHECK(hier.value() == Approx(10.478667e-3).epsilon(1e-6));

    // Flat ring over 16: 30 steps at the slowest latency (10 µs) and 2·15/16 GB at the
    // slowest bandwidth (22.5 GB/s).
    const seconds flat = flat_ring_all_reduce_time(size, c, 16);
    CHECK(flat.value() == Approx(30 * 10e-6 + 1.875e9 / 22.5e9).epsilon(1e-12));
    CHECK(hier < flat);
    CHECK(flat.value() / hier.value() > 7.9);

    // Data parallelism picks the hierarchical algorithm across nodes, the flat ring
    // inside one.
    CHECK(data_parallel_all_reduce_time(size, 16, c) == hier);
    CHECK(data_parallel_all_reduce_time(size, 8, c) ==
          all_reduce_time(size, 8, default_link(link_kind::nvlink)));
    CHECK(hierarchical_all_reduce_time(size, c, 4) ==
          all_reduce_time(size, 4, default_link(link_kind::nvlink)));
}

TEST_CASE("a cluster without an intra-node link uses the GPU's own link", "[comm]") {
    cluster_spec c{};
    c.gpu.gpu_link = test_link;
    c.gpus_per_node = 4;
    CHECK(data_parallel_all_reduce_time(gigabytes_of(1), 4, c).value() ==
          Approx(0.03003).epsilon(1e-12));
}

TEST_CASE("link defaults and overrides", "[comm]") {
    const link_spec pcie = default_link(link_kind::pcie);
    const link_spec staged = default_link(link_kind::pcie_no_p2p);
    CHECK(staged.kind == link_kind::pcie_no_p2p);
    CHECK(staged.per_direction.value() == Approx(pcie.per_direction.value() / 2));
    CHECK(staged.latency.value() == Approx(2 * pcie.latency.value()));
    CHECK(pcie.per_direction.value() == Approx(31.5e9));
    CHECK(default_link(link_kind::nvlink_bridge).per_direction.value() == Approx(56.25e9));
    CHECK(default_link(link_kind::infiniband).per_direction.value() == Approx(25e9));

    const link_spec measured = with_bandwidth(default_link(link_kind::nvlink_bridge),
                                              gb_per_second(52.8));
    CHECK(measured.kind == link_kind::nvlink_bridge);
    CHECK(measured.achievable().value() == Approx(52.8e9));
    CHECK(measured.latency == default_link(link_kind::nvlink_bridge).latency);

    CHECK(bus_bandwidth_factor(collective::all_reduce, 8) == Approx(1.75));
    CHECK(bus_bandwidth_factor(collective::all_gather, 8) == Approx(0.875));
    CHECK(bus_bandwidth_factor(collective::p2p, 2) == 1.0);
}

TEST_CASE("bad input is rejected with the field named", "[comm][errors]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(all_reduce_time(bytes_of(-1), 8, test_link), Catch::Contains("bytes"));
    CHECK_THROWS_AS(all_reduce_time(bytes_of(nan), 8, test_link), trainperf::invalid_argument);
    CHECK_THROWS_WITH(all_reduce_time(bytes_of(1), 0, test_link), Catch::Contains("gpus = 0"));
    CHECK_THROWS_WITH(all_reduce_time(bytes_of(1), 2, link_spec{}), Catch::Contains("link"));
    link_spec bad = test_link;
    bad.efficiency = 0;
    CHECK_THROWS_WITH(all_reduce_time(bytes_of(1), 2, bad), Catch::Contains("efficiency"));
    bad = test_link;
    bad.latency = seconds_of(-1e-6);
    CHECK_THROWS_WITH(p2p_time(bytes_of(1), bad), Catch::Contains("latency"));
    CHECK_THROWS_AS(default_link(link_kind::none), trainperf::invalid_argument);
    CHECK_THROWS_AS(with_bandwidth(test_link, gb_per_second(-3)), trainperf::invalid_argument);
    CHECK_THROWS_AS(with_bandwidth(test_link, gb_per_second(nan)), trainperf::invalid_argument);
    // 12 GPUs do not fill whole nodes of 8.
    CHECK_THROWS_WITH(data_parallel_all_reduce_time(bytes_of(1), 12, two_level(8)),
                      Catch::Contains("gpus = 12"));
    // Several nodes need an inter-node link.
    cluster_spec no_inter = two_level(8);
    no_inter.inter_node = {};
    CHECK_THROWS_AS(hierarchical_all_reduce_time(bytes_of(1), no_inter, 16),
                    trainperf::invalid_argument);
}

TEST_CASE("ranks are placed tensor-parallel first, then data-parallel, then pipeline", "[comm][placement]") {
    // tp 8 fills an 8-GPU node: each data-parallel group has one GPU per node.
    auto g = place({.dp = 4, .tp = 8, .pp = 1}, 8);
    CHECK((g.tensor.size == 8 && g.tensor.per_node == 8));
    CHECK((g.data.size == 4 && g.data.per_node == 1));
    // tp 2 x dp 4 share a node; the two pipeline stages are in different nodes.
    g = place({.dp = 4, .tp = 2, .pp = 2}, 8);
    CHECK((g.tensor.size == 2 && g.tensor.per_node == 2));
    CHECK((g.data.size == 4 && g.data.per_node == 4));
    CHECK((g.pipeline.size == 2 && g.pipeline.per_node == 1));
    CHECK(stage_pair(g).per_node == 1);
    // dp 12 with tp 2 on 8-GPU nodes: 4 replicas per node, 3 nodes.
    g = place({.dp = 12, .tp = 2, .pp = 1}, 8);
    CHECK((g.data.per_node == 4 && g.data.nodes() == 3));
    // Any dp: 9 replicas of tp 8 span 9 nodes, one GPU each.
    g = place({.dp = 9, .tp = 8, .pp = 1}, 8);
    CHECK((g.data.per_node == 1 && g.data.nodes() == 9));
}

TEST_CASE("a collective is priced on the links its group spans (α–β)", "[comm][placement]") {
    // A100 links on a GPU outside NCCL's model (no compute capability): the α–β rules.
    cluster_spec c = standard_cluster(a100_sxm_80gb::spec, 8);
    c.gpu.compute_capability = 0;
    const bytes size = gigabytes_of(9);
    const link_spec nvlink = c.intra_node, ib = c.inter_node;
    const auto op = [&](int n, int per_node) {
        return collective_op{"grads", collective::all_reduce, size, {n, per_node}};
    };
    // Inside a node: a ring on NVLink.
    CHECK(collective_time(op(8, 8), c) == ring_all_reduce_time(size, 8, nvlink));
    // One member per node: a ring on the adapters, 2·(n−1) steps of α and 2·(n−1)/n of the bytes.
    const double alpha = ib.latency.value(), beta = 1.0 / ib.achievable().value();
    CHECK(collective_time(op(4, 1), c).value() == Approx(6 * alpha + 1.5 * 9e9 * beta));
    // 25 GB/s HDR at 0.9: 9 GB over 4 nodes takes 0.6 s, not the 0.045 s NVLink would.
    CHECK(collective_time(op(4, 1), c).value() > 10 * ring_all_reduce_time(size, 4, nvlink).value());
    // Several per node: reduce-scatter inside, all-reduce of a 1/g shard across, all-gather inside.
    CHECK(collective_time(op(16, 8), c).value() ==
          Approx((reduce_scatter_time(size, 8, nvlink) + ring_all_reduce_time(size / 8.0, 2, ib) +
                  all_gather_time(size, 8, nvlink)).value()));
    // A reduce-scatter is NCCL's ring over all 16 ranks: 15 step latencies, 1 across
    // the network and 14 inside nodes; the two halves count 7 + 1, so the other
    // (8 − 1)·(2 − 1) = 7 NVLink latencies are added.
    const collective_op rs{"grads", collective::reduce_scatter, size, {16, 8}};
    CHECK(collective_time(rs, c).value() ==
          Approx((reduce_scatter_time(size, 8, nvlink) + reduce_scatter_time(size / 8.0, 2, ib)).value() +
                 7 * nvlink.latency.value()));
    // At 1024 ranks on 128 nodes the latency alone is 127 network and 896 NVLink steps.
    const collective_op wide{"grads", collective::all_gather, bytes_of(1024.0), {1024, 8}};
    CHECK(collective_time(wide, c).value() ==
          Approx(127 * ib.latency.value() + 896 * nvlink.latency.value()).epsilon(0.01));
    // A pipeline send between nodes goes over the adapter.
    const collective_op send{"send", collective::p2p, size, {2, 1}};
    CHECK(collective_time(send, c) == p2p_time(size, ib));
}

TEST_CASE("an NVLink bridge pairs two cards; GeForce has no PCIe peer-to-peer", "[comm][links]") {
    const cluster_spec geforce = standard_cluster(rtx_3090::spec, 4);
    const bytes size = gigabytes_of(1);
    const collective_op pair{"grads", collective::all_reduce, size, {2, 2}};
    const collective_op four{"grads", collective::all_reduce, size, {4, 4}};
    // Two cards: the bridge.
    CHECK(collective_time(pair, geforce) == ring_all_reduce_time(size, 2, rtx_3090::spec.gpu_link));
    // Four: the ring also crosses PCIe between the pairs, staged through host memory.
    const link_spec staged = staged_through_host(rtx_3090::spec.host_link);
    CHECK(node_ring_link(geforce, 4).kind == link_kind::pcie_no_p2p);
    CHECK(collective_time(four, geforce).value() ==
          Approx(ring_all_reduce_time(size, 4, slowest_of(rtx_3090::spec.gpu_link, staged)).value()));
    // A data-centre PCIe card has peer-to-peer: 8 bridged H100 PCIe ring at PCIe Gen5 speed.
    const cluster_spec h100 = standard_cluster(h100_pcie::spec, 8);
    CHECK(node_ring_link(h100, 8).kind == link_kind::pcie);
    CHECK(node_ring_link(h100, 8).per_direction.value() == Approx(63e9));
    CHECK(node_ring_link(h100, 2).kind == link_kind::nvlink_bridge);
}

TEST_CASE("fewer network adapters than GPUs are shared by the node's GPUs", "[comm][placement]") {
    cluster_spec c = standard_cluster(h100_sxm::spec, 8);
    const collective_op across{"grads", collective::all_reduce, gigabytes_of(1), {4, 1}};
    const seconds own = collective_time(across, c);
    c.adapters_per_node = 2;  // 2 adapters for 8 GPUs: a quarter each
    CHECK(inter_node_link(c).per_direction.value() == Approx(50e9 / 4));
    CHECK(collective_time(across, c).value() > 3.5 * own.value());
    c.adapters_per_node = 8;
    CHECK(collective_time(across, c) == own);
}

TEST_CASE("the rank order can be changed: pipeline stages first, data parallel across nodes", "[comm][placement]") {
    const parallel_layout l{.dp = 4, .tp = 2, .pp = 4};
    const auto megatron = place(l, 8);
    CHECK((megatron.data.per_node == 4 && megatron.pipeline.per_node == 1));
    const auto stages_first = place(l, 8, rank_order::tp_pp_dp);
    CHECK((stages_first.pipeline.size == 4 && stages_first.pipeline.per_node == 4));
    CHECK((stages_first.data.size == 4 && stages_first.data.per_node == 1));
    CHECK(stage_pair(stages_first).per_node == 2);
}

TEST_CASE("cards split over two CPU sockets cross the CPUs' link through host memory", "[comm][links]") {
    cluster_spec c = standard_cluster(h100_pcie::spec, 8);
    c.intra_node = pcie_peer_link(h100_pcie::spec);
    c.sockets_per_node = 2;
    // Four cards under one socket: PCIe peer-to-peer.
    CHECK(node_ring_link(c, 4).kind == link_kind::pcie);
    // Eight span both sockets: the ring waits on the staged hop between them.
    CHECK(node_ring_link(c, 8).kind == link_kind::pcie_no_p2p);
    CHECK(node_ring_link(c, 8).per_direction.value() == Approx(63e9 / 2));
    // An NVSwitch node is not affected.
    cluster_spec dgx = standard_cluster(h100_sxm::spec, 8);
    dgx.sockets_per_node = 2;
    CHECK(node_ring_link(dgx, 8).kind == link_kind::nvlink);
}

TEST_CASE("one collective as a user asks for it: the link, the algorithm, the bandwidths", "[comm]") {
    // Inside one node of 8 over the test link (100 GB/s each way × 0.5, 5 µs), 1 GB all-reduce
    // by ring: 14 × 5 µs + 2·7/8·1e9 B / 50e9 B/s = 70 µs + 35 ms.
    const cluster_spec node{.gpu = {}, .gpus_per_node = 8, .intra_node = test_link,
                            .inter_node = default_link(link_kind::infiniband)};
    const collective_estimate ring = estimate_collective(collective::all_reduce, gigabytes_of(1.0), 8, node);
    CHECK(ring.time.value() == Approx(70e-6 + 0.035).epsilon(1e-12));
    CHECK(ring.algorithm == "ring");
    CHECK(!ring.across_nodes());
    CHECK(!ring.flat_ring);
    CHECK(ring.algorithm_bandwidth().value() == Approx(1e9 / (70e-6 + 0.035)));
    CHECK(ring.bus_bandwidth().value() == Approx(1e9 / (70e-6 + 0.035) * 2.0 * 7.0 / 8.0));
    // The tree: 2·⌈log2 8⌉ = 6 steps + 2·1e9/50e9 = 30 µs + 40 ms.
    const auto tree = estimate_collective(collective::all_reduce, gigabytes_of(1.0), 8, node, collective_algorithm::tree);
    CHECK(tree.time.value() == Approx(30e-6 + 0.04).epsilon(1e-12));
    CHECK(tree.algorithm == "tree");
    // One GPU moves nothing and reports no bandwidth.
    const auto one = estimate_collective(collective::all_reduce, gigabytes_of(1.0), 1, node);
    CHECK(one.time.value() == 0.0);
    CHECK(one.algorithm_bandwidth().value() == 0.0);
    // p2p: one latency and the transfer, 5 µs + 1e9/50e9 s.
    const auto p2p = estimate_collective(collective::p2p, gigabytes_of(1.0), 2, node);
    CHECK(p2p.time.value() == Approx(5e-6 + 0.02).epsilon(1e-12));
    CHECK(p2p.algorithm == "p2p");

    // Across 2 nodes of 8: what the engine charges a placed group of 16 consecutive ranks,
    // with a flat ring beside an all-reduce only.
    const cluster_spec two = two_level(8);
    const auto ar = estimate_collective(collective::all_reduce, gigabytes_of(1.0), 16, two);
    CHECK(ar.across_nodes());
    CHECK(ar.nodes == 2);
    CHECK(ar.algorithm == "hierarchical");
    CHECK(ar.time == hierarchical_all_reduce_time(gigabytes_of(1.0), two, 16));
    REQUIRE(ar.flat_ring);
    CHECK(*ar.flat_ring == flat_ring_all_reduce_time(gigabytes_of(1.0), two, 16));
    const auto ag = estimate_collective(collective::all_gather, gigabytes_of(1.0), 16, two);
    CHECK(ag.time == collective_time(collective_op{"ag", collective::all_gather, gigabytes_of(1.0), {16, 8}}, two));
    CHECK(!ag.flat_ring);
    // One GPU per node: every step on the network, NCCL's faster of ring and tree.
    const auto spread = estimate_collective(collective::all_reduce, gigabytes_of(1.0), 4, two_level(1));
    CHECK(spread.algorithm == "auto");
    CHECK(estimate_collective(collective::reduce_scatter, gigabytes_of(1.0), 4, two_level(1)).algorithm == "ring");
    CHECK(spread.time == all_reduce_time(gigabytes_of(1.0), 4, inter_node_link(two_level(1)),
                                         collective_algorithm::automatic));

    // What cannot be asked, each naming the field.
    CHECK_THROWS_WITH(estimate_collective(collective::p2p, gigabytes_of(1.0), 3, node), Catch::StartsWith("gpus = 3"));
    CHECK_THROWS_WITH(estimate_collective(collective::reduce_scatter, gigabytes_of(1.0), 8, node,
                                          collective_algorithm::tree),
                      Catch::StartsWith("algorithm = tree"));
    CHECK_THROWS_WITH(estimate_collective(collective::all_reduce, gigabytes_of(1.0), 16, two, collective_algorithm::tree),
                      Catch::StartsWith("algorithm = tree"));
    CHECK_THROWS_WITH(estimate_collective(collective::all_reduce, gigabytes_of(1.0), 0, node),
                      Catch::StartsWith("gpus = 0"));
    CHECK_THROWS_WITH(estimate_collective(collective::all_reduce, gigabytes_of(1.0), 12, two), Catch::Contains("gpus"));
}

// ---- NCCL's model (cost/nccl_model.hpp) ------------------------------------------------

namespace {
constexpr cluster_spec dgx_a100 = standard_cluster(a100_sxm_80gb::spec, 8);
constexpr cluster_spec dgx_h100 = standard_cluster(h100_sxm::spec, 8);

// NCCL's pick, as the engine prices a group.
nccl_choice picked(const cluster_spec& c, rank_group g, collective kind, double size,
                   unsigned allowed = nccl_all_algorithms) {
    return nccl_pick(nccl_system_of(c, g), kind, bytes_of(size), allowed);
}
}  // namespace

// The graphs come out of the hardware description in constant expressions.
static_assert(nccl_system_of(dgx_a100, {8, 8}).ring.channels == 12);
static_assert(nccl_pick(nccl_system_of(dgx_a100, {8, 8}), collective::all_reduce, bytes_of(32768)).protocol ==
              nccl_protocol::ll);

TEST_CASE("NCCL's graphs: channels and per-channel bandwidth from the node's links", "[comm][nccl]") {
    // 8 A100: NCCL counts 12 NVLinks × 20 GB/s = 240 GB/s per GPU (300 GB/s each way × 20/25).
    // Ring: 40 GB/s gives 6 channels = 240, all of it; doubled to 12 × 20 GB/s; 30 × 12 = 360
    // does not fit. Tree: starts at 20 (20 × 12 ≤ 240 · 8/7) and 12 fit. No NVLS before Hopper.
    const nccl_system a = nccl_system_of(dgx_a100, {8, 8});
    CHECK((a.ring.channels == 12 && a.ring.bw_intra == 20.0));
    CHECK((a.tree.channels == 12 && a.tree.bw_intra == 20.0));
    CHECK(a.nvls.channels == 0);
    // 8 H100: 18 × 20.6 = 370.8 GB/s. Ring: 60 → 6 channels (360); 50 → 7 (350), 40 → 9 and
    // 30 → 12 (360, no more); 24/60 < 0.49 stops; 6 × 60 doubled to 12 × 30 (60 ≥ 50).
    // NVLS: one channel per GPU, each moving s at every GPU and 2s at its head: 9s ≤ 370.8
    // → s = 40 (50: 450 does not fit); pass 2 raises bwInter to 50 and 60.
    const nccl_system h = nccl_system_of(dgx_h100, {8, 8});
    CHECK((h.ring.channels == 12 && h.ring.bw_intra == 30.0));
    CHECK((h.tree.channels == 12 && h.tree.bw_intra == 30.0));
    CHECK((h.nvls.channels == 8 && h.nvls.bw_intra == 40.0 && h.nvls.bw_inter == 60.0));
    // 2 nodes of 8 A100: each GPU's path to its HDR adapter is min(PCIe Gen4 24, 25) = 24 GB/s.
    // 24 → one channel per adapter, 8 × 24 = 192; 20, 18, 15 give 8 channels, 12 gives 16 × 12
    // = 192 (no more); 10/24 < 0.49 stops. Under 25 GB/s: not doubled.
    const nccl_system a2 = nccl_system_of(dgx_a100, {16, 8});
    CHECK((a2.ring.channels == 8 && a2.ring.bw_inter == 24.0));
    // 2 nodes of 8 H100: min(PCIe Gen5 48, NDR 50) = 48 → 8 × 48 = 384 ≥ 370.8, done; past SM80
    // under 50 GB/s with more than 4 channels: not doubled.
    const nccl_system h2 = nccl_system_of(dgx_h100, {16, 8});
    CHECK((h2.ring.channels == 8 && h2.ring.bw_inter == 48.0));
    // One H100 per node: one channel of 48 on its adapter, doubled to 2 × 24.
    const nccl_system h1 = nccl_system_of(dgx_h100, {8, 1});
    CHECK((h1.ring.channels == 2 && h1.ring.bw_inter == 24.0));
}

TEST_CASE("NCCL's model on 8 A100: LL for small buffers, LL128 in between, Simple for large", "[comm][nccl]") {
    const rank_group node{8, 8};
    // Ring LL: 6.6 + 14 × 0.6 = 15.0 µs; min(llMaxBw 87.7, 0.5 × 12 × 20) = 87.7 GB/s bus ×
    // 8/14 = 50.114 GB/s. 32 KiB: 15.0 + 32768 / 50114.3 B/µs = 15.654 µs. The tree's LL
    // (6.8 + 2·7·0.6 = 15.2 µs, 220.8/3.8 × 0.5 × 0.7 correction = 20.3 GB/s) takes 16.8 µs.
    nccl_choice c = picked(dgx_a100, node, collective::all_reduce, 32768);
    CHECK((c.algorithm == nccl_algorithm::ring && c.protocol == nccl_protocol::ll));
    CHECK(c.latency.value() == Approx(15.0e-6));
    CHECK(c.bandwidth.value() == Approx(87.7e9 * 8 / 14));
    CHECK(c.time.value() == Approx(15.0e-6 + 32768 / (87.7e9 * 8 / 14)));
    CHECK(c.time.value() == Approx(15.654e-6).epsilon(1e-4));
    // 1 MiB: still LL, 15.0 + 20.92 = 35.92 µs (LL128: 40.6 + 8.31 = 48.9 µs).
    c = picked(dgx_a100, node, collective::all_reduce, 1048576);
    CHECK(c.protocol == nccl_protocol::ll);
    CHECK(c.time.value() == Approx(35.924e-6).epsilon(1e-4));
    // 4 MiB: ring LL128, 14.0 + 14 × 1.9 = 40.6 µs and min(0.92 × 240, 12 × 20) = 220.8 GB/s
    // bus × 8/14 = 126.17 GB/s: 40.6 + 33.24 = 73.84 µs (LL 98.7, Simple 86.6).
    c = picked(dgx_a100, node, collective::all_reduce, 4194304);
    CHECK((c.algorithm == nccl_algorithm::ring && c.protocol == nccl_protocol::ll128));
    CHECK(c.time.value() == Approx(40.6e-6 + 4194304 / (220.8e9 * 8 / 14)));
    // 256 MiB: ring Simple, 8.4 + 14 × 3.4 = 56 µs and 240 × 8/14 = 137.14 GB/s: 2013.3 µs.
    c = picked(dgx_a100, node, collective::all_reduce, 268435456);
    CHECK((c.algorithm == nccl_algorithm::ring && c.protocol == nccl_protocol::simple));
    CHECK(c.time.value() == Approx(56e-6 + 268435456 / (240e9 * 8 / 14)));
    CHECK(c.time.value() == Approx(2013.34e-6).epsilon(1e-5));

    // The crossovers, where two lines meet: LL → LL128 at 25.6 µs / (1/50.114 − 1/126.17 GB/s)
    // ≈ 2.13 MB, LL128 → Simple at 15.4 µs / (1/126.17 − 1/137.14 GB/s) ≈ 24.3 MB.
    const double ll = 87.7e3 * 8 / 14, ll128 = 220.8e3 * 8 / 14, simple = 240e3 * 8 / 14;  // B/µs
    const double to_ll128 = 25.6 / (1 / ll - 1 / ll128), to_simple = 15.4 / (1 / ll128 - 1 / simple);
    CHECK(to_ll128 == Approx(2.128e6).epsilon(1e-3));
    CHECK(to_simple == Approx(24.29e6).epsilon(1e-3));
    CHECK(picked(dgx_a100, node, collective::all_reduce, 0.99 * to_ll128).protocol == nccl_protocol::ll);
    CHECK(picked(dgx_a100, node, collective::all_reduce, 1.01 * to_ll128).protocol == nccl_protocol::ll128);
    CHECK(picked(dgx_a100, node, collective::all_reduce, 0.99 * to_simple).protocol == nccl_protocol::ll128);
    CHECK(picked(dgx_a100, node, collective::all_reduce, 1.01 * to_simple).protocol == nccl_protocol::simple);

    // Forced to the tree (NCCL_ALGO=Tree), its protocol still chosen: 256 MiB by Simple,
    // 8.4 + 2 × 7 × 4.0 = 64.4 µs, min(0.92 × 240, 12 × 24) × 0.5 = 110.4 GB/s × 0.9 (the
    // correction at 2^22 × 64 B) = 99.36 GB/s: 64.4 + 2701.6 = 2766.1 µs.
    c = picked(dgx_a100, node, collective::all_reduce, 268435456, nccl_only(nccl_algorithm::tree));
    CHECK((c.algorithm == nccl_algorithm::tree && c.protocol == nccl_protocol::simple));
    CHECK(c.time.value() == Approx(64.4e-6 + 268435456 / (110.4e9 * 0.9)));
}

TEST_CASE("NCCL's model on 8 H100: NVLS from 2 MiB", "[comm][nccl]") {
    const rank_group node{8, 8};
    // NVLS: latency 25 µs (NVLink NVLS); bandwidth 8 channels × min(40 × 0.85 × 7/8 × 2 = 59.5,
    // bwInter 60) = 476 GB/s bus × 8/14 = 272 GB/s. 256 MiB: 25 + 986.9 = 1011.9 µs.
    nccl_choice c = picked(dgx_h100, node, collective::all_reduce, 268435456);
    CHECK((c.algorithm == nccl_algorithm::nvls && c.protocol == nccl_protocol::simple));
    CHECK(c.latency.value() == Approx(25e-6));
    CHECK(c.bandwidth.value() == Approx(272e9));
    CHECK(c.time.value() == Approx(25e-6 + 268435456 / 272e9));
    // 1 MiB: ring LL, 15 + 1048576 / (141 × 8/14 GB/s) = 28.01 µs, against NVLS's 28.86 µs;
    // 2 MiB: NVLS 32.71 µs against ring LL's 41.03 µs. They meet at
    // 10 µs / (1/80.571 − 1/272 GB/s) ≈ 1.145 MB.
    c = picked(dgx_h100, node, collective::all_reduce, 1048576);
    CHECK((c.algorithm == nccl_algorithm::ring && c.protocol == nccl_protocol::ll));
    CHECK(c.time.value() == Approx(15e-6 + 1048576 / (141e9 * 8 / 14)));
    CHECK(picked(dgx_h100, node, collective::all_reduce, 2097152).algorithm == nccl_algorithm::nvls);
    const double meet = 10.0 / (1 / (141e3 * 8 / 14) - 1 / 272e3);
    CHECK(meet == Approx(1.1448e6).epsilon(1e-3));
    CHECK(picked(dgx_h100, node, collective::all_reduce, 0.99 * meet).algorithm == nccl_algorithm::ring);
    CHECK(picked(dgx_h100, node, collective::all_reduce, 1.01 * meet).algorithm == nccl_algorithm::nvls);
    // All-gather: ring Simple for 256 MiB, 8.4 + 7 × 3.4 = 32.2 µs and 360 GB/s bus × 8/7
    // = 411.4 GB/s; NVLS's all-gather bus (8 × 40 × 0.85 × 7/8 × 7/8 = 208 GB/s) is slower.
    c = picked(dgx_h100, node, collective::all_gather, 268435456);
    CHECK((c.algorithm == nccl_algorithm::ring && c.protocol == nccl_protocol::simple));
    CHECK(c.time.value() == Approx(32.2e-6 + 268435456 / (360e9 * 8 / 7)));
}

TEST_CASE("NCCL's model across nodes: the tree for small buffers, the ring for large", "[comm][nccl]") {
    // 2 nodes of 8 A100 (8 channels × 24 GB/s; DGX A100's AMD host: llMaxBw 22.5, network
    // overhead 2 µs per step, 6 for Simple).
    const rank_group two{16, 8};
    // 64 KiB. Tree LL: 6.8 + 2 × (7 × 0.6 + 1 × 5.0) = 25.2 µs; min(0.92 × 192, 8 × 23.6)
    // /3.8 = 46.5, capped at 22.5, × 0.5 = 11.25 GB/s × 0.6 (correction at 2^10 × 64 B):
    // 25.2 + 65536 / 6750 = 34.91 µs. Ring LL: 6.6 + 28 × max(0.6, 2) + 2 × 2.7 = 68 µs,
    // 22.5 × 16/30 = 12 GB/s: 73.46 µs.
    nccl_choice c = picked(dgx_a100, two, collective::all_reduce, 65536);
    CHECK((c.algorithm == nccl_algorithm::tree && c.protocol == nccl_protocol::ll));
    CHECK(c.time.value() == Approx(25.2e-6 + 65536 / 6.75e9));
    c = picked(dgx_a100, two, collective::all_reduce, 65536, nccl_only(nccl_algorithm::ring));
    CHECK((c.algorithm == nccl_algorithm::ring && c.protocol == nccl_protocol::ll));
    CHECK(c.time.value() == Approx(68e-6 + 65536 / 12e9));
    // 256 MiB: ring Simple, (8.4 + 28 × max(3.4, 6) + 2 × 14) × 1.4 (the plateau) = 286.16 µs
    // and 192 × 16/30 = 102.4 GB/s: 286.16 + 2621.44 = 2907.6 µs; the tree's Simple takes
    // 92.4 + 268435456 / (88.32 × 0.9 GB/s) = 3469 µs.
    c = picked(dgx_a100, two, collective::all_reduce, 268435456);
    CHECK((c.algorithm == nccl_algorithm::ring && c.protocol == nccl_protocol::simple));
    CHECK(c.latency.value() == Approx(204.4e-6 * 1.4));
    CHECK(c.time.value() == Approx(286.16e-6 + 268435456 / 102.4e9));
    // The engine prices the placed group the same way: one NCCL collective over all 16 ranks.
    CHECK(collective_time(collective_op{"g", collective::all_reduce, bytes_of(268435456), two}, dgx_a100) ==
          c.time);

    // One H100 per node, 8 nodes, all-gather of 64 KiB: PAT (one GPU per node).
    // 8.0 + log2(8) × 14/3.5 + 8 × 2.8 = 42.4 µs, 2 × 24 × 0.75 = 36 GB/s: 44.22 µs; the
    // ring's LL: 6.6 + 7 × 5.0 = 41.6 µs, min(20.4, 0.5 × 48) × 8/7 = 23.3 GB/s: 44.41 µs.
    c = picked(dgx_h100, {8, 1}, collective::all_gather, 65536);
    CHECK((c.algorithm == nccl_algorithm::pat && c.protocol == nccl_protocol::simple));
    CHECK(c.time.value() == Approx(42.4e-6 + 65536 / 36e9));
}

TEST_CASE("NCCL's model where it applies; the α–β model elsewhere", "[comm][nccl]") {
    CHECK(nccl_models(dgx_a100, {8, 8}));
    CHECK(nccl_models(dgx_h100, {64, 8}));
    const bytes size = megabytes_of(64);
    // PCIe-only cards, an NVLink bridge, AMD Infinity Fabric (RCCL), a GPU without compute
    // capability: NCCL's model does not apply, the α–β ring/tree is kept.
    for (const gpu_spec& gpu : {l40s::spec, rtx_3090::spec, mi300x::spec}) {
        const cluster_spec c = standard_cluster(gpu, 4);
        CHECK_FALSE(nccl_models(c, {4, 4}));
        CHECK(collective_time(collective_op{"g", collective::all_reduce, size, {4, 4}}, c) ==
              all_reduce_time(size, 4, node_ring_link(c, 4), collective_algorithm::automatic));
    }
    CHECK_FALSE(nccl_models(two_level(8), {16, 8}));
    // A p2p send stays α–β (NCCL's tuner does not price send/recv).
    const collective_op send{"send", collective::p2p, size, {2, 2}};
    CHECK(collective_time(send, dgx_h100) == p2p_time(size, dgx_h100.intra_node));
}

TEST_CASE("comm's estimate names NCCL's algorithm, protocol and terms", "[comm][nccl]") {
    const auto e = estimate_collective(collective::all_reduce, bytes_of(32768), 8, dgx_a100,
                                       collective_algorithm::automatic);
    CHECK(e.algorithm == "ring");
    REQUIRE(e.nccl);
    CHECK(e.nccl->protocol == nccl_protocol::ll);
    CHECK(e.nccl->channels == 12);
    CHECK(e.nccl->latency.value() == Approx(15e-6));
    CHECK(e.time == e.nccl->time);
    CHECK(!e.flat_ring);
    // Forcing the tree keeps NCCL's protocol choice, across nodes too.
    const auto tree = estimate_collective(collective::all_reduce, bytes_of(65536), 16, dgx_a100,
                                          collective_algorithm::tree);
    CHECK(tree.algorithm == "tree");
    CHECK(tree.nccl->protocol == nccl_protocol::ll);
    CHECK(tree.time.value() == Approx(25.2e-6 + 65536 / 6.75e9));
    // Under the α–β model there is no NCCL pick.
    CHECK(!estimate_collective(collective::all_reduce, bytes_of(32768), 8, two_level(8)).nccl);
    CHECK_THROWS_WITH(estimate_collective(collective::all_gather, bytes_of(1), 8, dgx_a100, collective_algorithm::tree),
                      Catch::StartsWith("algorithm = tree"));
}
