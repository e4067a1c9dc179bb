// Numeric formats of tensors and of the math units that consume them.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "enum_names.hpp"

namespace trainperf {

// tf32 is a math mode (fp32 storage, 10-bit mantissa tensor-core math), not a
// storage format; it is listed because GPUs quote a separate peak for it.
enum class dtype { fp32, tf32, fp16, bf16, fp8, int8 };

template <>
struct enum_names<dtype> {
    static constexpr std::array<enum_name<dtype>, 6> table{{{dtype::fp32, "fp32"},
                                                            {dtype::tf32, "tf32"},
                                                            {dtype::fp16, "fp16"},
                                                            {dtype::bf16, "bf16"},
                                                            {dtype::fp8, "fp8"},
                                                            {dtype::int8, "int8"}}};
};

inline constexpr auto all_dtypes = enum_values<dtype>();

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

constexpr std::optional<dtype> parse_dtype(std::string_view s) { return find_enum<dtype>(s); }

}  // namespace trainperf
