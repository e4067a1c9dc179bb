#include <trainperf/hardware/catalog.hpp>
#include <trainperf/models/catalog.hpp>
#include <trainperf/planner.hpp>

#include <catch2/catch.hpp>

using namespace trainperf;

namespace {
plan_request llama_on_h100s(int gpus, long long global_batch) {
    plan_request r;
    r.base.cluster = standard_cluster(h100_sxm::spec);
    r.base.model = llama2_7b::config;
    r.base.precision = recipe(precision_kind::bf16);
    r.base.seq = 4096;
    r.base.framework = megatron_profile;
    r.gpus = gpus;
    r.global_batch = global_batch;
    r.max_micro_batch = 8;
    return r;
}
}  // namespace

TEST_CASE("the planner returns the fastest fitting layouts, fastest first", "[planner]") {
    const auto request = llama_on_h100s(16, 128);
    const auto result = plan(request, 5);
    REQUIRE(result.best.size() == 5);
    CHECK(result.evaluated > 100);
    CHECK(result.fitting <= result.evaluated);
    for (std::size_t i = 0; i < result.best.size(); ++i) {
        const auto& c = result.best[i];
        CHECK(c.report.fits);
        CHECK(c.layout.gpus() == 16);
        CHECK(c.layout.global_batch() == 128);
        if (i > 0) CHECK(result.best[i - 1].report.step_time <= c.report.step_time);
    }
    // No hand-picked layout that fits beats the planner's first choice.
    training_setup s = request.base;
    s.layout = {.dp = 16, .zero = 1, .micro_batch = 1, .grad_accum = 8, .recompute = recompute_mode::selective};
    const auto hand = predict(s);
    REQUIRE(hand.fits);
    CHECK(result.best.front().report.step_time <= hand.step_time);
}

TEST_CASE("the planner finds nothing when nothing fits", "[planner]") {
    auto request = llama_on_h100s(1, 8);
    request.base.model = llama3_1_405b::config;
    const auto result = plan(request);
    CHECK(result.best.empty());
    CHECK(result.fitting == 0);
    CHECK(result.evaluated > 0);
}

TEST_CASE("the planner rejects bad requests", "[planner]") {
    auto request = llama_on_h100s(8, 0);
    CHECK_THROWS_WITH(plan(request), Catch::Contains("global_batch"));
    request = llama_on_h100s(0, 8);
    CHECK_THROWS_WITH(plan(request), Catch::Contains("gpus"));
}
