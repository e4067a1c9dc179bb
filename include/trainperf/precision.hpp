// Precision recipes: which format the GEMMs run in and which format each piece of
// training state is stored in. A recipe fixes bytes per parameter for weights,
// gradients and the master copy; the optimizer's own state is in optimizer.hpp.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "dtype.hpp"
#include "enum_names.hpp"
#include "error.hpp"
#include "hardware.hpp"

namespace trainperf {

enum class precision_kind { fp32, tf32, bf16, fp16, bf16_pure, fp8 };

template <>
struct enum_names<precision_kind> {
    static constexpr std::array<enum_name<precision_kind>, 6> table{{{precision_kind::fp32, "fp32"},
                                                                     {precision_kind::tf32, "tf32"},
                                                                     {precision_kind::bf16, "bf16"},
                                                                     {precision_kind::fp16, "fp16"},
                                                                     {precision_kind::bf16_pure, "bf16-pure"},
                                                                     {precision_kind::fp8, "fp8"}}};
    // Explicit spellings of the mixed recipes.
    static constexpr std::array<enum_name<precision_kind>, 2> aliases{{{precision_kind::bf16, "bf16-mixed"},
                                                                       {precision_kind::fp16, "fp16-mixed"}}};
};

inline constexpr auto all_precisions = enum_values<precision_kind>();

struct precision_recipe {
    precision_kind kind = precision_kind::fp32;
    std::string_view name = "fp32";
    dtype math = dtype::fp32;             // GEMM math mode (tensor-core dtype)
    dtype weights = dtype::fp32;          // working weights used by forward and backward
    dtype gradients = dtype::fp32;        // gradient storage (DeepSpeed/Megatron: fp32 main grads)
    bool fp32_master = false;             // separate fp32 master copy updated by the optimizer
    dtype activations = dtype::fp32;      // activations kept for backward
    dtype optimizer_state = dtype::fp32;  // moments (pure bf16 keeps them in 2 B too)
    bool loss_scaling = false;            // fp16 needs a dynamic loss scale (range, not memory)
};

// The standard recipes. Mixed precision follows Micikevicius et al. 2018 ("Mixed
// Precision Training", ICLR): 16-bit weights, activations and gradients, fp32 master
// weights and fp32 optimizer state. fp8 follows NVIDIA Transformer Engine as used by
// Megatron-LM: fp8 GEMMs, bf16 working weights and activations, fp32 master.
constexpr precision_recipe recipe(precision_kind k) {
    switch (k) {
        case precision_kind::fp32:
            return {.kind = k, .name = to_string(k)};
        case precision_kind::tf32:
            return {.kind = k, .name = to_string(k), .math = dtype::tf32};
        case precision_kind::bf16:
            return {.kind = k, .name = to_string(k), .math = dtype::bf16, .weights = dtype::bf16,
                    .gradients = dtype::bf16, .fp32_master = true, .activations = dtype::bf16};
        case precision_kind::fp16:
            return {.kind = k, .name = to_string(k), .math = dtype::fp16, .weights = dtype::fp16,
                    .gradients = dtype::fp16, .fp32_master = true, .activations = dtype::fp16,
                    .loss_scaling = true};
        case precision_kind::bf16_pure:
            return {.kind = k, .name = to_string(k), .math = dtype::bf16, .weights = dtype::bf16,
                    .gradients = dtype::bf16, .fp32_master = false, .activations = dtype::bf16,
                    .optimizer_state = dtype::bf16};
        case precision_kind::fp8:
            return {.kind = k, .name = to_string(k), .math = dtype::fp8, .weights = dtype::bf16,
                    .gradients = dtype::bf16, .fp32_master = true, .activations = dtype::bf16};
    }
    return {};
}

// DeepSpeed and Megatron-LM accumulate gradients in fp32 ("main grads") even when
// the working weights are 16-bit: 4 B of gradient per parameter instead of 2.
constexpr precision_recipe with_fp32_gradients(precision_recipe r) {
    r.gradients = dtype::fp32;
    return r;
}

constexpr precision_recipe parse_precision(std::string_view s) {
    return recipe(parse_enum<precision_kind>("precision", s));
}

// Bytes per parameter of weights + gradients + master copy (no optimizer state).
constexpr double model_state_bytes_per_parameter(const precision_recipe& r) {
    return size_of(r.weights) + size_of(r.gradients) + (r.fp32_master ? size_of(dtype::fp32) : 0.0);
}

namespace precision_detail {
[[noreturn]] inline void unsupported(const gpu_spec& gpu, const precision_recipe& r) {
    const std::string why = "not supported by " + std::string(gpu.name) + " (no " +
                            std::string(to_string(r.math)) +
                            (r.math == dtype::fp32 ? " math units)" : " tensor cores)");
    detail::fail("precision", r.name, why);
}
}  // namespace precision_detail

// Throws "precision = bf16: not supported by v100-sxm2-32gb (no bf16 tensor cores)"
// when the GPU has no math units for the recipe's GEMM dtype.
constexpr void check_supported(const gpu_spec& gpu, const precision_recipe& r) {
    if (!gpu.supports(r.math)) precision_detail::unsupported(gpu, r);
}

}  // namespace trainperf
