// Precision recipes: storage bytes per parameter, parsing, GPU support checks.
#include <catch2/catch.hpp>

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/precision.hpp>

#include <string>

using namespace trainperf;

TEST_CASE("recipes store what mixed-precision training stores", "[precision]") {
    const auto fp32 = recipe(precision_kind::fp32);
    CHECK(fp32.math == dtype::fp32);
    CHECK_FALSE(fp32.fp32_master);
    CHECK(model_state_bytes_per_parameter(fp32) == 8.0);  // 4 weights + 4 grads

    const auto tf32 = recipe(precision_kind::tf32);
    CHECK(tf32.math == dtype::tf32);
    CHECK(tf32.weights == dtype::fp32);
    CHECK(model_state_bytes_per_parameter(tf32) == 8.0);

    const auto bf16 = recipe(precision_kind::bf16);
    CHECK(bf16.weights == dtype::bf16);
    CHECK(bf16.gradients == dtype::bf16);
    CHECK(bf16.activations == dtype::bf16);
    CHECK(bf16.optimizer_state == dtype::fp32);
    CHECK(bf16.fp32_master);
    CHECK(model_state_bytes_per_parameter(bf16) == 8.0);  // 2 + 2 + 4 master
    CHECK(model_state_bytes_per_parameter(with_fp32_gradients(bf16)) == 10.0);

    const auto fp16 = recipe(precision_kind::fp16);
    CHECK(fp16.loss_scaling);
    CHECK_FALSE(bf16.loss_scaling);

    const auto pure = recipe(precision_kind::bf16_pure);
    CHECK_FALSE(pure.fp32_master);
    CHECK(pure.optimizer_state == dtype::bf16);
    CHECK(model_state_bytes_per_parameter(pure) == 4.0);

    const auto fp8 = recipe(precision_kind::fp8);
    CHECK(fp8.math == dtype::fp8);
    CHECK(fp8.weights == dtype::bf16);
    CHECK(fp8.fp32_master);
}

TEST_CASE("parse_precision accepts the CLI names and names the field otherwise", "[precision]") {
    for (precision_kind k : all_precisions) {
        CHECK(parse_precision(to_string(k)).kind == k);
        CHECK(recipe(k).name == to_string(k));
    }
    CHECK(parse_precision("bf16-pure").kind == precision_kind::bf16_pure);
    CHECK(parse_precision("BF16-mixed").kind == precision_kind::bf16);
    CHECK_THROWS_WITH(parse_precision("fp64"),
                      "precision = \"fp64\": unknown; expected one of fp32, tf32, bf16, fp16, bf16-pure, fp8, "
                      "fp16-amp, bf16-amp, fp16-pure");
    CHECK_THROWS_AS(parse_precision(""), trainperf::invalid_argument);
    static_assert(parse_precision("fp16").math == dtype::fp16);
}

TEST_CASE("check_supported rejects math the GPU lacks", "[precision]") {
    const gpu_spec& v100 = v100_sxm2_32gb::spec;
    CHECK_THROWS_WITH(check_supported(v100, recipe(precision_kind::bf16)),
                      "precision = bf16: not supported by v100-sxm2-32gb (no bf16 tensor cores)");
    CHECK_THROWS_WITH(check_supported(v100, recipe(precision_kind::bf16_pure)),
                      "precision = bf16-pure: not supported by v100-sxm2-32gb (no bf16 tensor cores)");
    CHECK_THROWS_AS(check_supported(v100, recipe(precision_kind::tf32)), trainperf::invalid_argument);
    CHECK_NOTHROW(check_supported(v100, recipe(precision_kind::fp16)));
    CHECK_NOTHROW(check_supported(v100, recipe(precision_kind::fp32)));
    CHECK_THROWS_AS(check_supported(a100_sxm_80gb::spec, recipe(precision_kind::fp8)),
                    trainperf::invalid_argument);
    CHECK_NOTHROW(check_supported(h100_sxm::spec, recipe(precision_kind::fp8)));
    for (precision_kind k : all_precisions) CHECK_NOTHROW(check_supported(h100_sxm::spec, recipe(k)));
}

TEST_CASE("autocast recipes keep fp32 parameters and gradients and no master copy", "[precision][amp]") {
    for (precision_kind k : {precision_kind::fp16_amp, precision_kind::bf16_amp}) {
        const auto amp = recipe(k);
        INFO(amp.name);
        CHECK(amp.autocast);
        CHECK(amp.weights == dtype::fp32);
        CHECK(amp.gradients == dtype::fp32);
        CHECK_FALSE(amp.fp32_master);
        CHECK(amp.optimizer_state == dtype::fp32);
        // 4 B fp32 parameter + 4 B fp32 gradient, no master: 8 B of model state.
        CHECK(model_state_bytes_per_parameter(amp) == 8.0);
        // fp32 gradients already: a framework's fp32 main grads change nothing.
        CHECK(model_state_bytes_per_parameter(with_fp32_gradients(amp)) == 8.0);
        // The 16-bit copy autocast makes of each weight per forward: 2 B.
        CHECK(weight_copy_bytes_per_parameter(amp) == 2.0);
        // With AdamW (8 B of fp32 moments): 4 + 4 + 8 = 16 B static, 18 B with the
        // copies: Hugging Face's "6 (weights) + 8 (optimizer) + 4 (gradients)".
        CHECK(model_state_bytes_per_parameter(amp) + 8.0 + weight_copy_bytes_per_parameter(amp) == 18.0);
    }
    CHECK(recipe(precision_kind::fp16_amp).math == dtype::fp16);
    CHECK(recipe(precision_kind::fp16_amp).activations == dtype::fp16);
    CHECK(recipe(precision_kind::fp16_amp).loss_scaling);         // GradScaler with --fp16
    CHECK(recipe(precision_kind::bf16_amp).math == dtype::bf16);
    CHECK(recipe(precision_kind::bf16_amp).activations == dtype::bf16);
    CHECK_FALSE(recipe(precision_kind::bf16_amp).loss_scaling);   // none with --bf16
    // Megatron's mixed recipes are not autocast: no weight copies besides the working weights.
    CHECK_FALSE(recipe(precision_kind::fp16).autocast);
    CHECK(weight_copy_bytes_per_parameter(recipe(precision_kind::fp16)) == 0.0);
    CHECK(model_state_bytes_per_parameter(recipe(precision_kind::fp16)) == 8.0);  // 2 + 2 + 4 master
}

TEST_CASE("fp16-pure is a .half() model: 16-bit everything, no master", "[precision][amp]") {
    const auto pure = recipe(precision_kind::fp16_pure);
    CHECK(pure.math == dtype::fp16);
    CHECK(pure.weights == dtype::fp16);
    CHECK(pure.gradients == dtype::fp16);
    CHECK(pure.activations == dtype::fp16);
    CHECK(pure.optimizer_state == dtype::fp16);
    CHECK_FALSE(pure.fp32_master);
    CHECK_FALSE(pure.autocast);
    CHECK_FALSE(pure.loss_scaling);  // GradScaler refuses fp16 gradients
    CHECK(model_state_bytes_per_parameter(pure) == 4.0);  // 2 weights + 2 gradients
    CHECK(weight_copy_bytes_per_parameter(pure) == 0.0);
}

TEST_CASE("activation formats: one format, or autocast's mix", "[precision][amp]") {
    for (precision_kind k : all_precisions) {
        const auto r = recipe(k);
        const activation_formats x = activation_formats_of(r);
        INFO(r.name);
        CHECK(x.gemm_inputs == r.activations);
        CHECK(x.mixed() == r.autocast);
        if (!r.autocast) {
            CHECK(x.residual == r.activations);
            CHECK(x.softmax_output == r.activations);
        }
    }
    const activation_formats amp = activation_formats_of(recipe(precision_kind::bf16_amp));
    CHECK(amp.gemm_inputs == dtype::bf16);
    CHECK(amp.residual == dtype::fp32);
    CHECK(amp.norm_output == dtype::fp32);
    CHECK(amp.softmax_output == dtype::fp32);
    CHECK(amp.elementwise_chain == dtype::fp32);
}

TEST_CASE("the new recipes parse by name and need their 16-bit tensor cores", "[precision][amp]") {
    CHECK(parse_precision("fp16-amp").kind == precision_kind::fp16_amp);
    CHECK(parse_precision("BF16-AMP").kind == precision_kind::bf16_amp);
    CHECK(parse_precision("fp16-autocast").kind == precision_kind::fp16_amp);
    CHECK(parse_precision("fp16-pure").kind == precision_kind::fp16_pure);
    const gpu_spec& v100 = v100_sxm2_32gb::spec;  // fp16 tensor cores, no bf16
    CHECK_NOTHROW(check_supported(v100, recipe(precision_kind::fp16_amp)));
    CHECK_NOTHROW(check_supported(v100, recipe(precision_kind::fp16_pure)));
    CHECK_THROWS_WITH(check_supported(v100, recipe(precision_kind::bf16_amp)),
                      "precision = bf16-amp: not supported by v100-sxm2-32gb (no bf16 tensor cores)");
    CHECK_THROWS_WITH(check_supported(t4::spec, recipe(precision_kind::bf16_amp)),
                      "precision = bf16-amp: not supported by t4 (no bf16 tensor cores)");
    CHECK_NOTHROW(check_supported(rtx_3090_ti::spec, recipe(precision_kind::bf16_amp)));
    // A GPU with fp32 units only: neither 16-bit recipe runs.
    gpu_spec fp32_only = v100;
    fp32_only.name = "fp32-only";
    fp32_only.peak = {.fp32 = v100.peak.fp32};
    CHECK_THROWS_WITH(check_supported(fp32_only, recipe(precision_kind::fp16_amp)),
                      "precision = fp16-amp: not supported by fp32-only (no fp16 tensor cores)");
    CHECK_THROWS_WITH(check_supported(fp32_only, recipe(precision_kind::fp16_pure)),
                      "precision = fp16-pure: not supported by fp32-only (no fp16 tensor cores)");
    CHECK_NOTHROW(check_supported(fp32_only, recipe(precision_kind::fp32)));
}
