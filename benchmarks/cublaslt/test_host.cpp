// Host-side parts of the cuBLASLt harness, testable without a GPU: the input
// generator and its rounding to the storage types, and the lists of GEMMs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include <trainperf/models/catalog.hpp>

#include "gemm_list.hpp"
#include "inputs.hpp"

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

TEST_CASE("a layer's GEMMs: forward TN, then NN and NT per op; GELU on a GELU model's FFN up") {
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
}

TEST_CASE("sweep grids") {
    CHECK(sweep_jobs("full", dtype::bf16).size() == 7 * 6 * 6 + 16);
    CHECK(sweep_jobs("small", dtype::bf16).size() == 3 * 2 * 3 + 4);
    CHECK(sweep_jobs("tiny", dtype::fp16).size() == 2 * 1 * 2 + 2);
    CHECK(sweep_jobs("tiny", dtype::fp16).front().shape.math == dtype::fp16);
    CHECK_THROWS(sweep_jobs("huge", dtype::bf16));
}
