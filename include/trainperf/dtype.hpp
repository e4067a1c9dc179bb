// Numeric formats of tensors and of the math units that consume them.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "error.hpp"

namespace trainperf {

// tf32 is a math mode (fp32 storage, 10-bit mantissa tensor-core math), not a
// storage format; it is listed because GPUs quote a separate peak for it.
enum class dtype { fp32, tf32, fp16, bf16, fp8, int8 };

inline constexpr std::array all_dtypes{dtype::fp32, dtype::tf32, dtype::fp16,
                                       dtype::bf16, dtype::fp8,  dtype::int8};

// Bytes of one stored element.
constexpr double size_of(dtype t) {
    switch (t) {
        case dtype::fp32:
        case dtype::tf32: return 4.0;
        case dtype::fp16:
        case dtype::bf16: return 2.0;
        case dtype::fp8:
        case dtype::int8: return 1.0;
    }
    return 4.0;
}

constexpr std::string_view to_string(dtype t) {
    switch (t) {
        case dtype::fp32: return "fp32";
        case dtype::tf32: return "tf32";
        case dtype::fp16: return "fp16";
        case dtype::bf16: return "bf16";
        case dtype::fp8: return "fp8";
        case dtype::int8: return "int8";
    }
    return "?";
}

constexpr std::optional<dtype> parse_dtype(std::string_view s) {
    for (dtype t : all_dtypes)
        if (to_string(t) == s) return t;
    return std::nullopt;
}

}  // namespace trainperf
