#include <trainperf/spec/model_catalog.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

using namespace trainperf;

// Every tag is a `model`, every config validates, and all of it works at compile time.
static_assert(model<bert_base> && model<bert_large> && model<gpt2> && model<gpt2_medium> &&
              model<gpt2_large> && model<gpt2_xl> && model<gpt_neo_1_3b> &&
              model<gpt_neo_2_7b> && model<llama2_7b> && model<llama2_13b> &&
              model<llama2_70b> && model<llama3_8b> && model<llama3_70b> &&
              model<llama3_1_405b> && model<gpt3_175b> && model<megatron_22b> &&
              model<turing_530b> && model<megatron_1t>);
static_assert(!model<int> && !model<transformer_config>);
static_assert([] {
    for (const auto& m : model_catalog) validate(m);  // a bad entry would not compile
    return true;
}());
static_assert(config_of(llama2_7b{}).hidden == 4096);
static_assert(lookup_model("LLaMA2-7B").layers == 32);
static_assert(parameter_count(gpt2_medium::config) == 354823168.0);
static_assert(model_names().size() == model_catalog.size());

namespace {
// |count / published - 1| in percent.
double error_percent(const transformer_config& m, double published) {
    return 100.0 * std::abs(parameter_count(m) / published - 1.0);
}
}  // namespace

// Exact counts of the Hugging Face checkpoints: sum of numel() over the model's
// parameters (transformers' BertModel with pooler, GPT2LMHeadModel / GPTNeoForCausalLM
// with the tied head counted once, LlamaForCausalLM), i.e. model.num_parameters().
TEST_CASE("parameter counts equal the published checkpoints", "[model][catalog]") {
    CHECK(parameter_count(bert_base::config) == 109482240.0);        // HF bert-base-uncased ("110M", Devlin et al.)
    CHECK(parameter_count(bert_large::config) == 335141888.0);       // HF bert-large-uncased ("340M", Devlin et al.)
    CHECK(parameter_count(gpt2::config) == 124439808.0);             // HF gpt2
    CHECK(parameter_count(gpt2_medium::config) == 354823168.0);      // HF gpt2-medium
    CHECK(parameter_count(gpt2_large::config) == 774030080.0);       // HF gpt2-large
    CHECK(parameter_count(gpt2_xl::config) == 1557611200.0);         // HF gpt2-xl
    CHECK(parameter_count(gpt_neo_1_3b::config) == 1315575808.0);    // HF EleutherAI/gpt-neo-1.3B
    CHECK(parameter_count(gpt_neo_2_7b::config) == 2651307520.0);    // HF EleutherAI/gpt-neo-2.7B
    CHECK(parameter_count(llama2_7b::config) == 6738415616.0);       // HF meta-llama/Llama-2-7b-hf
    CHECK(parameter_count(llama2_13b::config) == 13015864320.0);     // HF meta-llama/Llama-2-13b-hf
    CHECK(parameter_count(llama2_70b::config) == 68976648192.0);     // HF meta-llama/Llama-2-70b-hf
    CHECK(parameter_count(llama3_8b::config) == 8030261248.0);       // HF meta-llama/Meta-Llama-3-8B
    CHECK(parameter_count(llama3_70b::config) == 70553706496.0);     // HF meta-llama/Meta-Llama-3-70B
    CHECK(parameter_count(llama3_1_405b::config) == 405853388800.0); // HF meta-llama/Llama-3.1-405B
}

// Papers state rounded sizes; the catalog must agree with them within 0.5 %.
TEST_CASE("parameter counts match the papers within 0.5 %", "[model][catalog]") {
    // Brown et al. 2020, Table 2.1: "175.0B" (the config gives 174.6e9).
    CHECK(error_percent(gpt3_175b::config, 175.0e9) < 0.5);
    // Korthikanti et al. 2022, Table 3: "22B" (the config gives 22.07e9).
    CHECK(error_percent(megatron_22b::config, 22.0e9) < 0.5);
    // Narayanan et al. 2021, Table 1: 529.6B and 1008.0B for these shapes.
    CHECK(error_percent(turing_530b::config, 529.6e9) < 0.5);
    CHECK(error_percent(megatron_1t::config, 1008.0e9) < 0.5);
    // Korthikanti's names round these to 530B and "1T": the 1T config is 0.8 % above 1e12.
    CHECK(error_percent(turing_530b::config, 530e9) < 0.5);
    CHECK(error_percent(megatron_1t::config, 1e12) < 1.0);
    // Commonly quoted sizes.
    CHECK(error_percent(bert_large::config, 335e6) < 0.5);
    CHECK(error_percent(gpt2_medium::config, 355e6) < 0.5);
    CHECK(error_percent(llama2_7b::config, 6.74e9) < 0.5);
}

TEST_CASE("published architectural details", "[model][catalog]") {
    CHECK_FALSE(bert_large::config.causal);
    CHECK(bert_large::config.token_types == 2);
    CHECK(bert_large::config.pooler);
    CHECK(bert_large::config.max_seq == 512);
    CHECK(gpt2_medium::config.tied_embeddings);
    CHECK(gpt2_medium::config.max_seq == 1024);
    CHECK(gpt_neo_1_3b::config.max_seq == 2048);
    CHECK_FALSE(gpt_neo_1_3b::config.qkv_biases);
    CHECK(llama2_7b::config.effective_kv_heads() == 32);
    CHECK(llama2_70b::config.effective_kv_heads() == 8);
    CHECK(llama2_70b::config.kv_width() == 1024);
    CHECK(llama3_8b::config.vocab == 128256);
    CHECK(llama3_8b::config.ffn_hidden == 14336);
    CHECK(llama3_1_405b::config.layers == 126);
    CHECK(llama3_1_405b::config.head_dim() == 128);
    CHECK(llama2_7b::config.ffn == ffn_kind::swiglu);
    CHECK(llama2_7b::config.norm == norm_kind::rmsnorm);
    CHECK(llama2_7b::config.positions == position_kind::rotary);
    CHECK_FALSE(llama2_7b::config.tied_embeddings);
    CHECK(gpt3_175b::config.head_dim() == 128);
    CHECK(megatron_1t::config.vocab == 51200);
    CHECK(turing_530b::config.max_seq == 2048);
}

TEST_CASE("a run's default sequence is the model's training length", "[model][catalog]") {
    // Llama 3.1 405B takes 131 072 positions but was pre-trained on 8 192 tokens.
    CHECK(llama3_1_405b::config.max_seq == 131072);
    CHECK(training_length(llama3_1_405b::config) == 8192);
    // Every other dense catalog model was trained at its full context; DeepSeek-V3, Kimi K2,
    // Qwen3-MoE and gpt-oss at 4096 tokens, their positions extended after.
    for (const transformer_config& m : model_catalog) {
        INFO(m.name);
        if (m.name == "llama3.1-405b") continue;
        if (m.train_seq > 0) CHECK(training_length(m) == 4096);
        else CHECK(training_length(m) == m.max_seq);
        CHECK((m.train_seq == 0 || has_moe(m)));
    }
    // A training length beyond the positions is refused.
    transformer_config m = llama2_7b::config;
    m.train_seq = 8192;
    CHECK_THROWS_WITH(validate(m), "train_seq = 8192: must be between 0 (max_seq) and max_seq");
}

TEST_CASE("model lookup by name", "[model][catalog]") {
    CHECK(&lookup_model("gpt2-medium") == &model_catalog[3]);
    CHECK(lookup_model("Llama3.1-405B").name == "llama3.1-405b");
    CHECK(lookup_model("GPT-NEO-1.3B").hidden == 2048);
    std::set<std::string> names;
    for (std::string_view n : model_names()) {
        names.insert(std::string(n));
        CHECK(lookup_model(n).name == n);
    }
    CHECK(names.size() == model_catalog.size());
    CHECK(model_names()[0] == "bert-base");
    CHECK(model_names()[17] == "megatron-1t");
}

TEST_CASE("an unknown model name lists the known ones", "[model][catalog]") {
    CHECK_THROWS_AS(lookup_model("gpt5"), trainperf::invalid_argument);
    CHECK_THROWS_WITH(lookup_model("gpt5"),
                      Catch::StartsWith("model = \"gpt5\": unknown; known: bert-base, bert-large, gpt2, "));
    CHECK_THROWS_WITH(lookup_model("gpt5"), Catch::EndsWith("megatron-1t, mixtral-8x7b, mixtral-8x22b, deepseek-v3, kimi-k2, "
                                                            "qwen3-235b-a22b, qwen3-30b-a3b, gpt-oss-120b, gpt-oss-20b"));
    CHECK_THROWS_AS(lookup_model("llama2_7b"), trainperf::invalid_argument);
}
