// Fuzz target: the JSON readers (measurement files, calibration files, kernel
// parameters) on arbitrary bytes. Contract: a document either loads, and then writes
// back to JSON that loads to the same thing, or is refused with
// std::invalid_argument; nothing else (no other exception, crash, hang, UB).
#include "fuzz_target.hpp"

#include <trainperf/io/json.hpp>

#include <string_view>

namespace {
using namespace trainperf;

template <class Load>
void must_round_trip(const nlohmann::json& j, Load load) {
    const auto first = load(j);
    const nlohmann::json written = to_json(first);
    const auto second = load(json_detail::parse_text(written.dump(), "written"));
    fuzz_require(to_json(second) == written, "a loaded document does not read back the same");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    nlohmann::json j;
    try {
        j = json_detail::parse_text(text, "input");
    } catch (const std::invalid_argument&) {
        return 0;
    }
    refused_or_fine([&] { must_round_trip(j, measurement_file_from_json); });
    refused_or_fine([&] { must_round_trip(j, calibration_file_from_json); });
    refused_or_fine([&] { must_round_trip(j, [](const nlohmann::json& k) { return kernel_params_from_json(k); }); });
    return 0;
}
