#include <trainperf/spec/model.hpp>

#include <catch2/catch.hpp>

using namespace trainperf;

namespace {
// GPT-2 medium (HF gpt2-medium config.json), a valid starting point.
constexpr transformer_config base() {
    return {.name = "test", .layers = 24, .hidden = 1024, .heads = 16, .kv_heads = 0,
            .ffn_hidden = 4096, .vocab = 50257, .max_seq = 1024};
}
}  // namespace

static_assert((validate(base()), true));
static_assert(base().head_dim() == 64);

TEST_CASE("validate accepts a valid config", "[model]") {
    CHECK_NOTHROW(validate(base()));
    auto gqa = base();
    gqa.kv_heads = 4;
    CHECK_NOTHROW(validate(gqa));
    CHECK(gqa.kv_width() == 256);
}

TEST_CASE("validate names the bad field and its value", "[model]") {
    auto m = base();
    m.heads = 12;  // 1024 / 12 is not whole
    CHECK_THROWS_AS(validate(m), trainperf::invalid_argument);
    CHECK_THROWS_WITH(validate(m), "heads = 12: must divide hidden");

    m = base();
    m.kv_heads = 5;  // 16 / 5 is not whole
    CHECK_THROWS_WITH(validate(m), "kv_heads = 5: must divide heads");

    m = base();
    m.kv_heads = 32;
    CHECK_THROWS_WITH(validate(m), Catch::StartsWith("kv_heads = 32:"));

    m = base();
    m.layers = 0;
    CHECK_THROWS_WITH(validate(m), "layers = 0: must be between 1 and 65536");

    m = base();
    m.hidden = -8;
    CHECK_THROWS_WITH(validate(m), Catch::StartsWith("hidden = -8:"));

    m = base();
    m.heads = 0;  // checked before the division by heads
    CHECK_THROWS_WITH(validate(m), Catch::StartsWith("heads = 0:"));

    m = base();
    m.ffn_hidden = 0;
    CHECK_THROWS_WITH(validate(m), Catch::StartsWith("ffn_hidden = 0:"));

    m = base();
    m.vocab = 0;
    CHECK_THROWS_WITH(validate(m), Catch::StartsWith("vocab = 0:"));

    m = base();
    m.max_seq = -1;
    CHECK_THROWS_WITH(validate(m), Catch::StartsWith("max_seq = -1:"));
}

TEST_CASE("parameter count by parts", "[model]") {
    // GPT-2 medium: 24 layers × 12,596,224 + wte 50257×1024 + wpe 1024×1024 + ln_f 2048.
    const auto m = base();
    CHECK(layer_parameters(m) == 12596224.0);
    CHECK(embedding_parameters(m) == 50257.0 * 1024 + 1024.0 * 1024);
    CHECK(head_parameters(m) == 2048.0);
    CHECK(parameter_count(m) == 354823168.0);

    // Untying adds a vocab × hidden output matrix.
    auto untied = m;
    untied.tied_embeddings = false;
    CHECK(parameter_count(untied) - parameter_count(m) == 50257.0 * 1024);

    // GQA shrinks K and V: 2 × hidden × (hidden - kv_width) weights, and their biases.
    auto gqa = m;
    gqa.kv_heads = 4;
    CHECK(parameter_count(m) - parameter_count(gqa) == 24 * 2 * (1024.0 * 768 + 768));

    // Dropping only the Q/K/V biases (GPT-Neo) removes 3 × hidden per layer.
    auto neo = m;
    neo.qkv_biases = false;
    CHECK(parameter_count(m) - parameter_count(neo) == 24 * 3 * 1024.0);

    // No biases at all removes every linear bias.
    auto nobias = m;
    nobias.linear_biases = false;
    CHECK(parameter_count(m) - parameter_count(nobias) == 24 * (3 * 1024.0 + 1024 + 4096 + 1024));

    // Rotary positions have no table.
    auto rope = m;
    rope.positions = position_kind::rotary;
    CHECK(parameter_count(m) - parameter_count(rope) == 1024.0 * 1024);
}
