#include <trainperf/hardware/catalog.hpp>
#include <trainperf/kernel_model.hpp>

#include <catch2/catch.hpp>

using namespace trainperf;

TEST_CASE("wave quantization counts tiles over the SMs", "[kernel_model]") {
    const kernel_params p{.tile_m = 128, .tile_n = 256};
    // 2048 x 4608 on 108 SMs: 16 x 18 = 288 tiles = 2.67 waves -> 3 waves.
    const auto q = quantize({2048, 4608, 12288}, 108, p);
    CHECK(q.tiles == 288);
    CHECK(q.waves == 3);
    CHECK(q.utilization == Approx(2048.0 * 4608 / (3 * 108 * 128 * 256)));
    // n = 128 is covered exactly by a 256 x 128 tile (96 tiles, one wave) or by a
    // 128 x 128 one (192 tiles, two waves): either way 96/108 of the SMs' work is useful,
    // where a fixed 128 x 256 tile would waste half of it (192 tiles at 50 %).
    const auto narrow = quantize({2048, 128, 2048, 12}, 108, p);
    CHECK(narrow.utilization == Approx(96.0 / 108));
    CHECK(quantize_with_tile({2048, 128, 2048, 12}, 108, 128, 256).utilization == Approx(96.0 / 108 / 2));
    // A matrix-vector product gets a 16-row tile: 64 tiles of 16 x 256 in one wave.
    const auto gemv = quantize({1, 16384, 16384}, 108, p);
    CHECK(gemv.tiles == 64);
    CHECK(gemv.utilization == Approx(16384.0 / (108 * 16 * 256)));
}

TEST_CASE("a large GEMM is compute-bound at the calibrated fraction of peak", "[kernel_model]") {
    const auto& gpu = h100_sxm::spec;
    kernel_params p = default_kernel_params(gpu.architecture);
    p.launch_overhead = seconds_of(0.0);
    // 132 SMs: 8448 x 8448 with 128 x 256 tiles = 66 x 33 = 2178 tiles = 16.5 waves.
    const gemm_shape g{8448, 8448, 8192};
    const double util = quantize(g, gpu.sm_count, p).utilization;
    const double expected = 2.0 * 8448 * 8448 * 8192 / (989.4e12 * p.peak_fraction * (8192.0 / (8192 + p.k_half)) * util);
    CHECK(gemm_time(gpu, g, p).value() == Approx(expected));
    CHECK(gemm_compute_time(gpu, g, p) > gemm_memory_time(gpu, g, p));
}

TEST_CASE("a skinny GEMM is memory-bound and pays the launch overhead", "[kernel_model]") {
    const auto& gpu = a100_sxm_80gb::spec;
    const kernel_params p = default_kernel_params(gpu.architecture);
    const gemm_shape g{1, 16384, 16384};  // a matrix-vector product
    CHECK(gemm_memory_time(gpu, g, p) > gemm_compute_time(gpu, g, p));
    const double bytes = (16384.0 + 16384.0 * 16384 + 16384.0) * 2;
    CHECK(gemm_time(gpu, g, p).value() ==
          Approx(p.launch_overhead.value() + bytes / (2039e9 * p.memory_efficiency)));
    CHECK(memory_op_time(gpu, bytes_of(0), p) == p.launch_overhead);
}

TEST_CASE("GEMM math needs the GPU's units; shapes and parameters are checked", "[kernel_model]") {
    const kernel_params p{};
    CHECK_THROWS_WITH(gemm_time(v100_sxm2_32gb::spec, {64, 64, 64, 1, dtype::bf16}, p), Catch::Contains("bf16"));
    CHECK_THROWS_WITH(gemm_time(h100_sxm::spec, {0, 64, 64}, p), Catch::Contains("gemm.m"));
    CHECK_THROWS_WITH(validate(kernel_params{.peak_fraction = 1.5}), Catch::Contains("peak_fraction"));
    CHECK_THROWS_WITH(memory_op_time(h100_sxm::spec, bytes_of(-1), p), Catch::Contains("bytes"));
}

TEST_CASE("fp32 GEMMs run on the CUDA cores, an order of magnitude slower", "[kernel_model]") {
    const auto& gpu = a100_sxm_80gb::spec;
    const kernel_params p = default_kernel_params(gpu.architecture);
    const gemm_shape bf16{4096, 4096, 4096, 1, dtype::bf16};
    gemm_shape fp32 = bf16;
    fp32.math = dtype::fp32;
    CHECK(gemm_time(gpu, fp32, p).value() / gemm_time(gpu, bf16, p).value() == Approx(312.0 / 19.5).epsilon(0.05));
}
