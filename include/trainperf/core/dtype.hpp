// Numeric formats of tensors and of the math units that consume them.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "enum_names.hpp"

namespace trainperf {

// tf32 is a math mode (fp32 storage, 10-bit mantissa tensor-core math), not a
// storage format; it is listed because GPUs quote a separate peak for it. fp8 is E4M3 or
// E5M2, fp4 is E2M1 (a sign, 2 exponent bits, 1 mantissa bit: magnitudes up to 6, OCP
// Microscaling Formats (MX) v1.0, §5.3.3), two values per byte; both are GEMM
// formats of quantized tensors that carry scales beside them (spec/precision.hpp).
enum class dtype { fp32, tf32, fp16, bf16, fp8, int8, fp4 };

template <>
struct enum_names<dtype> {
    static constexpr std::array<enum_name<dtype>, 7> table{{{dtype::fp32, "fp32"},
                                                            {dtype::tf32, "tf32"},
                                                            {dtype::fp16, "fp16"},
                                                            {dtype::bf16, "bf16"},
                                                            {dtype::fp8, "fp8"},
                                                            {dtype::int8, "int8"},
                                                            {dtype::fp4, "fp4"}}};
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
        case dtype::fp4: return 0.5;
    }
    return 4.0;
}

// The formats Transformer Engine quantizes a GEMM's operands to (fp8, fp4): their GEMMs
// read scaled narrow values, accumulate in fp32 and write 16-bit outputs.
constexpr bool quantized_format(dtype t) { return t == dtype::fp8 || t == dtype::fp4; }

constexpr std::optional<dtype> parse_dtype(std::string_view s) { return find_enum<dtype>(s); }

}  // namespace trainperf
