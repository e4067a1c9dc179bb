// Enum name tables (core/enum_names.hpp): to_string, parsing, the lists of names.
#include <catch2/catch.hpp>

#include <trainperf/spec/hardware.hpp>
#include <trainperf/spec/optimizer.hpp>
#include <trainperf/spec/parallel.hpp>
#include <trainperf/spec/precision.hpp>

#include <array>
#include <cctype>
#include <string>

using namespace trainperf;

namespace {
template <class E>
void check_round_trip() {
    for (E v : enum_values<E>()) {
        INFO(to_string(v));
        CHECK(parse_enum<E>("field", to_string(v)) == v);
        std::string upper(to_string(v));
        for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
        CHECK(parse_enum<E>("field", upper) == v);
    }
}

enum class colour { red, green };
constexpr std::string_view to_string(colour c) { return c == colour::red ? "red" : "green"; }
}  // namespace

static_assert(named_enum<dtype> && named_enum<recompute_mode> && named_enum<link_kind>);
static_assert(!named_enum<int> && !named_enum<colour>);
static_assert(to_string(link_kind::nvlink_bridge) == "nvlink-bridge");
static_assert(parse_enum<gpu_architecture>("architecture", "Hopper") == gpu_architecture::hopper);
static_assert(enum_values<offload_mode>().size() == 2);

TEST_CASE("every table round-trips, case-insensitively", "[enum_names]") {
    check_round_trip<dtype>();
    check_round_trip<precision_kind>();
    check_round_trip<optimizer_kind>();
    check_round_trip<recompute_mode>();
    check_round_trip<offload_mode>();
    check_round_trip<dp_overlap_mode>();
    check_round_trip<link_kind>();
    check_round_trip<gpu_architecture>();
    check_round_trip<ffn_kind>();
}

TEST_CASE("aliases parse but are not listed", "[enum_names]") {
    CHECK(parse_enum<optimizer_kind>("optimizer", "Adam") == optimizer_kind::adamw);
    CHECK(find_enum<precision_kind>("fp16-mixed") == precision_kind::fp16);
    CHECK(enum_name_list<precision_kind>() == "fp32|tf32|bf16|fp16|bf16-pure|fp8|fp16-amp|bf16-amp|fp16-pure");
    CHECK_FALSE(find_enum<dtype>("fp64").has_value());
    CHECK(parse_dtype("BF16") == dtype::bf16);
}

TEST_CASE("an unknown name names the field, the value and every name", "[enum_names]") {
    CHECK_THROWS_WITH(parse_enum<recompute_mode>("recompute", "most"),
                      "recompute = \"most\": unknown; expected one of none, selective, full, op-selective");
    CHECK_THROWS_WITH(parse_offload(""), "offload = \"\": unknown; expected one of none, optimizer");
    CHECK_THROWS_AS(parse_recompute("nothing"), trainperf::invalid_argument);
    CHECK(enum_name_list<dp_overlap_mode>(", ") == "framework, on, off");
}
