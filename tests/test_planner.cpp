#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/fit_margin.hpp>
#include <trainperf/search/framework_search.hpp>
#include <trainperf/search/layout_search.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <vector>
#include <string>

#include <catch2/catch.hpp>

using namespace trainperf;

namespace {
// A bf16 request on a standard cluster of the GPU.
plan_request request_on(const gpu_spec& gpu, const transformer_config& model, int seq, const framework_profile& fw,
                        int gpus, long long global_batch, int max_micro_batch) {
    plan_request r;
    r.base.cluster = standard_cluster(gpu);
    r.base.model = model;
    r.base.precision = recipe(precision_kind::bf16);
    r.base.seq = seq;
    r.base.framework = fw;
    r.gpus = gpus;
    r.global_batch = global_batch;
    r.max_micro_batch = max_micro_batch;
    return r;
}

plan_request llama_on_h100s(int gpus, long long global_batch) {
    return request_on(h100_sxm::spec, llama2_7b::config, 4096, megatron_profile, gpus, global_batch, 8);
}
}  // namespace

namespace {
// A candidate's memory verdict as cost/fit_margin.hpp weighs it.
bool borderline(const plan_candidate& c, const plan_request& r) {
    const memory_report m{c.report.memory, c.report.memory_capacity, c.report.fits};
    return margin_of(m, r.base.framework.memory).borderline();
}
}  // namespace

TEST_CASE("plan ranks firm fits only: the borderline ones are counted and set aside", "[planner][memory]") {
    const plan_request request = llama_on_h100s(8, 64);
    plan_options every;
    every.top = 1u << 20;
    every.firm_fit = false;
    plan_options firm = every;
    firm.firm_fit = true;
    const plan_result all = plan(request, every), firm_only = plan(request, firm);
    CHECK(all.borderline == 0);
    REQUIRE(firm_only.borderline > 0);
    CHECK_FALSE(firm_only.only_borderline);
    // The firm list is the whole list less its borderline layouts, in the same order.
    std::vector<const plan_candidate*> expected;
    for (const plan_candidate& c : all.best)
        if (!borderline(c, request)) expected.push_back(&c);
    CHECK(all.best.size() - expected.size() == std::size_t(firm_only.borderline));
    REQUIRE(firm_only.best.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO("rank " << i + 1);
        CHECK(to_string(firm_only.best[i].layout) == to_string(expected[i]->layout));
        CHECK(firm_only.best[i].report.step_time == expected[i]->report.step_time);
        // Each fits with twice the allocator's assumed slack.
        CHECK(firm_only.best[i].report.memory.total() + firm_only.best[i].report.memory.fragmentation <=
              firm_only.best[i].report.memory_capacity);
    }
    // The default is firm.
    CHECK(plan_options{}.firm_fit);
}

TEST_CASE("where every layout that fits is borderline, plan ranks those and says so", "[planner][memory]") {
    // gpt-neo-1.3b on 4 RTX 3090 Ti under Megatron-Core, on a card whose usable memory is
    // 1.5 times the allocator's slack above the smallest peak any layout allocates: that
    // layout fits (the peak and its slack) but not with twice the slack, and the others
    // allocate more.
    plan_request request =
        request_on(rtx_3090_ti::spec, gpt_neo_1_3b::config, 2048, megatron_core_profile, 4, 16, 8);
    plan_options every;
    every.top = 1u << 20;
    every.firm_fit = false;
    const plan_result reference = plan(request, every);
    REQUIRE_FALSE(reference.best.empty());
    double least = std::numeric_limits<double>::max();
    for (const plan_candidate& c : reference.best) least = std::min(least, c.report.memory.peak_allocated().value());
    const memory_overheads& o = request.base.framework.memory;
    request.base.cluster.gpu.memory_reported = bytes_of(least * (1 + 1.5 * o.fragmentation)) + o.cuda_context;
    const plan_result all = plan(request, every);
    plan_options firm = every;
    firm.firm_fit = true;
    const plan_result borderline_only = plan(request, firm);
    REQUIRE_FALSE(all.best.empty());
    CHECK(borderline_only.only_borderline);
    CHECK(borderline_only.borderline == borderline_only.fitting);
    REQUIRE(borderline_only.best.size() == all.best.size());
    for (std::size_t i = 0; i < all.best.size(); ++i) {
        CHECK(borderline(borderline_only.best[i], request));
        CHECK(borderline_only.best[i].report.step_time == all.best[i].report.step_time);
    }
}

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
    // The search offers full recompute and ZeRO-3, which CUDA graphs refuse.
    request = llama_on_h100s(8, 8);
    request.base.framework.cuda_graphs = true;
    CHECK_THROWS_WITH(plan(request), Catch::Contains("cuda_graphs = on: is not searched"));
}

TEST_CASE("pricing with reuse gives what pricing from scratch gives", "[planner]") {
    // The megatron profile (even splits, interleaves, ZeRO 0 and 1) on 32 H100, and the
    // megatron-core one (uneven splits, ZeRO 0-3 with shard groups, the switches) on 4
    // RTX 3090 Ti, where about a third of the candidates do not fit.
    auto megatron = llama_on_h100s(32, 256);
    megatron.max_micro_batch = 0;
    const plan_request core =
        request_on(rtx_3090_ti::spec, gpt_neo_1_3b::config, 2048, megatron_core_profile, 4, 16, 8);
    for (plan_request request : {megatron, core}) {
        request.allow_offload = true;
        plan_options all;
        all.top = 1u << 20;  // keep every fitting layout, the borderline ones too
        all.prune = false;
        all.firm_fit = false;
        const auto result = plan(request, all);
        INFO(request.base.framework.name);
        REQUIRE(result.best.size() == std::size_t(result.fitting));
        REQUIRE(result.best.size() > 100);
        REQUIRE(result.fitting < result.evaluated);
        const auto setup_of = [&](const plan_candidate& c) {
            training_setup s = request.base;
            s.layout = c.layout;
            apply(c.switches, s.framework);
            return s;
        };
        // Every layout's memory, each component, equals memory_of() of its layout (the
        // planner reuses a stage's state part across micro-batches and pipeline splits).
        std::size_t differ = 0;
        for (const auto& c : result.best) {
            const memory_breakdown fresh = memory_of(setup_of(c)).breakdown;
            const memory_breakdown& kept = c.report.memory;
            bool same = kept.stage == fresh.stage;
            const auto planned = components(kept), alone = components(fresh);
            for (std::size_t k = 0; k < planned.size(); ++k)
                same = same && planned[k].value.value() == Approx(alone[k].value.value()).epsilon(1e-12);
            same = same && kept.offloaded_to_host.value() == Approx(fresh.offloaded_to_host.value()).epsilon(1e-12);
            if (!same && differ++ == 0) FAIL_CHECK("memory differs for " << to_string(c.layout));
        }
        CHECK(differ == 0);
        // No layout that fits is missing (a layout that does not fit gets only the memory
        // verdict): around a sample of the kept ones, every neighbour in the space — another
        // ZeRO stage the profile offers, offload or overlap flipped, the other schedule —
        // that memory_of() says fits was kept too.
        const auto key = [](const parallel_layout& l, const framework_switches& w) {
            return to_string(l) + (w.flash_attention ? " fa" : "") + (w.tensor_parallel_overlap ? " tpo" : "") +
                   (w.overlap_parameter_gather ? " opg" : "");
        };
        std::set<std::string> kept;
        for (const auto& c : result.best) kept.insert(key(c.layout, c.switches));
        const framework_profile& fw = request.base.framework;
        int neighbours = 0;
        for (std::size_t i = 0; i < result.best.size(); i += result.best.size() / 101) {
            const plan_candidate& c = result.best[i];
            std::vector<plan_candidate> around;
            const bool replicas = c.layout.dp_cp() > 1;
            for (int zero = 0; zero <= (replicas ? 3 : 0); ++zero) {
                if (zero == c.layout.zero || !(fw.zero_stages & (1u << zero))) continue;
                plan_candidate n = c;
                n.layout.zero = zero;
                n.layout.shard_group = 0;
                const bool gathers = zero == 1 || zero == 2, gathered = c.layout.zero == 1 || c.layout.zero == 2;
                if (!(gathers && gathered)) n.switches.overlap_parameter_gather = fw.overlap_parameter_gather;
                around.push_back(n);
            }
            if (fw.optimizer_offload) {
                plan_candidate offload = c;
                offload.layout.offload =
                    c.layout.offload == offload_mode::none ? offload_mode::optimizer : offload_mode::none;
                around.push_back(offload);
            }
            if (replicas) {
                plan_candidate overlap = c;
                overlap.layout.dp_overlap =
                    c.layout.dp_overlap == dp_overlap_mode::on ? dp_overlap_mode::off : dp_overlap_mode::on;
                around.push_back(overlap);
            }
            if (c.layout.pp > 1 && c.layout.interleave == 1 && fw.zero_bubble_schedule) {
                plan_candidate other = c;
                other.layout.schedule = c.layout.schedule == pipeline_schedule::one_f_one_b
                                            ? pipeline_schedule::zero_bubble_h1
                                            : pipeline_schedule::one_f_one_b;
                around.push_back(other);
            }
            for (plan_candidate& n : around) {
                // Without the gradient sync's overlap the gather is not overlapped: the
                // planner offers ZeRO 1 and 2 there with the gather's switch off only.
                if (n.layout.dp_overlap == dp_overlap_mode::off && (n.layout.zero == 1 || n.layout.zero == 2))
                    n.switches.overlap_parameter_gather = false;
                // A ZeRO-3 that overlaps nothing (DeepSpeed before v0.6) is offered without the overlap.
                if (n.layout.zero >= 3 && fw.zero3_per_tensor_collectives && n.layout.dp_overlap == dp_overlap_mode::on)
                    continue;
                if (!memory_of(setup_of(n)).fits) continue;
                ++neighbours;
                INFO("neighbour " << key(n.layout, n.switches) << " of " << key(c.layout, c.switches));
                CHECK(kept.count(key(n.layout, n.switches)) == 1);
            }
        }
        CHECK(neighbours > 100);
        // A sample spread over the whole list: each report equals predict() of its layout.
        for (std::size_t i = 0; i < result.best.size(); i += result.best.size() / 97) {
            const auto& c = result.best[i];
            const step_report fresh = predict(setup_of(c));
            INFO("candidate " << i << ": " << to_string(c.layout));
            CHECK(c.report.step_time.value() == Approx(fresh.step_time.value()).epsilon(1e-12));
            CHECK(c.report.memory.total().value() == Approx(fresh.memory.total().value()).epsilon(1e-12));
            CHECK(c.report.time.communication.value() == Approx(fresh.time.communication.value()).epsilon(1e-12));
            CHECK(c.report.mfu == Approx(fresh.mfu).epsilon(1e-12));
            CHECK(c.report.fits == fresh.fits);
        }
    }
}

// The planner prices a micro-batch's stage parts, and a pipeline configuration's stage
// times, when a candidate first needs them, whatever its ZeRO configuration, offload,
// overlap, parameter-gather switch and schedule, and reuses them for the others, and the
// parts for every pipeline configuration: neither may depend on those.
TEST_CASE("a stage's parts depend on nothing the planner varies after pricing them", "[planner]") {
    training_setup base = request_on(h100_sxm::spec, llama2_7b::config, 4096, megatron_core_profile, 32, 64, 1).base;
    base.framework.zero_bubble_schedule = true;  // the schedule varies too
    base.layout = {.dp = 4, .tp = 2, .pp = 4, .sp = true, .micro_batch = 2, .grad_accum = 8,
                   .recompute = recompute_mode::selective};
    const stage_pricer reference = price_stage_parts(base);
    const pipeline_times reference_stages = pipeline_stage_times(reference, base, seconds_of(1e-3));
    int compared = 0;
    for (int zero = 0; zero <= 3; ++zero)
        for (int shard_group : {0, 2})
            for (offload_mode offload : {offload_mode::none, offload_mode::optimizer})
                for (dp_overlap_mode overlap : {dp_overlap_mode::off, dp_overlap_mode::on})
                    for (bool gather : {false, true})
                        for (pipeline_schedule schedule :
                             {pipeline_schedule::one_f_one_b, pipeline_schedule::zero_bubble_h1})
                            for (int interleave : {1, 2}) {
                                training_setup s = base;
                                s.layout.zero = zero;
                                s.layout.shard_group = zero >= 1 ? shard_group : 0;
                                s.layout.offload = zero >= 1 ? offload : offload_mode::none;
                                s.layout.dp_overlap = overlap;
                                s.framework.overlap_parameter_gather = gather;
                                s.layout.schedule = interleave == 1 ? schedule : pipeline_schedule::one_f_one_b;
                                s.layout.interleave = interleave;
                                INFO(to_string(s.layout) << ", parameter-gather overlap " << gather);
                                const stage_pricer parts = price_stage_parts(s);
                                for (bool first : {false, true})
                                    for (bool last : {false, true}) {
                                        const micro_batch_times a = parts.stage(5, first, last, seconds_of(1e-3));
                                        const micro_batch_times b = reference.stage(5, first, last, seconds_of(1e-3));
                                        CHECK(a.total() == b.total());
                                        CHECK(a.compute() == b.compute());
                                        CHECK(a.gpu_weight_gradient == b.gpu_weight_gradient);
                                        CHECK(a.tensor_parallel_hidden == b.tensor_parallel_hidden);
                                    }
                                if (interleave == 1) {
                                    // Built with `s`, from the parts priced with `base`.
                                    const pipeline_times stages = pipeline_stage_times(reference, s, seconds_of(1e-3));
                                    CHECK(stages.bottleneck.total() == reference_stages.bottleneck.total());
                                    CHECK(stages.others == reference_stages.others);
                                    CHECK(stages.others_weight_gradient == reference_stages.others_weight_gradient);
                                }
                                ++compared;
                            }
    CHECK(compared == 4 * 2 * 2 * 2 * 2 * 2 * 2);
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
    request.base.framework.zero_stages = 0b1111;  // every stage (the megatron profile offers 0 and 1)
    request.base.framework.optimizer_offload = true;  // and offload, which it lacks
    request.base.framework.host_optimizers = {optimizer_kind::adamw};
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

#include <trainperf/search/training_plan.hpp>

namespace {
training_plan_request llama_2t_tokens(double deadline_days, int max_gpus) {
    training_plan_request r;
    r.layouts = llama_on_h100s(1, 512);
    r.layouts.max_micro_batch = 4;
    r.train_tokens = 2e12;
    r.deadline_days = deadline_days;
    r.price_per_gpu_hour = 2.0;
    r.max_gpus = max_gpus;
    return r;
}
}  // namespace

TEST_CASE("end-to-end plans: the GPU counts tried are bounded and documented", "[planner][training_plan]") {
    CHECK(training_plan_gpu_counts(8, 100) == std::vector<int>{1, 2, 4, 8, 16, 24, 32, 48, 64, 96});
    CHECK(training_plan_gpu_counts(4, 4) == std::vector<int>{1, 2, 4});
    CHECK(training_plan_gpu_counts(8, 5) == std::vector<int>{1, 2, 4});
    CHECK(training_plan_gpu_counts(8, max_training_plan_gpus).size() < 40);
    CHECK_THROWS_WITH(training_plan_gpu_counts(8, 0), Catch::Contains("max_gpus"));
    CHECK_THROWS_WITH(training_plan_gpu_counts(8, max_training_plan_gpus + 1), Catch::Contains("max_gpus"));
}

TEST_CASE("end-to-end plans meet their deadline: the cheapest and the fastest", "[planner][training_plan]") {
    const auto request = llama_2t_tokens(60, 512);
    const training_plan p = plan_training(request);
    REQUIRE(p.counts.size() == training_plan_gpu_counts(8, 512).size());
    REQUIRE(p.cheapest.has_value());
    REQUIRE(p.fastest.has_value());
    for (std::size_t i = 0; i < p.counts.size(); ++i) {
        const gpu_count_plan& c = p.counts[i];
        INFO(c.gpus << " GPUs");
        if (!c.best) {
            CHECK_FALSE(c.meets_deadline);
            continue;
        }
        CHECK(c.best->layout.gpus() == c.gpus);
        CHECK(c.best->layout.global_batch() == 512);
        CHECK(c.best->report.fits);
        // The run is the step's throughput over the tokens, on every GPU of the count.
        const double days = 2e12 / c.best->report.tokens_per_second / 86400.0;
        CHECK(p.days(i) == Approx(days));
        CHECK(c.run->gpu_hours == Approx(days * 24 * c.gpus));
        CHECK(c.run->cost == Approx(2.0 * c.run->gpu_hours));
        CHECK(c.run->energy.value() == Approx(h100_sxm::spec.tdp_watts * c.gpus * days * 86400.0));
        CHECK(c.meets_deadline == (days <= 60));
        // The plan's layout is the planner's fastest on that count.
        auto one = request.layouts;
        one.gpus = c.gpus;
        one.base.cluster.gpus_per_node = std::min(c.gpus, 8);
        const auto direct = plan(one, 1);
        REQUIRE(direct.best.size() == 1);
        CHECK(direct.best.front().report.step_time == c.best->report.step_time);
        if (!c.meets_deadline) continue;
        CHECK(p.counts[*p.cheapest].run->gpu_hours <= c.run->gpu_hours);
        CHECK(p.counts[*p.fastest].run->time <= c.run->time);
    }
    CHECK(p.counts[*p.cheapest].meets_deadline);
    CHECK(p.days(*p.cheapest) <= 60);
    CHECK(p.days(*p.fastest) <= p.days(*p.cheapest));
    // The setup of a plan predicts the step the plan reports.
    const training_setup s = setup_of(request, p.counts[*p.cheapest]);
    CHECK(predict(s).step_time == p.counts[*p.cheapest].best->report.step_time);

    // A deadline no count up to 64 GPUs meets: no cheapest, no fastest.
    const training_plan none = plan_training(llama_2t_tokens(1, 64));
    CHECK_FALSE(none.cheapest.has_value());
    CHECK_FALSE(none.fastest.has_value());
    // Without a deadline every count that fits qualifies; the fastest uses the most GPUs that fit here.
    const training_plan any = plan_training(llama_2t_tokens(0, 64));
    REQUIRE(any.fastest.has_value());
    CHECK(any.counts[*any.fastest].gpus == 64);
}

TEST_CASE("end-to-end plans reject bad requests", "[planner][training_plan]") {
    auto r = llama_2t_tokens(60, 64);
    r.train_tokens = 0;
    CHECK_THROWS_WITH(plan_training(r), Catch::Contains("train_tokens"));
    r = llama_2t_tokens(-1, 64);
    CHECK_THROWS_WITH(plan_training(r), Catch::Contains("deadline_days"));
    r = llama_2t_tokens(60, 64);
    r.price_per_gpu_hour = std::nan("");
    CHECK_THROWS_WITH(plan_training(r), Catch::Contains("price_per_gpu_hour"));
    r = llama_2t_tokens(60, 64);
    r.gpus_per_node = 0;
    CHECK_THROWS_WITH(plan_training(r), Catch::Contains("gpus_per_node"));
}

#include <trainperf/search/batch_suggestion.hpp>
#include <trainperf/search/fit_advice.hpp>

TEST_CASE("advice: every way to fit fits, and every way to speed up is faster per GPU", "[planner][advice]") {
    // Does not fit: llama2-7b on one H100 without sharding.
    training_setup s = llama_on_h100s(1, 1).base;
    s.framework = pytorch_eager_profile;
    s.layout = {.micro_batch = 1};
    const fit_advice fit = advise_fit(s);
    REQUIRE_FALSE(fit.fits());
    REQUIRE_FALSE(fit.options.empty());
    for (std::size_t i = 0; i < fit.options.size(); ++i) {
        const fit_option& o = fit.options[i];
        INFO(to_string(o.change) << ": " << describe(o.setup.layout));
        CHECK(predict(o.setup).fits);
        CHECK(o.report.step_time == predict(o.setup).step_time);
        // The nearest to the run asked for first (the same training, then another optimizer,
        // adapters, a shorter sequence), within each by tokens/s per GPU.
        if (i > 0) {
            const fit_option& before = fit.options[i - 1];
            CHECK(departure(before.change) <= departure(o.change));
            if (departure(before.change) == departure(o.change))
                CHECK(before.report.tokens_per_second_per_gpu() >= o.report.tokens_per_second_per_gpu());
        }
        for (std::size_t k = 0; k < i; ++k)
            CHECK((fit.options[k].change != o.change || fit.options[k].setup.optimizer != o.setup.optimizer));
        // Its margin is the memory verdict's.
        const fit_margin m = margin_of(memory_of(o.setup), o.setup.framework.memory);
        CHECK(o.margin.margin.value() == m.margin.value());
        CHECK(o.margin.margin.value() >= 0);
    }

    // Fits, but its data-parallel sync over PCIe without overlap dominates the step.
    training_setup slow = llama_on_h100s(8, 8).base;
    slow.cluster.intra_node = resolve_link(slow.cluster.gpu, link_kind::pcie);
    slow.layout = {.dp = 8, .zero = 1, .micro_batch = 1, .grad_accum = 1, .recompute = recompute_mode::full,
                   .dp_overlap = dp_overlap_mode::off};
    const speed_advice speed = advise_speed(slow);
    REQUIRE(speed.report.fits);
    CHECK(speed.largest == bottleneck_kind::communication);
    CHECK(speed.dominated());
    CHECK(speed.worth_saying());
    REQUIRE_FALSE(speed.options.empty());
    const double base = speed.report.tokens_per_second_per_gpu();
    bool planner_listed = false;
    for (const fit_option& o : speed.options) {
        INFO(to_string(o.change) << ": " << describe(o.setup.layout));
        const step_report r = predict(o.setup);
        CHECK(r.fits);
        CHECK(r.tokens_per_second_per_gpu() > base);
        CHECK(o.gain == Approx(r.tokens_per_second_per_gpu() / base - 1));
        // The same GPUs and the same global batch: a change of layout only.
        CHECK(o.setup.layout.gpus() == 8);
        CHECK(o.setup.layout.global_batch() == 8);
        planner_listed |= o.change == fit_change::best_layout;
    }
    // The planner searches every layout of the GPUs and batch: none of the others beats it.
    const auto best = std::find_if(speed.options.begin(), speed.options.end(),
                                   [](const fit_option& o) { return o.change == fit_change::best_layout; });
    if (planner_listed)
        for (const fit_option& o : speed.options)
            CHECK(best->report.tokens_per_second_per_gpu() >= o.report.tokens_per_second_per_gpu());
    else  // the planner's layout is one already listed (kept once, under its other kind)
        CHECK(std::any_of(speed.options.begin(), speed.options.end(), [&](const fit_option& o) {
            return o.setup.layout == fit_advice_detail::best_layout(s)->layout;
        }));

    // A setup that does not fit has no speed advice: it cannot run.
    CHECK_THROWS_WITH(advise_speed(s), Catch::Contains("does not fit"));
}

TEST_CASE("the planner offers only layouts the framework's software runs", "[planner][framework]") {
    // llama2-7b on 8 H100, global batch 16, offload allowed: every catalog framework.
    for (const framework_profile& fw : framework_profiles) {
        auto request = llama_on_h100s(8, 16);
        request.base.framework = fw;
        // bf16, or fp16 where the framework has no bf16 (megatron-deepspeed).
        if (!fw.precisions.contains(precision_kind::bf16)) request.base.precision = recipe(precision_kind::fp16);
        request.allow_offload = true;
        plan_options every;
        every.top = 1u << 20;
        const plan_result result = plan(request, every);
        INFO(fw.name);
        REQUIRE(!result.best.empty());
        bool model_parallel = false, offloaded = false;
        for (const plan_candidate& c : result.best) {
            CHECK_NOTHROW(validate(setup_of(request.base, c)));  // what predict would refuse is never offered
            model_parallel |= c.layout.tp > 1 || c.layout.pp > 1;
            offloaded |= c.layout.offload == offload_mode::optimizer;
        }
        // The Hugging Face Trainer (with or without DeepSpeed) has no model parallelism;
        // Megatron-LM 2022 has no optimizer offload; Megatron-Core has both.
        CHECK(model_parallel == (fw.tensor_parallel || fw.pipeline_parallel));
        if (!fw.optimizer_offload) CHECK_FALSE(offloaded);
    }
}

TEST_CASE("the planner offers no optimizer offload to a GPU without a host link", "[planner][framework]") {
    // validate_layout refuses offload without a host link; the planner must not offer it
    // (it prices each micro-batch's layout through a checked setup, so it would throw).
    auto request = llama_on_h100s(8, 16);
    request.base.framework = deepspeed_profile;  // runs optimizer offload
    request.base.cluster.gpu.host_link = link_spec{};
    REQUIRE(request.base.cluster.gpu.host_link.kind == link_kind::none);
    request.allow_offload = true;
    plan_options every;
    every.top = 1u << 20;
    const plan_result result = plan(request, every);
    REQUIRE(!result.best.empty());
    for (const plan_candidate& c : result.best) CHECK(c.layout.offload == offload_mode::none);
}

TEST_CASE("the suggested global batch: about 2^22 tokens, a multiple of the GPUs", "[planner]") {
    CHECK(suggested_global_batch(8192, 64) == 512);   // 2^22 / 8192 = 512 = 8·64
    CHECK(suggested_global_batch(1024, 3) == 4095);   // 4096 samples, the nearest multiple of 3
    CHECK(suggested_global_batch(1024, 8192) == 8192);  // fewer samples than GPUs: one each
    CHECK(suggested_global_batch(1 << 23, 1) == 1);     // half a sample: at least one
    CHECK_THROWS_WITH(suggested_global_batch(0, 8), Catch::Contains("seq = 0"));
    CHECK_THROWS_WITH(suggested_global_batch(1024, 0), Catch::Contains("gpus = 0"));
}

TEST_CASE("advice offers a lighter optimizer and adapters where the framework runs them", "[planner][advice]") {
    // gpt2-xl (1.56 B parameters) on one 24 GB card with full recompute: AdamW's state with
    // bf16 weights, fp32 masters and gradients (16 B per parameter, 25 GB) does not fit;
    // Adafactor's factored state or 8-bit Adam's quantized moments, or LoRA on a frozen
    // base, do.
    training_setup s;
    s.cluster = standard_cluster(rtx_3090::spec, 1);
    s.model = gpt2_xl::config;
    s.framework = pytorch_eager_profile;
    s.layout.recompute = recompute_mode::full;
    const fit_advice a = advise_fit(s);
    REQUIRE_FALSE(a.fits());
    const auto find = [&](fit_change c) {
        return std::find_if(a.options.begin(), a.options.end(), [c](const fit_option& o) { return o.change == c; });
    };
    const auto lighter = find(fit_change::optimizer), lora = find(fit_change::lora);
    REQUIRE(lighter != a.options.end());
    REQUIRE(lora != a.options.end());
    CHECK(find(fit_change::qlora) == a.options.end());  // LoRA fits: no QLoRA
    CHECK(lighter < lora);                                // another update rule before adapters
    for (const fit_option& o : a.options) {
        INFO(to_string(o.change));
        CHECK(predict(o.setup).fits);
        if (o.change == fit_change::optimizer) {
            CHECK((o.setup.optimizer == optimizer_kind::adam8bit || o.setup.optimizer == optimizer_kind::adafactor));
            CHECK(o.setup.layout == s.layout);
        }
    }
    CHECK(lora->setup.finetune.mode == finetune_mode::lora);
    CHECK(lora->setup.finetune.rank == finetune_spec{}.rank);
    CHECK(lora->setup.layout == s.layout);
    // Megatron-Core runs neither 8-bit Adam, Adafactor nor adapters: none offered.
    s.framework = megatron_core_profile;
    for (const fit_option& o : advise_fit(s).options) {
        CHECK(o.change != fit_change::optimizer);
        CHECK(o.change != fit_change::lora);
        CHECK(o.change != fit_change::qlora);
    }
}

TEST_CASE("advice adds GPUs in the nodes of the GPU's own system", "[planner][advice][domain]") {
    // llama3-70b on 8 GB200 (two trays of 4 in one NVL72 rack), tp 4 x pp 2, one replica:
    // AdamW's state does not fit. ZeRO-3 over more replicas does, on trays of 4 as the
    // rack has them, not on 8-GPU servers.
    training_setup s;
    s.cluster = build_cluster({.gpu = gb200::spec, .gpus = 8});
    s.model = llama3_70b::config;
    s.framework = megatron_core_profile;
    s.layout = {.tp = 4, .pp = 2, .sp = true, .micro_batch = 1, .grad_accum = 8};
    const fit_advice a = advise_fit(s);
    REQUIRE_FALSE(a.fits());
    bool offered = false;
    for (const fit_option& o : a.options)
        if (o.change == fit_change::zero3_more_gpus) {
            offered = true;
            CHECK(o.setup.layout.dp > 1);
            CHECK(o.setup.cluster.gpus_per_node == 4);
            CHECK(predict(o.setup).fits);
        }
    CHECK(offered);
}

TEST_CASE("advice offers a shorter sequence where one makes the layout fit", "[planner][advice]") {
    // llama2-7b on one H100 under plain PyTorch at seq 4096, bf16, AdamW: its static state
    // alone (16 B per parameter, 108 GB) does not fit, whatever the sequence: no such advice.
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec, 1);
    s.model = llama2_7b::config;
    s.framework = pytorch_eager_profile;
    s.seq = 4096;
    const fit_advice static_bound = advise_fit(s);
    REQUIRE_FALSE(static_bound.fits());
    for (const fit_option& o : static_bound.options) CHECK(o.change != fit_change::shorter_sequence);
    // gpt2-medium at micro-batch 16 × 1024 on one 24 GB card: activations dominate (250 %
    // of the usable memory; 103 % at 512, 55 % at 256), so the longest of 512, 256, 128 that
    // fits is 256.
    s.cluster = standard_cluster(rtx_4090::spec, 1);
    s.model = gpt2_medium::config;
    s.seq = 1024;
    s.layout.micro_batch = 16;
    const fit_advice a = advise_fit(s);
    REQUIRE_FALSE(a.fits());
    const auto shorter = std::find_if(a.options.begin(), a.options.end(),
                                      [](const fit_option& o) { return o.change == fit_change::shorter_sequence; });
    REQUIRE(shorter != a.options.end());
    CHECK(shorter->setup.layout == s.layout);  // the same layout
    CHECK(shorter + 1 == a.options.end());     // listed after the changes that train the same thing
    CHECK(shorter->report.fits);
    CHECK(shorter->report.seq == 256);
    training_setup twice = s;
    twice.seq = shorter->report.seq * 2;
    CHECK_FALSE(memory_of(twice).fits);  // the longest halving that fits
}

namespace {
// Two ranked lists hold the same layouts, switches and step times, in the same order.
void check_same_list(const std::vector<plan_candidate>& a, const std::vector<plan_candidate>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("rank " << i + 1);
        CHECK(to_string(a[i].layout) == to_string(b[i].layout));
        CHECK(a[i].switches == b[i].switches);
        CHECK(a[i].report.step_time.value() == b[i].report.step_time.value());
    }
}

// The requests the folding tests search: megatron (interleaves), megatron-core (uneven
// splits, shard groups, switches) and megatron-core with offload allowed.
std::vector<plan_request> folding_requests() {
    auto interleaved = llama_on_h100s(32, 128);
    auto core = request_on(h100_sxm::spec, llama2_7b::config, 4096, megatron_core_profile, 16, 64, 2);
    auto offloaded = request_on(a100_sxm_80gb::spec, llama2_13b::config, 4096, megatron_core_profile, 8, 32, 2);
    offloaded.allow_offload = true;
    return {interleaved, core, offloaded};
}
}  // namespace

TEST_CASE("a layout's family: every field but those that tune the same decomposition", "[planner][fold]") {
    plan_candidate a;
    a.layout = {.dp = 4, .tp = 2, .pp = 2, .zero = 1, .micro_batch = 2, .grad_accum = 8};
    a.switches.flash_attention = true;
    plan_candidate b = a;
    b.layout.interleave = 2;
    b.layout.schedule = pipeline_schedule::zero_bubble_h1;
    b.layout.first_stage_layers = 15;
    b.layout.last_stage_layers = 15;
    b.layout.shard_group = 2;
    b.layout.dp_overlap = dp_overlap_mode::on;
    b.switches.tensor_parallel_overlap = true;
    b.switches.overlap_parameter_gather = true;
    CHECK(same_family(a, b));
    const auto differs = [&](auto change) {
        plan_candidate c = a;
        change(c);
        return !same_family(a, c);
    };
    CHECK(differs([](plan_candidate& c) { c.layout.dp = 8; }));
    CHECK(differs([](plan_candidate& c) { c.layout.tp = 4; }));
    CHECK(differs([](plan_candidate& c) { c.layout.cp = 2; }));
    CHECK(differs([](plan_candidate& c) { c.layout.pp = 4; }));
    CHECK(differs([](plan_candidate& c) { c.layout.ep = 2; }));
    CHECK(differs([](plan_candidate& c) { c.layout.etp = 1; }));
    CHECK(differs([](plan_candidate& c) { c.layout.sp = true; }));
    CHECK(differs([](plan_candidate& c) { c.layout.zero = 2; }));
    CHECK(differs([](plan_candidate& c) { c.layout.offload = offload_mode::optimizer; }));
    CHECK(differs([](plan_candidate& c) { c.layout.micro_batch = 1; }));
    CHECK(differs([](plan_candidate& c) { c.layout.grad_accum = 16; }));
    CHECK(differs([](plan_candidate& c) { c.layout.recompute = recompute_mode::full; }));
    CHECK(differs([](plan_candidate& c) { c.switches.flash_attention = false; }));
}

TEST_CASE("folding keeps the fastest layout of each of the fastest families", "[planner][fold]") {
    bool changed_a_list = false;
    for (const plan_request& request : folding_requests()) {
        INFO(request.base.model.name << " on " << request.gpus << " " << request.base.cluster.gpu.name << ", "
                                     << request.base.framework.name);
        plan_options every;
        every.top = 1u << 20;
        const plan_result all = plan(request, every);
        REQUIRE(all.best.size() == std::size_t(all.fitting - all.borderline));  // every firm fit, ranked
        CHECK_FALSE(all.folded);
        plan_options folding;
        folding.top = 8;
        folding.fold_variants = true;
        const plan_result folded = plan(request, folding);
        CHECK(folded.folded);
        REQUIRE(folded.best.size() == 8);
        check_same_list(folded.best, first_of_each_family(all.best, 8));
        for (std::size_t i = 0; i < folded.best.size(); ++i)
            for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(same_family(folded.best[i], folded.best[j]));
        // Unfolded, the first 8 repeat a family where the folded list differs.
        const std::vector<plan_candidate> first(all.best.begin(), all.best.begin() + 8);
        bool repeats = false;
        for (std::size_t i = 0; i < first.size(); ++i)
            for (std::size_t j = 0; j < i; ++j) repeats |= same_family(first[i], first[j]);
        changed_a_list |= repeats;
        // The same folded list without the bounds, and on one thread and on four.
        plan_options exhaustive = folding;
        exhaustive.prune = false;
        check_same_list(plan(request, exhaustive).best, folded.best);
        plan_options one = folding, four = folding;
        one.threads = 1;
        four.threads = 4;
        check_same_list(plan(request, one).best, folded.best);
        check_same_list(plan(request, four).best, folded.best);
    }
    CHECK(changed_a_list);
}

namespace {
// Every catalog framework's plan of `request` (those that train its fine-tuning mode), merged in the planner's order (ties: the
// earlier framework first), the `top` first: what plan_across must return.
std::vector<std::pair<plan_candidate, std::string>> merged_plans(const plan_request& request,
                                                                 const plan_options& options) {
    std::vector<std::pair<plan_candidate, std::string>> all;
    for (const framework_profile& fw : framework_profiles) {
        if (!fw.finetune_modes.contains(request.base.finetune.mode)) continue;
        if (!fw.precisions.contains(request.base.precision.kind)) continue;
        for (const plan_candidate& c : plan(with_framework(request, fw), options).best)
            all.emplace_back(c, std::string(fw.name));
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return planner_detail::ranks_before(a.first, b.first); });
    if (all.size() > options.top) all.resize(options.top);
    return all;
}
}  // namespace

TEST_CASE("a search across frameworks is every framework's plan, merged by step time", "[planner][framework]") {
    // llama2-7b on 8 H100, global batch 64: Megatron-Core's layouts lead, torchtitan's reach
    // the 400 fastest families (Megatron-LM's fit, without a sharded optimizer beyond ZeRO-1,
    // only by the allocator's assumed slack: set aside); with LoRA (the Hugging Face Trainer
    // with or without DeepSpeed) the two alternate from the first rows on.
    struct search {
        finetune_mode finetune;
        std::size_t top;
        bool fold;
        std::set<std::string> winners;  // frameworks among the best
    };
    for (const search& c : {search{finetune_mode::full, 400, true, {"megatron-core", "torchtitan"}},
                            search{finetune_mode::full, 100, false, {"megatron-core"}},
                            search{finetune_mode::lora, 20, true, {"deepspeed", "pytorch-eager"}},
                            search{finetune_mode::lora, 20, false, {"deepspeed", "pytorch-eager"}}}) {
        auto request = llama_on_h100s(8, 64);
        request.base.finetune.mode = c.finetune;
        INFO(to_string(c.finetune) << ", top " << c.top << ", fold " << c.fold);
        plan_options options;
        options.top = c.top;
        options.fold_variants = c.fold;
        const framework_plan_result across = plan_across(request, framework_profiles, options);
        CHECK(across.folded == c.fold);
        CHECK(across.searched.size() + across.skipped.size() == framework_profiles.size());
        const auto expected = merged_plans(request, options);
        REQUIRE(across.best.size() == expected.size());
        REQUIRE(across.framework_of.size() == across.best.size());
        std::set<std::string> winners;
        for (std::size_t i = 0; i < expected.size(); ++i) {
            INFO("rank " << i + 1);
            CHECK(across.best[i].report.step_time == expected[i].first.report.step_time);
            CHECK(to_string(across.best[i].layout) == to_string(expected[i].first.layout));
            CHECK(across.best[i].switches == expected[i].first.switches);
            CHECK(across.framework(i).name == expected[i].second);
            winners.insert(expected[i].second);
            // The setup of each row predicts exactly its step, with its framework.
            const training_setup s = setup_of(request, across, i);
            CHECK(s.framework.name == expected[i].second);
            CHECK(predict(s).step_time == across.best[i].report.step_time);
        }
        CHECK(winners == c.winners);
        // The counts are the frameworks' counts summed.
        long long candidates = 0;
        for (const framework_profile& fw : across.searched) candidates += plan(with_framework(request, fw), options).candidates;
        CHECK(across.candidates == candidates);
        CHECK(across.evaluated + across.pruned == across.candidates);
    }
}

TEST_CASE("a search across frameworks leaves out those that do not train the recipe", "[planner][framework]") {
    auto request = llama_on_h100s(8, 64);
    plan_options options;
    options.top = 5;
    const auto names = [](const framework_plan_result& r) {
        std::set<std::string> searched;
        for (const framework_profile& fw : r.searched) searched.insert(std::string(fw.name));
        return searched;
    };
    // fp8 with current scaling: Megatron-Core with Transformer Engine and torchtitan with
    // torchao only; with delayed scaling, which torchao lacks, Megatron-Core alone.
    request.base.precision = recipe(precision_kind::fp8);
    const framework_plan_result delayed = plan_across(request, framework_profiles, options);
    CHECK(names(delayed) == std::set<std::string>{"megatron-core"});
    request.base.precision.scaling = fp8_scaling::current;
    const framework_plan_result fp8 = plan_across(request, framework_profiles, options);
    CHECK(names(fp8) == std::set<std::string>{"megatron-core", "torchtitan"});
    REQUIRE(fp8.skipped.size() == 4);
    for (const skipped_framework& s : fp8.skipped) {
        INFO(s.reason);
        CHECK(s.reason.find("precision = fp8") != std::string::npos);
        CHECK(s.reason.find("framework " + s.framework) != std::string::npos);
    }
    for (std::size_t i = 0; i < fp8.best.size(); ++i)
        CHECK((fp8.framework(i).name == "megatron-core" || fp8.framework(i).name == "torchtitan"));
    // 8-bit Adam: the Hugging Face Trainer, with or without DeepSpeed.
    request.base.precision = recipe(precision_kind::bf16);
    request.base.optimizer = optimizer_kind::adam8bit;
    const framework_plan_result adam8bit = plan_across(request, framework_profiles, options);
    CHECK(names(adam8bit) == std::set<std::string>{"pytorch-eager", "deepspeed"});
    REQUIRE(adam8bit.skipped.size() == 4);
    for (const skipped_framework& s : adam8bit.skipped)
        CHECK(s.reason.find("optimizer = adam8bit") != std::string::npos);
    // No framework trains fp8 with 8-bit Adam: an error naming each one's reason.
    request.base.precision = recipe(precision_kind::fp8);
    CHECK_THROWS_WITH(plan_across(request, framework_profiles, options),
                      Catch::Contains("none of them runs this setup as a whole") && Catch::Contains("framework megatron-core") &&
                          Catch::Contains("framework pytorch-eager"));
    // What no framework can change is an error, as for plan().
    request = llama_on_h100s(8, 64);
    request.gpus = 0;
    CHECK_THROWS_WITH(plan_across(request, framework_profiles, options), Catch::Contains("gpus = 0"));
}

TEST_CASE("the planner searches the rank orders the framework runs where the job spans NVLink domains",
          "[planner][domain]") {
    // 144 GB200: two NVL72 racks (standard_cluster: trays of 4 in domains of 72).
    const plan_request two_racks = request_on(gb200::spec, llama2_7b::config, 4096, megatron_core_profile, 144, 288, 1);
    REQUIRE(gpus_per_domain(two_racks.base.cluster) == 72);
    plan_request one_order = two_racks;
    one_order.base.framework.rank_orders = {rank_order::tp_dp_pp};
    plan_options options;
    options.top = 400;
    const plan_result both = plan(two_racks, options);
    const plan_result fixed = plan(one_order, options);
    // Megatron-Core's tp-pp-dp (--use-tp-pp-dp-mapping) is tried where there are both
    // stages and replicas: more candidates than the one order gives.
    CHECK(both.candidates > fixed.candidates);
    CHECK(both.evaluated + both.pruned == both.candidates);
    for (const plan_candidate& c : fixed.best) CHECK(c.order == rank_order::tp_dp_pp);
    int reordered = 0;
    for (const plan_candidate& c : both.best) {
        if (c.order == rank_order::tp_dp_pp) continue;
        ++reordered;
        CHECK(c.layout.pp > 1);
        CHECK(c.layout.dp > 1);
        // The candidate is what predict says of it, rank order included.
        const training_setup s = setup_of(two_racks.base, c);
        CHECK(s.cluster.order == rank_order::tp_pp_dp);
        CHECK(predict(s).step_time.value() == Approx(c.report.step_time.value()).epsilon(1e-12));
        CHECK(describe_changes(c, two_racks.base.framework, two_racks.base.cluster.order)
                  .find("rank order tp-pp-dp") != std::string::npos);
    }
    CHECK(reordered > 0);
    // The order moves groups across racks: with tp-dp-pp each rack holds a stage's 36
    // replicas and the gradients reduce on NVLink; with tp-pp-dp a rack holds 18 whole
    // replicas and the data-parallel group crosses the network (hierarchically: 18 GPUs
    // of each rack in parallel over it), its sync slower.
    training_setup s = two_racks.base;
    s.layout = {.dp = 36, .tp = 2, .pp = 2, .micro_batch = 1, .grad_accum = 4};
    const step_report dp_inside = predict(s);
    s.cluster.order = rank_order::tp_pp_dp;
    CHECK(predict(s).data_parallel_sync > dp_inside.data_parallel_sync);
    // Inside one rack every group rides NVLink: one order is searched.
    plan_request one_rack = two_racks;
    one_rack.gpus = 72;
    one_rack.global_batch = 144;
    plan_request one_rack_fixed = one_rack;
    one_rack_fixed.base.framework.rank_orders = {rank_order::tp_dp_pp};
    CHECK(plan(one_rack, options).candidates == plan(one_rack_fixed, options).candidates);
    // A search asking for an order its framework does not number ranks by is refused
    // before it starts; across frameworks that one is left out with the reason.
    plan_request titan = two_racks;
    titan.base.framework = torchtitan_profile;
    titan.base.cluster.order = rank_order::tp_pp_dp;
    CHECK_THROWS_WITH(plan(titan, options), Catch::StartsWith("rank_order = tp-pp-dp: framework torchtitan"));
    const framework_plan_result across =
        plan_across(titan, std::array{megatron_core_profile, torchtitan_profile}, options);
    REQUIRE(across.skipped.size() == 1);
    CHECK(across.skipped[0].framework == "torchtitan");
    // A framework with one order refuses the other by name.
    s.framework = torchtitan_profile;
    s.layout.zero = 0;
    CHECK_THROWS_WITH(validate(s), Catch::StartsWith("rank_order = tp-pp-dp: framework torchtitan") &&
                                       Catch::Contains("numbers its ranks only tp-dp-pp") &&
                                       Catch::Contains("megatron-core"));
}

namespace {
// An MoE decoder small enough to search exhaustively: 8 layers of hidden 1024 (8 heads),
// the first 2 dense (FFN 2048), the others 8 SwiGLU experts of 512, 2 per token, and a
// shared expert of 512; vocabulary 4096. Its experts' state outweighs its activations, so
// that the second of 3 or more stages, all MoE layers, is often the busiest (34 of these
// layouts' memory differ from memory_of's if the planner keeps one second stage's state
// for splits whose second stages have as many layers but not as many MoE layers).
constexpr transformer_config planner_moe = [] {
    transformer_config c = llama_architecture("planner-moe", 8, 1024, 8, 0, 2048, 4096, 4096);
    c.moe = {.experts = 8, .experts_per_token = 2, .expert_ffn_hidden = 512, .shared_ffn_hidden = 512,
             .dense_layers = 2};
    return c;
}();

// Every fitting layout of 16 H100 (two nodes) for it under megatron-core.
plan_request moe_request() {
    return request_on(h100_sxm::spec, planner_moe, 1024, megatron_core_profile, 16, 32, 2);
}

plan_result every_fitting_layout(const plan_request& r) {
    plan_options all;
    all.top = 1u << 20;
    all.prune = false;
    return plan(r, all);
}

// Each layout's memory, every component, is memory_of() of its layout, and a sample's
// step is predict()'s: the planner reuses stage parts and state parts across expert
// layouts' pipeline depths, splits and interleaves.
void check_against_predict(const plan_request& r, const plan_result& result) {
    std::size_t differ = 0;
    for (const plan_candidate& c : result.best) {
        const memory_breakdown fresh = memory_of(setup_of(r.base, c)).breakdown;
        const auto planned = components(c.report.memory), alone = components(fresh);
        bool same = c.report.memory.stage == fresh.stage;
        for (std::size_t k = 0; k < planned.size(); ++k)
            same = same && planned[k].value.value() == Approx(alone[k].value.value()).epsilon(1e-12);
        if (!same && differ++ == 0) FAIL_CHECK("memory differs for " << to_string(c.layout));
    }
    CHECK(differ == 0);
    for (std::size_t i = 0; i < result.best.size(); i += std::max<std::size_t>(1, result.best.size() / 61)) {
        const plan_candidate& c = result.best[i];
        INFO(to_string(c.layout));
        const step_report fresh = predict(setup_of(r.base, c));
        CHECK(c.report.step_time.value() == Approx(fresh.step_time.value()).epsilon(1e-12));
        CHECK(c.report.time.communication.value() == Approx(fresh.time.communication.value()).epsilon(1e-12));
        CHECK(c.report.fits == fresh.fits);
    }
}
}  // namespace

TEST_CASE("the planner searches an MoE model's expert and expert-tensor parallelism", "[planner][moe]") {
    const plan_request r = moe_request();
    const plan_result result = every_fitting_layout(r);
    REQUIRE(result.best.size() > 200);
    CHECK(result.evaluated == result.candidates);
    std::set<int> eps, etps;
    bool reordered = false, uneven_second = false;
    for (const plan_candidate& c : result.best) {
        const parallel_layout& l = c.layout;
        eps.insert(l.ep);
        etps.insert(l.expert_tp());
        // Only what Megatron-Core runs with experts: ep·etp folds onto a stage's tp·cp·dp,
        // sequence parallelism with tp, the distributed optimizer at most, no offload.
        CHECK(8 % l.ep == 0);
        CHECK((1LL * l.tp * l.cp * l.dp) % (1LL * l.ep * l.expert_tp()) == 0);
        CHECK((l.tp == 1 || l.sp));
        CHECK(l.zero <= 1);
        CHECK(l.shard_group == 0);
        CHECK(l.offload == offload_mode::none);
        CHECK(l.etp != l.tp);  // etp = tp is written 0, as Megatron-Core's default
        if (c.order == rank_order::tp_pp_dp) {
            reordered = true;
            CHECK(l.ep * l.expert_tp() == l.tp * l.cp);
        }
        // An uneven split whose second stage starts among the dense layers: its MoE layers
        // differ from another split's second stage of as many layers.
        uneven_second |= l.pp > 2 && l.first_stage_layers == 1;
    }
    CHECK(eps == std::set<int>{1, 2, 4, 8});
    CHECK(etps.size() >= 3);
    CHECK(reordered);
    CHECK(uneven_second);
    check_against_predict(r, result);
    // Pruned, the same best layouts.
    plan_options pruned;
    pruned.top = 9;
    const plan_result fast = plan(r, pruned);
    REQUIRE(fast.best.size() == 9);
    CHECK(fast.candidates == result.candidates);
    CHECK(fast.pruned > 0);
    std::vector<plan_candidate> ranked = result.best;
    std::sort(ranked.begin(), ranked.end(), planner_detail::ranks_before);
    for (std::size_t i = 0; i < fast.best.size(); ++i)
        CHECK(fast.best[i].report.step_time.value() == ranked[i].report.step_time.value());
    // Across frameworks, those that dispatch no tokens are left out by name.
    const framework_plan_result across = plan_across(r, framework_profiles, pruned);
    REQUIRE_FALSE(across.best.empty());
    for (const framework_profile& fw : across.searched) CHECK(fw.moe_dispatchers.contains(moe_dispatcher::alltoall));
    const auto eager = std::find_if(across.skipped.begin(), across.skipped.end(),
                                    [](const skipped_framework& k) { return k.framework == "pytorch-eager"; });
    REQUIRE(eager != across.skipped.end());
    CHECK(eager->reason.find("trains no mixture-of-experts model") != std::string::npos);
}

TEST_CASE("the planner's MoE space follows the dispatcher and the overlaps", "[planner][moe]") {
    // DeepEP and HybridEP forward by node: each expert whole on its rank (etp 1).
    plan_request deepep = moe_request();
    deepep.base.moe.dispatcher = moe_dispatcher::deepep;
    const plan_result by_node = every_fitting_layout(deepep);
    REQUIRE_FALSE(by_node.best.empty());
    for (const plan_candidate& c : by_node.best) {
        CHECK(c.layout.expert_tp() == 1);
        CHECK(deepep_tuned_for(c.layout.ep) != nullptr);  // a group size DeepEP runs (not 1)
    }
    // The EP overlap: ep > 1, no full recompute; its extra micro-batch in flight per
    // interleave (memory equal to memory_of's for each). With a multi-token prediction
    // module on the last stage.
    plan_request overlap = moe_request();
    overlap.base.moe.a2a_overlap = true;
    overlap.base.model.mtp_layers = 1;
    const plan_result hidden = every_fitting_layout(overlap);
    REQUIRE_FALSE(hidden.best.empty());
    bool interleaved = false;
    for (const plan_candidate& c : hidden.best) {
        CHECK(c.layout.ep > 1);
        CHECK(c.layout.recompute != recompute_mode::full);
        if (c.layout.pp > 1) CHECK(c.layout.interleave > 1);  // Megatron-Core's virtual stages
        interleaved |= c.layout.interleave > 1;
    }
    CHECK(interleaved);
    check_against_predict(overlap, hidden);
    // The shared-expert overlap: every layout Megatron-Core runs with it, priced as predict.
    plan_request shared = moe_request();
    shared.base.moe.shared_expert_overlap = true;
    const plan_result beside = every_fitting_layout(shared);
    REQUIRE_FALSE(beside.best.empty());
    check_against_predict(shared, beside);
    // What no layout can mend is refused before the search, as predict refuses it.
    plan_request fp32 = overlap;
    fp32.base.precision = recipe(precision_kind::fp32);
    CHECK_THROWS_WITH(plan(fp32), Catch::Contains("moe_a2a_overlap = on") && Catch::Contains("bf16 or fp16"));
    plan_request dense = llama_on_h100s(8, 64);
    dense.base.moe.a2a_overlap = true;
    CHECK_THROWS_WITH(plan(dense), Catch::Contains("moe_a2a_overlap = on"));
}

TEST_CASE("the planner's bound on an MoE model's stage is the least over its MoE layers", "[planner][moe]") {
    // A dense FFN of 16384 beside experts of 512: a stage's dense layers take the GPU longer
    // and its MoE layers the host, each pass the larger of the two, so of 2-layer stages
    // the one with 1 MoE layer computes least, less than 0 or 2 of them.
    transformer_config m = planner_moe;
    m.ffn_hidden = 16384;
    training_setup s = moe_request().base;
    s.model = m;
    s.framework.tensor_parallel_overlap = false;
    s.seq = 1024;
    s.moe.imbalance = 1.0;
    s.layout = {.dp = 16, .tp = 1, .zero = 1, .micro_batch = 8};
    const stage_pricer parts = price_stage_parts(checked_setup(s));
    std::array<double, 3> compute{};
    for (int k = 0; k <= 2; ++k) compute[std::size_t(k)] = parts.stage(2, false, false, seconds_of(0.0), k).compute().value();
    CHECK(compute[1] < compute[0]);
    CHECK(compute[1] < compute[2]);
    CHECK(planner_detail::least_stage_compute(parts, 2, 8, 6).value() == compute[1]);
    // A stage of 7 of the 8 layers holds at least 5 MoE layers.
    double least = std::numeric_limits<double>::infinity();
    for (int k = 5; k <= 6; ++k) least = std::min(least, parts.stage(7, false, false, seconds_of(0.0), k).compute().value());
    CHECK(planner_detail::least_stage_compute(parts, 7, 8, 6).value() == least);
}
