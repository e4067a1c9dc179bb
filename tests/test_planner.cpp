#include <trainperf/hardware/catalog.hpp>
#include <trainperf/models/catalog.hpp>
#include <trainperf/layout_text.hpp>
#include <trainperf/planner.hpp>

#include <stdexcept>
#include <string>

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
    CHECK(result.evaluated + result.pruned == result.candidates);
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

TEST_CASE("pricing with reuse gives what pricing from scratch gives", "[planner]") {
    auto request = llama_on_h100s(32, 256);
    request.allow_offload = true;
    request.max_micro_batch = 0;
    plan_options all;
    all.top = 1u << 20;  // keep every fitting layout
    all.prune = false;
    const auto result = plan(request, all);
    REQUIRE(result.best.size() == std::size_t(result.fitting));
    REQUIRE(result.best.size() > 100);
    // A sample spread over the whole list: each report equals predict() of its layout.
    for (std::size_t i = 0; i < result.best.size(); i += result.best.size() / 97) {
        const auto& c = result.best[i];
        training_setup s = request.base;
        s.layout = c.layout;
        const step_report fresh = predict(s);
        INFO("candidate " << i);
        CHECK(c.report.step_time.value() == Approx(fresh.step_time.value()).epsilon(1e-12));
        CHECK(c.report.memory.total().value() == Approx(fresh.memory.total().value()).epsilon(1e-12));
        CHECK(c.report.time.communication.value() == Approx(fresh.time.communication.value()).epsilon(1e-12));
        CHECK(c.report.mfu == Approx(fresh.mfu).epsilon(1e-12));
        CHECK(c.report.fits == fresh.fits);
    }
}

TEST_CASE("pruning skips only what cannot fit or cannot enter the top", "[planner]") {
    for (int gpus : {8, 24, 64}) {
        auto request = llama_on_h100s(gpus, 192);
        request.max_micro_batch = 0;
        request.allow_offload = true;
        plan_options pruned, exhaustive;
        pruned.top = exhaustive.top = 7;
        exhaustive.prune = false;
        const auto a = plan(request, pruned);
        const auto b = plan(request, exhaustive);
        INFO(gpus << " GPUs");
        CHECK(a.candidates == b.candidates);
        CHECK(a.evaluated + a.pruned == a.candidates);
        CHECK(b.evaluated == b.candidates);
        CHECK(b.pruned == 0);
        REQUIRE(a.best.size() == b.best.size());
        for (std::size_t i = 0; i < a.best.size(); ++i)
            CHECK(a.best[i].report.step_time.value() == b.best[i].report.step_time.value());
    }
}

TEST_CASE("the search is the same on one thread and on several", "[planner]") {
    auto request = llama_on_h100s(64, 512);
    request.max_micro_batch = 0;
    for (bool prune : {false, true}) {
        plan_options one, four;
        one.threads = 1;
        four.threads = 4;
        one.prune = four.prune = prune;
        one.top = four.top = 25;
        const auto a = plan(request, one);
        const auto b = plan(request, four);
        INFO("prune " << prune);
        CHECK(a.candidates == b.candidates);
        if (!prune) CHECK(a.fitting == b.fitting);
        REQUIRE(a.best.size() == b.best.size());
        // The same layouts in the same order: ties are ranked by the layout.
        for (std::size_t i = 0; i < a.best.size(); ++i) {
            CHECK(a.best[i].report.step_time.value() == b.best[i].report.step_time.value());
            CHECK(to_string(a.best[i].layout) == to_string(b.best[i].layout));
        }
    }
}

TEST_CASE("the planner checks the request as predict checks a setup", "[planner]") {
    auto request = llama_on_h100s(8, 64);
    request.base.model = gpt2::config;
    request.base.seq = 4096;  // beyond gpt2's learned position table
    CHECK_THROWS_WITH(plan(request), Catch::Contains("max_seq"));
    request = llama_on_h100s(1, 1LL << 33);  // a per-replica batch beyond an int of micro-batches
    request.max_micro_batch = 0;
    const auto huge = plan(request, 3);
    for (const auto& c : huge.best) CHECK(c.layout.grad_accum >= 1);
    CHECK_THROWS_WITH(plan(llama_on_h100s(1 << 23, 8)), Catch::Contains("gpus"));
}


TEST_CASE("the space covers every dimension the planner names", "[planner]") {
    // 8 GPUs, global batch 8: tp 1/2/4/8 x pp 1/2/4/8 (llama2-7b: 32 heads, 32 layers).
    auto request = llama_on_h100s(8, 8);
    request.max_micro_batch = 0;
    request.allow_offload = true;
    plan_options exhaustive;
    exhaustive.prune = false;
    exhaustive.top = 1u << 20;
    const auto result = plan(request, exhaustive);
    bool interleaved = false, zero3 = false, offloaded = false, overlap_on = false, sp = false, full = false;
    for (const auto& c : result.best) {
        interleaved |= c.layout.interleave > 2;
        zero3 |= c.layout.zero == 3;
        offloaded |= c.layout.offload == offload_mode::optimizer;
        overlap_on |= c.layout.dp_overlap == dp_overlap_mode::on;
        sp |= c.layout.sp;
        full |= c.layout.recompute == recompute_mode::full;
        CHECK(c.layout.gpus() == 8);
        CHECK(c.layout.global_batch() == 8);
    }
    CHECK(interleaved);
    CHECK(zero3);
    CHECK(offloaded);
    CHECK(overlap_on);
    CHECK(sp);
    CHECK(full);
    // Counted by hand: for each (tp, pp) with dp = 8/(tp·pp), micro-batches = divisors of
    // 8/dp; interleave 1 plus every v > 1 with pp·v dividing 32 layers; ZeRO 0-3, two
    // overlap choices and sp on/off only where dp > 1 / tp > 1; 2 offloads; 3 recomputes.
    long long expected = 0;
    for (int tp : {1, 2, 4, 8})
        for (int pp : {1, 2, 4, 8}) {
            if (tp * pp > 8) continue;
            const int dp = 8 / (tp * pp);
            const int dp_choices = dp > 1 ? 4 * 2 : 1;
            const int sp_choices = tp > 1 ? 2 : 1;
            for (int b = 1; b <= 8 / dp; ++b) {
                if ((8 / dp) % b != 0) continue;
                const int accum = 8 / dp / b;
                // Interleaving needs pp | grad-accum (Megatron-LM's interleaved schedule).
                int interleaves = 1;
                for (int v = 2; pp > 1 && accum % pp == 0 && pp * v <= 32; ++v) interleaves += 32 % (pp * v) == 0;
                expected += 1LL * interleaves * dp_choices * sp_choices * 2 * 3;
            }
        }
    CHECK(result.candidates == expected);
}

TEST_CASE("GPU counts that are not a power of two plan without error", "[planner]") {
    for (int gpus : {12, 24, 48, 96}) {
        auto request = llama_on_h100s(gpus, 96 * 4);
        const auto result = plan(request, 3);
        INFO(gpus << " GPUs");
        CHECK(result.candidates > 0);
        CHECK_FALSE(result.best.empty());
    }
}
