// FLOP counts: the seed formula's published figures, Narayanan et al., exact GEMMs.
#include <catch2/catch.hpp>

#include <trainperf/workload/flops.hpp>
#include <trainperf/spec/model_catalog.hpp>

using namespace trainperf;

TEST_CASE("seed formula: training FLOPs per sample", "[flops]") {
    static_assert(training_flops_per_sample(bert_large::config, 512).value() == 1.10103625728e12);
    CHECK(training_flops_per_sample(gpt2_medium::config, 1024).value() == 2.480853221376e12);
    CHECK(training_flops_per_sample(gpt_neo_1_3b::config, 2048).value() == 1.858206695424e13);
    // Full recompute: × 4/3.
    CHECK(training_flops_per_sample(bert_large::config, 512, recompute_mode::full).value() ==
          1468048343040.0);
    CHECK(training_flops_per_sample(gpt2_medium::config, 1024, recompute_mode::full).value() ==
          3307804295168.0);
    CHECK(training_flops_per_sample(gpt_neo_1_3b::config, 2048, recompute_mode::full).value() ==
          24776089272320.0);
    // Selective: + n · 4·h·s².
    CHECK(training_flops_per_sample(gpt2_medium::config, 1024, recompute_mode::selective).value() ==
          2583932436480.0);
    CHECK(forward_flops_per_sample(bert_large::config, 512).value() == 367012085760.0);
}

TEST_CASE("Narayanan et al. 2021 counts the logits 3x, the layers 4x", "[flops]") {
    const auto& m = gpt2_medium::config;
    const double s = 1024, h = m.hidden, v = m.vocab;
    // By hand, B = 8, s = 1024, l = 24, h = 1024, V = 50257:
    //   96·B·s·l·h² = 96·8·1024·24·1024² = 19,791,209,299,968
    //   × (1 + 1024/6144 + 50257/393216) = × (1 + 1/6 + 50257/393216)
    //   = 19,791,209,299,968 + 3,298,534,883,328 + 2,529,517,633,536 = 25,619,261,816,832.
    CHECK(narayanan_training_flops(m, 8, 1024).value() == Approx(25619261816832.0).epsilon(1e-12));
    const double seed_full = training_flops_per_sample(m, 1024, recompute_mode::full).value();
    CHECK(narayanan_training_flops(m, 1, 1024).value() ==
          Approx(seed_full - 2 * s * h * v).epsilon(1e-12));
    CHECK_THROWS_WITH(narayanan_training_flops(m, 0, 1024), "batch = 0: must be positive");
}

TEST_CASE("exact GEMM counts", "[flops]") {
    // A GPT layer (f = 4h, no GQA) has exactly the seed formula's GEMMs.
    for (const auto* m : {&gpt2_medium::config, &bert_large::config, &gpt_neo_1_3b::config}) {
        const int s = m->max_seq;
        CHECK(exact_training_flops_per_sample(*m, s).value() ==
              Approx(training_flops_per_sample(*m, s).value()).epsilon(1e-14));
        CHECK(exact_training_flops_per_sample(*m, s, recompute_mode::selective).value() ==
              Approx(training_flops_per_sample(*m, s, recompute_mode::selective).value())
                  .epsilon(1e-14));
    }

    // GQA + SwiGLU, by hand: h 4096, 32 heads, 8 kv heads (kv width 1024), f 14336.
    const transformer_config gqa{.layers = 2, .hidden = 4096, .heads = 32, .kv_heads = 8,
                                 .ffn_hidden = 14336, .vocab = 128256, .max_seq = 8192,
                                 .ffn = ffn_kind::swiglu, .positions = position_kind::rotary,
                                 .norm = norm_kind::rmsnorm, .tied_embeddings = false,
                                 .linear_biases = false};
    const double s = 2048, h = 4096, kv = 1024, f = 14336, v = 128256;
    const flop_breakdown b = exact_forward_breakdown(gqa, 2048);
    CHECK(b.qkv.value() == 2 * s * h * (h + 2 * kv));
    CHECK(b.scores.value() == 2 * s * s * h);
    CHECK(b.context.value() == 2 * s * s * h);
    CHECK(b.out_proj.value() == 2 * s * h * h);
    CHECK(b.ffn.value() == 3 * 2 * s * h * f);
    CHECK(b.logits.value() == 2 * s * h * v);
    const double layer = 2 * s * h * (h + 2 * kv) + 4 * s * s * h + 2 * s * h * h + 6 * s * h * f;
    const double forward = 2 * layer + 2 * s * h * v;
    CHECK(exact_forward_flops_per_sample(gqa, 2048).value() == forward);
    CHECK(exact_training_flops_per_sample(gqa, 2048).value() == 3 * forward);
    CHECK(exact_training_flops_per_sample(gqa, 2048, recompute_mode::full).value() ==
          3 * forward + 2 * layer);
    CHECK(exact_training_flops_per_sample(gqa, 2048, recompute_mode::selective).value() ==
          3 * forward + 2 * 4 * s * s * h);
    CHECK(model_flops_per_sample(gqa, 2048).value() == 3 * forward);

    // Causal savings: s(s+1)/2 of the s² score entries, only for causal models.
    const flop_breakdown c = exact_forward_breakdown(gqa, 2048, {.causal_savings = true});
    CHECK(c.scores.value() == 2 * s * s * h * (s + 1) / (2 * s));
    const flop_breakdown enc =
        exact_forward_breakdown(bert_large::config, 512, {.causal_savings = true});
    CHECK(enc.scores.value() == 2.0 * 512 * 512 * 1024);
}

TEST_CASE("flop counts reject bad inputs naming the field", "[flops]") {
    CHECK_THROWS_WITH(training_flops_per_sample(gpt2_medium::config, 0), "seq = 0: must be at least 1");
    CHECK_THROWS_WITH(exact_training_flops_per_sample(gpt2_medium::config, -4),
                      "seq = -4: must be at least 1");
    transformer_config bad = gpt2_medium::config;
    bad.heads = 7;
    CHECK_THROWS_WITH(forward_flops_per_sample(bad, 128), "heads = 7: must divide hidden");
}

TEST_CASE("recompute adds the forward of what it repeats: the training counts' difference", "[flops]") {
    for (const auto& m : {gpt3_175b::config, llama2_7b::config, gpt2::config})
        for (int seq : {128, 1024, 2048})
            for (auto r : {recompute_mode::none, recompute_mode::selective, recompute_mode::full}) {
                const double difference = exact_training_flops_per_sample(m, seq, r).value() -
                                          exact_training_flops_per_sample(m, seq).value();
                CHECK(recompute_flops_per_sample(m, seq, r).value() == Approx(difference).epsilon(1e-12));
                CHECK_THROWS_WITH(recompute_flops_per_sample(m, 0, r), Catch::Contains("seq = 0"));
            }
    CHECK(recompute_flops_per_sample(gpt2::config, 1024, recompute_mode::none).value() == 0.0);
    CHECK(recompute_flops_per_sample(gpt2::config, 1024, recompute_mode::full).value() >
          recompute_flops_per_sample(gpt2::config, 1024, recompute_mode::selective).value());
}

TEST_CASE("the flop summary holds every count side by side, as each function gives it", "[flops]") {
    const transformer_config m = llama2_7b::config;
    const flop_options o{.causal_savings = true};
    const flop_summary f = flop_summary_of(m, 4096, recompute_mode::selective, o);
    CHECK(f.model == "llama2-7b");
    CHECK(f.seq == 4096);
    CHECK(f.causal_savings);
    CHECK(f.parameters == parameter_count(m));
    CHECK(f.forward_seed == forward_flops_per_sample(m, 4096));
    CHECK(f.training_seed == training_flops_per_sample(m, 4096, recompute_mode::selective));
    CHECK(f.exact_forward == exact_forward_flops_per_sample(m, 4096, o));
    CHECK(f.exact_training == exact_training_flops_per_sample(m, 4096, recompute_mode::selective, o));
    CHECK(f.model_flops == model_flops_per_sample(m, 4096, o));
    CHECK(f.narayanan_full_recompute == narayanan_training_flops(m, 1, 4096));
    CHECK(f.six_n_tokens.value() == Approx(6.0 * parameter_count(m) * 4096));
    CHECK(f.exact_forward_layer.layer() == exact_forward_breakdown(m, 4096, o).layer());
    // Selective recompute repeats the attention core: hardware FLOPs above model FLOPs.
    CHECK(f.exact_training > f.model_flops);
    CHECK_THROWS_WITH(flop_summary_of(m, 0, recompute_mode::none), Catch::Contains("seq"));
    // A model that is not one is refused before anything is counted (heads 0 would divide by zero).
    transformer_config headless = m;
    headless.heads = 0;
    CHECK_THROWS_AS(flop_summary_of(headless, 4096, recompute_mode::none), trainperf::invalid_argument);
    // Hand count of the exact forward GEMMs of one llama2-7b layer at 4096 tokens (h 4096,
    // 32 heads, ffn 11008 x 3 matrices): QKV 2·s·h·3h, scores and context 2·s²·h each
    // (halved with causal savings: s(s+1)/2 of s²), output 2·s·h², FFN 2·s·h·f·3.
    const double s = 4096, h = 4096, ffn = 11008;
    CHECK(f.exact_forward_layer.qkv.value() == Approx(2 * s * h * 3 * h));
    CHECK(f.exact_forward_layer.out_proj.value() == Approx(2 * s * h * h));
    CHECK(f.exact_forward_layer.ffn.value() == Approx(2 * s * h * ffn * 3));
    CHECK(f.exact_forward_layer.scores.value() == Approx(2 * (s * (s + 1) / 2) * h));
}
