// Precision recipes: storage bytes per parameter, parsing, GPU support checks.
#include <catch2/catch.hpp>

#include <trainperf/hardware/catalog.hpp>
#include <trainperf/precision.hpp>

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
                      "precision = \"fp64\": unknown; expected one of fp32, tf32, bf16, fp16, bf16-pure, fp8");
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
