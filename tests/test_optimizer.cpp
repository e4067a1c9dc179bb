// Optimizer state: per-parameter bytes, shape-exact Adafactor and 8-bit Adam.
#include <catch2/catch.hpp>

#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/optimizer.hpp>

using namespace trainperf;

namespace {
// One tiny layer whose tensors can be listed by hand.
constexpr transformer_config tiny{.name = "tiny", .layers = 1, .hidden = 4, .heads = 1,
                                  .ffn_hidden = 8, .vocab = 10, .max_seq = 6};
}  // namespace

TEST_CASE("optimizer names round-trip and unknown names name the field", "[optimizer]") {
    for (optimizer_kind k : all_optimizers) CHECK(parse_optimizer(to_string(k)) == k);
    CHECK(parse_optimizer("adam") == optimizer_kind::adamw);
    CHECK(is_fused(optimizer_kind::adamw_fused));
    CHECK_FALSE(is_fused(optimizer_kind::adamw));
    CHECK(parse_optimizer("AdamW-Fused") == optimizer_kind::adamw_fused);
    CHECK_THROWS_WITH(parse_optimizer("adam9"),
                      "optimizer = \"adam9\": unknown; expected one of sgd, sgd-momentum, adamw, adamw-fused, "
                      "adafactor, lion, adam8bit");
}

TEST_CASE("state bytes per parameter for a bare parameter count", "[optimizer]") {
    constexpr double p = 7e9;
    static_assert(optimizer_state_bytes(optimizer_kind::adamw, p).value() == 5.6e10);
    CHECK(optimizer_state_bytes(optimizer_kind::sgd, p).value() == 0.0);
    CHECK(optimizer_state_bytes(optimizer_kind::sgd_momentum, p).value() == 2.8e10);
    CHECK(optimizer_state_bytes(optimizer_kind::lion, p).value() == 2.8e10);
    CHECK(optimizer_state_bytes(optimizer_kind::adamw_fused, p).value() == 5.6e10);
    CHECK(optimizer_state_bytes(optimizer_kind::adamw, p, dtype::bf16).value() == 2.8e10);
    // bitsandbytes: 2 × 1 B + 2 × one fp32 absmax per 2048 elements.
    CHECK(optimizer_state_bytes(optimizer_kind::adam8bit, 2048.0 * 1000).value() ==
          2048.0 * 1000 * 2 + 1000 * 8);
    // Adafactor: square matrices of hidden = cbrt(128·p/12). p = 12·4096³/128 =
    // 6,442,450,944 gives hidden 4096, so the state is p · 2/4096 · 4 B = 12,582,912 B.
    CHECK(optimizer_state_bytes(optimizer_kind::adafactor, 6442450944.0).value() ==
          Approx(12582912.0).epsilon(1e-9));
    CHECK_THROWS_WITH(optimizer_state_bytes(optimizer_kind::adamw, -1.0),
                      "params = -1: must be a positive parameter count");
    CHECK_THROWS_AS(optimizer_state_bytes(optimizer_kind::adamw, 0.0), trainperf::invalid_argument);
}

TEST_CASE("parameter tensors add up to the parameter count", "[optimizer]") {
    for (const transformer_config& m : model_catalog) {
        INFO(m.name);
        CHECK(parameter_tensors(m).parameters() == parameter_count(m));
    }
    CHECK(parameter_tensors(tiny).parameters() == 244);
}

TEST_CASE("shape-exact state of a model", "[optimizer]") {
    // Adafactor, by hand: q,k,v,o 4×4 → 8 each; up 8×4, down 4×8 → 12 each; biases
    // 4+8+4+8+4 = 28; two layernorms 16; token embedding 10×4 → 14; positions 6×4 → 10;
    // final norm 8. 132 values × 4 B.
    CHECK(optimizer_state_bytes(optimizer_kind::adafactor, tiny).value() == 528);
    // Every tensor is under bitsandbytes' 4096-element minimum: 32-bit m and v.
    CHECK(optimizer_state_bytes(optimizer_kind::adam8bit, tiny).value() == 244 * 8);
    CHECK(optimizer_state_bytes(optimizer_kind::adamw, tiny).value() == 244 * 8);
    CHECK(optimizer_state_bytes(optimizer_kind::lion, tiny).value() == 244 * 4);
    CHECK(optimizer_state_bytes(optimizer_kind::sgd, tiny).value() == 0);

    const transformer_config& llama = llama2_7b::config;
    const double p = parameter_count(llama);
    CHECK(optimizer_state_bytes(optimizer_kind::adamw, llama).value() == 8 * p);
    // 8-bit Adam, by hand: every llama2-7b tensor has >= 4096 elements and a multiple of
    // 2048 (4096², 11008·4096, 32000·4096, 4096), so the state is exactly
    // 2·(p + 4·p/2048) = 2p + p/256 = 13,476,831,232 + 26,321,936 = 13,503,153,168 B.
    CHECK(optimizer_state_bytes(optimizer_kind::adam8bit, llama).value() == 13503153168.0);
    // Adafactor, by hand (rows + cols per matrix, fp32): per layer q, k, v, o 4 × 8192,
    // gate and up 2 × (11008 + 4096), down 15104, two RMSNorm scales 2 × 4096:
    // 32768 + 30208 + 15104 + 8192 = 86,272; × 32 layers = 2,760,704; embedding and
    // untied head 2 × (32000 + 4096) = 72,192; final norm 4096. 2,836,992 values × 4 B.
    CHECK(optimizer_state_bytes(optimizer_kind::adafactor, llama).value() == 11347968.0);
    CHECK_THROWS_WITH(optimizer_state_bytes(optimizer_kind::adamw, transformer_config{}),
                      "layers = 0: must be between 1 and 65536");
}
