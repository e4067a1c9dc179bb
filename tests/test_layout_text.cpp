// A layout's text form parses back to the same layout (spec/layout_text.hpp).
#include <catch2/catch.hpp>

#include <trainperf/spec/layout_text.hpp>

#include <string>

using namespace trainperf;

namespace {
bool same(const parallel_layout& a, const parallel_layout& b) {
    return a.dp == b.dp && a.tp == b.tp && a.pp == b.pp && a.interleave == b.interleave && a.sp == b.sp &&
           a.zero == b.zero && a.offload == b.offload && a.micro_batch == b.micro_batch &&
           a.grad_accum == b.grad_accum && a.recompute == b.recompute && a.dp_overlap == b.dp_overlap;
}
}  // namespace

TEST_CASE("to_string writes every field as the CLI's flags", "[layout_text]") {
    const parallel_layout l{.dp = 4, .tp = 8, .pp = 2, .interleave = 2, .sp = true, .zero = 1, .micro_batch = 2,
                            .grad_accum = 16, .recompute = recompute_mode::selective};
    CHECK(to_string(l) ==
          "--gpus 64 --tp 8 --pp 2 --interleave 2 --sp --zero 1 --offload none --batch 2 --grad-accum 16 "
          "--recompute selective --dp-overlap framework");
    CHECK(to_string(parallel_layout{}) ==
          "--gpus 1 --tp 1 --pp 1 --interleave 1 --zero 0 --offload none --batch 1 --grad-accum 1 "
          "--recompute none --dp-overlap framework");
}

TEST_CASE("parse_layout reads to_string back, for every value of every field", "[layout_text]") {
    for (int tp : {1, 2, 8})
        for (int pp : {1, 4})
            for (int dp : {1, 3, 16})
                for (bool sp : {false, true})
                    for (int zero = 0; zero <= 3; ++zero)
                        for (offload_mode offload : enum_values<offload_mode>())
                            for (recompute_mode recompute : enum_values<recompute_mode>())
                                for (dp_overlap_mode overlap : enum_values<dp_overlap_mode>()) {
                                    const parallel_layout l{.dp = dp, .tp = tp, .pp = pp, .interleave = pp > 1 ? 2 : 1,
                                                            .sp = sp, .zero = zero, .offload = offload,
                                                            .micro_batch = 1 + dp % 5, .grad_accum = 8 * pp,
                                                            .recompute = recompute, .dp_overlap = overlap};
                                    const std::string text = to_string(l);
                                    INFO(text);
                                    CHECK(same(parse_layout(text), l));
                                }
}

TEST_CASE("parse_layout: any order, defaults for what is left out, extra spaces", "[layout_text]") {
    const parallel_layout l = parse_layout("  --tp 2\t--gpus 8   --recompute FULL --sp ");
    CHECK(l.dp == 4);
    CHECK(l.tp == 2);
    CHECK(l.sp);
    CHECK(l.recompute == recompute_mode::full);
    CHECK(l.micro_batch == 1);
    CHECK(l.dp_overlap == dp_overlap_mode::framework);
    CHECK(parse_layout("").gpus() == 1);
    CHECK(parse_layout("--tp 4 --pp 2").dp == 1);
}

TEST_CASE("parse_layout names the bad token or value", "[layout_text]") {
    CHECK_THROWS_WITH(parse_layout("--tp 2 --vp 3"),
                      "layout = \"--vp\": unknown; expected one of --gpus, --tp, --cp, --pp, --interleave, --schedule, "
                      "--first-stage-layers, --last-stage-layers, --pipeline-layout, --sp, "
                      "--zero, --shard-group, --offload, --batch, --grad-accum, --recompute, --recompute-modules, --dp-overlap, "
                      "--ep, --etp");
    CHECK_THROWS_WITH(parse_layout("--tp"), "--tp = (missing): needs a value");
    CHECK_THROWS_WITH(parse_layout("--batch two"), "--batch = \"two\": must be a whole number");
    CHECK_THROWS_WITH(parse_layout("--batch 2.5"), "--batch = \"2.5\": must be a whole number");
    CHECK_THROWS_WITH(parse_layout("--tp 2 --tp 4"), "layout = --tp: is given twice");
    CHECK_THROWS_WITH(parse_layout("--offload gpu"), "--offload = \"gpu\": unknown; expected one of none, optimizer");
    CHECK_THROWS_WITH(parse_layout("--dp-overlap maybe"),
                      "--dp-overlap = \"maybe\": unknown; expected one of framework, on, off");
    CHECK_THROWS_WITH(parse_layout("--gpus 6 --tp 4"), "gpus = 6: must be a multiple of tp x pp = 4");
    CHECK_THROWS_WITH(parse_layout("--zero 4"), "zero = 4: must be 0, 1, 2 or 3");
    CHECK_THROWS_WITH(parse_layout("--batch 0"), "batch = 0: must be at least 1");
    CHECK_THROWS_WITH(parse_layout("--tp -2"), "--tp = -2: is out of range");
    CHECK_THROWS_WITH(parse_layout("--gpus 99999999999"), "--gpus = 99999999999: is out of range");
    CHECK_THROWS_AS(parse_layout("8 --tp 2"), trainperf::invalid_argument);
}

TEST_CASE("data_parallel_size", "[layout_text]") {
    static_assert(data_parallel_size(64, 8, 2) == 4);
    CHECK_THROWS_WITH(data_parallel_size(12, 8, 1), "gpus = 12: must be a multiple of tp x pp = 8");
    CHECK_THROWS_AS(data_parallel_size(8, 0, 1), trainperf::invalid_argument);
}

TEST_CASE("describe is the human-readable form", "[layout_text]") {
    CHECK(describe({.dp = 4, .tp = 8, .pp = 2, .interleave = 2, .sp = true, .zero = 1, .micro_batch = 2,
                    .grad_accum = 16, .recompute = recompute_mode::selective}) ==
          "dp 4 x tp 8 x pp 2 (interleave 2), sp, ZeRO 1, recompute selective, micro-batch 2, grad-accum 16");
    CHECK(describe({.dp = 8, .zero = 3, .offload = offload_mode::optimizer, .dp_overlap = dp_overlap_mode::off}) ==
          "dp 8 x tp 1 x pp 1, ZeRO 3, optimizer offload, recompute none, micro-batch 1, grad-accum 1, "
          "dp-overlap off");
}
