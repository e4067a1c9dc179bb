#include <trainperf/cost/scaling.hpp>

#include <catch2/catch.hpp>

#include <limits>

using namespace trainperf;

static_assert(speedup(1, 0.5) == 1.0);
static_assert(speedup(8, 0.0) == 8.0);
static_assert(speedup(8, 1.0) == 1.0);
static_assert(wasted_gpus(8, 0.0) == 0.0);

TEST_CASE("8 GPUs at r = 0.15 (default scenario, Part D)", "[scaling]") {
    // 8 / (1 + 7·0.15) = 8 / 2.05
    CHECK(speedup(8, 0.15) == Approx(3.902).margin(5e-4));
    CHECK(speedup(8, 0.15) == Approx(8.0 / 2.05).epsilon(1e-15));
    CHECK(efficiency(8, 0.15) == Approx(0.4878).margin(5e-5));
    CHECK(wasted_gpus(8, 0.15) == Approx(4.098).margin(5e-4));
}

TEST_CASE("the Part D table at 8 GPUs", "[scaling]") {
    CHECK(speedup(8, 0.05) == Approx(5.926).margin(5e-4));  // 8/1.35, not the label's 5.7
    CHECK(speedup(8, 0.10) == Approx(4.706).margin(5e-4));  // 8/1.7
    CHECK(speedup(8, 0.25) == Approx(2.909).margin(5e-4));  // 8/2.75
    CHECK(speedup(8, 0.40) == Approx(2.105).margin(5e-4));  // 8/3.8
    CHECK(efficiency(8, 0.05) == Approx(0.7407).margin(5e-5));
    CHECK(efficiency(8, 0.40) == Approx(0.2632).margin(5e-5));
}

TEST_CASE("more GPUs never lower the speedup; efficiency never rises", "[scaling]") {
    for (double r : {0.0, 0.01, 0.05, 0.15, 0.5, 0.99, 1.0}) {
        for (int n = 1; n < 1024; ++n) {
            INFO("r = " << r << ", n = " << n);
            if (r < 1)
                REQUIRE(speedup(n + 1, r) > speedup(n, r));
            else
                REQUIRE(speedup(n + 1, r) == speedup(n, r));
            REQUIRE(efficiency(n + 1, r) <= efficiency(n, r));
            REQUIRE(wasted_gpus(n + 1, r) >= wasted_gpus(n, r));
        }
    }
}

TEST_CASE("implied_r inverts the speedup", "[scaling]") {
    CHECK(implied_r(8, 8.0 / 2.05) == Approx(0.15).epsilon(1e-12));
    CHECK(implied_r(8, 8.0) == 0.0);
    CHECK(implied_r(8, 1.0) == 1.0);
    for (int n : {2, 4, 16, 512})
        for (double r : {0.0, 0.03, 0.2, 0.7, 1.0})
            CHECK(implied_r(n, speedup(n, r)) == Approx(r).margin(1e-12));
}

TEST_CASE("data-parallel speedup from compute and sync times", "[scaling]") {
    // 4 GPUs, 30 ms compute, 10 ms sync: 4·30/40 = 3×, so r = (4/3 − 1)/3 = 1/9.
    const double s = data_parallel_speedup(4, milliseconds_of(30), milliseconds_of(10));
    CHECK(s == Approx(3.0));
    CHECK(implied_r(4, s) == Approx(1.0 / 9.0));
}

TEST_CASE("the scaling curve runs 1…N", "[scaling]") {
    const auto curve = scaling_curve(8, 0.15);
    REQUIRE(curve.size() == 8);
    CHECK(curve.front().gpus == 1);
    CHECK(curve.front().speedup == 1.0);
    CHECK(curve.back().gpus == 8);
    CHECK(curve.back().speedup == Approx(3.902).margin(5e-4));
    CHECK(curve.back().efficiency == Approx(efficiency(8, 0.15)));
    CHECK(curve.back().wasted_gpus == Approx(wasted_gpus(8, 0.15)));
}

TEST_CASE("bad scaling input is rejected", "[scaling][errors]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(speedup(8, -0.1), Catch::Contains("r = -0.1"));
    CHECK_THROWS_WITH(speedup(8, 1.1), Catch::Contains("r = 1.1"));
    CHECK_THROWS_AS(speedup(8, nan), trainperf::invalid_argument);
    CHECK_THROWS_WITH(speedup(0, 0.1), Catch::Contains("gpus = 0"));
    CHECK_THROWS_AS(efficiency(-3, 0.1), trainperf::invalid_argument);
    CHECK_THROWS_AS(scaling_curve(0, 0.1), trainperf::invalid_argument);
    CHECK_THROWS_AS(implied_r(1, 1.0), trainperf::invalid_argument);
    CHECK_THROWS_AS(implied_r(8, 9.0), trainperf::invalid_argument);
    CHECK_THROWS_AS(implied_r(8, 0.5), trainperf::invalid_argument);
    CHECK_THROWS_AS(implied_r(8, nan), trainperf::invalid_argument);
    CHECK_THROWS_AS(data_parallel_speedup(4, seconds_of(0), seconds_of(1)),
                    trainperf::invalid_argument);
}
