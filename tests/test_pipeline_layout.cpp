// Custom pipeline layouts (spec/pipeline_layout.hpp; Megatron-Core
// --pipeline-model-parallel-layout): reading the text, Megatron-Core's checks, what each
// rank holds, and the prediction and memory built from it.
#include <trainperf/cost/memory.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/pipeline_layout.hpp>
#include <trainperf/spec/setup.hpp>
#include <trainperf/workload/stage.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace trainperf;

namespace {
std::string unrolled(std::string_view text) {
    std::string s;
    unroll_pipeline_layout(text, [&](char c) { s += c; });
    return s;
}

// A small dense decoder with one multi-token prediction module: 8 layers of hidden 256.
constexpr transformer_config small_mtp = [] {
    transformer_config c = llama_architecture("small-mtp", 8, 256, 4, 0, 512, 1000, 1024);
    c.mtp_layers = 1;
    return c;
}();

training_setup small_setup(std::string_view layout, int pp, int interleave) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = small_mtp;
    s.framework = megatron_core_profile;
    s.seq = 512;
    s.layout = {.dp = 1, .pp = pp, .interleave = interleave, .grad_accum = 2 * pp, .pipeline_layout = layout};
    return s;
}

// DeepSeek-V3 on 1024 H100 (tp 2, pp 16, ep 64), with a layout or the first/last counts.
training_setup deepseek_setup() {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = deepseek_v3::config;
    s.framework = megatron_core_profile;
    s.precision = recipe(precision_kind::fp8);
    s.seq = 4096;
    s.layout = {.dp = 32, .tp = 2, .pp = 16, .sp = true, .zero = 1, .grad_accum = 32,
                .recompute = recompute_mode::full, .ep = 64, .etp = 1};
    return s;
}

int count_gemms(const stage_workload& w, std::string_view name) {
    int n = 0;
    for (const auto& g : w.gemms) n += g.op.name == name && g.op.phase == op_phase::forward;
    return n;
}
}  // namespace

TEST_CASE("A layout's text unrolls as Megatron-Core's parse_str_to_list does", "[pipeline_layout]") {
    CHECK(unrolled("Et*3|(tt|)*2,m|L") == "Ettt|tt|tt|m|L");
    CHECK(unrolled("E,t,t|t,L") == "Ett|tL");      // commas are cosmetic
    CHECK(unrolled("E||t|L") == "E||t|L");          // empty stages are allowed
    CHECK(unrolled("(Et|)*1t*0L") == "Et|L");       // a repetition of 0
    CHECK(unrolled("E(t*2|)*2L") == "Ett|tt|L");    // repetitions inside a group
    CHECK(pipeline_layout_stages("Et*3|(tt|)*29,m|L") == 32);
    // Syntax errors name the field, the text and where.
    CHECK_THROWS_WITH(unrolled("Et*3|((tt|)*29)*1,m|L"), Catch::StartsWith("pipeline_layout = \"Et*3|((tt|)*29)*1,m|L\"") &&
                                                            Catch::Contains("nested") && Catch::Contains("character 7"));
    CHECK_THROWS_WITH(unrolled("Et|x|L"), Catch::Contains("unknown symbol 'x'"));
    CHECK_THROWS_WITH(unrolled("E(tt|)L"), Catch::Contains("needs '*n'"));
    CHECK_THROWS_WITH(unrolled("Et*|L"), Catch::Contains("whole number"));
    CHECK_THROWS_WITH(unrolled("Et*2*2|L"), Catch::Contains("cannot be repeated again"));
    CHECK_THROWS_WITH(unrolled("E(t|L"), Catch::Contains("'(' without ')'"));
    CHECK_THROWS_WITH(unrolled("Et)|L"), Catch::Contains("')' without '('"));
    CHECK_THROWS_WITH(unrolled("E(,)*3L"), Catch::Contains("empty group"));
    // The work of reading a text stays bounded: no repetition beyond 2^16, no text that
    // unrolls beyond 2^16 symbols.
    CHECK_THROWS_WITH(unrolled("Et*70000L"), Catch::Contains("more than 2^16 times"));
    CHECK_THROWS_WITH(unrolled("E(t*60000|)*60000L"), Catch::Contains("more than 2^16 symbols"));
    // A group that emits nothing is still read each time: bounded too.
    CHECK_THROWS_WITH(unrolled("E(t*0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,)*65536L"),
                      Catch::Contains("more than 2^22 reads"));
}

TEST_CASE("What each rank holds: Megatron-Core's DeepSeek-V3 example on 16 x 2 stages", "[pipeline_layout]") {
    // Megatron-Core docs/user-guide/features/pipeline_parallel_layout.md: rank 0 holds the
    // embedding and 3 layers, then 2; ranks 1-13 2 + 2; rank 14 2 and the MTP module;
    // rank 15 2 and the loss.
    const transformer_config& m = deepseek_v3::config;
    const std::vector<pipeline_rank_load> ranks = pipeline_rank_loads("Et*3|(tt|)*29,m|L", m, 16);
    REQUIRE(ranks.size() == 16);
    CHECK(ranks[0].layers == 5);
    CHECK(ranks[0].embedding);
    CHECK_FALSE(ranks[0].loss);
    for (int r = 1; r <= 13; ++r) CHECK(ranks[std::size_t(r)].layers == 4);
    CHECK(ranks[14].layers == 2);
    CHECK(ranks[14].mtp == 1);
    CHECK(ranks[15].layers == 2);
    CHECK(ranks[15].loss);
    CHECK(ranks[15].mtp == 0);
    // Layers are numbered in the text's order: rank 0 holds layers 0-2 (dense: DeepSeek-V3's
    // first 3) and, in its second virtual stage (the text's 17th), layers 3 + 15·2 = 33 and
    // 34 (MoE); rank 1 layers 3, 4 and 35, 36, all MoE.
    CHECK(ranks[0].moe_layers == 2);
    CHECK(ranks[1].moe_layers == 4);
    int total = 0, moe = 0;
    for (const auto& r : ranks) {
        total += r.layers;
        moe += r.moe_layers;
    }
    CHECK(total == 61);
    CHECK(moe == 58);
    const pipeline_rank_load one = pipeline_rank_load_of("Et*3|(tt|)*29,m|L", m, 16, 14);
    CHECK(one.layers == 2);
    CHECK(one.mtp == 1);
}

TEST_CASE("Megatron-Core's checks of a layout, each naming the field and the value", "[pipeline_layout]") {
    const transformer_config& m = deepseek_v3::config;
    const auto check = [&](std::string_view text, int pp, int v) { validate_pipeline_layout(text, m, pp, v); };
    CHECK_NOTHROW(check("Et*3|(tt|)*29,m|L", 16, 2));
    CHECK_NOTHROW(check("Et|(tt|)*30mL", 8, 4));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*29,mL", 16, 2),
                      Catch::Contains("31 virtual stages, not a multiple of pp = 16"));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*29,m|L", 16, 1),
                      Catch::StartsWith("interleave = 1") && Catch::Contains("give interleave 2"));
    CHECK_THROWS_WITH(check("t*3|(tt|)*29,m|EL", 16, 2), Catch::Contains("must begin with the embedding"));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*29,m|", 16, 2), Catch::Contains("loss (L) exactly once, holds it 0"));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*29,m|LE", 16, 2), Catch::Contains("embedding (E) exactly once"));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*29,m|Lt", 16, 2), Catch::Contains("must end with the loss"));
    CHECK_THROWS_WITH(check("Et*2|(tt|)*29,m|L", 16, 2), Catch::Contains("holds 60 transformer layers (t), the model has 61"));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*29,|L", 16, 2), Catch::Contains("holds 0 multi-token prediction modules"));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*28,t|mt|L", 16, 2), Catch::Contains("a transformer layer after"));
    // The module in a rank's first virtual stage (the text's 15th of 32; the 16 after it
    // empty but the loss's).
    CHECK_THROWS_WITH(check("Et*9|(t*4|)*13,m||*16L", 16, 2), Catch::Contains("last virtual stage of a rank"));
    transformer_config two_modules = m;
    two_modules.mtp_layers = 2;
    CHECK_THROWS_WITH(validate_pipeline_layout("Et*3|(tt|)*29,m|mL", two_modules, 16, 2),
                      Catch::Contains("all multi-token prediction modules in one virtual stage"));
    CHECK_THROWS_WITH(check("", 16, 2), Catch::Contains("is empty"));
    // The embedding after an empty stage, the loss before one: Megatron-Core would build
    // them on the first and last stages all the same.
    CHECK_THROWS_WITH(check("|Et*3|(tt|)*29,mL", 16, 2), Catch::Contains("embedding (E) in its first virtual stage"));
    CHECK_THROWS_WITH(check("Et*3|(tt|)*29,mL|", 16, 2), Catch::Contains("loss (L) in its last virtual stage"));
    // With a layout the first/last stage counts are refused, and a framework that splits
    // evenly refuses it.
    training_setup s = deepseek_setup();
    s.layout.interleave = 2;
    s.layout.pipeline_layout = "Et*3|(tt|)*29,m|L";
    CHECK_NOTHROW(checked_setup(s));
    training_setup both = s;
    both.layout.first_stage_layers = 4;
    both.layout.interleave = 1;
    CHECK_THROWS_WITH(checked_setup(both), Catch::StartsWith("pipeline_layout") &&
                                               Catch::Contains("first_stage_layers or last_stage_layers"));
    training_setup even_only = small_setup("Et*4|t*4L", 2, 1);
    even_only.framework = megatron_profile;  // Megatron-LM 2022 splits the layers evenly
    even_only.model.mtp_layers = 0;
    CHECK_THROWS_WITH(checked_setup(even_only), Catch::StartsWith("pipeline_layout = \"Et*4|t*4L\"") &&
                                                    Catch::Contains("takes no custom pipeline layout"));
    even_only.framework = torchtitan_profile;  // uneven splits by its own split points, not this text
    CHECK_THROWS_WITH(checked_setup(even_only), Catch::StartsWith("pipeline_layout"));
}

TEST_CASE("A layout that spells out the split predicts as the split does", "[pipeline_layout][step]") {
    // DeepSeek-V3 with 3 layers on the first stage and 2 on the last (MoE layers, MTP on
    // the last stage), given as counts and as the same layout.
    training_setup counts = deepseek_setup();
    counts.layout.first_stage_layers = 3;
    counts.layout.last_stage_layers = 2;
    training_setup layout = deepseek_setup();
    layout.layout.pipeline_layout = "Et*3|(tttt|)*14ttmL";
    const step_report a = predict(checked_setup(counts)), b = predict(checked_setup(layout));
    CHECK(b.step_time.value() == Approx(a.step_time.value()).epsilon(1e-12));
    CHECK(b.micro_batch.total().value() == Approx(a.micro_batch.total().value()).epsilon(1e-12));
    CHECK(memory_of(checked_setup(layout)).breakdown.total().value() ==
          Approx(memory_of(checked_setup(counts)).breakdown.total().value()).epsilon(1e-12));
    // An even split as a layout.
    const training_setup even = small_setup("", 2, 1);
    const training_setup spelled = small_setup("Et*4|t*4mL", 2, 1);
    CHECK(predict(checked_setup(spelled)).step_time.value() ==
          Approx(predict(checked_setup(even)).step_time.value()).epsilon(1e-12));
    CHECK(memory_of(checked_setup(spelled)).breakdown.total().value() ==
          Approx(memory_of(checked_setup(even)).breakdown.total().value()).epsilon(1e-12));
}

TEST_CASE("The MTP module where the layout puts it: its layer there, its logits with the loss",
          "[pipeline_layout][mtp]") {
    // pp 2 × 2 virtual stages: the text's stages 0..3 run on ranks 0, 1, 0, 1. The module
    // in stage 2 (rank 0's last), the loss in stage 3 (rank 1's).
    const training_setup apart = small_setup("Et*4|t*4|m|L", 2, 2);
    // The last rank lists the head's logits twice (model and module) but not the module's
    // projection or layer.
    const stage_workload last = micro_batch_workload(checked_setup(apart));
    CHECK(count_gemms(last, "mtp_projection") == 0);
    CHECK(count_gemms(last, "logits") == 2);
    const stage_workload with_module = micro_batch_workload(checked_setup(small_setup("Et*4|t*4mL", 2, 1)));
    CHECK(count_gemms(with_module, "mtp_projection") == 1);
    CHECK(count_gemms(with_module, "logits") == 2);

    // Memory by hand: rank 0 holds its 4 layers, the embedding, the module (its layer,
    // projection 2h·h and 3 norms) and no second embedding (it is the first rank); rank 1
    // its 4 layers and the head.
    const checked_setup c(apart);
    const model_state state = model_state_of(c);
    const precision_recipe r = stored_precision(apart);
    const int seq = sequence_length(apart);
    const auto layer = memory_detail::layer_activations_of(apart.model, r, apart.layout, seq, apart.framework,
                                                           apart.finetune, apart.moe);
    const auto held = [&](int rank) {
        const pipeline_rank_load load = pipeline_rank_load_of(apart.layout.pipeline_layout, apart.model, 2, rank);
        return memory_detail::stage_micro_batches(apart.model, r, state, apart.layout, seq, apart.framework, layer,
                                                  load, rank, apart.finetune);
    };
    CHECK(held(0).local == Approx(4 * state.layer_parameters + state.embedding_parameters + mtp_parameters(small_mtp)));
    CHECK(held(1).local == Approx(4 * state.layer_parameters + state.head_parameters));
    // The module on a rank other than the first brings an embedding of its own
    // (Megatron-Core builds one where mtp_process holds): the default, the last rank.
    const checked_setup last_rank(small_setup("Et*4|t*4mL", 2, 1));
    const auto held_last = [&] {
        const pipeline_rank_load load = pipeline_rank_load_of("Et*4|t*4mL", small_mtp, 2, 1);
        return memory_detail::stage_micro_batches(small_mtp, r, state, last_rank->layout, seq, apart.framework, layer,
                                                  load, 1, apart.finetune);
    }();
    CHECK(held_last.local == Approx(4 * state.layer_parameters + state.head_parameters + mtp_parameters(small_mtp) +
                                    state.embedding_parameters));
    // The same stage without a layout holds the same.
    const auto plain = memory_detail::stage_micro_batches(small_mtp, r, state, last_rank->layout, seq, apart.framework,
                                                          layer, pipeline_split_of(small_mtp, small_setup("", 2, 1).layout),
                                                          1, apart.finetune);
    CHECK(plain.local == Approx(held_last.local));
    CHECK(plain.activations.value() == Approx(held_last.activations.value()));
}

TEST_CASE("A layout reads back from its text form, quoted", "[pipeline_layout][layout_text]") {
    parallel_layout l{.dp = 2, .pp = 16, .interleave = 2, .grad_accum = 32, .pipeline_layout = "Et*3|(tt|)*29,m|L"};
    const std::string text = to_string(l);
    CHECK(text.find("--pipeline-layout \"Et*3|(tt|)*29,m|L\"") != std::string::npos);
    CHECK(parse_layout(text) == l);
    CHECK(describe(l).find("(layout Et*3|(tt|)*29,m|L)") != std::string::npos);
}
