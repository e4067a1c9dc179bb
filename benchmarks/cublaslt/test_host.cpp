// Host-side parts of the cuBLASLt harness, testable without a GPU: the input
// generator and its rounding to the storage types, and the lists of GEMMs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/model_catalog.hpp>

#include "gemm_list.hpp"
#include "inputs.hpp"
#include "report.hpp"

using namespace cublaslt_harness;
using trainperf::dtype;

TEST_CASE("round_mantissa rounds to nearest, ties to even, like the GPU's conversions") {
    CHECK(round_mantissa(1.0f + 0x1p-8f, 7) == 1.0f);                   // tie, 1.0 is even
    CHECK(round_mantissa(1.0f + 3 * 0x1p-8f, 7) == 1.0f + 0x1p-6f);     // tie, rounds up to even
    CHECK(round_mantissa(1.0f + 0x1p-8f + 0x1p-20f, 7) == 1.0f + 0x1p-7f);  // above the tie
    CHECK(round_mantissa(0.5f + 0x1p-13f, 10) == 0.5f);                  // fp16 tie at 2^-12 spacing
    CHECK(round_mantissa(-0.999999f, 7) == -1.0f);                       // carries into the exponent
}

TEST_CASE("bf16 and fp16 bit patterns") {
    CHECK(bf16_bits(1.0f) == 0x3F80);
    CHECK(from_bf16(0xBF40) == -0.75f);
    CHECK(fp16_bits(0.5f) == 0x3800);
    CHECK(fp16_bits(-0.75f) == 0xBA00);
    CHECK(fp16_bits(1.0f) == 0x3C00);
    CHECK(from_fp16(0x3C00) == 1.0f);
    CHECK(from_fp16(0xBA00) == -0.75f);
    CHECK(from_fp16(0x0001) == std::ldexp(1.0f, -24));   // smallest subnormal
    CHECK(from_fp16(0x7BFF) == 65504.0f);
    CHECK(std::isinf(from_fp16(0x7C00)));
    for (std::uint64_t i = 0; i < 1000; ++i) {
        const float h = stored_value(dtype::fp16, i);
        CHECK(from_fp16(fp16_bits(h)) == h);
        const float b = stored_value(dtype::bf16, i);
        CHECK(from_bf16(bf16_bits(b)) == b);
    }
}

TEST_CASE("inputs are never zero, bounded, of both signs and reproducible") {
    int negative = 0;
    for (std::uint64_t i = 0; i < 20000; ++i) {
        const float v = input_value(i);
        REQUIRE(std::abs(v) >= 0.5f);
        REQUIRE(std::abs(v) < 1.0f);
        negative += v < 0;
        REQUIRE(stored_value(dtype::fp32, i) == v);
    }
    CHECK(negative > 9000);
    CHECK(negative < 11000);
    std::vector<unsigned char> host(2 * 1000);
    generate(dtype::bf16, 500, 1000, host.data());
    CHECK(output_as_float(dtype::bf16, host.data() + 2 * 7) == stored_value(dtype::bf16, 507));
}

TEST_CASE("a layer's GEMMs: each forward GEMM with an input and a weight gradient; GELU on a GELU model's FFN up") {
    const auto gpt2 = layer_jobs(trainperf::lookup_model("gpt2-medium"), {"gpt2-medium", 8, 1024, 1}, dtype::bf16);
    REQUIRE(gpt2.size() == 18);  // 6 forward GEMMs, each with two backward ones
    CHECK(std::count_if(gpt2.begin(), gpt2.end(), [](const auto& j) { return j.op_layout == layout::tn; }) == 6);
    CHECK(std::count_if(gpt2.begin(), gpt2.end(), [](const auto& j) { return j.op_layout == layout::nn; }) == 6);
    CHECK(std::count_if(gpt2.begin(), gpt2.end(), [](const auto& j) { return j.gelu; }) == 1);
    CHECK(gpt2.front().group == "gpt2-medium b8 s1024 tp1");
    CHECK(gpt2.front().shape.m == 8192);  // tokens

    const auto llama = layer_jobs(trainperf::lookup_model("llama2-7b"), {"llama2-7b", 1, 4096, 1}, dtype::bf16);
    CHECK(llama.size() == 21);  // SwiGLU: gate and up
    CHECK(std::none_of(llama.begin(), llama.end(), [](const auto& j) { return j.gelu; }));
    // Square attention_out (4096 tokens, hidden 4096): dgrad and wgrad shapes coincide,
    // the layouts still differ.
    std::vector<layout> out_layouts;
    for (const auto& j : llama)
        if (j.name == "attention_out") out_layouts.push_back(j.op_layout);
    CHECK(out_layouts == std::vector<layout>{layout::tn, layout::nn, layout::nt});
    // P·V takes V as stored ([seq × head_dim]): NN forward, so its input gradient dP = dO·Vᵀ is TN.
    std::vector<layout> context_layouts;
    for (const auto& j : llama)
        if (j.name == "attention_context") context_layouts.push_back(j.op_layout);
    CHECK(context_layouts == std::vector<layout>{layout::nn, layout::tn, layout::nt});
}

// Where row-major element [r][c] of an operand stored row-major with `cols` columns lives.
static std::int64_t row_major(std::int64_t r, std::int64_t c, std::int64_t cols) { return r * cols + c; }

TEST_CASE("the cuBLAS call computes the row-major GEMM frameworks run, operand for operand") {
    const double M = 6, N = 10, K = 4;
    const gemm_job tn{.shape = {M, N, K, 1, dtype::bf16}, .op_layout = layout::tn};
    const gemm_job nn{.shape = {M, N, K, 1, dtype::bf16}, .op_layout = layout::nn};
    const gemm_job nt{.shape = {M, N, K, 1, dtype::bf16}, .op_layout = layout::nt};
    for (const auto* job : {&tn, &nn, &nt}) {
        const auto p = lt_problem_for(*job);
        INFO(to_string(job->op_layout));
        CHECK(p.m == 10);   // cuBLAS computes Cᵀ: its m is the row-major n
        CHECK(p.n == 6);
        CHECK(p.k == 4);
        CHECK(p.lda >= p.a_rows);
        CHECK(p.ldb >= p.b_rows);
        CHECK(p.a_rows * p.a_cols == p.a_elems);
        CHECK(p.b_rows * p.b_cols == p.b_elems);
        for (std::int64_t r = 0; r < 6; ++r)
            for (std::int64_t c = 0; c < 10; ++c) {
                CHECK(p.c_index(c, r) == row_major(r, c, 10));   // C[m×n] row-major
                for (std::int64_t l = 0; l < 4; ++l) {
                    // X is cuBLAS's B, Y its A.
                    if (job->op_layout == layout::tn) {        // X[m×k], Y[n×k]
                        CHECK(p.b_index(l, r) == row_major(r, l, 4));
                        CHECK(p.a_index(c, l) == row_major(c, l, 4));
                    } else if (job->op_layout == layout::nn) { // X[m×k], Y[k×n]
                        CHECK(p.b_index(l, r) == row_major(r, l, 4));
                        CHECK(p.a_index(c, l) == row_major(l, c, 10));
                    } else {                                   // X[k×m], Y[k×n]
                        CHECK(p.b_index(l, r) == row_major(l, r, 6));
                        CHECK(p.a_index(c, l) == row_major(l, c, 10));
                    }
                }
            }
    }
    CHECK_THROWS(lt_problem_for({.shape = {1.5, 2, 2, 1, dtype::bf16}}));
    CHECK_THROWS(lt_problem_for({.shape = {4096, 4096, 4096, 0, dtype::bf16}}));
}

TEST_CASE("the host reference is the dot product of the generator's stored values") {
    const gemm_job job{.shape = {3, 5, 7, 2, dtype::fp16}, .op_layout = layout::nt};
    const auto p = lt_problem_for(job);
    const std::uint64_t a0 = 1000, b0 = 5000;
    const std::int64_t bi = 1, i = 4, j = 2;   // cuBLAS (i, j) = row-major C[2][4]
    double sum = 0, scale = 0;
    for (std::int64_t l = 0; l < 7; ++l) {
        // X[k×m] row-major is B, at b0 + bi·b_elems; Y[k×n] is A.
        const double x = stored_value(dtype::fp16, b0 + static_cast<std::uint64_t>(p.b_elems + l * 3 + 2));
        const double y = stored_value(dtype::fp16, a0 + static_cast<std::uint64_t>(p.a_elems + l * 5 + 4));
        sum += x * y;
        scale += std::abs(x * y);
    }
    const auto ref = reference(dtype::fp16, p, a0, b0, bi, i, j, false);
    CHECK(ref.expected == sum);
    CHECK(ref.scale == scale);
    CHECK(reference(dtype::fp16, p, a0, b0, bi, i, j, true).expected == gelu(sum));
    CHECK(gelu(0.0) == 0.0);
    CHECK(std::abs(gelu(1.0) - 0.841192) < 1e-6);   // tanh form; the erf form gives 0.841345
}

TEST_CASE("percentiles interpolate between order statistics") {
    CHECK(percentile({5, 1, 3}, 0.5) == 3);
    CHECK(percentile({4, 1, 3, 2}, 0.5) == 2.5);
    CHECK(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.1) == 2);
    CHECK(percentile({7}, 0.9) == 7);
}

TEST_CASE("the harness's document reads back through trainperf::load_measurements") {
    report rep;
    rep.file.provenance = {.gpu_name = "NVIDIA H200", .gpu = "h200-sxm", .sm_count = 132,
                           .compute_capability = "9.0", .sm_clock_max_mhz = 1980,
                           .sm_clock_min_seen_mhz = 1755, .sm_clock_max_seen_mhz = std::nullopt,
                           .driver = "13.0", .cuda_runtime = "13.0", .cublaslt = "130000",
                           .date = "2026-11-02T10:00:00Z", .command = "trainperf-cublaslt --sweep"};
    rep.file.prediction_params = trainperf::default_kernel_params(trainperf::lookup_gpu("h200-sxm").architecture);
    const layer_request layer{"gpt2-medium", 8, 1024, 1};
    rep.file.layers.push_back({.name = layer_name(layer), .model = "gpt2-medium", .micro_batch = 8, .seq = 1024,
                               .tp = 1, .math = dtype::bf16});
    rep.extra_provenance = {{"l2_cache_bytes", 62914560}};
    rep.settings = {{"warmup", 10}};
    const auto jobs = layer_jobs(trainperf::lookup_model("gpt2-medium"), layer, dtype::bf16);
    timing_result t{.median_s = 1e-4, .p10_s = 0.9e-4, .p90_s = 1.2e-4, .repetitions = 50};
    rep.add(jobs[0], t, trainperf::seconds_of(0.8e-4), 989e12);
    t.epilogue_applied = false;   // the GELU job, timed without its epilogue
    const auto gelu_job = *std::find_if(jobs.begin(), jobs.end(), [](const auto& j) { return j.gelu; });
    rep.add(gelu_job, t, trainperf::seconds_of(1.2e-4), 989e12);
    rep.add_failure(jobs[1], "CUBLAS_STATUS_NOT_SUPPORTED");
    rep.add(sweep_jobs("tiny", dtype::bf16).front(), t, trainperf::seconds_of(1e-4), 989e12);

    const auto doc = rep.document("complete");
    CHECK(doc["layers"][0]["measured_s"].get<double>() == Approx(2e-4));
    CHECK(doc["layers"][0]["predicted_s"].get<double>() == Approx(2e-4));
    CHECK(doc["layers"][0]["gemms_failed"] == 1);
    CHECK(doc["gemms"][1]["epilogue"] == "none");
    CHECK(doc["gemms"][1]["epilogue_unsupported"] == "gelu");
    CHECK(doc["gemms"][0]["layout"] == "TN");
    CHECK(doc["provenance"]["l2_cache_bytes"] == 62914560);
    CHECK(doc["provenance"]["sm_clock_max_seen_mhz"].is_null());

    const auto path = std::filesystem::temp_directory_path() / "trainperf-cublaslt-host-test.json";
    {
        std::ofstream f(path);
        f << doc.dump(2);
    }
    const auto back = trainperf::load_measurements(path);
    std::filesystem::remove(path);
    REQUIRE(back.gemms.size() == 3);
    CHECK(back.gemms[0].group == "gpt2-medium b8 s1024 tp1");
    CHECK(back.gemms[0].measured.value() == 1e-4);
    CHECK(back.gemms[0].p90->value() == 1.2e-4);
    CHECK(back.gemms[2].group == "sweep");
    CHECK(back.provenance.sm_count == 132);
    CHECK(back.prediction_params.has_value());
    CHECK(trainperf::sweep_measurements(back).size() == 1);
    CHECK(trainperf::layer_measurements(back).front().gemms.size() == 2);
}

TEST_CASE("sweep grids") {
    CHECK(sweep_jobs("full", dtype::bf16).size() == 7 * 6 * 6 + 16);
    CHECK(sweep_jobs("small", dtype::bf16).size() == 3 * 2 * 3 + 4);
    CHECK(sweep_jobs("tiny", dtype::fp16).size() == 2 * 1 * 2 + 2);
    CHECK(sweep_jobs("tiny", dtype::fp16).front().shape.math == dtype::fp16);
    CHECK_THROWS(sweep_jobs("huge", dtype::bf16));
}
