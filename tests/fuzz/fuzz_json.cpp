// Fuzz target: every JSON reader — measurement files, calibration files, kernel
// parameters, GPU, system, model and framework descriptions, Hugging Face config.json —
// on arbitrary bytes. Contract: a document either loads, and then writes back to JSON
// that loads to the same thing, or is refused with std::invalid_argument; nothing else
// (no other exception, crash, hang, UB).
#include "fuzz_target.hpp"

#include <trainperf/io/framework_json.hpp>
#include <trainperf/io/gpu_json.hpp>
#include <trainperf/io/hf_config.hpp>
#include <trainperf/io/json.hpp>
#include <trainperf/io/model_json.hpp>
#include <trainperf/io/system_json.hpp>

#include <string_view>

namespace {
using namespace trainperf;

template <class Load, class Write>
void must_round_trip(const nlohmann::json& j, Load load, Write write) {
    const auto first = load(j);
    const nlohmann::json written = write(first);
    const auto second = load(json_detail::parse_text(written.dump(), "written"));
    fuzz_require(write(second) == written, "a loaded document does not read back the same");
}

template <class Load>
void must_round_trip(const nlohmann::json& j, Load load) {
    must_round_trip(j, load, [](const auto& x) { return to_json(x); });
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
    refused_or_fine([&] { must_round_trip(j, io::gpu_from_json, io::gpu_to_json); });
    refused_or_fine([&] { must_round_trip(j, io::system_from_json, io::system_to_json); });
    refused_or_fine([&] { must_round_trip(j, io::model_from_json, io::model_to_json); });
    refused_or_fine([&] { must_round_trip(j, io::framework_from_json, io::framework_to_json); });
    refused_or_fine([&] {
        const transformer_config m = io::model_from_hf_config(j, "fuzzed");
        fuzz_require(parameter_count(m) > 0, "an imported model without parameters");
    });
    return 0;
}
