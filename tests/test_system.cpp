// Links and clusters from a user's description (spec/system.hpp).
#include <catch2/catch.hpp>

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/system.hpp>

using namespace trainperf;

namespace {
bool same(const link_spec& a, const link_spec& b) {
    return a.kind == b.kind && a.per_direction == b.per_direction && a.latency == b.latency &&
           a.efficiency == b.efficiency;
}
}  // namespace

static_assert(build_cluster({.gpu = h100_sxm::spec, .gpus = 16}).gpus_per_node == 8);
static_assert(resolve_link(h100_sxm::spec, link_kind::pcie).per_direction == gb_per_second(63.0));

TEST_CASE("resolve_link: the GPU's own link, its own PCIe generation, else the default", "[system]") {
    CHECK(same(resolve_link(h100_sxm::spec, link_kind::nvlink), h100_sxm::spec.gpu_link));
    CHECK(link_source_of(h100_sxm::spec, link_kind::nvlink) == link_source::gpu_link);
    CHECK(same(resolve_link(rtx_3090::spec, link_kind::nvlink_bridge), rtx_3090::spec.gpu_link));

    // PCIe: the host link of the card, Gen5 on H100, Gen4 on A100, Gen3 on V100.
    for (const gpu_spec* g : {&h100_sxm::spec, &a100_sxm_80gb::spec, &v100_sxm2_32gb::spec}) {
        INFO(g->name);
        const link_spec l = resolve_link(*g, link_kind::pcie);
        CHECK(l.kind == link_kind::pcie);
        CHECK(same(l, g->host_link));
        CHECK(link_source_of(*g, link_kind::pcie) == link_source::host_pcie);
    }
    CHECK(resolve_link(h100_sxm::spec, link_kind::pcie).per_direction == gb_per_second(links::pcie5_x16_gb_per_s));
    CHECK(resolve_link(v100_sxm2_32gb::spec, link_kind::pcie).per_direction ==
          gb_per_second(links::pcie3_x16_gb_per_s));

    // Without peer-to-peer: the same host link, staged through host memory.
    const link_spec staged = resolve_link(h100_sxm::spec, link_kind::pcie_no_p2p);
    CHECK(staged.kind == link_kind::pcie_no_p2p);
    CHECK(same(staged, staged_through_host(h100_sxm::spec.host_link)));

    // Another kind than the GPU's: the kind's default.
    CHECK(same(resolve_link(h100_sxm::spec, link_kind::infiniband), default_link(link_kind::infiniband)));
    CHECK(same(resolve_link(rtx_3090::spec, link_kind::nvlink), default_link(link_kind::nvlink)));
    CHECK(link_source_of(rtx_3090::spec, link_kind::nvlink) == link_source::kind_default);
    // A GPU without a PCIe host link (Jetson shares DRAM) and a GPU without links at all.
    CHECK(same(resolve_link(jetson_orin_nx_16gb::spec, link_kind::pcie), default_link(link_kind::pcie)));
    CHECK(same(resolve_link(gpu_spec{}, link_kind::pcie), default_link(link_kind::pcie)));
    CHECK(same(resolve_link(gpu_spec{}, link_kind::pcie_no_p2p), default_link(link_kind::pcie_no_p2p)));
    // none is no link.
    CHECK(resolve_link(h100_sxm::spec, link_kind::none).kind == link_kind::none);
}

TEST_CASE("with_line_rate keeps efficiency and latency, with_bandwidth makes it achieved", "[system]") {
    const link_spec ib = default_link(link_kind::infiniband);
    const link_spec line = with_line_rate(ib, gb_per_second(50.0));
    CHECK(line.per_direction == gb_per_second(50.0));
    CHECK(line.efficiency == ib.efficiency);
    CHECK(line.latency == ib.latency);
    CHECK(with_bandwidth(ib, gb_per_second(50.0)).efficiency == 1.0);
    CHECK_THROWS_AS(with_line_rate(ib, gb_per_second(0.0)), trainperf::invalid_argument);
    CHECK_THROWS_AS(with_line_rate(ib, gb_per_second(-1.0)), trainperf::invalid_argument);
}

TEST_CASE("build_cluster: nodes, the named link, measured and line rates", "[system]") {
    const gpu_spec& h100 = h100_sxm::spec;
    SECTION("defaults: the GPU's own link, min(gpus, 8) per node, the adapter its systems have") {
        const cluster_spec c = build_cluster({.gpu = h100, .gpus = 4});
        CHECK(c.gpus_per_node == 4);
        CHECK(same(c.intra_node, h100.gpu_link));
        // DGX H100: one 400 Gb/s NDR adapter per GPU; DGX A100: one 200 Gb/s HDR.
        CHECK(c.inter_node.per_direction.value() == Approx(50e9));
        CHECK(same(build_cluster({.gpu = a100_sxm_80gb::spec, .gpus = 16}).inter_node,
                   default_link(link_kind::infiniband)));
        CHECK(build_cluster({.gpu = h100, .gpus = 64}).gpus_per_node == 8);
        CHECK(build_cluster({.gpu = h100, .gpus = 64, .gpus_per_node = 4}).gpus_per_node == 4);
    }
    SECTION("a link by name (case-insensitive) resolves as resolve_link does") {
        const cluster_spec c = build_cluster({.gpu = h100, .gpus = 8, .link = "PCIe"});
        CHECK(same(c.intra_node, resolve_link(h100, link_kind::pcie)));
        CHECK_THROWS_WITH(build_cluster({.gpu = h100, .gpus = 8, .link = "ethernet"}),
                          "link = \"ethernet\": unknown; expected one of none, nvlink, nvlink-bridge, pcie, "
                          "pcie-no-p2p, infiniband, infinity-fabric");
    }
    SECTION("a measured intra-node bandwidth is what the link achieves") {
        const cluster_spec c = build_cluster({.gpu = h100, .gpus = 8, .link = "pcie",
                                              .link_bandwidth = gb_per_second(52.8)});
        CHECK(c.intra_node.per_direction == gb_per_second(52.8));
        CHECK(c.intra_node.efficiency == 1.0);
        CHECK(c.intra_node.kind == link_kind::pcie);
        CHECK(c.intra_node.latency == h100.host_link.latency);
    }
    SECTION("an inter-node line rate keeps InfiniBand's efficiency") {
        const cluster_spec c = build_cluster({.gpu = h100, .gpus = 16, .inter_node_line_rate = gb_per_second(50.0)});
        CHECK(c.inter_node.per_direction == gb_per_second(50.0));
        CHECK(c.inter_node.efficiency == default_link(link_kind::infiniband).efficiency);
    }
    SECTION("several GPUs need a link between them") {
        const gpu_spec& jetson = jetson_orin_nx_16gb::spec;
        CHECK(build_cluster({.gpu = jetson, .gpus = 1}).gpus_per_node == 1);
        CHECK_THROWS_WITH(build_cluster({.gpu = jetson, .gpus = 2}),
                          "link = none: no GPU-to-GPU link: name one to use more than one GPU");
        CHECK(build_cluster({.gpu = jetson, .gpus = 2, .link = "pcie"}).intra_node.kind == link_kind::pcie);
        CHECK_THROWS_AS(build_cluster({.gpu = h100, .gpus = 2, .link = "none"}), trainperf::invalid_argument);
    }
    SECTION("bad counts") {
        CHECK_THROWS_AS(build_cluster({.gpu = h100, .gpus = 0}), trainperf::invalid_argument);
        CHECK_THROWS_AS(build_cluster({.gpu = h100, .gpus = 8, .gpus_per_node = -1}), trainperf::invalid_argument);
        CHECK_THROWS_AS(build_cluster({.gpu = h100, .gpus = 8, .link_bandwidth = gb_per_second(0.0)}),
                        trainperf::invalid_argument);
    }
}
