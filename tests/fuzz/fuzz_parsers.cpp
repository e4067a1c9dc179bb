// Fuzz target: the text parsers a user's input goes through — quantities with units
// ("1.4GB", "52.8GB/s"), counts ("7B"), layout text ("tp 2 pp 4 ..."), enum and
// catalog names. The first byte picks the parser, the rest is the text. Contract: a
// value in range or std::invalid_argument (or the CLI's usage_error), and a parsed
// layout prints as text that parses back to the same layout.
#include "fuzz_target.hpp"

#include "cli.hpp"
#include "parse_units.hpp"

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/precision.hpp>

#include <cmath>
#include <string_view>

namespace {
using namespace trainperf;

template <class F>
void parse_or_refuse(F&& f) {
    refused_or_fine([&] {
        try {
            f();
        } catch (const cli::usage_error& e) {
            throw std::invalid_argument(e.what());
        }
    });
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 8) {
        case 0:
            parse_or_refuse([&] {
                const double b = cli::parse_bytes("--bytes", text).value();
                fuzz_require(std::isfinite(b) && b >= 0, "parse_bytes gave a negative or non-finite amount");
            });
            break;
        case 1:
            parse_or_refuse([&] {
                const double r = cli::parse_byte_rate("--rate", text).value();
                fuzz_require(std::isfinite(r) && r >= 0, "parse_byte_rate gave a negative or non-finite rate");
            });
            break;
        case 2:
            parse_or_refuse([&] {
                const double c = cli::parse_count("--count", text);
                fuzz_require(std::isfinite(c) && c >= 0, "parse_count gave a negative or non-finite count");
            });
            break;
        case 3:
            parse_or_refuse([&] {
                const parallel_layout l = parse_layout(text);
                fuzz_require(parse_layout(to_string(l)) == l, "a parsed layout does not print back to itself");
            });
            break;
        case 4: parse_or_refuse([&] { (void)lookup_gpu(text); }); break;
        case 5: parse_or_refuse([&] { (void)lookup_model(text); }); break;
        case 6: parse_or_refuse([&] { (void)parse_enum<recompute_mode>("recompute", text); }); break;
        default: parse_or_refuse([&] { (void)parse_enum<precision_kind>("precision", text); }); break;
    }
    return 0;
}
