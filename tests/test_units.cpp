#include <trainperf/core/units.hpp>

#include <catch2/catch.hpp>

using namespace trainperf;

// Units work in constant expressions.
static_assert(to_gb(bytes_of(1.12e11)).value() == 112.0);
static_assert(bytes_of(1e9) / gb_per_second(100.0) == milliseconds_of(10.0));
static_assert(flops_of(1e12) / seconds_of(1.0) == tflops_per_second(1.0));

TEST_CASE("GB and GiB are different units", "[units]") {
    const bytes b = bytes_of(1.12e11);
    CHECK(to_gb(b).value() == Approx(112.0));
    CHECK(to_gib(b).value() == Approx(104.308128).epsilon(1e-8));
    CHECK(to_bytes(gibibytes::from_value(1.0)).value() == 1073741824.0);
    CHECK(to_bytes(gigabytes::from_value(1.0)).value() == 1e9);
    STATIC_REQUIRE_FALSE(std::is_same_v<gigabytes, gibibytes>);
    STATIC_REQUIRE_FALSE(std::is_convertible_v<gigabytes, bytes>);
}

TEST_CASE("rates combine amounts and time", "[units]") {
    const seconds t = flops_of(2e12) / tflops_per_second(4.0);
    CHECK(t.value() == Approx(0.5));
    const byte_rate r = gigabytes_of(3.0) / seconds_of(2.0);
    CHECK(r.value() == Approx(1.5e9));
    const arithmetic_intensity ai = flops_of(100.0) / bytes_of(4.0);
    CHECK(ai.value() == Approx(25.0));
}
