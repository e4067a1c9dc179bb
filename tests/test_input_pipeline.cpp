#include <trainperf/cost/input_pipeline.hpp>
#include <trainperf/spec/gpu_catalog.hpp>

#include <catch2/catch.hpp>

#include <limits>

using namespace trainperf;

namespace {
stage_times ms(double data, double pcie, double compute, double sync) {
    return {milliseconds_of(data), milliseconds_of(pcie), milliseconds_of(compute),
            milliseconds_of(sync)};
}
}  // namespace

static_assert(analyse({seconds_of(1), seconds_of(0), seconds_of(2), seconds_of(0)}).bottleneck ==
              pipeline_stage::compute);

TEST_CASE("Part B preset 1: V100 + SSD + 1 GPU", "[pipeline]") {
    const auto r = analyse(ms(50, 2, 30, 0));
    CHECK(r.sequential.value() == Approx(0.082));
    CHECK(r.prefetched.value() == Approx(0.050));
    CHECK(r.gpu_utilization_sequential == Approx(30.0 / 82.0));
    CHECK(r.gpu_utilization_prefetched == Approx(0.6));
    CHECK(r.idle_share == Approx(52.0 / 82.0));
    CHECK(r.bottleneck == pipeline_stage::data);
}

TEST_CASE("Part B preset 2: V100 + NVMe + 4 GPUs over PCIe", "[pipeline]") {
    const auto r = analyse(ms(10, 2, 30, 25));
    CHECK(r.sequential.value() == Approx(0.067));
    CHECK(r.prefetched.value() == Approx(0.030));
    CHECK(r.gpu_utilization_sequential == Approx(30.0 / 67.0));
    CHECK(r.gpu_utilization_prefetched == Approx(1.0));
    // The slowest stage is compute (30 ms), not sync (25 ms).
    CHECK(r.bottleneck == pipeline_stage::compute);
}

TEST_CASE("Part B preset 3: H100 + NVMe + 1 GPU", "[pipeline]") {
    const auto r = analyse(ms(5, 1, 50, 0));
    CHECK(r.sequential.value() == Approx(0.056));
    CHECK(r.prefetched.value() == Approx(0.050));
    CHECK(r.gpu_utilization_sequential == Approx(50.0 / 56.0));
    CHECK(r.gpu_utilization_prefetched == Approx(1.0));
    CHECK(r.bottleneck == pipeline_stage::compute);
}

TEST_CASE("bottleneck naming", "[pipeline]") {
    CHECK(analyse(ms(1, 1, 10, 20)).bottleneck == pipeline_stage::sync);
    CHECK(analyse(ms(1, 40, 10, 20)).bottleneck == pipeline_stage::pcie);
    // Ties go to compute: the GPU is then never idle.
    CHECK(analyse(ms(30, 2, 30, 0)).bottleneck == pipeline_stage::compute);
    // Between the others, the earlier stage.
    CHECK(analyse(ms(40, 40, 10, 0)).bottleneck == pipeline_stage::data);
    CHECK(to_string(pipeline_stage::pcie) == "pcie");
}

TEST_CASE("stage times derived from sizes and bandwidths", "[pipeline]") {
    // 1 GB from storage at 2 GB/s: 0.5 s.
    CHECK(data_loading_time(gigabytes_of(1), gb_per_second(2)).value() == Approx(0.5));
    // 256 MB over a 32 GB/s host link at 0.8, 10 µs: 10 µs + 10 ms.
    const link_spec host{link_kind::pcie, gb_per_second(32), microseconds_of(10), 0.8};
    CHECK(host_to_device_time(megabytes_of(256), host).value() ==
          Approx(10e-6 + 256e6 / 25.6e9).epsilon(1e-12));
    // Sync for one GPU is zero; for 4 it is the ring all-reduce over the node's link.
    cluster_spec c{};
    c.gpus_per_node = 4;
    c.intra_node = host;
    CHECK(gradient_sync_time(gigabytes_of(1), 1, c).value() == 0.0);
    CHECK(gradient_sync_time(gigabytes_of(1), 4, c) == all_reduce_time(gigabytes_of(1), 4, host));
}

TEST_CASE("bad stage times are rejected", "[pipeline][errors]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(analyse(ms(-1, 2, 30, 0)), Catch::Contains("data_seconds"));
    CHECK_THROWS_WITH(analyse(ms(1, nan, 30, 0)), Catch::Contains("pcie_seconds"));
    CHECK_THROWS_WITH(analyse(ms(1, 2, 0, 0)), Catch::Contains("compute_seconds"));
    CHECK_THROWS_WITH(analyse(ms(1, 2, 3, -4)), Catch::Contains("sync_seconds"));
    CHECK_THROWS_AS(data_loading_time(gigabytes_of(1), gb_per_second(0)),
                    trainperf::invalid_argument);
    CHECK_THROWS_AS(data_loading_time(gigabytes_of(-1), gb_per_second(1)),
                    trainperf::invalid_argument);
    CHECK_THROWS_AS(host_to_device_time(gigabytes_of(1), link_spec{}), trainperf::invalid_argument);
}

TEST_CASE("a GPU's batch copy goes over its host link, or nowhere where it shares DRAM with the host",
          "[pipeline]") {
    // H100 SXM: PCIe Gen5 host link; the same as pricing its link directly.
    const gpu_spec& h100 = h100_sxm::spec;
    CHECK(host_to_device_time(megabytes_of(512), h100) == host_to_device_time(megabytes_of(512), h100.host_link));
    CHECK(host_to_device_time(megabytes_of(512), h100).value() > 0.0);
    // Jetson Orin NX: the batch is already in the memory the GPU reads.
    const gpu_spec& orin = jetson_orin_nx_16gb::spec;
    REQUIRE(orin.memory_shared_with_host);
    CHECK(host_to_device_time(megabytes_of(512), orin).value() == 0.0);
    CHECK_THROWS_WITH(host_to_device_time(bytes_of(-1.0), orin), Catch::StartsWith("batch_bytes = -1"));
    CHECK_THROWS_WITH(host_to_device_time(bytes_of(std::numeric_limits<double>::infinity()), orin),
                      Catch::StartsWith("batch_bytes"));
}
